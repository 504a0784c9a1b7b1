"""Fuzzing every reader and command through the real command line: mutations of valid files,
hostile tokens (deep nesting, huge numbers, lone surrogates, line separators, NUL, BOM, CR,
workflow commands, long ids), random bytes and random text.

Every example must end with a documented exit code (never 70), no traceback, one ``error:``
line per problem on standard error when the input is refused, no output file (and no
temporary debris) after a failure, and within the example deadline (a stall is a failure).

A few hundred examples run with the test suite. For a long campaign set
``GATE_FUZZ_EXAMPLES`` (examples per target; 20 targets):

    GATE_FUZZ_EXAMPLES=750 python -m pytest -q tests/test_fuzz.py    # ≈ 15,000 examples
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import zipfile
from datetime import timedelta
from pathlib import Path

import pytest
from conftest import SEEDS, TREC, gate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scorecheck import padded, zip_archive

EXAMPLES = int(os.environ.get("GATE_FUZZ_EXAMPLES", "25"))
FUZZ = settings(max_examples=EXAMPLES, deadline=timedelta(seconds=60),
                derandomize="GATE_FUZZ_EXAMPLES" not in os.environ,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])
REFUSED = (2, 3)  # invalid input, not what it claims
ACCEPTED = (0, 1, 4)  # pass, regression, inconclusive
_names = itertools.count()

HOSTILE = [
    b"\x00", b"\r", b"\r\n", b"\n\n", b"\t", b"  ", "\u2028".encode(), "\u2029".encode(),
    "\u0085".encode(), b"\xef\xbb\xbf", b"\xff\xfe", b"\xed\xa0\x80", b'"\\ud800"', b"\\ud800",
    b"1_000", b"nan", b"-inf", b"1e400", b"-0", b"9" * 400, b"9" * 4400, b"-" + b"9" * 30,
    b"[" * 3000, b"{\"a\":" * 2000, b"]", b"}", b"#", b"\n#", b"\n::warning::x\n",
    b"\n::stop-commands::t\n", b"`x`", b"<b>", b"@org/team", b"x" * 20000, b"\xc3\xa9",
    b"\"", b",", b":", b"null", b"true", b"[]", b"{}", b"0.1", b"1e-320", b"Q0",
]


def _mutate(data: st.DataObject, seed: bytes) -> bytes:
    """``seed`` after one to four random edits: insert / overwrite with a hostile token,
    delete a slice, duplicate or drop a line, truncate."""
    out = bytearray(seed)
    for _ in range(data.draw(st.integers(1, 4), label="edits")):
        kind = data.draw(st.sampled_from(["insert", "overwrite", "delete", "duplicate-line",
                                          "drop-line", "truncate", "random-bytes"]))
        at = data.draw(st.integers(0, len(out)), label="at")
        token = data.draw(st.sampled_from(HOSTILE), label="token")
        if kind == "insert":
            out[at:at] = token
        elif kind == "overwrite":
            out[at:at + len(token)] = token
        elif kind == "delete":
            out[at:at + data.draw(st.integers(1, 40))] = b""
        elif kind == "random-bytes":
            out[at:at] = data.draw(st.binary(min_size=1, max_size=20))
        elif kind == "truncate":
            del out[at:]
        else:
            lines = bytes(out).split(b"\n")
            i = at % max(len(lines), 1)
            if kind == "duplicate-line":
                lines.insert(i, lines[i] if lines else b"")
            elif lines:
                lines.pop(i)
            out = bytearray(b"\n".join(lines))
    return bytes(out)


def _fresh(folder: Path, suffix: str, content: bytes) -> Path:
    path = folder / f"fuzz-{next(_names)}{suffix}"
    path.write_bytes(content)
    return path


def _expect_clean(code: int, err: str, allowed: tuple[int, ...] = REFUSED + ACCEPTED) -> None:
    """A documented outcome: an allowed exit code, and for a refusal, every line of standard
    error an ``error:`` line."""
    assert code in allowed, f"exit {code}: {err}"
    if code in REFUSED:
        lines = err.splitlines()
        assert lines and all(line.startswith("error: ") for line in lines), err


def _no_debris(folder: Path, before: set[str]) -> None:
    """No temporary or backup file left behind in ``folder``."""
    left = {p.name for p in folder.iterdir()} - before
    assert not [n for n in left if n.startswith(".")], left


# -- a small real test set, built once through the command line ---------------------------

@pytest.fixture(scope="module")
def testset(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("fuzz") / "set"
    folder.mkdir()
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"id": f"q{i}", "text": f"question {i}", "tags": ["t"]}) + "\n"
                for i in range(1, 7))
        + json.dumps({"id": "q7", "text": "no answer", "answerable": False}) + "\n")
    (folder / "qrels.tsv").write_text(
        "".join(f"q{i} 0 d{i} {1 + i % 3}\nq{i} 0 d{i + 10} 0\n" for i in range(1, 7)))
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"id": f"d{i}", "text": f"doc {i}"}) + "\n" for i in range(1, 20)))
    for name, shift in (("base", 0), ("cand", 1)):
        (folder / f"{name}.trec").write_text("".join(
            f"q{i} Q0 d{(i + shift + j) % 19 + 1} {j + 1} {10 - j}.5 {name}\n"
            for i in range(1, 8) for j in range(5)))
    code, _, err = gate("snapshot", "freeze", "--queries", folder / "queries.jsonl",
                        "--qrels", folder / "qrels.tsv", "--corpus-version", "c1",
                        "--corpus-file", folder / "corpus.jsonl", "--unit", "document",
                        "--permissions-version", "public", "-m", "Recall@3", "-m", "nDCG@3",
                        "-m", "Hit@3", "-m", "Judged@3", "--extra", "ignore",
                        "-o", folder / "snapshot.json")
    assert code == 0, err
    for name in ("base", "cand"):
        code, _, err = gate("run-manifest", "--snapshot", folder / "snapshot.json", "--run",
                            folder / f"{name}.trec", "--commit", "c", "--created",
                            "2026-12-01T00:00:00Z", "--system", f"name={name}")
        assert code == 0, err
    (folder / "gate.toml").write_text(
        'snapshot = "snapshot.json"\nbaseline = "base.trec"\ncandidate = "cand.trec"\n'
        'resamples = 1000\n[[gate]]\nmeasure = "Recall@3"\nmargin = 0.05\n')
    return folder


SMALL_RUN = b"".join((TREC / "results.test").read_bytes().splitlines(keepends=True)[:60])
SMALL_QRELS = b"".join((TREC / "qrels.test").read_bytes().splitlines(keepends=True)[:200])


# -- gate score ------------------------------------------------------------------------------

@FUZZ
@given(data=st.data())
def test_score_survives_mutated_trec_runs(tmp_path, data):
    qrels = _fresh(tmp_path, ".qrels", SMALL_QRELS)
    run = _fresh(tmp_path, ".trec", _mutate(data, SMALL_RUN))
    before = {p.name for p in tmp_path.iterdir()}
    out = tmp_path / f"out-{next(_names)}.json"
    code, _, err = gate("score", qrels, run, "--missing", "zero", "--extra", "ignore",
                        "--unlabeled", "zero", "-o", out, "--output-format", "json")
    _expect_clean(code, err, REFUSED + (0,))
    assert out.exists() == (code == 0)
    _no_debris(tmp_path, before | {out.name})


@FUZZ
@given(data=st.data())
def test_score_survives_mutated_trec_qrels(tmp_path, data):
    qrels = _fresh(tmp_path, ".qrels", _mutate(data, SMALL_QRELS))
    run = _fresh(tmp_path, ".trec", SMALL_RUN)
    code, _, err = gate("score", qrels, run, "--missing", "zero", "--extra", "ignore",
                        "--unlabeled", "zero")
    _expect_clean(code, err, REFUSED + (0,))


def _json_seed(kind: str) -> bytes:
    run = {"q1": {"d1": 1.5, "d2": 0.5}, "q2": {"d3": 2}}
    qrels = {"q1": {"d1": 1, "d2": 0}, "q2": ["d3"]}
    if kind == "jsonl-run":
        return b"".join(json.dumps({"query_id": q, "items": [
            {"id": d, "score": s, "doc_id": d} for d, s in items.items()]}).encode() + b"\n"
            for q, items in run.items())
    if kind == "jsonl-qrels":
        return b"".join(json.dumps({"query_id": q, "doc_id": d, "grade": g}).encode() + b"\n"
                        for q, labels in qrels.items() if isinstance(labels, dict)
                        for d, g in labels.items())
    return json.dumps(run if kind == "json-run" else qrels).encode()


@FUZZ
@given(data=st.data(), kind=st.sampled_from(["json-run", "json-qrels", "jsonl-run",
                                             "jsonl-qrels"]))
def test_score_survives_mutated_json_inputs(tmp_path, data, kind):
    run_seed = _json_seed("jsonl-run" if kind == "jsonl-run" else "json-run")
    qrels_seed = _json_seed("jsonl-qrels" if kind == "jsonl-qrels" else "json-qrels")
    mutated = _mutate(data, run_seed if kind.endswith("run") else qrels_seed)
    run = _fresh(tmp_path, ".json", mutated if kind.endswith("run") else run_seed)
    qrels = _fresh(tmp_path, ".json", mutated if kind.endswith("qrels") else qrels_seed)
    code, _, err = gate("score", qrels, run, "--missing", "zero", "--extra", "ignore",
                        "--unlabeled", "zero", "--duplicates", "first")
    _expect_clean(code, err, REFUSED + (0,))


@FUZZ
@given(data=st.data())
def test_score_survives_mutated_fixtures_and_doc_maps(tmp_path, data):
    fixture = _fresh(tmp_path, ".json", _mutate(data, (SEEDS / "000_fixture.json").read_bytes()))
    code, _, err = gate("score", fixture, "-k", "3")
    _expect_clean(code, err, REFUSED + (0,))
    doc_map = _fresh(tmp_path, ".map", _mutate(data, b"c1 d1\nc2 d1\nc3 d2\n"))
    run = _fresh(tmp_path, ".trec", b"q1 Q0 c1 1 3 t\nq1 Q0 c2 2 2 t\nq1 Q0 c3 3 1 t\n")
    qrels = _fresh(tmp_path, ".qrels", b"q1 0 d1 1\n")
    code, _, err = gate("score", qrels, run, "--doc-map", doc_map)
    _expect_clean(code, err, REFUSED + (0,))


@FUZZ
@given(raw=st.binary(max_size=300), forced=st.sampled_from([None, "trec", "json", "jsonl"]))
def test_score_survives_random_bytes(tmp_path, raw, forced):
    qrels = _fresh(tmp_path, ".qrels", SMALL_QRELS)
    run = _fresh(tmp_path, ".run", raw)
    args = ["--run-format", forced] if forced else []
    code, _, err = gate("score", qrels, run, *args, "--missing", "zero", "--extra", "ignore")
    _expect_clean(code, err, REFUSED + (0,))
    code, _, err = gate("score", run, run)
    _expect_clean(code, err, REFUSED + (0,))


@FUZZ
@given(measure=st.one_of(st.text(max_size=30), st.from_regex(
    r"(nDCG|Recall|RR|P|AP|Hit|CP|Judged)(\((rel|gain)=[-a-z0-9]{0,25}\))?@[-0-9]{0,30}",
    fullmatch=True)), k=st.integers(-2, 10**30))
def test_score_survives_hostile_measure_names_and_cutoffs(measure, k):
    code, _, err = gate("score", SEEDS / "001_fixture.json", "-m", measure)
    _expect_clean(code, err, REFUSED + (0,))
    code, _, err = gate("score", SEEDS / "001_fixture.json", "-k", str(k))
    _expect_clean(code, err, REFUSED + (0,))



EVIDENCE = {
    "corpus.jsonl": b'{"id": "a", "text": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}\n'
                    b'{"id": "b", "text": "yyyyyyyyyyyyyyyyyyyy"}\n',
    "qrels.jsonl": b'{"query_id": "q1", "doc_id": "a", "start": 2, "end": 9, "grade": 2, '
                   b'"fact": "f1"}\n{"query_id": "q1", "doc_id": "b", "start": 0, "end": 5, '
                   b'"grade": 1, "fact": "f2"}\n',
    "chunks.jsonl": b'{"id": "a#0", "doc_id": "a", "start": 0, "end": 15, "tokens": 3}\n'
                    b'{"id": "a#1", "doc_id": "a", "start": 10, "end": 30}\n'
                    b'{"id": "b#0", "doc_id": "b", "start": 0, "end": 20, "tokens": 4}\n',
    "run.trec": b"q1 Q0 a#1 1 3 t\nq1 Q0 b#0 2 2 t\nq1 Q0 a#0 3 1 t\n",
}


@FUZZ
@given(data=st.data(), which=st.sampled_from(sorted(EVIDENCE)))
def test_score_survives_mutated_span_judgments_corpora_and_chunk_tables(tmp_path, data, which):
    files = {name: _fresh(tmp_path, "." + name, _mutate(data, seed) if name == which else seed)
             for name, seed in EVIDENCE.items()}
    code, _, err = gate("score", files["qrels.jsonl"], files["run.trec"], "--corpus",
                        files["corpus.jsonl"], "--chunks", files["chunks.jsonl"], "-m",
                        "Recall@2", "-m", "FactCoverage@3", "-m", "nDCG@3", "--min-coverage",
                        "0.5", "--missing", "zero", "--extra", "ignore", "--unlabeled", "zero")
    _expect_clean(code, err, REFUSED + (0,))

TO_SPANS = {
    "corpus.jsonl": b'{"id": "a", "text": "One. Two is here. Three!\\n\\nFour."}\n'
                    b'{"id": "b", "text": "yyyyyyyyyyyyyyyyyyyy"}\n',
    "qrels.jsonl": b'{"query_id": "q1", "doc_id": "a#0", "grade": 2, "fact": "f1"}\n'
                   b'{"query_id": "q1", "doc_id": "a#1", "grade": 1}\n'
                   b'{"query_id": "q2", "doc_id": "b#0", "grade": 0}\n',
    "qrels.tsv": b"q1 0 a#0 2\nq1 0 a#1 1\nq2 0 b#0 0\n",
    "chunks.jsonl": b'{"id": "a#0", "doc_id": "a", "start": 0, "end": 17, "tokens": 4}\n'
                    b'{"id": "a#1", "doc_id": "a", "start": 10, "end": 31}\n'
                    b'{"id": "b#0", "doc_id": "b", "start": 0, "end": 20}\n',
    "evidence.jsonl": b'{"query_id": "q1", "chunk_id": "a#0", "evidence": "Two is", "fact": "f2"}'
                      b'\n{"query_id": "q1", "evidence": "here.  Three"}\n'
                      b'{"query_id": "q2", "evidence": "yy"}\n',
}


def _to_spans(folder: Path, files: dict[str, Path], qrels: str, *extra: str) -> None:
    """Run ``gate qrels to-spans`` on ``files``: a documented outcome, the output written
    exactly when it succeeds, and no debris."""
    before = {p.name for p in folder.iterdir()}
    out = folder / f"spans-{next(_names)}.jsonl"
    code, _, err = gate("qrels", "to-spans", "--qrels", files[qrels], "--chunks",
                        files["chunks.jsonl"], "--corpus", files["corpus.jsonl"], "--evidence",
                        files["evidence.jsonl"], *extra, "-o", out)
    _expect_clean(code, err, (0, 2))
    assert out.exists() == (code == 0)
    _no_debris(folder, before | {out.name})


@FUZZ
@given(data=st.data(), which=st.sampled_from(sorted(TO_SPANS)),
       snap=st.sampled_from([[], ["--snap", "sentence"], ["--snap", "paragraph"]]))
def test_to_spans_survives_mutated_judgments_chunk_tables_corpora_and_evidence(tmp_path, data,
                                                                               which, snap):
    files = {name: _fresh(tmp_path, "." + name, _mutate(data, seed) if name == which else seed)
             for name, seed in TO_SPANS.items()}
    _to_spans(tmp_path, files, "qrels.tsv" if which == "qrels.tsv" else "qrels.jsonl", *snap)


ACCESS = {
    "corpus.jsonl": b'{"id": "a", "text": "x", "acl": ["t1", "t2"], "valid_to": "2026-02-28"}\n'
                    b'{"id": "b", "text": "y", "valid_from": "2026-03-01", "supersedes": "a"}\n',
    "permissions.jsonl": b'{"id": "a", "acl": ["t2", "t3"], "valid_from": "2025-01-01"}\n'
                         b'{"id": "c", "acl": [], "supersedes": "b"}\n',
    "queries.jsonl": b'{"id": "q1", "scope": ["t1"], "as_of": "2026-03-01"}\n'
                     b'{"id": "q2", "answerable": false, "scope": []}\n',
    "qrels.jsonl": b'{"query_id": "q1", "doc_id": "b", "grade": 1}\n',
    "run.jsonl": b'{"query_id": "q1", "items": [{"id": "a", "score": 2}], "abstained": false, '
                 b'"latency_ms": 3.5}\n{"query_id": "q2", "items": [], "abstained": true, '
                 b'"latency_ms": 1}\n',
}


@FUZZ
@given(data=st.data(), which=st.sampled_from(sorted(ACCESS)))
def test_freeze_and_run_manifest_survive_mutated_access_data(tmp_path, data, which):
    """The corpus's access data under a pinned permissions file: either mutated."""
    folder = tmp_path / f"access-{next(_names)}"
    folder.mkdir()
    for name, seed in ACCESS.items():
        (folder / name).write_bytes(_mutate(data, seed) if name == which else seed)
    code, _, err = gate("snapshot", "freeze", "--queries", folder / "queries.jsonl", "--qrels",
                        folder / "qrels.jsonl", "--corpus-file", folder / "corpus.jsonl",
                        "--corpus-version", "c", "--permissions-version", "p",
                        "--permissions-file", folder / "permissions.jsonl", "--unit",
                        "document", "-m", "Stale@2", "-m", "MixedVersions@2", "-o",
                        folder / "snapshot.json")
    _expect_clean(code, err, REFUSED + (0,))
    if code == 0:
        code, _, err = gate("run-manifest", "--snapshot", folder / "snapshot.json", "--run",
                            folder / "run.jsonl")
        _expect_clean(code, err, REFUSED + (0,))


