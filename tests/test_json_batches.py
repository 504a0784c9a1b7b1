"""JSON Lines read a batch at a time: the same objects, lines, places and errors as the whole
file read at once, wherever the batches are cut; and a corpus read that way."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from retrieval_gate.core.errors import InputError
from retrieval_gate.formats.corpus import document_texts, read_chunk_table, read_corpus
from retrieval_gate.formats.jsonfmt import json_line_batches, json_lines
from retrieval_gate.formats.source import Blob

LINES = [b'{"id": "a", "text": "x"}', b"", b'  {"id": "b"}\r', b"\t", b'{"id": "c\\u00e9"}',
         '{"id": "\u00e9", "text": "\u2028y"}'.encode(), b'{"id": "e"}']


def _batches(data: bytes, size: int) -> list[tuple[int, dict, int]]:
    return [(n, obj, int(place)) for batch in json_line_batches(Blob("f.jsonl", data), size)
            for n, obj, place in zip(batch.numbers, batch.objects, batch.starts)]


@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"])
@pytest.mark.parametrize("size", [1, 7, 30, 64, 1 << 20])
def test_batches_read_what_the_whole_file_reads_wherever_they_are_cut(bom, size):
    data = bom + b"\n".join(LINES) + b"\n"
    whole = list(json_lines(Blob("f.jsonl", data).text(), "f.jsonl"))
    got = _batches(data, size)
    assert [(n, obj) for n, obj, _ in got] == whole
    for n, obj, place in got:  # each place is where its line starts
        line = data[place:].split(b"\n", 1)[0]
        assert json.loads(line) == obj and data[:place].count(b"\n") + 1 == n


@pytest.mark.parametrize("bad, problem", [
    (b'{"id": "\xff"}', "invalid UTF-8"),
    (b'{"id": "x"}\r{"id": "y"}', "carriage return"),
    (b"[" * 200 + b"]" * 200, "nest deeper"),
    (b'{"a": ' + b"[" * 100 + b"]" * 100 + b"}", "nest deeper"),  # parsed, then measured
    (b'{"a": ' + b"[" * 5000 + b"]" * 5000 + b"}", "nest deeper"),  # too deep to parse
    (b'{"id": 1, "id": 2}', "appears twice"),
    (b'{"id": "x"', "invalid JSON"),
    (b"[1]", "not a JSON object"),
    (b'{"id": "x"}, {"id": "y"}\n{"id": "z", "n": [1\n2]}', "Extra data"),  # 2 lines, 2 objects
])
@pytest.mark.parametrize("size", [1, 40, 1 << 20])
def test_an_error_names_its_line_in_the_file_in_every_batch(bad, problem, size):
    data = b'{"id": "a"}\n\n{"id": "b"}\n' * 3 + bad + b'\n{"id": "z"}\n'
    with pytest.raises(InputError, match=problem) as caught:
        _batches(data, size)
    assert caught.value.where == 10


def test_nesting_up_to_the_limit_is_read_and_brackets_in_strings_do_not_count():
    line = b'{"a": "[[[{{{", "b": ' + b"[" * 99 + b"]" * 99 + b"}"
    assert [n for n, _, _ in _batches(line + b"\n" + line + b"\n", 1 << 20)] == [1, 2]


def test_a_corpus_read_in_batches_keeps_each_documents_place_and_text(tmp_path, monkeypatch):
    monkeypatch.setattr("retrieval_gate.formats.jsonfmt.BATCH_BYTES", 64)
    docs = [{"id": f"d{i}", "text": "\u00e9" * i + "\n" * (i % 2)} for i in range(40)]
    path = tmp_path / "corpus.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + "\n\n".join(json.dumps(d) for d in docs).encode())
    corpus = read_corpus(path)
    assert sorted(corpus.ids.tolist()) == sorted(d["id"].encode() for d in docs)
    blob = Blob("corpus.jsonl", path.read_bytes())
    texts = document_texts(corpus, blob, ["d3", "d39", "nowhere"])
    assert texts == {"d3": docs[3]["text"], "d39": docs[39]["text"]}
    lengths = dict(zip(corpus.ids.tolist(), corpus.lengths.tolist()))
    assert all(lengths[d["id"].encode()] == len(d["text"]) for d in docs)


def test_a_corpus_document_given_twice_is_named_at_its_lines_across_batches(tmp_path,
                                                                            monkeypatch):
    monkeypatch.setattr("retrieval_gate.formats.jsonfmt.BATCH_BYTES", 32)
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": "t"}) + "\n"
                            for i in ["a", "b", "c", "b", "d"]))
    with pytest.raises(InputError, match=r"document 'b' is listed twice \(also line 2\)") as caught:
        read_corpus(path)
    assert caught.value.where == 4


def test_parsing_a_corpus_adds_its_size_and_a_batch_at_most(tmp_path):
    """10⁵ documents (31 MB): what parsing adds to the peak resident memory of a process that
    has imported the reader stays within the file's size plus 48 MiB for the batch being
    parsed (about 56 MB here; the whole text and its objects at once took 228 MB; the 1 GB
    measurement is benchmarks/corpus_scale.py)."""
    path = tmp_path / "corpus.jsonl"
    text = "w" * 280
    path.write_text("".join(f'{{"id": "p{i}", "text": "{text}"}}\n' for i in range(100_000)))
    probe = ("import resource, sys\nfrom retrieval_gate.formats.corpus import read_corpus\n"
             "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
             "assert len(read_corpus(sys.argv[1]).ids) == 100_000\n"
             "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)\n")
    done = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True,
                          text=True, env={**os.environ, "RETRIEVAL_GATE_CACHE": "off"},
                          check=True)
    added = int(done.stdout) * 1024
    assert added <= path.stat().st_size + 48 * 2**20, (added, path.stat().st_size)


def test_a_chunk_table_of_no_line_but_a_byte_order_mark_is_an_empty_table(tmp_path):
    path = tmp_path / "chunks.jsonl"
    path.write_bytes(b"\xef\xbb\xbf\n")
    table = read_chunk_table(path)
    assert len(table.ids) == len(table.start) == len(table.lines) == 0


def test_a_chunk_table_read_in_batches_keeps_every_chunk_and_its_line(tmp_path, monkeypatch):
    monkeypatch.setattr("retrieval_gate.formats.jsonfmt.BATCH_BYTES", 50)
    path = tmp_path / "chunks.jsonl"
    rows = [{"id": f"d{i}#{j}", "doc_id": f"d{i}" * (i + 1), "start": j, "end": j + 5}
            for i in range(5) for j in range(3)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    table = read_chunk_table(path)
    assert [i.decode() for i in table.ids] == [r["id"] for r in rows]
    assert [d.decode() for d in table.doc] == [r["doc_id"] for r in rows]
    assert table.lines.tolist() == list(range(1, 16)) and table.tokens.tolist() == [-1] * 15


def test_a_text_is_read_only_from_the_line_of_its_own_document(tmp_path):
    """A place that does not lead to the document's own line (a corpus changed after it was
    read) gives no text rather than another document's, and no error."""
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"id": "a", "text": "A"}\n{"id": "b", "text": "B"}\n')
    corpus = read_corpus(path)
    blob = Blob("corpus.jsonl", path.read_bytes())
    assert document_texts(corpus, blob, ["a", "b"]) == {"a": "A", "b": "B"}
    swapped = blob.data.replace(b'"a"', b'"x"').replace(b'"b", "text"', b'"a", "text"')
    assert document_texts(corpus, Blob("corpus.jsonl", swapped), ["a", "b"]) == {}
    shifted = Blob("corpus.jsonl", b"not json\n" + blob.data)
    assert document_texts(corpus, shifted, ["a", "b"]) == {}
