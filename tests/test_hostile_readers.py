"""Hostile input to the readers, through the real ``gate`` command: every file is either read
correctly or refused with one ``error: FILE:PLACE: problem — fix`` line and exit 2 — never an
internal error (exit 70), a traceback or a stall."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import BASELINE, CRANFIELD, gate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retrieval_gate.core.errors import InputError
from retrieval_gate.core.limits import MAX_CUTOFF, MAX_GRADE, MAX_ID_BYTES, MAX_JSON_DEPTH
from retrieval_gate.formats import read_run

QRELS = "q1 0 d1 2\nq1 0 d2 0\nq2 0 d3 1\n"
RUN = "q1 Q0 d1 1 3.0 t\nq1 Q0 d2 2 2.0 t\nq2 Q0 d3 1 1.0 t\n"
QUERIES = '{"id": "q1", "text": "refund policy"}\n{"id": "q2", "text": "rate limits"}\n'


def refused(result: tuple[int, str, str], file: Path | str, place: str, problem: str) -> None:
    """Exit 2 and exactly one ``error: FILE:PLACE: ...`` line naming the problem."""
    code, out, err = result
    assert code == 2, (out, err)
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"error: {file}:{place}: "), err
    assert problem in err, err


def write(path: Path, content: str | bytes) -> Path:
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    return path


@pytest.fixture
def testset(tmp_path: Path) -> Path:
    """A frozen snapshot of two queries with a run and its manifest (``run.trec``)."""
    write(tmp_path / "queries.jsonl", QUERIES)
    write(tmp_path / "qrels.tsv", QRELS)
    write(tmp_path / "run.trec", RUN)
    code, _, err = gate("snapshot", "freeze", "--queries", tmp_path / "queries.jsonl",
                        "--qrels", tmp_path / "qrels.tsv", "--corpus-version", "c",
                        "--chunking-version", "w", "--permissions-version", "p",
                        "-o", tmp_path / "snapshot.json")
    assert code == 0, err
    code, _, err = gate("run-manifest", "--snapshot", tmp_path / "snapshot.json", "--run",
                        tmp_path / "run.trec", "--chunking-version", "w", "--commit", "abc",
                        "--created",
                        "2026-11-30T00:00:00Z")
    assert code == 0, err
    return tmp_path


def pin(folder: Path, component: str) -> None:
    """Re-pin a snapshot component's file to its current content (a deliberate new version)."""
    manifest = folder / "snapshot.json"
    document = json.loads(manifest.read_text())
    data = (folder / document[component]["path"]).read_bytes()
    document[component]["sha256"] = hashlib.sha256(data).hexdigest()
    manifest.write_text(json.dumps(document))


# -- 1. nesting depth ------------------------------------------------------------------------

def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("kind", ["run.json", "qrels.json", "fixture.json", "doc-map.json",
                                  "queries.jsonl", "run.jsonl"])
def test_deep_json_in_score_inputs_is_refused(tmp_path, kind):
    deep = nested(5000)
    qrels, run = write(tmp_path / "qrels.tsv", QRELS), write(tmp_path / "run.trec", RUN)
    bad = tmp_path / kind
    if kind == "run.json":
        args = (qrels, write(bad, deep))
    elif kind == "qrels.json":
        args = (write(bad, f'{{"q1": {deep}}}'), run)
    elif kind == "fixture.json":
        args = (write(bad, f'{{"qrels": {{"q1": ["d1"]}}, "runs": {deep}}}'),)
    elif kind == "doc-map.json":
        args = (qrels, run, "--doc-map", write(bad, f'{{"d1": {deep}}}'))
    elif kind == "queries.jsonl":
        args = (qrels, run, "--queries", write(bad, QUERIES + f'{{"id": {deep}}}\n'))
    else:
        args = (qrels, write(bad, '{"query_id": "q1", "items": []}\n' + deep + "\n"))
    line = 3 if kind == "queries.jsonl" else 2 if kind == "run.jsonl" else 1
    refused(gate("score", *args), bad, str(line), f"nest deeper than {MAX_JSON_DEPTH} levels")


