"""Faults of the machine rather than of the input, on the real ``gate`` process: a full
standard output and a refusal of memory are exit 74 with one clear line, Ctrl-C is exit 130,
never a traceback."""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import TREC, gate

GATE = [sys.executable, "-c", "from retrieval_gate.cli import main; main()"]
linux = pytest.mark.skipif(not Path("/dev/full").exists() or not Path("/proc/self").exists(),
                           reason="needs Linux's /dev/full and /proc")


@linux
def test_a_full_standard_output_is_an_environment_fault():
    with open("/dev/full", "w") as full:
        done = subprocess.run([*GATE, "score", TREC / "qrels.test", TREC / "results.test"],
                              stdout=full, stderr=subprocess.PIPE, text=True, check=False,
                              timeout=120)
    assert done.returncode == 74, done.stderr
    assert done.stderr.startswith("error: standard output: No space left on device — ")
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr


@linux
@pytest.mark.parametrize("variable", ["GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY"])
def test_a_full_github_file_is_named(repo, tmp_path, variable):
    """The disk behind $GITHUB_OUTPUT or $GITHUB_STEP_SUMMARY is full: the error names the
    variable and its file (not "standard output"), and the report asked for is not left."""
    env = {"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": str(tmp_path / "output"),
           "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"), "RUNNER_TEMP": str(tmp_path),
           variable: "/dev/full"}
    code, _, err = gate("check", "--json", tmp_path / "report.json", env=env)
    assert code == 74
    assert err == (f"error: ${variable} (/dev/full): cannot append (No space left on device) "
                   "— free space or fix the permissions, then run the command again\n")
    assert not (tmp_path / "report.json").exists()


@linux
def test_a_refused_input_is_reported_when_github_output_is_full_too(repo, tmp_path):
    """The input is refused and $GITHUB_OUTPUT cannot take the failure's outputs: the input
    error (exit 2) still reaches the user, the full file a warning beside it."""
    env = {"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": "/dev/full",
           "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"), "RUNNER_TEMP": str(tmp_path)}
    code, _, err = gate("check", "--candidate", tmp_path / "missing.trec", env=env)
    assert code == 2
    assert err.count("error:") == 1 and "missing.trec" in err.split("error:")[1]
    assert "warning: $GITHUB_OUTPUT (/dev/full): cannot append" in err


def _wait_for(pid: int, wchan: str, timeout: float = 60.0) -> None:
    """Until the process sleeps in kernel function ``wchan`` (e.g. opening a FIFO)."""
    deadline = time.monotonic() + timeout
    while Path(f"/proc/{pid}/wchan").read_text() != wchan:
        assert time.monotonic() < deadline, "the process never reached " + wchan
        time.sleep(0.02)