# -- snapshots and manifests -----------------------------------------------------------------

@FUZZ
@given(data=st.data(), which=st.sampled_from(["queries.jsonl", "qrels.tsv"]))
def test_freeze_survives_mutated_queries_and_qrels(testset, data, which):
    folder = testset
    mutated = _fresh(folder, "." + which, _mutate(data, (folder / which).read_bytes()))
    files = {"queries.jsonl": folder / "queries.jsonl", "qrels.tsv": folder / "qrels.tsv",
             which: mutated}
    before = {p.name for p in folder.iterdir()}
    out = folder / f"snap-{next(_names)}.json"
    try:
        code, _, err = gate("snapshot", "freeze", "--queries", files["queries.jsonl"],
                            "--qrels", files["qrels.tsv"], "--corpus-version", "c1",
                            "--unit", "document", "--permissions-version", "p",
                            "--unlabeled", "zero", "-o", out)
        _expect_clean(code, err, REFUSED + (0,))
        assert out.exists() == (code == 0)
        _no_debris(folder, before | {out.name})
    finally:
        mutated.unlink()
        out.unlink(missing_ok=True)


@FUZZ
@given(data=st.data())
def test_validate_survives_mutated_snapshot_manifests(testset, data):
    snapshot = _fresh(testset, ".json", _mutate(data, (testset / "snapshot.json").read_bytes()))
    try:
        code, _, err = gate("validate", snapshot)
        _expect_clean(code, err, REFUSED + (0,))
        code, _, err = gate("check", "--config", testset / "gate.toml", "--snapshot", snapshot)
        _expect_clean(code, err)
    finally:
        snapshot.unlink()