def test_brackets_inside_strings_do_not_count_as_nesting(tmp_path):
    text = "[" * 300 + '\\"{' * 300
    queries = write(tmp_path / "queries.jsonl", QUERIES.replace("rate limits", text))
    code, _, err = gate("score", write(tmp_path / "q.tsv", QRELS),
                          write(tmp_path / "r.trec", RUN), "--queries", queries)
    assert code == 0, err


def deepest(text: str) -> tuple[int, int]:
    """The reference for the depth scan, one character at a time: the deepest nesting outside
    strings and the line where it first exceeds the limit (0 when it does not). A string ends
    at an unescaped quote or at the end of its line; outside strings a run of backslashes
    escapes a quote as well (the parser stops at the first backslash there anyway)."""
    depth = best = 0
    line, over = 1, 0
    inside = escape = False
    for char in text:
        if char == "\n":
            line, inside, escape = line + 1, False, False
        elif char == "\\":
            escape = not escape
        else:
            if char == '"' and not escape:
                inside = not inside
            elif not inside and char in "[{":
                depth += 1
                best = max(best, depth)
                over = over or (line if depth > MAX_JSON_DEPTH else 0)
            elif not inside and char in "]}":
                depth -= 1
            escape = False
    return best, over


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pieces=st.lists(st.sampled_from(["[", "]", "{", "}", '"', "\\", "\n", "a", ",", "é",
                                        "[" * 40, "]" * 40, '"[[[[', '\\"', "\\\\\""]),
                       max_size=60),
       chunk=st.sampled_from([1, 2, 3, 7, 64, 1 << 22]))
def test_the_depth_scan_agrees_with_a_scan_one_character_at_a_time(monkeypatch, pieces, chunk):
    """The vectorised scan, in chunks as small as one byte (a chunk may end inside a string or
    a run of backslashes), refuses exactly the texts the reference does, naming its line."""
    from retrieval_gate.formats import jsonfmt

    monkeypatch.setattr(jsonfmt, "_DEPTH_CHUNK", chunk)
    text = "".join(pieces)
    _, over = deepest(text)
    if not over:
        jsonfmt.check_depth(text, "t.json")
        return
    with pytest.raises(InputError) as refused_:
        jsonfmt.check_depth(text, "t.json")
    assert refused_.value.where == over


def test_deep_json_in_manifests_is_refused(testset):
    snapshot, manifest = testset / "snapshot.json", testset / "run.trec.manifest.json"
    document = json.loads(manifest.read_text())
    good = manifest.read_text()
    manifest.write_text(json.dumps(document, indent=1).replace('"system": {}',
                                                               f'"system": {{"x": {nested(2000)}}}'))
    line = manifest.read_text().splitlines().index(
        next(s for s in manifest.read_text().splitlines() if '"system"' in s)) + 1
    refused(gate("validate", snapshot, testset / "run.trec"), manifest, str(line), "nest deeper")
    manifest.write_text(good)
    snapshot.write_text(snapshot.read_text().replace('"params": {}', f'"params": {nested(2000)}'))
    code, _, err = gate("validate", snapshot)
    assert code == 2 and "nest deeper" in err and err.startswith(f"error: {snapshot}:")


def test_nesting_at_the_limit_is_read_validated_and_reported(testset):
    """A free-form system description nested just under the limit: schema validation, the
    report's JSON and the scoring all work on it; in a place that must be a scalar, the schema
    error is a clean exit 2."""
    manifest, snapshot = testset / "run.trec.manifest.json", testset / "snapshot.json"
    value = nested(MAX_JSON_DEPTH - 2)  # inside the document's object and "system"
    manifest.write_text(manifest.read_text().replace('"system": {}', f'"system": {{"x": {value}}}'))
    code, out, err = gate("validate", snapshot, testset / "run.trec")
    assert code == 0 and "run.trec: valid" in out, err
    code, out, err = gate("check", "--snapshot", snapshot, "--baseline", testset / "run.trec",
                          "--candidate", testset / "run.trec", "--output-format", "json")
    assert code == 0, err
    assert json.loads(out)["candidate"]["system"] == {"x": json.loads(value)}
    value = nested(MAX_JSON_DEPTH - 3)  # inside the document, "chunking" and "params"
    snapshot.write_text(snapshot.read_text().replace('"params": {}', f'"params": {{"x": {value}}}'))
    code, _, err = gate("validate", snapshot)
    assert code == 2 and err.count("\n") == 1 and "is not a string or a number" in err


