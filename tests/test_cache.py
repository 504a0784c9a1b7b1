"""The cache of parsed inputs never changes a result or an exit code: an entry damaged in any
way — any file of it emptied, cut short, replaced by an array of another shape or dtype or of
objects, by random bytes, a folder or a pipe, deleted, or its manifest damaged — is ignored, and
``gate check`` gives the JSON report and the exit code of a run without the cache, byte for
byte; the entry is then written anew, identical to the one first written. A file of an entry
rewritten in place while a check reads or uses it changes nothing either: the check uses the
entry it checked, or finds it damaged. Through the real command line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import gate
from test_access import DOCS as CORPUS

from retrieval_gate.formats.cache import load, store
from retrieval_gate.formats.source import Blob

# the entries a check of CORPUS leaves (its ids, and its own access data), and their arrays
ENTRIES = {"corpus-lines": ("ids", "keys", "lengths", "places"),
           "access-csr": ("ids", "keys", "public", "valid_from", "valid_to", "family",
                          "supersedes", "lines", "acl_start", "acl_codes", "principals")}
ARRAY_DAMAGE = ["empty", "cut short", "random bytes", "random data", "a bit flipped",
                "one more dimension", "another dtype", "a folder", "a pipe", "deleted",
                "one more dimension, listed", "another dtype, listed", "a row short, listed",
                "objects, listed"]
# data: the array's bytes, after its header; listed: the manifest rewritten to agree
MANIFEST_DAMAGE = ["empty", "cut short", "random bytes", "a folder", "deleted",
                   "another checksum", "another array"]
ENTRY_DAMAGE = ["a file", "an empty folder"]  # in the entry's place


def _lines(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.fixture(scope="module")
def testset(tmp_path_factory) -> Path:
    """A snapshot pinning CORPUS (document unit, access data in the corpus), two runs with
    their manifests and a gate.toml; nothing cached."""
    folder = tmp_path_factory.mktemp("cached")
    off = {"RETRIEVAL_GATE_CACHE": "off"}
    _lines(folder / "corpus.jsonl", CORPUS)
    _lines(folder / "queries.jsonl", [{"id": "qa", "scope": ["acme"], "as_of": "2026-03-15"},
                                      {"id": "qg", "scope": ["globex"], "as_of": "2026-02-01"}])
    _lines(folder / "qrels.jsonl", [{"query_id": "qa", "doc_id": "a1", "grade": 1},
                                    {"query_id": "qg", "doc_id": "g1", "grade": 1}])
    code, _, err = gate("snapshot", "freeze", "--queries", folder / "queries.jsonl",
                        "--qrels", folder / "qrels.jsonl", "--corpus-file",
                        folder / "corpus.jsonl", "--corpus-version", "c",
                        "--permissions-version", "p", "--unit", "document", "-m", "Recall@3",
                        "-m", "Stale@3", "-m", "MixedVersions@3", "-o",
                        folder / "snapshot.json", env=off)
    assert code == 0, err
    for name, ranking in (("base", {"qa": ["a1", "pub"], "qg": ["g1"]}),
                          ("cand", {"qa": ["g1", "old", "a1"], "qg": ["new", "g1"]})):
        _lines(folder / f"{name}.jsonl", [{"query_id": q, "items": [
            {"id": d, "score": 10 - i} for i, d in enumerate(items)]}
            for q, items in ranking.items()])
        code, _, err = gate("run-manifest", "--snapshot", folder / "snapshot.json", "--run",
                            folder / f"{name}.jsonl", "--commit", "c", env=off)
        assert code == 0, err
    (folder / "gate.toml").write_text(
        'snapshot = "snapshot.json"\nbaseline = "base.jsonl"\ncandidate = "cand.jsonl"\n'
        'resamples = 1000\nmin-queries = 1\nleaks = "warn"\n'
        '[[gate]]\nmeasure = "Recall@3"\nmargin = 0.1\n')
    return folder


def _check(testset: Path, cache: str | Path) -> tuple[int, str, str]:
    """``gate check`` of the test set with ``RETRIEVAL_GATE_CACHE=cache``: (exit code, JSON
    report, standard error)."""
    outcome = gate("check", "--config", testset / "gate.toml", "--output-format", "json",
                   env={"RETRIEVAL_GATE_CACHE": str(cache)})
    assert outcome[0] in (0, 1), outcome[2]
    return outcome


@pytest.fixture(scope="module")
def uncached(testset) -> tuple[int, str, str]:
    return _check(testset, "off")


@pytest.fixture(scope="module")
def pristine(testset, uncached, tmp_path_factory) -> Path:
    """A cache folder holding the test set's two entries, as the first check wrote them."""
    cache = tmp_path_factory.mktemp("pristine") / "cache"
    assert _check(testset, cache) == uncached
    assert sorted(p.name.split("-v1-")[0] for p in cache.iterdir()) == sorted(ENTRIES)
    return cache