@FUZZ
@given(data=st.data())
def test_validate_and_check_survive_mutated_run_manifests(testset, data, tmp_path):
    run = tmp_path / f"cand-{next(_names)}.trec"
    shutil.copy(testset / "cand.trec", run)
    manifest = Path(f"{run}.manifest.json")
    manifest.write_bytes(_mutate(data, (testset / "cand.trec.manifest.json").read_bytes()))
    code, _, err = gate("validate", testset / "snapshot.json", run)
    _expect_clean(code, err, REFUSED + (0,))
    code, _, err = gate("check", "--config", testset / "gate.toml", "--candidate", run)
    _expect_clean(code, err)


@FUZZ
@given(data=st.data())
def test_check_survives_mutated_candidate_runs(testset, data, tmp_path):
    """A mutated run keeps its old manifest: refused as changed (exit 3), never a crash."""
    run = tmp_path / f"cand-{next(_names)}.trec"
    run.write_bytes(_mutate(data, (testset / "cand.trec").read_bytes()))
    shutil.copy(testset / "cand.trec.manifest.json", f"{run}.manifest.json")
    code, _, err = gate("check", "--config", testset / "gate.toml", "--candidate", run)
    _expect_clean(code, err)
    code, _, err = gate("run-manifest", "--snapshot", testset / "snapshot.json", "--run", run,
                        "-o", tmp_path / f"m-{next(_names)}.json")
    _expect_clean(code, err, REFUSED + (0,))


