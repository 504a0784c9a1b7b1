"""``gate chunks locate``: a chunk table of texts becomes one of places — checked by hand, by
the pydoc example's own table (its texts cut from the corpus, located again), by a plain
whitespace chunker, and on what cannot be placed. (LangChain's and LlamaIndex's splitters,
whose own offsets are the oracle, are in ``test_run_langchain.py`` and
``test_run_llamaindex.py``: they need the runners extra.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import ROOT, gate

from retrieval_gate.formats.corpus import read_chunk_table

PYDOC = ROOT / "examples" / "pydoc"
CORPUS = {"d1": "Alpha beta.\nGamma delta. Alpha beta.\nEnd.", "d2": "x y z"}


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows),
                    encoding="utf-8")
    return path


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return write(tmp_path / "corpus.jsonl", [{"id": d, "text": t} for d, t in CORPUS.items()])


def test_each_chunk_is_found_exactly_loosely_or_by_order(tmp_path: Path, corpus: Path) -> None:
    table = write(tmp_path / "text.jsonl", [
        {"id": "d1#0", "doc_id": "d1", "text": "Alpha beta.", "meta": {"page": 1}},
        {"id": "d1#1", "doc_id": "d1", "text": "Gamma delta. Alpha beta."},
        {"id": "d1#2", "doc_id": "d1", "text": "Alpha beta. End."},
        {"id": "d2#0", "doc_id": "d2", "text": "x y z", "tokens": 3}])
    code, out, err = gate("chunks", "locate", "--chunks", table, "--corpus", corpus, "-o",
                          tmp_path / "table.jsonl")
    assert code == 0, err
    assert out == (f"4 chunks of 2 documents located → {tmp_path / 'table.jsonl'}: 3 exactly, "
                   "1 with white space read loosely\n")
    # by hand: "Alpha beta." is at 0 and at 25, the first chunk of d1 takes 0; "Alpha beta.
    # End." is at 25 with a line break for the space, after the second chunk starts (12)
    assert lines(tmp_path / "table.jsonl") == [
        {"id": "d1#0", "doc_id": "d1", "start": 0, "end": 11},
        {"id": "d1#1", "doc_id": "d1", "start": 12, "end": 36},
        {"id": "d1#2", "doc_id": "d1", "start": 25, "end": 41},
        {"id": "d2#0", "doc_id": "d2", "start": 0, "end": 5, "tokens": 3}]
    read = read_chunk_table(tmp_path / "table.jsonl")  # the gate's own reader takes it
    assert read.start.tolist() == [0, 12, 25, 0] and read.tokens.tolist() == [-1, -1, -1, 3]


def test_the_pydoc_table_is_found_again_from_its_texts(tmp_path: Path) -> None:
    """The shipped 300-token table, its offsets dropped and its texts cut from the corpus:
    located, the same table; with each text's white space collapsed to one space, the same
    places less any white space a chunk begins or ends with."""
    texts = {d["id"]: d["text"] for d in lines(PYDOC / "corpus.jsonl")}
    table = lines(PYDOC / "chunks-300.jsonl")
    cut = [{"id": c["id"], "doc_id": c["doc_id"], "tokens": c["tokens"],
            "text": texts[c["doc_id"]][c["start"]:c["end"]]} for c in table]
    code, out, err = gate("chunks", "locate", "--chunks", write(tmp_path / "cut.jsonl", cut),
                          "--corpus", PYDOC / "corpus.jsonl", "-o", tmp_path / "exact.jsonl")
    assert code == 0, err
    assert lines(tmp_path / "exact.jsonl") == [
        {k: c[k] for k in ("id", "doc_id", "start", "end", "tokens")} for c in table]
    assert f"{len(table):,} chunks of " in out and ", 0 with white space read loosely" in out
    squeezed = [{**c, "text": " ".join(c["text"].split())} for c in cut]
    code, out, err = gate("chunks", "locate", "--chunks", write(tmp_path / "sq.jsonl", squeezed),
                          "--corpus", PYDOC / "corpus.jsonl", "-o", tmp_path / "loose.jsonl")
    assert code == 0, err
    expected = []
    for c in table:
        text = texts[c["doc_id"]][c["start"]:c["end"]]
        lead, trail = len(text) - len(text.lstrip()), len(text) - len(text.rstrip())
        expected.append((c["start"] + lead, c["end"] - trail))
    assert [(c["start"], c["end"]) for c in lines(tmp_path / "loose.jsonl")] == expected


def test_a_whitespace_chunker_s_chunks_are_located_where_it_cut_them(tmp_path: Path) -> None:
    """Eight words a chunk, four shared with the next (what a plain chunker writes: words
    joined by one space), over pydoc documents and one of a passage repeated beyond a
    chunk's reach: every chunk located at the place of its first and last word, as the
    chunker cut it."""
    texts = {d["id"]: d["text"] for d in lines(PYDOC / "corpus.jsonl")[:12]}
    texts["echo"] = " ".join(["one two three four five six seven eight nine ten"] * 3)
    corpus = write(tmp_path / "corpus.jsonl", [{"id": d, "text": t} for d, t in texts.items()])
    chunks, truth = [], []
    for doc, text in texts.items():
        words = list(re.finditer(r"\S+", text))
        for i in range(0, max(len(words) - 4, 1), 4):
            part = words[i:i + 8]
            chunks.append({"id": f"{doc}#{i}", "doc_id": doc,
                           "text": " ".join(w.group() for w in part)})
            truth.append((part[0].start(), part[-1].end()))
    code, _, err = gate("chunks", "locate", "--chunks", write(tmp_path / "w.jsonl", chunks),
                        "--corpus", corpus, "-o", tmp_path / "table.jsonl")
    assert code == 0, err
    located = lines(tmp_path / "table.jsonl")
    assert [c["id"] for c in located] == [c["id"] for c in chunks]
    assert [(c["start"], c["end"]) for c in located] == truth


def test_a_repeated_text_is_placed_after_the_previous_chunk_of_its_document() -> None:
    """The order rule, by hand: a chunk starts after the previous one starts and ends after
    it ends — not inside it, not before it."""
    from retrieval_gate.commands.locate_chunks import _place

    assert _place("ab ab", "ab ab ab", None) == ((0, 5), "exact")
    assert _place("ab", "ab ab ab", (0, 5)) == ((6, 8), "exact")  # not 3:5, inside 0:5
    assert _place("ab ab", "ab ab ab", (0, 5)) == ((3, 8), "exact")  # overlapping it
    text = "Returns None.\nSee also.\nReturns  None."
    assert _place("Returns None.", text, (14, 23)) == ((24, 38), "loose")  # not 0:13
    assert _place("See also.", text, (24, 38))[1].startswith("out of order")
    assert _place("A B", "A B A B A B", (0, 3)) == ((4, 7), "exact")  # next to it, not 8
    assert _place("A B", "A B. A B", (0, 3)) == ((5, 8), "exact")  # after a dropped "."
    assert _place("ab ab ab", "ab ab ab ab ab ab", (0, 8))[1].startswith("ambiguous")


@pytest.mark.parametrize(("rows", "said"), [
    ([{"id": "a", "doc_id": "d1", "text": "Gamma delta."},
      {"id": "b", "doc_id": "d1", "text": "Alpha beta."},
      {"id": "c", "doc_id": "d1", "text": "Alpha beta."}],
     ("t.jsonl:3: 1 of 3 chunks cannot be placed (0 absent, 0 ambiguous, 1 out of order): "
      "'c' (line 3) of "
      "'d1' is out of order: its document holds its text only before the previous chunk of the "
      "table ends — give each chunk's text as the splitter cut it")),
    ([{"id": "a", "doc_id": "d9", "text": "x"}, {"id": "b", "doc_id": "d2", "text": "x q"}],
     ("t.jsonl:1: 2 of 2 chunks cannot be placed (2 absent, 0 ambiguous, 0 out of order): "
      "'a' (line 1) of "
      "'d9' is absent: its document is not in the corpus; 'b' (line 2) of 'd2' is absent: its "
      "text is not in its document, even with white space read loosely")),
    ([{"id": "a", "doc_id": "d1", "text": "  "}], "t.jsonl:1: chunk 'a' has no text"),
    ([{"id": "a", "doc_id": "d1", "text": "End."}, {"id": "a", "doc_id": "d2", "text": "x"}],
     "t.jsonl:2: chunk 'a' is listed twice (also line 1)"),
    ([{"id": "a", "text": "End."}], "t.jsonl:1: doc_id null is not a non-empty string"),
])
def test_what_cannot_be_placed_is_refused_and_nothing_written(tmp_path: Path, corpus: Path,
                                                              monkeypatch, rows, said) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "t.jsonl", rows)
    code, out, err = gate("chunks", "locate", "--chunks", "t.jsonl", "--corpus", corpus, "-o",
                          "out.jsonl")
    assert code == 2 and err.startswith(f"error: {said}"), err
    assert not (tmp_path / "out.jsonl").exists() and out == ""


def test_a_table_of_texts_given_as_a_chunk_table_says_how_to_locate_it(tmp_path: Path,
                                                                       monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "text.jsonl", [{"id": "p#0", "doc_id": "p", "text": "x"}])
    code, _, err = gate("run-manifest", "--snapshot", PYDOC / "snapshot.json", "--run",
                        PYDOC / "runs" / "bm25-200.trec", "--chunks", "text.jsonl",
                        "--chunking-version", "v", "-o", "m.json")
    assert code == 2 and err == (
        "error: text.jsonl:1: the chunk has its text but no place (start, end) — find each "
        "chunk in its document first: gate chunks locate --chunks text.jsonl --corpus CORPUS "
        "-o TABLE\n")
    code, _, err = gate("chunks", "locate", "--chunks", "text.jsonl", "--corpus",
                        "text.jsonl", "-o", "text.jsonl")
    assert code == 2 and "text.jsonl: is also an input of the location" in err


def test_a_placed_table_or_a_corpus_without_text_says_so(tmp_path: Path, corpus: Path,
                                                         monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "placed.jsonl", [{"id": "a", "doc_id": "d1", "start": 0, "end": 3}])
    code, _, err = gate("chunks", "locate", "--chunks", "placed.jsonl", "--corpus", corpus,
                        "-o", "out.jsonl")
    assert code == 2 and err.startswith("error: placed.jsonl:1: chunk 'a' has its place "
                                        "already (start, end): the file is a chunk table")
    (tmp_path / "ids.txt").write_text("d1\nd2\n")
    write(tmp_path / "t.jsonl", [{"id": "a", "doc_id": "d1", "text": "End."}])
    code, _, err = gate("chunks", "locate", "--chunks", "t.jsonl", "--corpus", "ids.txt", "-o",
                        "out.jsonl")
    assert code == 2 and err.startswith("error: ids.txt: has no text (a list of document ids)")
    assert not (tmp_path / "out.jsonl").exists()