# -- 2. numbers ------------------------------------------------------------------------------

def test_json_integer_of_5000_digits(tmp_path):
    bad = write(tmp_path / "run.json", '{"q1": {"d1": 1' + "0" * 5000 + "}}")
    refused(gate("score", write(tmp_path / "q.tsv", QRELS), bad), bad, "1", "5001 digits")


def test_json_score_of_400_digits_is_not_a_float64(tmp_path):
    bad = write(tmp_path / "run.json", '{"q1": {"d1": 1' + "0" * 400 + "}}")
    refused(gate("score", write(tmp_path / "q.tsv", QRELS), bad), bad, '$["q1"]["d1"]',
            "not a finite float64")
    bad = write(tmp_path / "run.json", '{"q1": {"d1": 1e400}}')
    refused(gate("score", tmp_path / "q.tsv", bad), bad, "1", "beyond the range of a float64")


@pytest.mark.parametrize("grade", ["1" + "0" * 5000, str(2**63), str(MAX_GRADE + 1), "-101"])
@pytest.mark.parametrize("fmt", ["trec", "json", "jsonl"])
def test_grades_outside_the_range_are_refused_in_every_format(tmp_path, grade, fmt):
    qrels = {"trec": f"q1 0 d1 {grade}\n", "json": f'{{"q1": {{"d1": {grade}}}}}',
             "jsonl": f'{{"query_id": "q1", "doc_id": "d1", "grade": {grade}}}\n'}[fmt]
    bad = write(tmp_path / f"qrels.{fmt}", qrels)
    huge = len(grade) > 4300 and fmt != "trec"  # refused as a number, where it is parsed
    place = '$["q1"]["d1"]' if fmt == "json" and not huge else "1"
    problem = "5001 digits" if huge else "is outside -100..100"
    refused(gate("score", bad, write(tmp_path / "r.trec", RUN), "--missing", "zero",
                 "--extra", "ignore"), bad, place, problem)


def test_the_grade_rule_is_the_same_for_every_command(testset, tmp_path):
    """A snapshot whose judgments hold a grade above 2^63 once crashed `gate score` and
    `gate run-manifest` while `gate validate`, `gate check` and `gate baseline approve`
    accepted it: every command now refuses it the same way."""
    qrels = write(testset / "qrels.tsv", QRELS + f"q2 0 d4 {2**63}\n")
    pin(testset, "qrels")
    snapshot, run = testset / "snapshot.json", testset / "run.trec"
    for args in (("score", qrels, run),
                 ("validate", snapshot),
                 ("run-manifest", "--snapshot", snapshot, "--run", run),
                 ("check", "--snapshot", snapshot, "--baseline", run, "--candidate", run),
                 ("baseline", "approve", "--snapshot", snapshot, "--candidate", run,
                  "--to", tmp_path / "baseline")):
        refused(gate(*args), qrels, "4", f"grade {2**63} is outside")


def test_exponential_gain_at_the_largest_grade_stays_finite(tmp_path):
    qrels = write(tmp_path / "q.tsv", f"q1 0 d1 {MAX_GRADE}\nq1 0 d2 {MAX_GRADE}\nq1 0 d3 1\n")
    run = write(tmp_path / "r.trec", "q1 Q0 d3 1 3 t\nq1 Q0 d1 2 2 t\nq1 Q0 d2 3 1 t\n")
    code, out, err = gate("score", qrels, run, "-m", "nDCG@3", "--output-format", "json")
    assert code == 0, err
    value = json.loads(out)["per_query"]["q1"]["nDCG@3"]
    assert 0 < value < 1 and np.isfinite(value)


def test_cutoff_above_the_maximum(tmp_path):
    qrels, run = write(tmp_path / "q.tsv", QRELS), write(tmp_path / "r.trec", RUN)
    for k in ("999999999999999999999", "9" * 5000, str(MAX_CUTOFF + 1)):
        code, _, err = gate("score", qrels, run, "-m", f"nDCG@{k}")
        assert code == 2 and err.count("\n") == 1
        assert f"is not a positive integer up to {MAX_CUTOFF:,}" in err
    code, _, err = gate("score", qrels, run, "-m", f"nDCG@{MAX_CUTOFF}")
    assert code == 0, err