@FUZZ
@given(data=st.data())
def test_check_survives_mutated_configs(testset, data):
    config = _fresh(testset, ".toml", _mutate(data, (testset / "gate.toml").read_bytes()))
    before = {p.name for p in testset.iterdir()}
    report = testset / f"report-{next(_names)}.json"
    try:
        code, _, err = gate("check", "--config", config, "--json", report)
        _expect_clean(code, err)
        # A report lands on every outcome the gate reaches: a decision, or its error form.
        assert report.exists() == (code in (*ACCEPTED, 2, 3))
        if code in (2, 3):
            assert json.loads(report.read_text())["exit_code"] == code
        _no_debris(testset, before | {report.name})
    finally:
        config.unlink()
        report.unlink(missing_ok=True)


@pytest.fixture(scope="module")
def cached(testset, tmp_path_factory) -> tuple[Path, tuple[int, str, str]]:
    """A cache folder holding the test set's corpus entry, and what the check without a cache
    gives: (exit code, JSON report, standard error)."""
    cache = tmp_path_factory.mktemp("cache") / "cache"
    outcomes = [gate("check", "--config", testset / "gate.toml", "--output-format", "json",
                     env={"RETRIEVAL_GATE_CACHE": str(setting)}) for setting in ("off", cache)]
    assert outcomes[0][0] in ACCEPTED, outcomes[0][2]
    assert outcomes[0] == outcomes[1] and len(list(cache.iterdir())) == 1
    return cache, outcomes[0]