def _contents(cache: Path) -> dict[str, dict[str, bytes]]:
    """Each entry's files (name → bytes); fails on anything else in the cache folder."""
    return {entry.name: {f.name: f.read_bytes() for f in entry.iterdir()}
            for entry in cache.iterdir()}


def _entry(cache: Path, kind: str) -> Path:
    (entry,) = cache.glob(f"{kind}-v1-*")
    return entry


def _listed(entry: Path, name: str, array: np.ndarray) -> None:
    """Rewrite the manifest's line for ``name`` to describe ``array`` and its file."""
    manifest = json.loads((entry / "manifest.json").read_text())
    data = (entry / f"{name}.npy").read_bytes()
    manifest["arrays"][name] = {"dtype": array.dtype.str, "shape": list(array.shape),
                                "bytes": len(data), "crc32": zlib.crc32(data)}
    (entry / "manifest.json").write_text(json.dumps(manifest))


def _damage(entry: Path, file: str | None, how: str) -> None:
    if file is None:  # the entry itself
        shutil.rmtree(entry)
        if how == "a file":
            entry.write_bytes(b"")
        else:
            entry.mkdir()
        return
    path = entry / file
    data = path.read_bytes()
    if how in ("empty", "cut short", "random bytes", "random data", "a bit flipped"):
        random = np.random.default_rng(len(data)).bytes(len(data))
        size = np.load(path).nbytes if how == "random data" else 0
        path.write_bytes({"empty": b"", "cut short": data[:-1], "random bytes": random,
                          "random data": data[:-size] + random[:size],
                          "a bit flipped": data[:-1] + bytes([data[-1] ^ 1])}[how])
    elif how in ("a folder", "a pipe", "deleted"):
        path.unlink()
        if how == "a folder":
            path.mkdir()
        elif how == "a pipe":  # nothing ever writes to it: opening it to read must not wait
            os.mkfifo(path)
    elif how in ("another checksum", "another array"):
        manifest = json.loads(data)
        first = next(iter(manifest["arrays"]))
        if how == "another checksum":
            manifest["arrays"][first]["crc32"] ^= 1
        else:
            manifest["arrays"]["more"] = manifest["arrays"][first]
        path.write_text(json.dumps(manifest))
    else:
        array = np.load(path)
        changed = {"one more dimension": lambda: np.stack([array, array], axis=-1),
                   "another dtype": lambda: np.zeros(array.shape, np.float32),
                   "a row short": lambda: array[:-1],
                   "objects": lambda: np.full(array.shape, None)}[how.removesuffix(", listed")]()
        np.save(path, changed)
        if how.endswith(", listed"):
            _listed(entry, path.stem, changed)


@pytest.fixture
def cache(pristine, tmp_path) -> Iterator[Path]:
    """A copy of the pristine cache, on a file system in memory where there is one: each
    repair flushes 17 files and folders to the disk, 0.1 s a check on a disk."""
    shm = Path("/dev/shm")
    memory = shm.is_dir() and os.access(shm, os.W_OK)
    with tempfile.TemporaryDirectory(dir=shm if memory else tmp_path) as folder:
        shutil.copytree(pristine, Path(folder) / "cache")
        yield Path(folder) / "cache"


