"""Faults of the machine rather than of the input, on the real ``gate`` process: a full
standard output is exit 74 with one clear line, Ctrl-C is exit 130, never a traceback."""

from __future__ import annotations

import os
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
