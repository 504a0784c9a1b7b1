"""``gate run``'s library adapters, as every installation has them: an object is adapted only
when it derives from a library's class (read by name, the library never imported by the gate),
and ``--id-key`` applies to adapted objects only. The adapters themselves are tested against the
real libraries in ``tests/test_run_langchain.py``, ``test_run_llamaindex.py`` and
``test_run_haystack.py`` (the ``runners`` extra)."""

from __future__ import annotations

from pathlib import Path

import pytest

import retrieval_gate
from tests.conftest import gate, imported_by
from tests.test_run import RANKED, lines, module, world

LIBRARIES = ("langchain_core", "langchain_community", "llama_index", "haystack")


class LookAlike:
    """A user's own retriever class with the methods the libraries' retrievers have."""

    def __call__(self, query):
        return list(RANKED[query.id])

    def invoke(self, text):
        raise AssertionError("called as a LangChain retriever")

    batch = retrieve = run = invoke


@pytest.fixture
def here(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    world(tmp_path)
    return tmp_path


def test_an_object_of_the_user_s_own_class_is_called_as_a_function(here: Path) -> None:
    made = retrieval_gate.run(LookAlike(), snapshot=here / "snapshot.json",
                              output=here / "run.jsonl", commit="none")
    assert [i["id"] for i in lines(made)[0]["items"]] == RANKED["q1"]


def test_id_key_is_refused_for_a_function_or_an_endpoint(here: Path) -> None:
    name = module(here)
    for target in (f"{name}:search", "http://127.0.0.1:9/search"):
        code, _, err = gate("run", "--snapshot", here / "snapshot.json", "--retriever", target,
                            "--id-key", "chunk_id", "-o", here / "run.jsonl")
        assert code == 2 and err.startswith("error: --id-key: applies to a library's retriever "
                                            "object only"), err
    code, _, err = gate("run", "--snapshot", here / "snapshot.json", "--retriever",
                        f"{name}:search", "--id-key", "", "-o", here / "run.jsonl")
    assert code == 2 and "--id-key: '' is not a key of 1 to 200 characters" in err
    assert not (here / "run.jsonl").exists() and not (here / "run.jsonl.journal").exists()


@pytest.mark.parametrize("library", LIBRARIES)
def test_the_gate_imports_no_library_for_a_function(here: Path, library: str) -> None:
    """Importing the gate and its adapters, and running a function, imports none of the
    libraries: a test that tells where they are installed (the runners extra; CI's runners
    job runs this file too)."""
    name = module(here)
    code = ("import retrieval_gate, retrieval_gate.runner.adapters\n"
            f"retrieval_gate.run('{name}:search', snapshot='snapshot.json', output='run.jsonl', "
            "commit='none')")
    assert imported_by(code, LIBRARIES) == []