@pytest.mark.parametrize("how", ARRAY_DAMAGE)
def test_any_array_file_damaged_changes_nothing_and_is_written_anew(testset, uncached, pristine,
                                                                   cache, how):
    """Every array file in turn, one of each entry at a time."""
    for i in range(max(len(names) for names in ENTRIES.values())):
        for kind, names in ENTRIES.items():
            name = names[i % len(names)]
            # the principals' text is free: a byte short would be forged, not damaged
            if (name, how) != ("principals", "a row short, listed"):
                _damage(_entry(cache, kind), f"{name}.npy", how)
        assert _check(testset, cache) == uncached, i
        assert _contents(cache) == _contents(pristine), i  # and nothing beside the entries


@pytest.mark.parametrize(("file", "how"), [("manifest.json", how) for how in MANIFEST_DAMAGE]
                         + [(None, how) for how in ENTRY_DAMAGE])
def test_a_damaged_manifest_or_entry_changes_nothing_and_is_written_anew(
        testset, uncached, pristine, cache, file, how):
    for kind in ENTRIES:
        _damage(_entry(cache, kind), file, how)
    assert _check(testset, cache) == uncached
    assert _contents(cache) == _contents(pristine)


def test_a_sound_entry_is_read_as_it_is(testset, uncached, cache):
    before = {p.name: p.stat().st_ino for p in cache.iterdir()}
    assert _check(testset, cache) == uncached
    assert {p.name: p.stat().st_ino for p in cache.iterdir()} == before  # neither replaced


def test_processes_repairing_one_entry_at_once_all_give_the_result(testset, uncached,
                                                                   pristine, cache):
    for kind in ENTRIES:
        _damage(_entry(cache, kind), "keys.npy", "random bytes")
    env = {**os.environ, "RETRIEVAL_GATE_CACHE": str(cache)}
    command = [sys.executable, "-c", "from retrieval_gate.cli import main; main()", "check",
               "--config", str(testset / "gate.toml"), "--output-format", "json"]
    running = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
               for _ in range(2)]
    outcomes = [p.communicate(timeout=120) for p in running]
    assert [(p.returncode, *outcome) for p, outcome in zip(running, outcomes)] == [uncached] * 2
    assert _contents(cache) == _contents(pristine)


def test_an_array_of_objects_is_no_entry_though_nothing_is_expected_of_it(tmp_path,
                                                                         monkeypatch):
    """A file of pickled objects that the manifest agrees with is no entry even for a caller
    that expects no dtype: its bytes are never taken for pointers."""
    monkeypatch.setenv("RETRIEVAL_GATE_CACHE", str(tmp_path / "cache"))
    blob = Blob("input.jsonl", b"{}\n")
    store("test", blob, {"a": np.arange(3)})
    _damage(_entry(tmp_path / "cache", "test"), "a.npy", "objects, listed")
    assert load("test", blob, ("a",)) is None
    assert list((tmp_path / "cache").iterdir()) == []


