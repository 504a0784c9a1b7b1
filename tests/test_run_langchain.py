"""``gate run`` with a LangChain retriever: the real ``BM25Retriever`` of langchain-community
(with rank_bm25) over the pydoc example, run as the recipe says and compared with the shipped
bm25s run, and the adapter's edge cases on real LangChain objects over the small snapshots of
``tests/test_run.py``. Needs the ``runners`` extra; skipped without it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests import runner_libraries as shared
from tests.runner_libraries import SKIP, run

pytest.importorskip("langchain_community.retrievers", reason=SKIP)
pytest.importorskip("rank_bm25", reason=SKIP)

from langchain_community.retrievers import BM25Retriever
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import Field

import retrieval_gate
from examples.pydoc.retrievers.chunks import DEPTH, chunks
from tests.conftest import ROOT, gate
from tests.test_run import DOCS, QUERIES, lines, without_latency, world

TEXTS = {q: t for q, t, _ in QUERIES}


class Fixed(BaseRetriever):
    """A LangChain retriever answering each query text with the Documents given for it; the
    sizes of the batches it was given are kept in ``batches``."""

    answers: dict[str, list[Document]]
    batches: list[int] = Field(default_factory=list)

    def _get_relevant_documents(self, query: str, *,
                                run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return list(self.answers.get(query, []))

    def batch(self, inputs, config=None, **kwargs):  # type: ignore[override]
        self.batches.append(len(inputs))
        return super().batch(inputs, config, **kwargs)


def fixed(answer: list[Document]) -> Fixed:
    """A retriever that answers every query of the small snapshot with ``answer``."""
    return Fixed(answers={text: answer for text in TEXTS.values()})


def bm25() -> BM25Retriever:
    """BM25 over the small snapshot's documents, each Document's id its document's."""
    return BM25Retriever.from_documents(
        [Document(id=d, page_content=t) for d, t in DOCS.items()], k=3)