@FUZZ
@given(data=st.data())
def test_check_is_unchanged_by_a_mutated_cache_entry(testset, cached, data, tmp_path):
    """A file of the corpus's cache entry mutated: the report of the check without a cache, and
    the entry written anew as it was."""
    pristine, uncached = cached
    cache = tmp_path / f"cache-{next(_names)}"
    shutil.copytree(pristine, cache)
    (entry,) = cache.iterdir()
    path = entry / data.draw(st.sampled_from(sorted(p.name for p in entry.iterdir())))
    path.write_bytes(_mutate(data, path.read_bytes()))
    assert gate("check", "--config", testset / "gate.toml", "--output-format", "json",
                env={"RETRIEVAL_GATE_CACHE": str(cache)}) == uncached
    (pristine_entry,) = pristine.iterdir()
    assert _entry_content(pristine_entry) == _entry_content(entry)
    assert [p.name for p in cache.iterdir()] == [entry.name]


def _entry_content(entry: Path) -> dict[str, object]:
    """A cache entry's files, the manifest as the JSON it holds (a mutation that leaves it the
    same JSON — white space — leaves a sound entry, kept as it is)."""
    return {p.name: json.loads(p.read_bytes()) if p.name == "manifest.json" else p.read_bytes()
            for p in entry.iterdir()}


TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=40)


@FUZZ
@given(key=TEXT, value=TEXT)
def test_run_manifest_survives_hostile_system_values(testset, tmp_path, key, value):
    out = tmp_path / f"m-{next(_names)}.json"
    code, _, err = gate("run-manifest", "--snapshot", testset / "snapshot.json", "--run",
                        testset / "cand.trec", "--system", f"{key}={value}", "--commit", "c",
                        "--created", "2026-12-01T00:00:00Z", "-o", out)
    _expect_clean(code, err, REFUSED + (0,))
    assert out.exists() == (code == 0)
    if code == 0:
        json.loads(out.read_text(encoding="utf-8"))


@FUZZ
@given(data=st.data())
def test_approve_survives_mutated_candidates(testset, data, tmp_path):
    """A mutated candidate with a fresh manifest: approved or refused whole; the old baseline
    stays valid either way."""
    folder = tmp_path / f"approve-{next(_names)}"
    folder.mkdir()
    run = folder / "candidate.trec"
    run.write_bytes(_mutate(data, (testset / "cand.trec").read_bytes()))
    code, _, err = gate("run-manifest", "--snapshot", testset / "snapshot.json", "--run", run)
    _expect_clean(code, err, REFUSED + (0,))
    code, _, err = gate("baseline", "approve", "--candidate", run, "--to", folder / "approved",
                        "--snapshot", testset / "snapshot.json")
    _expect_clean(code, err, REFUSED + (0,))
    if code == 0:
        code, _, err = gate("check", "--config", testset / "gate.toml", "--baseline",
                            folder / "approved")
        _expect_clean(code, err, ACCEPTED)