# Runs `gate check --config CONFIG --output-format json` in forked children of one process
# (imports paid once, by a first check on the cache folder work/first). Child N, given K and
# files of the cache folder work/N/cache with bytes and an offset for each, writes the bytes in
# place at the K-th audit event `open` or `mmap.__new__` after the file's first `open` (K = 0:
# as that open happens, before a byte is read), through a descriptor opened before the check:
# another process rewriting the file while the check reads or uses it. Prints one JSON line per
# child: its exit code, standard output and error.
REWRITER = r"""
import json, os, sys

from retrieval_gate import cli

config, work = sys.argv[1:3]
children = json.loads(sys.argv[3])


def check(folder):  # with the cache folder FOLDER/cache, output to FOLDER/out and err
    for stream, name in ((1, "out"), (2, "err")):
        os.dup2(os.open(os.path.join(folder, name), os.O_WRONLY | os.O_CREAT), stream)
    os.environ["RETRIEVAL_GATE_CACHE"] = os.path.join(folder, "cache")
    sys.argv = ["gate", "check", "--config", config, "--output-format", "json"]
    try:
        cli.main()
        code = 0
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else 1
    sys.stdout.flush()
    sys.stderr.flush()
    return code


def child(n, k, rewrites):
    cache = os.path.join(work, str(n), "cache")
    files = [(os.path.join(cache, name), os.open(os.path.join(cache, name), os.O_WRONLY),
              offset, bytes.fromhex(data)) for name, offset, data in rewrites]
    seen = {path: -1 for path, *_ in files}  # events since its first open; -1: not opened

    def hook(event, args):
        if event not in ("open", "mmap.__new__"):
            return
        for path, fd, offset, data in files:
            if seen[path] >= 0 or (event == "open" and str(args[0]) == path):
                seen[path] += 1
                if seen[path] == k:
                    os.pwrite(fd, data, offset)

    sys.addaudithook(hook)
    os._exit(check(os.path.join(work, str(n))))


saved = os.dup(1), os.dup(2)
check(os.path.join(work, "first"))
for stream, fd in zip((1, 2), saved):
    os.dup2(fd, stream)
for n, (k, rewrites) in enumerate(children):
    pid = os.fork()
    if pid == 0:
        child(n, k, rewrites)
    _, status = os.waitpid(pid, 0)
    folder = os.path.join(work, str(n))
    print(json.dumps([os.waitstatus_to_exitcode(status),
                      *(open(os.path.join(folder, f)).read() for f in ("out", "err"))]),
          flush=True)
"""


def _complemented(path: Path) -> tuple[int, bytes]:
    """Where the array's bytes start in a ``.npy`` file (after its header), and those bytes
    each complemented: another array of the same dtype and shape (what a check that used it
    would show), a change the file's CRC-32 sees."""
    data = path.read_bytes()
    start = len(data) - np.load(path, allow_pickle=False).nbytes
    assert start < len(data)
    return start, bytes(b ^ 0xFF for b in data[start:])


def test_a_file_rewritten_in_place_while_the_entry_is_read_or_used_changes_nothing(
        testset, uncached, pristine, tmp_path):
    """Each array file in turn (one of each entry a check) is rewritten in place at the K-th
    audit event after the check first opens it, for K from 0 to 7: as it is opened (K = 0),
    between its check and its use, while it is used. Each check gives the JSON report, the
    error output and the exit code of a check without the cache, byte for byte; afterwards
    each entry is either as written (rejected, then written anew) or as the rewrite left it
    (read and checked before the rewrite, and used: the next check finds it damaged). A
    rewrite before any byte is read is always found."""
    files = {kind: [(f"{_entry(pristine, kind).name}/{name}.npy",
                     *_complemented(_entry(pristine, kind) / f"{name}.npy")) for name in names]
             for kind, names in ENTRIES.items()}
    children = [(k, [rewrites[i % len(rewrites)] for rewrites in files.values()])
                for k in range(8) for i in range(max(map(len, files.values())))]
    for n in [*range(len(children)), "first"]:
        shutil.copytree(pristine, tmp_path / str(n) / "cache")
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", REWRITER, str(testset / "gate.toml"), str(tmp_path),
         json.dumps([(k, [(name, start, data.hex()) for name, start, data in rewrites])
                     for k, rewrites in children])],
        check=False, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    outcomes = [tuple(json.loads(line)) for line in done.stdout.splitlines()]
    assert len(outcomes) == len(children)
    written = _contents(pristine)
    for n, ((k, rewrites), outcome) in enumerate(zip(children, outcomes)):
        assert outcome == uncached, (k, [name for name, *_ in rewrites])
        left = _contents(tmp_path / str(n) / "cache")
        assert left.keys() == written.keys()
        for name, start, data in rewrites:
            entry, file = name.split("/")
            rewritten = {**written[entry], file: written[entry][file][:start] + data}
            assert left[entry] in ([written[entry]] if k == 0
                                   else [written[entry], rewritten]), (k, name)
