"""``gate run`` with a LlamaIndex retriever: the real ``BM25Retriever`` of
llama-index-retrievers-bm25 over the pydoc example, run as the recipe says and compared with
the shipped bm25s run, and the adapter's edge cases on real LlamaIndex objects over the small
snapshots of ``tests/test_run.py``. Needs the ``runners`` extra; skipped without it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import runner_libraries as shared
from tests.runner_libraries import SKIP, run

pytest.importorskip("llama_index.retrievers.bm25", reason=SKIP)

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import (
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    RelatedNodeInfo,
    TextNode,
)
from llama_index.retrievers.bm25 import BM25Retriever

import retrieval_gate
from examples.pydoc.retrievers.chunks import DEPTH, chunks
from tests.conftest import ROOT
from tests.test_run import lines, world


class Fixed(BaseRetriever):
    """A LlamaIndex retriever that answers every query with the nodes given."""

    def __init__(self, answer: list[NodeWithScore]):
        self.answer = answer
        super().__init__()

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return list(self.answer)


def node(ident: str, score: float | None = 1.0, source: str | None = None,
         place: tuple[int, int] | None = None, **metadata: object) -> NodeWithScore:
    """A scored node: its id, its source document, its character offsets, its metadata."""
    relationships = ({} if source is None
                     else {NodeRelationship.SOURCE: RelatedNodeInfo(node_id=source)})
    start, end = place or (None, None)
    return NodeWithScore(node=TextNode(id_=ident, text=f"text of {ident}", metadata=metadata,
                                       relationships=relationships, start_char_idx=start,
                                       end_char_idx=end), score=score)


@pytest.fixture
def here(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_pydoc_example_runs_as_the_recipe_says(tmp_path: Path, monkeypatch) -> None:
    """BM25 over the 300-token chunks, each node's span read from its ref_doc_id and character
    offsets: a run the gate accepts, passing against the bm25s baseline; its top 10 shares
    718 of 990 chunks with the baseline's — and, without stemming, the baseline's own top 10
    in the same order for all 99 queries (ties by id) (bm25s both: the adapter reads what it returns)."""
    monkeypatch.chdir(ROOT)
    made = shared.run_recipe("examples.pydoc.retrievers.llamaindex_bm25:retriever", tmp_path)
    runner = shared.runner_of(made)
    assert runner["library"] == shared.library("llama-index-core") and "package" not in runner
    first = lines(made)[0]["items"][0]
    assert first["id"] == "compound#7" and first["score"] == pytest.approx(9.8115387)
    assert (first["doc_id"], first["start"], first["end"]) == ("compound", 12002, 13999)
    assert shared.agreement(made) == (718, 1)

    unstemmed = BM25Retriever.from_defaults(nodes=[
        TextNode(id_=c.id, text=c.text, start_char_idx=c.start, end_char_idx=c.end,
                 relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=c.doc_id)})
        for c in chunks()], similarity_top_k=DEPTH, skip_stemming=True)
    control = retrieval_gate.run(unstemmed, snapshot=shared.PYDOC_SNAPSHOT,
                                 output=tmp_path / "unstemmed.jsonl", commit="none")
    assert shared.agreement(control) == (990, 99)
    assert shared.runner_of(control)["package"] == shared.library("llama-index-retrievers-bm25")


def test_scores_are_written_as_returned_and_none_is_no_score(here: Path) -> None:
    world(here)
    made = run(Fixed([node("d2", 2.5), node("d1", 0.5)]), here)
    assert lines(made)[0]["items"] == [{"id": "d2", "score": 2.5}, {"id": "d1", "score": 0.5}]
    made = run(Fixed([node("d2", None), node("d1", None)]), here)
    assert lines(made)[0]["items"] == [{"id": "d2", "score": 1.0}, {"id": "d1", "score": 0.5}]
    for answer, said in (
            ([node("d2", 1.0), node("d1", None)], "hit 2 has no score and hit 1 has"),
            ([node("d2", 1.0), node("d1", 2.0)], "hit 2 scores 2.0, above hit 1's 1.0"),
            ([node("n1", key="d2"), node("n2", key="d2")], "id 'd2' twice"),  # retrieve()
            ([node("n1", key=7)], "hit 1's id is not a non-empty string"),  # drops same nodes
            ([node("d9")], "document 'd9', which is not in the snapshot's corpus")):
        options = {"id_key": "key"} if "key" in answer[0].node.metadata else {}
        with pytest.raises(retrieval_gate.InputError, match="query 'q1' returned ") as refused:
            run(Fixed(answer), here, **options)
        assert said in str(refused.value)


def test_a_span_is_read_from_the_node_or_its_metadata(here: Path) -> None:
    world(here, "span")
    made = run(Fixed([node("c1", source="d1", place=(0, 4)),
                      node("c2", 0.5, source="d9", place=(9, 99), doc_id="d2", start=0,
                           end=4)]), here)
    assert lines(made)[0]["items"] == [
        {"id": "c1", "score": 1.0, "doc_id": "d1", "start": 0, "end": 4},
        {"id": "c2", "score": 0.5, "doc_id": "d2", "start": 0, "end": 4}]
    with pytest.raises(retrieval_gate.InputError, match=r"query 'q1' returned .* at hit 1, "
                       r"which has no doc_id, start and end: the snapshot judges spans"):
        run(Fixed([node("c1", source="d1")]), here)
    with pytest.raises(retrieval_gate.InputError, match=r"hit 1 ends at 99, past the 27 "
                       r"characters of document 'd1'"):
        run(Fixed([node("c1", source="d1", place=(0, 99))]), here)


def test_a_node_of_a_document_collapses_to_it_and_id_key_reads_the_metadata(
        here: Path) -> None:
    world(here / "doc")
    made = run(Fixed([node("n1", source="d1"), node("d2", 0.5, source="d2")]), here / "doc")
    assert lines(made)[0]["items"] == [{"id": "n1", "score": 1.0, "doc_id": "d1"},
                                       {"id": "d2", "score": 0.5, "doc_id": "d2"}]
    made = run(Fixed([node("n1", key="d3"), node("n2", 0.5, key="d1")]), here / "doc",
               id_key="key")
    assert lines(made)[0]["items"] == [{"id": "d3", "score": 1.0}, {"id": "d1", "score": 0.5}]
    with pytest.raises(retrieval_gate.InputError, match=r"has no metadata key 'key' \(--id-key\)"
                       r" — put each document's id under that key of its metadata, or leave "
                       r"out --id-key to read node.node_id"):
        run(Fixed([node("n1")]), here / "doc", id_key="key")
    world(here / "chunk", "chunk")
    made = run(Fixed([node("d1#1", source="d1")]), here / "chunk", chunking_version="v1")
    assert lines(made)[0]["items"] == [{"id": "d1#1", "score": 1.0}]


def test_batch_size_is_refused_before_any_call(here: Path) -> None:
    world(here)
    answer = Fixed([node("d1")])
    with pytest.raises(retrieval_gate.InputError, match=r"--batch-size: a LlamaIndex retriever "
                       r"\(retrieve\) answers one query per call — leave out --batch-size"):
        run(answer, here, batch_size=4)
    assert not (here / "run.jsonl.journal").exists()
    made = run(answer, here, concurrency=3)
    assert shared.runner_of(made)["settings"]["concurrency"] == 3


def test_a_node_parser_s_nodes_are_located_where_it_cut_them(tmp_path: Path) -> None:
    """LlamaIndex's SentenceSplitter over 30 pydoc documents, its nodes exported as text alone
    (node id, ref_doc_id, text): gate chunks locate finds every one at the node's own
    start_char_idx and end_char_idx."""
    from llama_index.core import Document
    from llama_index.core.node_parser import SentenceSplitter

    texts = dict(list(shared.pydoc_texts().items())[:30])
    nodes = SentenceSplitter(chunk_size=128, chunk_overlap=20).get_nodes_from_documents(
        [Document(text=t, id_=d) for d, t in texts.items()])
    exported = [{"id": n.node_id, "doc_id": n.ref_doc_id, "text": n.text} for n in nodes]
    located = shared.located(exported, tmp_path)
    assert len(located) == len(nodes) > 300
    assert [(c["start"], c["end"]) for c in located] == [
        (n.start_char_idx, n.end_char_idx) for n in nodes]