@pytest.mark.parametrize("score", ["1_000", "0x1p3", "1.5f", "--1", "1e5e5", "١"])
def test_scores_that_are_not_plain_numbers(tmp_path, score):
    """Python's float() takes underscores (and other digits); trec_eval reads 1 from 1_000:
    neither is a plain number, so both readers refuse it."""
    bad = write(tmp_path / "r.trec", RUN + f"q2 Q0 d9 2 {score} t\n")
    refused(gate("score", write(tmp_path / "q.tsv", QRELS), bad), bad, "4", "is not a number")


@pytest.mark.parametrize("score,value", [("1e5", 1e5), ("+.5", 0.5), ("5.", 5.0),
                                         ("-1.5E-3", -1.5e-3), ("0." + "3" * 60, 1 / 3)])
def test_plain_and_scientific_scores_are_read(tmp_path, score, value):
    run = read_run(write(tmp_path / "r.trec", f"q1 Q0 d1 1 {score} t\n"))
    assert run.scores.tolist() == [value]


def test_non_finite_scores(tmp_path):
    for score in ("nan", "-Infinity", "1e400", "9" * 400):
        bad = write(tmp_path / "r.trec", f"q1 Q0 d1 1 {score} t\n")
        refused(gate("score", write(tmp_path / "q.tsv", QRELS), bad), bad, "1", "not finite")


# -- 3. lone surrogates and undecodable bytes ------------------------------------------------

@pytest.mark.parametrize("kind", ["run.json", "qrels.json", "queries.jsonl"])
def test_lone_surrogates_in_json_are_refused_with_their_path(tmp_path, kind):
    qrels, run = write(tmp_path / "q.tsv", QRELS), write(tmp_path / "r.trec", RUN)
    if kind == "run.json":
        bad = write(tmp_path / kind, '{"q1": {"d1": 1.0, "\\udc80x": 2.0}}')
        args, place = (qrels, bad), '$["q1"]["\\udc80x"]'
    elif kind == "qrels.json":
        bad = write(tmp_path / kind, '{"q1\\ud800": ["d1"]}')
        args, place = (bad, run), '$["q1\\ud800"]'
    else:
        bad = write(tmp_path / kind, QUERIES.replace("rate limits", "rate \\uDBFF limits"))
        args, place = (qrels, run, "--queries", bad), "2"
    refused(gate("score", *args), bad, place, "lone surrogate")


def test_surrogate_pairs_are_text(tmp_path):
    run = write(tmp_path / "r.json", '{"q1": {"d\\ud83d\\ude00": 1.0}}')
    assert read_run(run).items.tolist() == ["d😀".encode()]


def test_lone_surrogates_in_manifests(testset):
    manifest = testset / "run.trec.manifest.json"
    manifest.write_text(manifest.read_text().replace('"system": {}',
                                                     '"system": {"k": "\\udcff"}'))
    refused(gate("validate", testset / "snapshot.json", testset / "run.trec"), manifest,
            '$["system"]["k"]', "lone surrogate")
    snapshot = testset / "snapshot.json"
    snapshot.write_text(snapshot.read_text().replace('"params": {}', '"params": {"\\ud800": 1}'))
    refused(gate("validate", snapshot), snapshot, '$["chunking"]["params"]["\\ud800"]',
            "lone surrogate")


def test_command_line_values_that_are_not_utf8(testset):
    """Click hands bytes that are not UTF-8 over as lone surrogates (here written directly)."""
    code, _, err = gate("run-manifest", "--snapshot", testset / "snapshot.json", "--run",
                        testset / "run.trec", "--system", "k=\udcff")
    assert code == 2 and err == "error: --system: 'k=\\xff' is not UTF-8 text — give keys and " \
                                "values as UTF-8 text\n"
    code, _, err = gate("snapshot", "freeze", "--queries", testset / "queries.jsonl", "--qrels",
                        testset / "qrels.tsv", "--corpus-version", "c", "--chunking-version", "w",
                        "--permissions-version", "p", "--chunking-param", "\udcff=1",
                        "-o", testset / "s2.json")
    assert code == 2 and "--chunking-param" in err and not (testset / "s2.json").exists()