@FUZZ
@given(query=TEXT, chunk=TEXT, quote=TEXT, fact=TEXT, offsets=st.tuples(
    st.integers(-2, 40), st.integers(-2, 40)))
def test_to_spans_survives_hostile_ids_quotes_and_offsets(tmp_path, query, chunk, quote, fact,
                                                          offsets):
    def line(value: dict) -> bytes:
        return json.dumps(value).encode() + b"\n"

    files = {name: _fresh(tmp_path, "." + name, seed) for name, seed in TO_SPANS.items()}
    files["chunks.jsonl"].write_bytes(TO_SPANS["chunks.jsonl"] + line(
        {"id": chunk, "doc_id": "a", "start": offsets[0], "end": offsets[1]}))
    files["qrels.jsonl"].write_bytes(TO_SPANS["qrels.jsonl"] + line(
        {"query_id": query, "doc_id": chunk, "grade": 1, "fact": fact}))
    files["evidence.jsonl"].write_bytes(line(
        {"query_id": query, "chunk_id": chunk, "evidence": quote, "fact": fact}))
    _to_spans(tmp_path, files, "qrels.jsonl", "--snap", "sentence")


def _read_lines(read) -> tuple[str, object]:
    """("ok", what ``read()`` returned) or ("refused", None) for an InputError."""
    from retrieval_gate.core.errors import InputError

    try:
        return "ok", read()
    except InputError:
        return "refused", None