@linux
def test_ctrl_c_exits_130_with_one_line(tmp_path):
    """The run is a FIFO nobody writes to: the gate blocks opening it, and is interrupted."""
    fifo = tmp_path / "run.trec"
    os.mkfifo(fifo)
    shutil.copy(TREC / "qrels.test", tmp_path / "qrels.test")
    # a test run started in the background of a script inherits SIGINT ignored, and so would
    # the gate: give it Python's Ctrl-C handler, as it has in a terminal
    interruptible = [sys.executable, "-c", ("import signal; signal.signal(signal.SIGINT, "
                     "signal.default_int_handler); from retrieval_gate.cli import main; main()")]
    process = subprocess.Popen([*interruptible, "score", tmp_path / "qrels.test", fifo],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for(process.pid, "wait_for_partner")
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130
    assert err == "error: interrupted — nothing was left half-written; run the command again\n"
    assert out == ""


MORE_MEMORY = " — free memory or use a machine with more, then run the command again\n"
# no pyarrow (its allocator reserves address space), no thread pools, no cache
FEW_LIBRARIES = {**os.environ, "RETRIEVAL_GATE_NO_ARROW": "1", "OPENBLAS_NUM_THREADS": "1",
                 "OMP_NUM_THREADS": "1", "RETRIEVAL_GATE_CACHE": "off"}


def _gate_within(megabytes: int, *args: str | Path) -> subprocess.CompletedProcess:
    """``gate ARGS`` in a process whose address space is limited to ``megabytes`` MiB."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (megabytes << 20, megabytes << 20))

    return subprocess.run([*GATE, *map(str, args)], capture_output=True, text=True,
                          env=FEW_LIBRARIES, preexec_fn=limit, timeout=120, check=False)


@pytest.fixture(scope="module")
def memory(tmp_path_factory) -> tuple[Path, int]:
    """A folder with one-line qrels, and the smallest of a few address-space limits (MiB)
    under which ``gate score`` of a one-line run passes: the interpreter and its libraries,
    with at most 50 MiB to spare (they take about 125 MiB on Linux x86-64, CPython 3.11)."""
    folder = tmp_path_factory.mktemp("memory")
    (folder / "qrels.trec").write_text("q0 0 d0 1\n")
    (folder / "one.trec").write_text("q0 Q0 d0 1 1.0 tag\n")
    for megabytes in (160, 200, 250):
        if _gate_within(megabytes, "score", folder / "qrels.trec",
                        folder / "one.trec").returncode == 0:
            return folder, megabytes
    pytest.skip("the interpreter alone needs more than 250 MiB of address space here")


@linux
@pytest.mark.parametrize(("what", "needs"), [("run", "0.1"), ("corpus", "0.1")])
def test_a_refusal_of_memory_names_the_input_and_what_it_needs(memory, what, needs):
    """A 21 MB run, or a 21 MB list of ids, whose reader needs about 5 (7) times its size:
    exit 74, one line naming the file and the estimate."""
    folder, megabytes = memory
    big = folder / f"big-{what}.txt"
    if what == "run":
        big.write_text("".join(f"q{i // 200} Q0 passage-{i} {i % 200 + 1} 1.5 tag\n"
                               for i in range(600_000)))
        done = _gate_within(megabytes, "score", folder / "qrels.trec", big)
    else:
        big.write_text("".join(f"passage-{i}\n" for i in range(1_500_000)))
        done = _gate_within(megabytes, "score", folder / "qrels.trec", folder / "one.trec",
                            "--corpus", big)
    assert (done.returncode, done.stderr) == (
        74, f"error: not enough memory for reading the {what} {big}: needs about {needs} GiB"
        + MORE_MEMORY)
    assert done.stdout == ""


@linux
@pytest.mark.parametrize("how", ["mapped", "read"])
def test_a_file_too_large_for_the_memory_left_is_named(memory, how):
    """A 300 MiB file (sparse: nothing on the disk) given as a run, which is memory-mapped, or
    as qrels, which are read into memory: the first step is refused."""
    folder, megabytes = memory
    sparse = folder / f"sparse-{how}.txt"
    with open(sparse, "wb") as handle:
        handle.truncate(300 << 20)
    qrels, run = (folder / "qrels.trec", sparse) if how == "mapped" else (sparse,
                                                                          folder / "one.trec")
    done = _gate_within(megabytes, "score", qrels, run)
    assert (done.returncode, done.stderr) == (
        74, f"error: not enough memory for reading {sparse}: needs about 0.3 GiB" + MORE_MEMORY)


@linux
def test_a_refusal_of_memory_in_no_named_task_says_so(memory):
    """Queries are not among the inputs whose readers name what they need: 500,000 of them
    (20 MB, about 500 MB parsed) are exit 74, one line, no output file."""
    folder, megabytes = memory
    queries = folder / "queries.jsonl"
    queries.write_text("".join(f'{{"id": "q{i}", "text": "question {i}"}}\n'
                               for i in range(500_000)))
    out = folder / "snapshot.json"
    done = _gate_within(megabytes, "snapshot", "freeze", "--queries", queries, "--qrels",
                        folder / "qrels.trec", "--corpus-version", "c",
                        "--permissions-version", "p", "--unit", "document", "--unlabeled",
                        "zero", "-o", out)
    assert (done.returncode, done.stderr) == (74, "error: not enough memory (the machine "
                                                  "refused an allocation)" + MORE_MEMORY)
    assert not out.exists()


def _closed_reader() -> int:
    """The write end of a pipe whose reader has gone: every write to it fails with EPIPE."""
    read, write = os.pipe()
    os.close(read)
    return write


@pytest.mark.parametrize(("args", "code"), [
    (["score", str(TREC / "qrels.test"), str(TREC / "results.test")], 0),  # a long output
    (["check", "--candidate", "examples/cranfield/runs/bm25-titles.trec"], 1),
    (["init", "--queries", "q/queries.jsonl", "--qrels", "q/qrels.tsv"], 0),
])
def test_a_reader_that_closed_the_pipe_is_not_a_fault(tmp_path, args, code):
    """``gate ... | head -1``: the reader took what it wanted. No error, the command's own exit
    code (the verdict kept: 1 for a regression), its files written."""
    root = Path(__file__).resolve().parents[1]
    cwd = root
    if args[0] == "init":
        cwd = tmp_path
        (tmp_path / "q").mkdir()
        for name in ("queries.jsonl", "qrels.tsv"):
            shutil.copy(root / "examples" / "cranfield" / name, tmp_path / "q" / name)
    write = _closed_reader()
    try:
        done = subprocess.run([*GATE, *args], stdout=write, stderr=subprocess.PIPE, text=True,
                              cwd=cwd, check=False, timeout=120)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (code, "")
    if args[0] == "init":
        assert (tmp_path / "q" / "snapshot.json").is_file() and (tmp_path / "gate.toml").is_file()