def run_gate(*args: str | bytes | Path, cwd: Path) -> subprocess.CompletedProcess:
    """The installed command as a user runs it (bytes arguments reach it unchanged)."""
    return subprocess.run([sys.executable, "-m", "retrieval_gate", *args], cwd=cwd,
                          capture_output=True, timeout=120, check=False)


def test_undecodable_bytes_in_arguments_and_paths(testset):
    """Real processes: an argument that is not UTF-8, and a run whose file name is not, through
    run-manifest, validate, score and check with report files."""
    done = run_gate("run-manifest", "--snapshot", "snapshot.json", "--run", "run.trec",
                    "--system", b"k=\xff", cwd=testset)
    assert done.returncode == 2 and b"'k=\\xff' is not UTF-8 text" in done.stderr
    odd = os.fsencode(testset) + b"/r\xff.trec"
    Path(os.fsdecode(odd)).write_text(RUN)
    done = run_gate("run-manifest", "--snapshot", "snapshot.json", "--run", odd,
                    "--chunking-version", "w", cwd=testset)
    assert done.returncode == 0, done.stderr
    done = run_gate("validate", "snapshot.json", odd, cwd=testset)
    assert done.returncode == 0 and b"r\\xff.trec: valid" in done.stdout, done.stderr
    done = run_gate("check", "--snapshot", "snapshot.json", "--baseline", "run.trec",
                    "--candidate", odd, "--json", "out.json", "--markdown", "out.md", cwd=testset)
    assert done.returncode == 0, done.stderr
    assert json.loads((testset / "out.json").read_text())["candidate"]["path"].endswith(
        "r\\xff.trec")
    done = run_gate("score", "qrels.tsv", odd, "-o", "scores.txt", cwd=testset)
    assert done.returncode == 0 and "r\\xff.trec" in (testset / "scores.txt").read_text()
    done = run_gate("score", "qrels.tsv", b"missing\xff.trec", cwd=testset)
    assert done.returncode == 2 and done.stderr == (b"error: missing\\xff.trec: file not found "
                                                    b"\xe2\x80\x94 check the path\n")


# -- 4. long ids -----------------------------------------------------------------------------

def cranfield_with_id(tmp_path: Path, length: int) -> Path:
    lines = BASELINE.read_text().splitlines(keepends=True)
    fields = lines[5].split()
    fields[2] = "x" * length
    lines[5] = " ".join(fields) + "\n"
    return write(tmp_path / f"run{length}.trec", "".join(lines))