@FUZZ
@given(data=st.data(), size=st.integers(1, 120))
def test_json_lines_read_in_batches_as_the_whole_file(data, size):
    """A corpus read a batch of lines at a time (batches of 1–120 bytes, so every cut falls
    somewhere) gives the objects and line numbers of the whole file, or refuses it too."""
    from retrieval_gate.formats.jsonfmt import json_line_batches, json_lines
    from retrieval_gate.formats.source import Blob

    raw = _mutate(data, EVIDENCE["corpus.jsonl"] * 3 + TO_SPANS["corpus.jsonl"])
    whole = _read_lines(lambda: list(json_lines(Blob("c", raw).text(), "c")))
    batched = _read_lines(lambda: [pair for batch in json_line_batches(Blob("c", raw), size)
                                   for pair in zip(batch.numbers, batch.objects)])
    assert batched == whole


# -- per-query score files: the native formats and every tool's output -----------------------

INSPECT_AI = SEEDS.parent / "scores" / "inspect_ai"
with zipfile.ZipFile(INSPECT_AI / "deflate.eval") as _log:
    BOMB = zip_archive([padded(info.filename, _log.read(info),
                               80 if info.filename.startswith("samples/p01") else 0)
                        for info in _log.infolist()])
    """deflate.eval whose sample p01 is followed by 80 MiB of spaces (80 KB of DEFLATE)."""

SCORE_SEEDS = {  # name: (format, seed)
    "jsonl": ("jsonl", b"".join(json.dumps({"query_id": f"q{i}", "scores": {"f": i / 10,
                                                                             "ok": i % 2},
                                            "sample": s}).encode() + b"\n"
                                for i in range(1, 8) for s in range(2))),
    "csv": ("csv", b"query_id,f,ok\n" + b"".join(f"q{i},{i / 10},{i % 2}\n".encode()
                                                 for i in range(1, 8))),
    "ragas": ("ragas", (SEEDS.parent / "scores" / "ragas" / "result-ids.csv").read_bytes()),
    "deepeval": ("deepeval",
                 (SEEDS.parent / "scores" / "deepeval" / "test_run-ids.json").read_bytes()),
    "promptfoo": ("promptfoo", (SEEDS.parent / "scores" / "promptfoo" / "text.json").read_bytes()),
    "inspect": ("inspect", (INSPECT_AI / "ids.json").read_bytes()),
    "inspect-eval": ("inspect", (INSPECT_AI / "deflate.eval").read_bytes()),
    "inspect-bomb": ("inspect", BOMB),
}


@FUZZ
@given(data=st.data(), seed=st.sampled_from(sorted(SCORE_SEEDS)))
def test_run_manifest_and_check_survive_mutated_score_files(testset, data, seed, tmp_path):
    """A score file of every format, mutated, pinned with gate run-manifest --scores (scores
    only) and, when accepted, gated as score:f. Among them inspect_ai's .eval archives, one of
    them a zip bomb."""
    fmt, content = SCORE_SEEDS[seed]
    folder = tmp_path / f"scores-{next(_names)}"
    folder.mkdir()
    scores = folder / "cand.scores"
    scores.write_bytes(_mutate(data, content))
    before = {p.name for p in folder.iterdir()}
    code, _, err = gate("run-manifest", "--snapshot", testset / "snapshot.json", "--scores",
                        scores, "--scores-format", fmt, "--judge", "model=m")
    _expect_clean(code, err, REFUSED + (0,))
    if code != 0:
        assert {p.name for p in folder.iterdir()} == before  # no manifest, no debris
        return
    code, _, err = gate("check", "--no-config", "--snapshot", testset / "snapshot.json",
                        "--baseline", scores, "--candidate", scores, "--gate", "score:f=0.05")
    _expect_clean(code, err)
