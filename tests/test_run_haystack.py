"""``gate run`` with a Haystack 2 component or pipeline: the real ``InMemoryBM25Retriever`` over
the pydoc example, run as the recipe says and compared with the shipped bm25s run, and the
adapter's edge cases on real Haystack components and pipelines over the small snapshots of
``tests/test_run.py``. Needs the ``runners`` extra; skipped without it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests import runner_libraries as shared
from tests.runner_libraries import SKIP, run

# Haystack reads this when it is imported: no usage statistics are sent from the tests.
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
pytest.importorskip("haystack.components.retrievers.in_memory", reason=SKIP)

from haystack import Document, Pipeline, component
from haystack.components.builders import PromptBuilder
from haystack.components.joiners import DocumentJoiner
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
from haystack.document_stores.in_memory import InMemoryDocumentStore

import retrieval_gate
from examples.pydoc.retrievers.chunks import DEPTH, chunks
from tests.conftest import ROOT, gate
from tests.test_run import DOCS, lines, without_latency, world


@component
class Fixed:
    """Answers every query with the documents given (or, with ``raw``, returns that)."""

    def __init__(self, answer: list[Any], raw: Any = None):
        self.answer, self.raw = answer, raw

    @component.output_types(documents=list[Document])
    def run(self, query: str, top_k: int | None = None) -> Any:
        return self.raw if self.raw is not None else {"documents": list(self.answer)}


@component
class Containing:
    """Keeps the documents whose text holds the query's text: a second input named query."""

    @component.output_types(documents=list[Document])
    def run(self, query: str, documents: list[Document]) -> dict[str, list[Document]]:
        return {"documents": [d for d in documents if query in (d.content or "")]}


@component
class Asking:
    """A component whose input is not named query."""

    @component.output_types(documents=list[Document])
    def run(self, text: str) -> dict[str, list[Document]]:
        return {"documents": []}


def store() -> InMemoryDocumentStore:
    """The small snapshot's documents, each Document's id its document's."""
    kept = InMemoryDocumentStore()
    kept.write_documents([Document(id=d, content=t, meta={"key": d.upper()})
                          for d, t in DOCS.items()])
    return kept


def pipeline(*named: tuple[str, Any], connect: tuple[tuple[str, str], ...] = ()) -> Pipeline:
    made = Pipeline()
    for name, part in named:
        made.add_component(name, part)
    for sender, receiver in connect:
        made.connect(sender, receiver)
    return made