@pytest.mark.parametrize("length", [100_000, 1_000_000])
def test_a_long_id_in_a_run_is_refused(tmp_path, length):
    """Once 120 s and 4.4 GB (100 KB) or a MemoryError (1 MB); now refused at once."""
    run = cranfield_with_id(tmp_path, length)
    done = run_gate("score", CRANFIELD / "qrels.tsv", run, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.decode() == (f"error: {run}:6: an id of {length} bytes is longer than "
                                    f"{MAX_ID_BYTES} bytes — shorten the ids (or map long ids "
                                    "to short ones)\n")


def test_a_one_line_10_mb_run_is_refused(tmp_path):
    run = write(tmp_path / "r.trec", "1 Q0 " + "y" * 10_000_000 + " 1 1.0 t\n")
    done = run_gate("score", CRANFIELD / "qrels.tsv", run, cwd=tmp_path)
    assert done.returncode == 2 and b"r.trec:1: an id of 10000000 bytes" in done.stderr


@pytest.mark.parametrize("kind", ["qrels", "doc map", "query id", "json"])
def test_long_ids_are_refused_in_every_reader(tmp_path, kind):
    long = "z" * (MAX_ID_BYTES + 1)
    qrels, run = write(tmp_path / "q.tsv", QRELS), write(tmp_path / "r.trec", RUN)
    if kind == "qrels":
        bad = write(tmp_path / "bad.tsv", QRELS + f"q1 0 {long} 1\n")
        args, place = (bad, run), "4"
    elif kind == "doc map":
        bad = write(tmp_path / "map.tsv", f"d1 {long}\n")
        args, place = (qrels, run, "--doc-map", bad), "1"
    elif kind == "query id":
        bad = write(tmp_path / "bad.trec", RUN + f"{long} Q0 d1 1 1.0 t\n")
        args, place = (qrels, bad), "4"
    else:
        bad = write(tmp_path / "bad.json", f'{{"q1": ["d1", "{long}"]}}')
        args, place = (qrels, bad), '$["q1"][1]'
    refused(gate("score", *args), bad, place, f"longer than {MAX_ID_BYTES} bytes")


def test_ids_at_the_limit_score_as_their_short_names(tmp_path):
    """Ids of the longest length allowed next to one-byte ids (the length-aware hashing and
    gathering path) score exactly as the same run with short ids."""
    long = {f"d{i}": f"d{i}" + "é" * ((MAX_ID_BYTES - 3) // 2) for i in (1, 3)}
    qrels, run = QRELS, RUN + "q2 Q0 e 2 0.5 t\nq2 Q0 f 3 0.5 t\n"
    for short, wide in long.items():
        qrels, run = qrels.replace(f" {short} ", f" {wide} "), run.replace(f" {short} ", f" {wide} ")
    assert max(len(w.encode()) for w in long.values()) <= MAX_ID_BYTES
    results = []
    for name, (q, r) in {"short": (QRELS, RUN + "q2 Q0 e 2 0.5 t\nq2 Q0 f 3 0.5 t\n"),
                         "long": (qrels, run)}.items():
        code, out, err = gate("score", write(tmp_path / f"{name}.tsv", q),
                              write(tmp_path / f"{name}.trec", r), "--output-format", "json")
        assert code == 0, err
        results.append(json.loads(out)["per_query"])
    assert results[0] == results[1]


def test_arrow_reader_leaves_long_ids_to_the_numpy_reader(tmp_path, monkeypatch):
    arrow = pytest.importorskip("retrieval_gate.formats.arrow")
    pytest.importorskip("pyarrow")
    monkeypatch.setattr(arrow, "_MIN_BYTES", 0)
    monkeypatch.delenv("RETRIEVAL_GATE_NO_ARROW", raising=False)
    fine = write(tmp_path / "fine.trec", RUN)
    assert arrow.read_trec_run(fine, "fine.trec", detect=True) is not None
    long = write(tmp_path / "long.trec", RUN + "q2 Q0 " + "z" * (MAX_ID_BYTES + 1) + " 9 1 t\n")
    assert arrow.read_trec_run(long, "long.trec", detect=True) is None
    bom = write(tmp_path / "bom.trec", b"\xef\xbb\xbf" + RUN.encode())
    assert arrow.read_trec_run(bom, "bom.trec", detect=True) is None


def test_length_aware_hashing_equals_hash_ids():
    """One long id among many short ones takes the length-sorted path; hashes and equality of
    neighbours are those of the plain word-by-word computation."""
    from retrieval_gate.core import ranking

    rng = np.random.default_rng(7)
    ids = [bytes(rng.integers(1, 256, size=int(n)).astype(np.uint8))
           for n in rng.integers(1, 12, size=500)]
    ids[100] = b"L" * 1000
    ids[101] = b"L" * 1000
    ids[300] = b"M" * 999
    ids[301] = b"M" * 998 + b"N"
    ids[400:403] = [b"same"] * 3
    data = np.frombuffer(b"".join(ids), dtype=np.uint8)
    lengths = np.array([len(i) for i in ids])
    starts = np.cumsum(lengths) - lengths
    assert np.array_equal(ranking.hash_spans(data, starts, lengths),
                          ranking.hash_ids(np.array(ids, dtype="S")))
    assert ranking.same_as_previous(data, starts, lengths).tolist() == [
        i > 0 and ids[i] == ids[i - 1] for i in range(len(ids))]


# -- 5. valid input once refused or misread --------------------------------------------------

@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\u0085"])
def test_unicode_line_separators_inside_jsonl_strings(tmp_path, separator):
    queries = write(tmp_path / "queries.jsonl", QUERIES.replace("rate limits",
                                                                f"rate{separator}limits"))
    run = write(tmp_path / "run.jsonl", '{"query_id": "q1", "items": [{"id": "d1", "score": 2},'
                f' {{"id": "d{separator}", "score": 1}}]}}\n'
                '{"query_id": "q2", "items": [{"id": "d3", "score": 1}]}\n')
    code, out, err = gate("score", write(tmp_path / "q.tsv", QRELS), run, "--queries", queries,
                          "--output-format", "json")
    assert code == 0, err
    assert json.loads(out)["per_query"]["q1"]["P@10"] == pytest.approx(0.1)


def test_json_with_a_byte_order_mark(tmp_path):
    qrels = write(tmp_path / "q.json", "\ufeff" + '{"q1": {"d1": 2}, "q2": {"d3": 1}}')
    run = write(tmp_path / "r.trec", "\ufeff" + RUN)
    code, out, err = gate("score", qrels, run, "--output-format", "json")
    assert code == 0, err
    assert set(json.loads(out)["per_query"]) == {"q1", "q2"}


@pytest.mark.parametrize("kind", ["run.trec", "qrels.jsonl"])
def test_carriage_return_only_line_ends_are_refused(tmp_path, kind):
    qrels, run = write(tmp_path / "q.tsv", QRELS), write(tmp_path / "r.trec", RUN)
    if kind == "run.trec":
        bad = write(tmp_path / kind, RUN.replace("\n", "\r"))
        args = (qrels, bad)
    else:
        bad = write(tmp_path / kind, '{"query_id": "q1", "doc_id": "d1", "grade": 1}\r'
                                     '{"query_id": "q2", "doc_id": "d3", "grade": 1}\r')
        args = (bad, run)
    refused(gate("score", *args), bad, "1", "a carriage return (\\r) that does not end a line")


def test_crlf_line_ends_are_read(tmp_path):
    qrels = write(tmp_path / "q.tsv", QRELS.replace("\n", "\r\n"))
    run = write(tmp_path / "r.trec", RUN.replace("\n", "\r\n"))
    queries = write(tmp_path / "queries.jsonl", QUERIES.replace("\n", "\r\n"))
    code, _, err = gate("score", qrels, run, "--queries", queries)
    assert code == 0, err


# -- the TREC reader never fails with an internal error --------------------------------------

LINE = st.lists(st.sampled_from(["q1", "q2", "Q0", "d1", "d3", "1", "2.5", "1e3", "-0", "#",
                                 "nan", "1_0", "\t", " ", "\r", "\u2028", "é", "\x00", "1" * 30,
                                 "9" * 400, str(2**63), ""]), max_size=8)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(LINE.map(" ".join), max_size=6), noise=st.binary(max_size=40),
       at=st.integers(0, 400))
def test_trec_reader_never_fails_internally(tmp_path, lines, noise, at):
    """Mutated run and qrels lines with random bytes spliced in: a valid result or exit 2."""
    text = "\n".join(lines).encode("utf-8")
    data = text[:at] + noise + text[at:]
    run, qrels = write(tmp_path / "r.trec", data), write(tmp_path / "q.tsv", data)
    for args in ((write(tmp_path / "good.tsv", QRELS), run), (qrels, write(tmp_path / "g.trec", RUN))):
        code, _, err = gate("score", *args, "--missing", "zero", "--extra", "ignore")
        assert code in (0, 2), err
        assert code == 0 or (err.startswith("error: ") and err.count("\n") == 1), err


def test_a_key_value_option_holding_any_lone_surrogate_is_refused(tmp_path):
    """Not only the \\udc80-\\udcff that stand for undecodable argv bytes: any lone surrogate."""
    from retrieval_gate.cli.options import key_values
    from retrieval_gate.core.errors import InputError

    for pair in ("\ud800=x", "k=\udfff", "k=\udc80"):
        with pytest.raises(InputError, match="is not UTF-8 text"):
            key_values("--system", (pair,))


def test_a_pinned_path_too_long_for_the_system_is_invalid_input_not_an_environment_fault(
        tmp_path):
    snapshot = {"name": "x", "queries": {"path": "a" * 5000, "sha256": "0" * 64, "version": "v"},
                "qrels": {"path": "q", "sha256": "0" * 64, "version": "v"},
                "corpus": {"version": "c"}, "chunking": {"version": "c"},
                "permissions": {"version": "p"}}
    (tmp_path / "snapshot.json").write_text(json.dumps(snapshot))
    code, _, err = gate("validate", tmp_path / "snapshot.json")
    assert code == 2 and "cannot be read (File name too long)" in err