@pytest.fixture
def here(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_pydoc_example_runs_as_the_recipe_says(tmp_path: Path, monkeypatch) -> None:
    """BM25 over the 300-token chunks, its ids read from Document.id and its spans from the
    metadata: a run the gate accepts, judged a regression against the bm25s baseline; its
    top 10 shares 428 of 990 chunks with the baseline's (str.split keeps case and
    punctuation), 804 with lowercased words of two or more characters."""
    monkeypatch.chdir(ROOT)
    made = shared.run_recipe("examples.pydoc.retrievers.langchain_bm25:retriever", tmp_path)
    runner = shared.runner_of(made)
    assert runner["library"] == shared.library("langchain-core") and "package" not in runner
    assert "id_key" not in runner["settings"]
    first = lines(made)[0]["items"][0]
    assert first == {"id": "compound#7", "score": 1.0, "doc_id": "compound", "start": 12002,
                     "end": 13999}  # no score: 1/rank
    from examples.pydoc.retrievers.langchain_bm25 import retriever

    assert shared.agreement(made, scores=every_score(retriever)) == (428, 0)

    words = BM25Retriever.from_documents(
        [Document(id=c.id, page_content=c.text, metadata=c.place) for c in chunks()], k=DEPTH,
        preprocess_func=lambda text: re.findall(r"(?u)\b\w\w+\b", text.lower()))
    control = retrieval_gate.run(words, snapshot=shared.PYDOC_SNAPSHOT,
                                 output=tmp_path / "words.jsonl", commit="none")
    assert shared.agreement(control, scores=every_score(words))[0] == 804
    assert shared.runner_of(control)["package"] == shared.library("langchain-community")


def every_score(bm25: BM25Retriever) -> dict[str, dict[str, float]]:
    """Each pydoc query's BM25 score of every chunk, from the retriever's own index (rank_bm25
    orders tied chunks by numpy's unstable sort, and a LangChain Document carries no score)."""
    texts = {q["id"]: q["text"] for q in map(json.loads, (ROOT / "examples" / "pydoc" /
                                                          "queries.jsonl").open())}
    ids = [document.id for document in bm25.docs]
    return {qid: dict(zip(ids, bm25.vectorizer.get_scores(bm25.preprocess_func(text)).tolist()))
            for qid, text in texts.items()}


def test_batch_size_calls_batch_and_writes_the_same_run(here: Path) -> None:
    world(here)
    one = run(bm25(), here, "one.jsonl")
    answer = Fixed(answers={t: bm25().invoke(t) for t in TEXTS.values()})
    batched = run(answer, here, "batched.jsonl", batch_size=2)
    assert answer.batches == [2, 2, 1]
    assert without_latency(one) == without_latency(batched)
    assert without_latency(one) == without_latency(run(bm25(), here, "b.jsonl", batch_size=3))
    assert shared.runner_of(batched)["latency"] == "batch"
    items = lines(one)[0]["items"]  # q1, "alpha": d1 first; no scores, so 1/rank
    assert items[0]["id"] == "d1" and [i["score"] for i in items] == [1.0, 0.5, 1 / 3]


def test_a_document_without_an_id_is_refused_naming_the_query(here: Path) -> None:
    world(here)
    answer = fixed([Document(id="d1", page_content="x"), Document(page_content="alpha apples",
                                                                  metadata={"key": "d2"})])
    with pytest.raises(retrieval_gate.InputError) as refused:
        run(answer, here)
    said = str(refused.value)
    assert "query 'q1' returned {'id': None, 'metadata': {'key': 'd2'}, 'text': 'alpha " \
           "apples'} at hit 2, which has no id (Document.id is None)" in said
    assert "name the metadata key that holds it with --id-key KEY" in said
    assert not (here / "run.jsonl").exists() and not (here / "run.jsonl.journal").exists()


def test_ids_are_read_from_the_metadata_key_id_key_names(here: Path) -> None:
    world(here)
    answer = fixed([Document(page_content="a", metadata={"key": "d3"}),
                    Document(id="ignored", page_content="b", metadata={"key": "d1"})])
    made = run(answer, here, id_key="key")
    assert lines(made)[0]["items"] == [{"id": "d3", "score": 1.0}, {"id": "d1", "score": 0.5}]
    assert shared.runner_of(made)["settings"]["id_key"] == "key"
    with pytest.raises(retrieval_gate.InputError, match=r"at hit 2, which has no metadata key "
                       r"'key' \(--id-key\) — put each document's id under that key"):
        run(fixed([Document(page_content="a", metadata={"key": "d3"}),
                   Document(id="d1", page_content="b")]), here, id_key="key")


@pytest.mark.parametrize(("documents", "said"), [
    ([Document(id="d1", page_content="a"), Document(id="d1", page_content="b")],
     "id 'd1' twice (again at hit 2)"),
    ([Document(id="nope", page_content="a")],
     "hit 1 names document 'nope', which is not in the snapshot's corpus"),
    ([Document(id="\x1b[31md9\nerror: fake", page_content="a")],
     "which is not in the snapshot's corpus"),
    ([Document(page_content="a", metadata={"key": 7})], "hit 1's id is not a non-empty string"),
    ([Document(page_content="a", metadata={"key": None})], "hit 1's id is not a non-empty"),
    ([Document(page_content="a", metadata={"key": ""})], "hit 1's id is not a non-empty"),
])
def test_hostile_ids_are_refused_by_the_checks_naming_the_query(
        here: Path, documents: list[Document], said: str) -> None:
    world(here)
    options = {"id_key": "key"} if "key" in documents[0].metadata else {}
    with pytest.raises(retrieval_gate.InputError) as refused:
        run(fixed(documents), here, **options)
    message = str(refused.value)
    assert re.match(r"[\w.]*test_run_langchain:Fixed: query 'q1' returned [\[{]", message)
    assert said in message and "\x1b" not in message and "\n" not in message


def test_the_snapshot_s_unit_decides_what_is_read_besides_the_id(here: Path) -> None:
    """Span: the place from the metadata (refused without); document: a chunk collapsed to
    its doc_id; chunk: the id alone."""
    world(here / "span", "span")
    spans = fixed([Document(id="x", page_content="alph", metadata={
        "doc_id": "d1", "start": 0, "end": 4, "other": 1})])
    made = run(spans, here / "span")
    assert lines(made)[0]["items"] == [{"id": "x", "score": 1.0, "doc_id": "d1", "start": 0,
                                        "end": 4}]
    with pytest.raises(retrieval_gate.InputError, match=r"at hit 1, which has no doc_id, start "
                       r"and end: the snapshot judges spans — put them in each document's "
                       r"metadata"):
        run(fixed([Document(id="x", page_content="a", metadata={"doc_id": "d1"})]),
            here / "span")

    world(here / "doc", "document")
    pieces = fixed([Document(id="d1#0", page_content="a", metadata={"doc_id": "d1"}),
                    Document(id="d2", page_content="b", metadata={"doc_id": "d2"})])
    made = run(pieces, here / "doc")
    assert lines(made)[0]["items"] == [{"id": "d1#0", "score": 1.0, "doc_id": "d1"},
                                       {"id": "d2", "score": 0.5, "doc_id": "d2"}]
    run(fixed([Document(id="d2", page_content="b", metadata={"doc_id": "d2"})]), here / "doc",
        "doc.trec")  # an id its own document: no doc_id, so TREC can hold it

    world(here / "chunk", "chunk")
    made = run(fixed([Document(id="d3#1", page_content="c", metadata={"doc_id": "d3"})]),
               here / "chunk", chunking_version="v1")
    assert lines(made)[0]["items"] == [{"id": "d3#1", "score": 1.0}]


ID_MODULE = """
from langchain_community.retrievers import BM25Retriever
from langchain_core.documents import Document

DOCS = {docs!r}
retriever = BM25Retriever.from_documents(
    [Document(page_content=t, metadata={{"key": d, "other": d.upper()}}) for d, t in DOCS.items()],
    k=2)
"""


def test_the_command_line_reads_a_module_s_retriever_with_id_key(here: Path) -> None:
    world(here)
    (here / "lc_ids.py").write_text(ID_MODULE.format(docs=DOCS))
    command = ("run", "--snapshot", here / "snapshot.json", "--retriever", "lc_ids:retriever",
               "-o", here / "run.jsonl", "--commit", "none")
    code, _, err = gate(*command, "--id-key", "key")
    assert code == 0, err
    assert lines(here / "run.jsonl")[0]["items"][0] == {"id": "d1", "score": 1.0}
    runner = shared.runner_of(here / "run.jsonl")
    assert runner["target"] == "lc_ids:retriever" and runner["settings"]["id_key"] == "key"
    assert runner["library"] == shared.library("langchain-core")
    code, _, err = gate(*command, "--id-key", "other")
    assert code == 2 and "query 'q1' returned [" in err and "document 'D1', which is not in" \
        in err
    code, _, err = gate(*command)
    assert code == 2 and "which has no id (Document.id is None)" in err


class Failing(Fixed):
    """Fails every call while ``failing`` holds True; counts the calls per text."""

    failing: list[bool] = Field(default_factory=lambda: [True])
    calls: list[str] = Field(default_factory=list)

    def _get_relevant_documents(self, query: str, *,
                                run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        self.calls.append(query)
        if query == TEXTS["q2"] and self.failing[0]:
            raise RuntimeError("index offline")
        return super()._get_relevant_documents(query, run_manager=run_manager)


def test_resume_refuses_a_journal_of_another_id_key_or_library_version(here: Path) -> None:
    world(here)
    answer = Failing(answers={t: [Document(page_content=t, metadata={"key": "d1", "other": "d2"})]
                              for t in TEXTS.values()})
    with pytest.raises(retrieval_gate.InputError, match="1 answered query is kept in"):
        run(answer, here, id_key="key")
    journal = here / "run.jsonl.journal"
    header = json.loads(journal.read_text().splitlines()[0])
    assert header["library"] == shared.library("langchain-core")
    assert header["settings"]["id_key"] == "key"
    with pytest.raises(retrieval_gate.InputError, match=r"the journal belongs to another run: "
                       r"id_key key \(this run: other\)"):
        run(answer, here, id_key="other", resume=True)
    kept = journal.read_text()
    journal.write_text(kept.replace(shared.library("langchain-core")["version"], "0.0.1", 1))
    with pytest.raises(retrieval_gate.InputError, match=r"library langchain-core 0.0.1 \(this "
                       r"run: langchain-core "):
        run(answer, here, id_key="key", resume=True)
    journal.write_text(kept)
    answer.failing[0] = False
    answer.calls.clear()
    made = run(answer, here, id_key="key", resume=True)
    assert TEXTS["q1"] not in answer.calls and len(answer.calls) == len(QUERIES) - 1
    assert shared.ranked_ids(made)["q1"] == ["d1"]


def test_shards_of_another_id_key_are_not_merged(here: Path) -> None:
    world(here)
    answer = fixed([Document(page_content="a", metadata={"a": "d1", "b": "d2"})])
    run(answer, here, "s1.jsonl", id_key="a", shard="1/2")
    run(answer, here, "s2.jsonl", id_key="b", shard="2/2")
    code, _, err = gate("run", "merge", here / "s1.jsonl", here / "s2.jsonl", "--snapshot",
                        here / "snapshot.json", "-o", here / "merged.jsonl", "--commit", "none")
    assert code == 2 and "s2.jsonl: differs from " in err and "s1.jsonl in its settings" in err
    run(answer, here, "s2.jsonl", id_key="a", shard="2/2")
    code, _, err = gate("run", "merge", here / "s1.jsonl", here / "s2.jsonl", "--snapshot",
                        here / "snapshot.json", "-o", here / "merged.jsonl", "--commit", "none")
    assert code == 0, err
    runner = shared.runner_of(here / "merged.jsonl")
    assert runner["library"] == shared.library("langchain-core")
    assert runner["settings"]["id_key"] == "a"
    assert shared.ranked_ids(here / "merged.jsonl")["q2"] == ["d1"]


def test_a_text_splitter_s_chunks_are_located_where_it_cut_them(tmp_path: Path) -> None:
    """LangChain's RecursiveCharacterTextSplitter over 30 pydoc documents, its chunks exported
    as text alone (id, doc_id, text: what a splitter keeps without add_start_index): gate
    chunks locate finds every one where the splitter's own start_index says it cut it."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    texts = dict(list(shared.pydoc_texts().items())[:30])
    splitter = RecursiveCharacterTextSplitter(chunk_size=400, chunk_overlap=80,
                                              add_start_index=True)
    cut = splitter.create_documents(list(texts.values()),
                                    metadatas=[{"doc_id": d} for d in texts])
    exported = [{"id": f"{c.metadata['doc_id']}#{i}", "doc_id": c.metadata["doc_id"],
                 "text": c.page_content} for i, c in enumerate(cut)]
    located = shared.located(exported, tmp_path)
    assert len(located) == len(cut) > 500
    assert [(c["start"], c["end"]) for c in located] == [
        (c.metadata["start_index"], c.metadata["start_index"] + len(c.page_content))
        for c in cut]


def test_with_a_chunk_table_a_document_s_own_doc_id_is_checked_against_it(here: Path) -> None:
    """With --chunks the table places a hit; a doc_id its metadata gives (without a place)
    must be the table's, as for a function's hit."""
    world(here, "span")
    (here / "table.jsonl").write_text(
        "".join(json.dumps({"id": f"{d}@0", "doc_id": d, "start": 0, "end": 3}) + "\n"
                for d in DOCS))
    agreeing = Fixed(answers={t: [Document(id="d1@0", page_content="x",
                                           metadata={"doc_id": "d1"})] for t in TEXTS.values()})
    made = run(agreeing, here, "good.jsonl", chunks=here / "table.jsonl")
    assert lines(made)[0]["items"][0]["id"] == "d1@0"
    contrary = Fixed(answers={t: [Document(id="d1@0", page_content="x",
                                           metadata={"doc_id": "d2"})] for t in TEXTS.values()})
    with pytest.raises(retrieval_gate.InputError, match="hit 1 places chunk 'd1@0' in 'd2', and the chunk "
                                         "table .*table.jsonl in 'd1' at 0:3"):
        run(contrary, here, "bad.jsonl", chunks=here / "table.jsonl")