@pytest.fixture
def here(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_pydoc_example_runs_as_the_recipe_says(tmp_path: Path, monkeypatch) -> None:
    """BM25L over the 300-token chunks, in a pipeline and as the component alone (the same
    run), each chunk's span read from its meta: a run the gate accepts, passing against the
    bm25s baseline; its top 10 shares 786 of 990 chunks with the baseline's, 876 with the
    baseline's tokens (\\w\\w+)."""
    monkeypatch.chdir(ROOT)
    made = shared.run_recipe("examples.pydoc.retrievers.haystack_bm25:pipeline", tmp_path)
    runner = shared.runner_of(made)
    assert runner["library"] == shared.library("haystack-ai") and "package" not in runner
    assert shared.agreement(made) == (786, 1)
    alone = tmp_path / "component.jsonl"
    code, _, err = gate("run", "--snapshot", shared.PYDOC_SNAPSHOT, "--retriever",
                        "examples.pydoc.retrievers.haystack_bm25:retriever", "-o", alone,
                        "--commit", "none")
    assert code == 0, err
    assert without_latency(alone) == without_latency(made)

    words = InMemoryDocumentStore(bm25_tokenization_regex=r"(?u)\b\w\w+\b")
    words.write_documents([Document(id=c.id, content=c.text, meta=c.place) for c in chunks()])
    control = retrieval_gate.run(
        pipeline(("bm25", InMemoryBM25Retriever(document_store=words, top_k=DEPTH))),
        snapshot=shared.PYDOC_SNAPSHOT, output=tmp_path / "words.jsonl", commit="none")
    assert shared.agreement(control)[0] == 876
    assert shared.runner_of(control)["package"] == shared.library("haystack-ai")


def test_a_pipeline_gets_the_text_at_every_free_query_input(here: Path) -> None:
    """bm25 → containing: both take query; the ranking is containing's documents."""
    world(here)
    both = pipeline(("bm25", InMemoryBM25Retriever(document_store=store(), top_k=6)),
                    ("containing", Containing()), connect=(("bm25", "containing"),))
    made = run(both, here)
    assert lines(made)[0]["query_id"] == "q1" and [i["id"] for i in lines(made)[0]["items"]] \
        == ["d1"]  # only d1 holds "alpha"
    assert lines(made)[0]["items"][0]["score"] > 0


@pytest.mark.parametrize(("parts", "said"), [
    ((("joiner", DocumentJoiner()),),
     ("is a Haystack pipeline with no free input named query (its free inputs: "
      "joiner.documents, joiner.top_k)")),
    ((("asking", Asking()),), "no free input named query (its free inputs: asking.text)"),
    ((("a", Fixed([])), ("b", Fixed([]))),
     ("is a Haystack pipeline where components a, b each leave their output documents free: "
      "which one is the ranking is ambiguous")),
    ((("containing", Containing()),),
     "is a Haystack pipeline whose free input containing.documents must be given"),
])
def test_a_pipeline_that_cannot_be_fed_or_read_is_refused_before_any_call(
        here: Path, parts: tuple[tuple[str, Any], ...], said: str) -> None:
    world(here)
    with pytest.raises(retrieval_gate.InputError) as refused:
        run(pipeline(*parts), here)
    assert str(refused.value).startswith("--retriever: haystack.core.pipeline.pipeline:"
                                         "Pipeline ")
    assert said in str(refused.value)
    assert not (here / "run.jsonl.journal").exists()


def test_a_pipeline_whose_documents_go_on_is_refused(here: Path) -> None:
    world(here)
    prompt = PromptBuilder(template="{{ query }}{% for d in documents %}{{ d.content }}"
                                    "{% endfor %}", required_variables=["query", "documents"])
    with pytest.raises(retrieval_gate.InputError, match="no component leaves its output "
                       "documents free — end the pipeline in one component"):
        run(pipeline(("bm25", InMemoryBM25Retriever(document_store=store())),
                     ("prompt", prompt), connect=(("bm25", "prompt.documents"),)), here)


def test_a_component_is_run_with_the_query_s_text(here: Path) -> None:
    world(here)
    made = run(InMemoryBM25Retriever(document_store=store(), top_k=2), here)
    first = lines(made)[0]
    assert first["items"][0]["id"] == "d1" and first["items"][0]["score"] > 0
    made = run(Fixed([Document(id="d3", content="c"), Document(id="d1", content="a")]), here)
    assert lines(made)[0]["items"] == [{"id": "d3", "score": 1.0}, {"id": "d1", "score": 0.5}]
    made = run(Fixed([Document(id="x", content="a", meta={"key": "d2"})]), here, id_key="key")
    assert lines(made)[0]["items"] == [{"id": "d2", "score": 1.0}]


@pytest.mark.parametrize(("answer", "said"), [
    (Fixed([], raw={"answers": []}), ("query 'q1' returned {'answers': []}: its output holds "
                                      "no list of documents — return {'documents': [...]}")),
    (Fixed([], raw=[Document(id="d1")]), ("query 'q1' returned [<Document>]: its output "
                                          "holds no list of documents")),
    (Fixed([Document(id="d1", score=1.0), Document(id="d1", score=0.5)]), "id 'd1' twice"),
    (Fixed([Document(id="d1", score=1.0), Document(id="d2")]), "hit 2 has no score and hit 1"),
    (Fixed([Document(id="d1", meta={"key": 5})]), "hit 1's id is not a non-empty string"),
])
def test_what_a_component_returns_is_read_or_refused_naming_the_query(
        here: Path, answer: Any, said: str) -> None:
    world(here)
    options = {"id_key": "key"} if answer.answer and "key" in answer.answer[0].meta else {}
    with pytest.raises(retrieval_gate.InputError) as refused:
        run(answer, here, **options)
    assert said in str(refused.value) and ":Fixed: " in str(refused.value)


@pytest.mark.parametrize(("part", "said"), [
    (Asking(), "is a Haystack component without an input query"),
    (PromptBuilder(template="{{ query }}"), "is a Haystack component without an output"),
    (Containing(), "is a Haystack component whose input documents must be given"),
])
def test_a_component_that_cannot_be_fed_or_read_is_refused(
        here: Path, part: Any, said: str) -> None:
    world(here)
    with pytest.raises(retrieval_gate.InputError, match="^--retriever: ") as refused:
        run(part, here)
    assert said in str(refused.value)


def test_batch_size_is_refused_before_any_call(here: Path) -> None:
    world(here)
    for retriever, kind in ((Fixed([]), "component"), (pipeline(("f", Fixed([]))), "pipeline")):
        with pytest.raises(retrieval_gate.InputError, match=f"--batch-size: a Haystack {kind} "
                           r"\(run\) answers one query per call"):
            run(retriever, here, batch_size=2)
