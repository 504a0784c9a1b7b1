"""`gate baseline approve` and baseline folders: provenance, refusals, the layout `gate check`
and `gate validate` read, environment faults, and approvals killed at every file-system step."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import INTERRUPTED, RUNS, gate, interrupted_runs

CANDIDATE_ENV = {"GITHUB_ACTOR": "octocat", "GITHUB_SHA": "f" * 40}


def tree(folder: Path) -> dict[str, bytes]:
    """Every file below ``folder``: relative path → bytes (empty when it does not exist)."""
    if not folder.exists():
        return {}
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def without_leftovers(files: dict[str, bytes]) -> dict[str, bytes]:
    """``files`` less what the README calls leftovers of an approval: hidden ``*.tmp`` entries,
    ``v<K>`` folders CURRENT does not name, and beside CURRENT a top-level manifest and its
    run."""
    pointer = files.get("CURRENT") if "CURRENT.manifest.json" not in files else None
    current = pointer.decode().strip() if pointer is not None else None
    kept = {}
    for name, data in files.items():
        top = name.split("/")[0]
        if top.startswith(".") and top.endswith(".tmp") or name == "history.jsonl":
            continue  # the history is a log appended after the switch, not the baseline
        if re.fullmatch(r"v[0-9]+", top) and top != current:
            continue
        if current and "/" not in name and name != "CURRENT" and (
                name.endswith(".manifest.json") or f"{name}.manifest.json" in files):
            continue
        kept[name] = data
    return kept


def approved_layout(files: dict[str, bytes], run: str) -> str:
    """Assert ``files`` is exactly CURRENT and one version holding ``run`` and its manifest;
    return the version."""
    version = files["CURRENT"].decode()
    assert re.fullmatch(r"v[1-9][0-9]*\n", version), version
    version = version.strip()
    assert sorted(set(files) - {"history.jsonl"}) == [
        "CURRENT", f"{version}/{run}", f"{version}/{run}.manifest.json"]
    return version


def make_small_set(folder: Path) -> Path:
    """A six-query snapshot with two runs, old.trec and new.trec, and their manifests."""
    queries = [f"q{i}" for i in range(1, 7)]
    (folder / "queries.jsonl").write_text("".join(
        json.dumps({"id": q, "text": f"question {q}"}) + "\n" for q in queries))
    (folder / "qrels.tsv").write_text("".join(f"{q} 0 rel 1\n{q} 0 also 2\n" for q in queries))
    for name, first in (("old.trec", "rel"), ("new.trec", "also")):
        (folder / name).write_text("".join(
            f"{q} Q0 {doc} {rank} {10 - rank} t\n" for q in queries
            for rank, doc in enumerate((first, "x", "rel" if first == "also" else "also"), 1)))
    code, _, err = gate("snapshot", "freeze", "--queries", folder / "queries.jsonl", "--qrels",
                        folder / "qrels.tsv", "--corpus-version", "c", "--unit", "document",
                        "--permissions-version", "p", "-o", folder / "snapshot.json")
    assert code == 0, err
    for run in ("old.trec", "new.trec"):
        code, _, err = gate("run-manifest", "--snapshot", folder / "snapshot.json", "--run",
                            folder / run, "--created", "2026-01-01T00:00:00Z", "--commit", "x")
        assert code == 0, err
    return folder


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    return make_small_set(tmp_path_factory.mktemp("small"))


def approve(small: Path, run: str, to: Path, *more: str) -> tuple[int, str, str]:
    return gate("baseline", "approve", "--candidate", small / run, "--to", to, "--snapshot",
                small / "snapshot.json", *more, env=CANDIDATE_ENV)


def check(small: Path, baseline: Path) -> tuple[int, str, str]:
    return gate("check", "--snapshot", small / "snapshot.json", "--baseline", baseline,
                "--candidate", small / "new.trec", "--no-github")


def first_layout(small: Path, folder: Path, run: str = "old.trec") -> None:
    """A baseline folder as approvals wrote it before CURRENT: a run and its manifest."""
    folder.mkdir(parents=True)
    shutil.copy(small / run, folder / run)
    shutil.copy(small / f"{run}.manifest.json", folder / f"{run}.manifest.json")


# -- approving ---------------------------------------------------------------------------------

def test_approve_writes_run_manifest_and_provenance(repo, monkeypatch):
    monkeypatch.setenv("GITHUB_ACTOR", "octocat")
    monkeypatch.setenv("GITHUB_SHA", "f" * 40)
    folder = repo / "baselines" / "cranfield"
    code, out, err = gate("baseline", "approve", "--candidate",
                          "examples/cranfield/runs/hybrid.trec", "--to", "baselines/cranfield")
    assert code == 0, err
    assert out.splitlines()[0] == ("approved baselines/cranfield/v1/hybrid.trec (baselines/"
                                   "cranfield/v1/hybrid.trec.manifest.json); replaced "
                                   "baselines/cranfield/bm25.trec")
    assert approved_layout(tree(folder), "hybrid.trec") == "v1"
    assert (folder / "v1" / "hybrid.trec").read_bytes() == (RUNS / "hybrid.trec").read_bytes()
    approved = json.loads((folder / "v1" / "hybrid.trec.manifest.json").read_text())["approved"]
    assert approved["by"] == "octocat" and approved["commit"] == "f" * 40
    assert approved["scores"]["nDCG@10"] == pytest.approx(0.3898441261546252, abs=1e-15)
    umask = os.umask(0)
    os.umask(umask)
    for path in (folder / "v1", folder / "v1" / "hybrid.trec", folder / "CURRENT"):
        assert path.stat().st_mode & 0o777 == (0o777 if path.is_dir() else 0o666) & ~umask
    # the folder is the baseline: the zero-config check now compares against hybrid
    code, out, _ = gate("check", "--candidate", "examples/cranfield/runs/hybrid.trec")
    assert code == 0 and "vs baseline rrf (baselines/cranfield/v1/hybrid.trec)" in out
    # the next approval is the next version; the previous one is deleted
    code, out, err = gate("baseline", "approve", "--candidate", "examples/cranfield/runs/dense.trec",
                          "--to", "baselines/cranfield")
    assert code == 0, err
    assert out.splitlines()[0].endswith("; replaced baselines/cranfield/v1/hybrid.trec")
    assert approved_layout(tree(folder), "dense.trec") == "v2"


def test_approve_into_a_new_folder_and_validate_accepts_baseline_folders(small, tmp_path):
    folder = tmp_path / "baselines" / "new"
    code, out, err = approve(small, "old.trec", folder)
    assert code == 0, err
    assert out.splitlines()[0] == (f"approved {folder}/v1/old.trec ({folder}/v1/old.trec."
                                   "manifest.json)")
    first_layout(small, tmp_path / "first")
    for baseline, run in ((folder, "v1/old.trec"), (tmp_path / "first", "old.trec")):
        code, out, err = gate("validate", small / "snapshot.json", baseline)
        assert code == 0, err
        assert out.splitlines()[1].startswith(f"{baseline}/{run}: valid — made on this snapshot")


def test_approve_replaces_a_baseline_of_an_earlier_snapshot_and_records_it(repo):
    """The test set evolved (same snapshot name, a new fingerprint): approval replaces the
    baseline without --force and records the change; a snapshot of another name (another test
    set) still needs --force."""
    folder = repo / "baselines" / "cranfield"
    manifest = folder / "bm25.trec.manifest.json"
    document = json.loads(manifest.read_text())
    document["snapshot"]["components"]["qrels"]["version"] = "old"
    from retrieval_gate.inputs.snapshot import fingerprint

    document["snapshot"]["fingerprint"] = old = fingerprint(document["snapshot"]["components"])
    manifest.write_text(json.dumps(document))
    code, out, err = gate("baseline", "approve", "--candidate",
                          "examples/cranfield/runs/hybrid.trec", "--to", "baselines/cranfield")
    assert code == 0, err
    assert "the snapshot moved on" in out
    version = approved_layout(tree(folder), "hybrid.trec")
    approved = json.loads((folder / version / "hybrid.trec.manifest.json").read_text())
    assert approved["approved"]["snapshot_change"]["from"] == old
    (line,) = [json.loads(x) for x in (folder / "history.jsonl").read_text().splitlines()]
    assert line["snapshot_change"]["from"] == old and line["version"] == version

    document["snapshot"]["name"] = "another test set"
    current = folder / version / "hybrid.trec.manifest.json"
    moved = json.loads(current.read_text())
    moved["snapshot"]["name"] = "another test set"
    moved["snapshot"]["components"]["qrels"]["version"] = "other"
    moved["snapshot"]["fingerprint"] = fingerprint(moved["snapshot"]["components"])
    current.write_text(json.dumps(moved))
    before = tree(folder)
    code, _, err = gate("baseline", "approve", "--candidate",
                        "examples/cranfield/runs/dense.trec", "--to", "baselines/cranfield")
    assert code == 3 and "another test set" in err and "pass --force" in err, err
    assert tree(folder) == before
    code, _, err = gate("baseline", "approve", "--candidate",
                        "examples/cranfield/runs/dense.trec", "--to", "baselines/cranfield",
                        "--force")
    assert code == 0, err


def test_approving_the_approved_baseline_again_is_a_no_op(repo):
    folder = repo / "baselines" / "cranfield"
    args = ("baseline", "approve", "--candidate", "examples/cranfield/runs/hybrid.trec", "--to",
            "baselines/cranfield")
    assert gate(*args)[0] == 0
    before = tree(folder)
    code, out, err = gate(*args)
    assert code == 0, err
    assert out.startswith("unchanged: examples/cranfield/runs/hybrid.trec is already the "
                          "approved baseline")
    assert tree(folder) == before  # no new version, no history line
    assert len((folder / "history.jsonl").read_text().splitlines()) == 1
    code, out, _ = gate("history", "baselines/cranfield")
    assert code == 0 and out.splitlines()[0].split()[:5] == ["approved", "commit", "version",
                                                            "snapshot", "system"]
    assert "rrf" in out.splitlines()[1]


def test_provenance_is_never_empty_silently(repo, monkeypatch):
    monkeypatch.delenv("GITHUB_SHA")  # and the repository copy is no git repository
    args = ("baseline", "approve", "--candidate", "examples/cranfield/runs/hybrid.trec", "--to",
            "baselines/cranfield")
    code, _, err = gate(*args)
    assert code == 2 and "--commit: no source commit found" in err
    code, _, err = gate(*args, "--commit", "none")
    assert code == 0, err
    run = repo / "examples" / "cranfield" / "runs" / "dense.trec"
    code, _, err = gate("run-manifest", "--snapshot", "examples/cranfield/snapshot.json",
                        "--run", run)
    assert code == 2 and "record none on purpose with --commit none" in err


def test_approve_refuses_a_folder_of_several_runs(repo):
    runs = repo / "examples" / "cranfield" / "runs"
    before = tree(runs)
    code, _, err = gate("baseline", "approve", "--candidate", runs / "hybrid.trec", "--to", runs)
    assert code == 2 and "is not a baseline folder" in err
    assert tree(runs) == before


def test_approve_refuses_a_candidate_without_a_manifest(repo):
    (repo / "examples" / "cranfield" / "runs" / "hybrid.trec.manifest.json").unlink()
    code, _, err = gate("baseline", "approve", "--candidate",
                        "examples/cranfield/runs/hybrid.trec", "--to", "baselines/new")
    assert code == 2 and "has no run manifest" in err
    assert not (repo / "baselines" / "new").exists()


def test_a_first_layout_run_named_current_is_refused_not_overwritten(small, tmp_path):
    folder = tmp_path / "base"
    folder.mkdir()
    shutil.copy(small / "old.trec", folder / "CURRENT")
    shutil.copy(small / "old.trec.manifest.json", folder / "CURRENT.manifest.json")
    assert check(small, folder)[0] == 0  # read as the first layout
    before = tree(folder)
    code, _, err = approve(small, "new.trec", folder)
    assert code == 2 and err == (f"error: {folder}/CURRENT: is named CURRENT, the name an "
                                 "approval gives the file that points at the approved version "
                                 "— rename the run and its manifest, then approve again\n")
    assert tree(folder) == before


# -- reading baseline folders ------------------------------------------------------------------

def test_check_follows_current_and_ignores_leftovers(small, tmp_path):
    folder = tmp_path / "base"
    assert approve(small, "old.trec", folder)[0] == 0
    (folder / "v7").mkdir()  # a version an interrupted approval did not switch to
    shutil.copy(small / "new.trec", folder / "v7" / "new.trec")
    (folder / ".approve-x.tmp").mkdir()  # a staging folder
    shutil.copy(small / "new.trec.manifest.json", folder / ".approve-x.tmp" / "m.manifest.json")
    shutil.copy(small / "new.trec", folder / "new.trec")  # a replaced first-layout baseline
    shutil.copy(small / "new.trec.manifest.json", folder / "new.trec.manifest.json")
    code, out, err = check(small, folder)
    assert code == 0, err
    assert f"vs baseline {folder}/v1/old.trec" in out
    code, _, err = approve(small, "new.trec", folder)
    assert code == 0, err
    assert approved_layout(tree(folder), "new.trec") == "v8"


@pytest.mark.parametrize("pointer, message", [
    ("v2\n", "CURRENT:1: names v2, which is not a folder in"),
    ("../elsewhere\n", "CURRENT:1: '../elsewhere' is not a version folder such as v1"),
    ("", ("CURRENT:1: '' is not a version folder such as v1 — restore the file from version "
          "control, or approve a baseline again")),
    ("v1\x00", "CURRENT:1: 'v1\\x00' is not a version folder such as v1"),
])
def test_a_broken_pointer_is_invalid_input(small, tmp_path, pointer, message):
    folder = tmp_path / "base"
    assert approve(small, "old.trec", folder)[0] == 0
    (folder / "CURRENT").write_text(pointer)
    code, out, err = check(small, folder)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"error: {folder}/{message}")
    code, _, err = approve(small, "new.trec", folder)  # approval refuses it too
    assert code == 2 and message in err


def test_an_empty_baseline_folder_says_so(small, tmp_path):
    (tmp_path / "empty").mkdir()
    code, _, err = check(small, tmp_path / "empty")
    assert code == 2 and err == (f"error: {tmp_path}/empty: holds no run with its manifest — "
                                 "approve one with gate baseline approve --candidate RUN --to "
                                 f"{tmp_path}/empty\n")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a folder whatever its mode says")
def test_an_unreadable_baseline_folder_says_it_cannot_be_read(small, tmp_path, monkeypatch):
    folder = tmp_path / "base"
    assert approve(small, "old.trec", folder)[0] == 0
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gate.toml").write_text(f'snapshot = "{small}/snapshot.json"\nbaseline = "base"\n'
                                        f'candidate = "{small}/new.trec"\n')
    folder.chmod(0)
    try:
        results = [gate("check"), gate("validate", small / "snapshot.json", folder)]
    finally:
        folder.chmod(0o755)
    for (code, _, err), named in zip(results, ("base", folder)):
        assert code == 2 and err == (f"error: {named}: cannot be read (permission denied) — "
                                     "make the folder readable and searchable (chmod u+rx)\n")


# -- environment faults ------------------------------------------------------------------------

def test_a_folder_under_a_file_is_an_environment_fault(small, tmp_path):
    (tmp_path / "file").write_text("x")
    code, out, err = approve(small, "old.trec", tmp_path / "file" / "sub" / "base")
    assert code == 74 and out == ""
    assert err == (f"error: {tmp_path}/file/sub/base: cannot create the baseline folder (Not a "
                   f"directory: {tmp_path}/file is a file) — approve into a folder that can be "
                   "created here, or fix the permissions\n")
    assert (tmp_path / "file").read_text() == "x"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a folder whatever its mode says")
def test_a_folder_under_a_read_only_folder_is_an_environment_fault(small, tmp_path):
    (tmp_path / "ro").mkdir(mode=0o555)
    code, _, err = approve(small, "old.trec", tmp_path / "ro" / "base")
    assert code == 74
    assert err.startswith(f"error: {tmp_path}/ro/base: cannot create the baseline folder "
                          "(Permission denied)")


# Runs `gate baseline approve ARGS` with an audit hook: "announce-lock" prints "lock" when the
# approval asks for the folder's lock; "grow-candidate" appends a line to the candidate just as
# its copy into the baseline folder is created.
HOOKED = r"""
import os, sys
from retrieval_gate import cli

action, candidate = sys.argv[1], sys.argv[2]


def hook(event, args):
    if action == "announce-lock" and event == "fcntl.flock":
        print("lock", flush=True)
    if (action == "grow-candidate" and event == "open" and args[1] == "x"
            and os.path.basename(args[0]) == os.path.basename(candidate)):
        with open(candidate, "a") as run:
            run.write("q1 Q0 late 9 0.5 t\n")


sys.addaudithook(hook)
sys.argv = ["gate", "baseline", "approve", "--candidate", candidate, *sys.argv[3:]]
cli.main()
"""


def hooked_approval(action: str, candidate: Path, *args: str | Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", HOOKED, action, candidate, *args],
                            env={**os.environ, **CANDIDATE_ENV}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_approvals_of_one_folder_take_turns(small, tmp_path):
    """An approval waits for the folder's lock, then reads the folder as the approval holding
    the lock left it (here: a switch to v5 made meanwhile)."""
    fcntl = pytest.importorskip("fcntl")
    folder = tmp_path / "base"
    assert approve(small, "old.trec", folder)[0] == 0
    held = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)
        waiting = hooked_approval("announce-lock", small / "new.trec", "--to", folder,
                                  "--snapshot", small / "snapshot.json")
        assert waiting.stdout.readline() == "lock\n"
        (folder / "v1").rename(folder / "v5")
        (folder / "CURRENT").write_text("v5\n")
    finally:
        os.close(held)
    out, err = waiting.communicate(timeout=120)
    assert waiting.returncode == 0, err
    assert out.splitlines()[0].endswith(f"replaced {folder}/v5/old.trec")
    assert approved_layout(tree(folder), "new.trec") == "v6"


def test_a_candidate_that_changes_while_copied_is_not_approved(small, tmp_path):
    for name in ("new.trec", "new.trec.manifest.json"):
        shutil.copy(small / name, tmp_path / name)
    folder = tmp_path / "base"
    first_layout(small, folder)
    before = tree(folder)
    approval = hooked_approval("grow-candidate", tmp_path / "new.trec", "--to", folder,
                               "--snapshot", small / "snapshot.json")
    _, err = approval.communicate(timeout=120)
    assert approval.returncode == 3
    assert err == (f"error: {tmp_path}/new.trec: the file changed while it was being approved — "
                   "approve it again once it is complete\n")
    assert tree(folder) == before  # the staging folder is gone too


# -- killed at every step ----------------------------------------------------------------------

# Runs `gate baseline approve` in forked children of one process (imports paid once). Child N,
# for N from FIRST below LAST, counts the file-system writes it makes (audit events) and sends
# itself the signal HOW at the N-th, before it happens; the first child that finishes ends the
# loop. Each child approves into its own copy of the old baseline folder, work/N/base. Prints
# one JSON line per child.
KILLER = r"""
import json, os, shutil, signal, sys
from pathlib import Path

sys.dont_write_bytecode = True
from retrieval_gate import cli
from retrieval_gate.commands import approve
from retrieval_gate.formats import schema
for name in ("snapshot", "run-manifest"):  # import and compile before forking
    schema.problems({}, name, "warm-up")
approve.utc_now = lambda: "2026-01-01T00:00:00Z"
old, work, candidate, snapshot, how = sys.argv[1:6]
first, last = map(int, sys.argv[6:8])
WRITES = {"os.rename", "os.replace", "os.remove", "os.unlink", "os.mkdir", "os.rmdir",
          "os.symlink", "os.link", "os.chmod", "os.truncate", "os.utime", "shutil.copyfile",
          "shutil.copymode", "shutil.copystat", "shutil.copytree", "shutil.move",
          "shutil.rmtree"}
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def writes(event, args):
    if event == "open":
        _, mode, flags = args
        return any(c in mode for c in "wax+") if mode else bool(flags & WRITE_FLAGS)
    return event in WRITES


def child(n, folder):
    seen = 0

    def hook(event, args):
        nonlocal seen
        if writes(event, args):
            seen += 1
            if seen == n:
                os.kill(os.getpid(), getattr(signal, how))

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    sys.argv = ["gate", "baseline", "approve", "--candidate", candidate, "--to", folder,
                "--snapshot", snapshot]
    sys.addaudithook(hook)
    try:
        cli.main()
    except SystemExit as done:
        os._exit(done.code if isinstance(done.code, int) else 1)
    os._exit(0)


for n in range(first, last):
    folder = Path(work, str(n), "base")
    folder.parent.mkdir(parents=True)
    if Path(old).exists():
        shutil.copytree(old, folder)
    pid = os.fork()
    if pid == 0:
        child(n, str(folder))
    _, status = os.waitpid(pid, 0)
    killed = os.WIFSIGNALED(status)
    print(json.dumps({"n": n, "signal": os.WTERMSIG(status) if killed else None,
                      "code": None if killed else os.WEXITSTATUS(status)}), flush=True)
    if not killed:
        break
"""


def killed_approvals(small: Path, old: Path, work: Path, how: str = "SIGKILL",
                     steps: range = range(1, 500)) -> list[dict]:
    env = {**os.environ, **CANDIDATE_ENV, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", KILLER, old, work, small / "new.trec",
                           small / "snapshot.json", how, str(steps.start), str(steps.stop)],
                          check=False, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def state_of(folder: Path, states: dict[str, dict[str, bytes]]) -> str:
    """Which of ``states`` the folder holds, leftovers aside (StopIteration: none)."""
    return next(name for name, files in states.items()
                if without_leftovers(tree(folder)) == files)


@pytest.mark.parametrize("layout", ["first layout", "CURRENT", "no folder"])
def test_an_approval_killed_at_any_step_leaves_the_old_or_the_new_baseline(small, tmp_path,
                                                                          layout):
    """After a SIGKILL before any one file-system write of an approval, the folder holds the
    old baseline or the new one byte for byte (less leftovers), `gate check` reads it, and the
    next approval succeeds and leaves nothing else behind."""
    old = tmp_path / "old"
    if layout == "first layout":
        first_layout(small, old)
    elif layout == "CURRENT":
        assert approve(small, "old.trec", old)[0] == 0
    runs = killed_approvals(small, old, tmp_path / "work")
    *killed, finished = runs
    assert all(r["signal"] == signal.SIGKILL for r in killed)
    assert finished == {"n": len(runs), "signal": None, "code": 0}
    assert len(killed) >= 8  # every write of the approval was a place to die
    new = tree(tmp_path / "work" / str(finished["n"]) / "base")
    approved_layout(new, "new.trec")
    states = {"old": without_leftovers(tree(old)), "new": without_leftovers(new)}
    seen = set()
    for run in killed:
        folder = tmp_path / "work" / str(run["n"]) / "base"
        state = state_of(folder, states)
        seen.add(state)
        code, out, err = check(small, folder)
        if state == "new":
            assert code == 0 and f"vs baseline {folder}/v" in out, err
        elif layout == "no folder":
            assert code == 2 and ("holds no run with its manifest" in err
                                  or "run file not found" in err), err
        else:
            baseline = folder / ("old.trec" if layout == "first layout" else "v1/old.trec")
            assert code == 0 and f"vs baseline {baseline}\n" in out, err
        code, _, err = approve(small, "new.trec", folder)
        assert code == 0, err
        approved_layout(tree(folder), "new.trec")
    # the history line is written after the switch: a kill before it leaves the new baseline
    assert seen == {"old", "new"}


def test_an_approval_terminated_by_sigterm_leaves_a_consistent_folder(small, tmp_path):
    old = tmp_path / "old"
    first_layout(small, old)
    work = tmp_path / "work"
    assert killed_approvals(small, old, work, "SIGTERM", range(9, 10)) == [
        {"n": 9, "signal": signal.SIGTERM, "code": None}]
    folder = work / "9" / "base"
    left = without_leftovers(tree(folder))
    if left != tree(old):
        version = approved_layout(left, "new.trec")
        assert left[f"{version}/new.trec"] == (small / "new.trec").read_bytes()
    assert check(small, folder)[0] == 0
    assert approve(small, "new.trec", folder)[0] == 0
    approved_layout(tree(folder), "new.trec")


def test_an_approval_interrupted_at_any_rename_keeps_its_history_line_with_it(small, tmp_path):
    """SIGINT as any one of an approval's renames returns (the new version's folder, CURRENT,
    the history), and at every rename after it: exit 130, and the folder holds the old baseline
    with the old history (the version's folder, a leftover, aside), or the new baseline with
    the history line naming it — Ctrl-C is held from the switch to the end of that line —
    never the new baseline without its line; `gate check` reads it either way."""
    old = tmp_path / "old"
    assert approve(small, "old.trec", old)[0] == 0
    before = tree(old)
    folder = tmp_path / "base"

    def reset() -> None:
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(old, folder)

    seen = []
    for run in interrupted_runs(["baseline", "approve", "--candidate", small / "new.trec",
                                 "--to", folder, "--snapshot", small / "snapshot.json"], reset,
                                env=CANDIDATE_ENV):
        assert run.returncode in (0, 130), run.stderr
        if run.returncode == 130:
            assert run.stderr == INTERRUPTED
        files = tree(folder)
        if without_leftovers(files) == without_leftovers(before):
            assert files["history.jsonl"] == before["history.jsonl"]
            seen.append("old")
        else:
            version = approved_layout(without_leftovers(files), "new.trec")
            lines = files["history.jsonl"].decode().splitlines()
            assert lines[:-1] == before["history.jsonl"].decode().splitlines()
            assert json.loads(lines[-1])["version"] == version
            seen.append("new")
        code, _, err = check(small, folder)
        assert code == 0, err
    assert run.returncode == 0, run.stderr
    assert seen == ["old", "new", "new", "new"]


def test_history_refuses_a_line_no_approval_wrote(tmp_path):
    (tmp_path / "history.jsonl").write_text('{"at": "2026-12-01T00:00:00Z", "means": {"R": 1}}\n'
                                            '{"at": "x", "system": [1]}\n')
    code, _, err = gate("history", tmp_path)
    assert code == 2 and "history.jsonl:2: line is not an approval" in err


def test_history_shows_the_gated_measures(tmp_path, monkeypatch):
    """An approval records the measures its configuration gates; ``gate history`` shows those
    — for lines written before approvals recorded them, the ones the configuration here gates,
    and without one the snapshot's measures in the snapshot's order."""
    monkeypatch.chdir(tmp_path)
    cranfield = RUNS.parent
    for name in ("queries.jsonl", "qrels.tsv", "corpus.jsonl"):
        shutil.copy(cranfield / name, tmp_path / name)
    measures = ["Recall@10", "P@10", "Hit@10", "nDCG@5", "RR@10", "nDCG@10", "AP@10"]
    code, _, err = gate("snapshot", "freeze", "--queries", "queries.jsonl", "--qrels",
                        "qrels.tsv", "--corpus-file", "corpus.jsonl", "--corpus-version", "c",
                        "--permissions-version", "p", *(f"-m{m}" for m in measures), "-o",
                        "snapshot.json")
    assert code == 0, err
    for run in ("hybrid", "dense"):
        shutil.copy(RUNS / f"{run}.trec", tmp_path / f"{run}.trec")
        code, _, err = gate("run-manifest", "--snapshot", "snapshot.json", "--run",
                            f"{run}.trec", "--system", f"name={run}")
        assert code == 0, err
    (tmp_path / "gate.toml").write_text(
        'snapshot = "snapshot.json"\n[[gate]]\nmeasure = "RR@10"\nmargin = 0.02\n'
        '[[gate]]\nmeasure = "ndcg@5"\nmargin = 0.02\n'
        '[[gate]]\nmeasure = "AP@10"\nmargin = 0.02\nreport-only = true\n')
    for run in ("hybrid", "dense"):
        code, _, err = gate("baseline", "approve", "--candidate", f"{run}.trec", "--to", "main")
        assert code == 0, err

    def columns() -> list[str]:
        code, out, err = gate("history", "main")
        assert code == 0, err
        header, *rows = out.splitlines()
        assert len(rows) == 2 and rows[1].split()[5] == "dense"  # the snapshot: name, hash
        return header.split()[5:]

    assert columns() == ["RR@10", "nDCG@5"]
    history = tmp_path / "main" / "history.jsonl"
    lines = [json.loads(line) for line in history.read_text().splitlines()]
    assert [line["gated"] for line in lines] == [["RR@10", "nDCG@5"]] * 2
    current = (tmp_path / "main" / "CURRENT").read_text().strip()
    manifest = json.loads((tmp_path / "main" / current / "dense.trec.manifest.json").read_text())
    assert manifest["approved"]["gated"] == ["RR@10", "nDCG@5"]

    # lines written before approvals recorded the gated measures: the configuration's
    history.write_text("".join(json.dumps({k: v for k, v in line.items() if k != "gated"})
                               + "\n" for line in lines))
    assert columns() == ["RR@10", "nDCG@5"]
    # no configuration: the snapshot's measures in its order, a handful of them
    (tmp_path / "gate.toml").unlink()
    assert columns() == measures[:5]


PYDOC_JUDGE = ("--judge", "reader-scoring=squad-token-f1+exact-match+evidence-match", "--judge",
               "gold=examples/pydoc/label.py direct quotes")  # as the pydoc baseline records


def pydoc_again(repo: Path) -> tuple[Path, tuple[str, ...], tuple[object, ...]]:
    """The pydoc baseline's own run copied as a candidate: its path, the snapshot option and
    the approval command into the pydoc baseline folder."""
    again = repo / "examples" / "pydoc" / "runs" / "again.trec"
    shutil.copy(repo / "baselines" / "pydoc" / "bm25-300.trec", again)
    snapshot = ("--snapshot", "examples/pydoc/snapshot.json")
    return again, snapshot, ("baseline", "approve", "--candidate", again, "--to",
                             "baselines/pydoc", *snapshot)


def test_the_approved_run_again_under_another_manifest_says_what_differs(repo):
    """The baseline's own run bytes, its manifest written again: one that drops the scores the
    baseline pins is refused (approving it would leave the baseline without them) unless
    forced; one that describes the system otherwise is approved as a new version, saying what
    differs; the same manifest again is a no-op."""
    again, snapshot, approve = pydoc_again(repo)
    chunks = ("--chunks", "examples/pydoc/chunks-300.jsonl", "--chunking-version",
              "tokens-300-overlap-50")
    code, _, err = gate("run-manifest", *snapshot, "--run", again, *chunks, "--system",
                        "retriever=my-retriever")
    assert code == 0, err
    before = tree(repo / "baselines" / "pydoc")
    code, _, err = gate(*approve)
    assert code == 2 and "again.trec.manifest.json: is the approved baseline's run again (the " \
        "same bytes), and its manifest drops the baseline's scores: system: " \
        "retriever=my-retriever (the approved baseline's: retriever=bm25s-0.3.16, k1=1.5, " \
        "b=0.75); scores: none (the approved baseline's: " \
        "../../examples/pydoc/answers/bm25-300.scores.jsonl); judge: none" in err, err
    assert "pass --force" in err and tree(repo / "baselines" / "pydoc") == before
    judge = PYDOC_JUDGE
    code, _, err = gate("run-manifest", *snapshot, "--run", again, *chunks, "--system",
                        "retriever=my-retriever", "--scores",
                        "examples/pydoc/answers/bm25-300.scores.jsonl", *judge)
    assert code == 0, err
    code, out, err = gate(*approve)
    assert code == 0 and out.startswith("approved baselines/pydoc/v1/again.trec"), err
    assert err == ("note: the candidate's run is the approved baseline's (the same bytes), "
                   "described otherwise — system: retriever=my-retriever (the approved "
                   "baseline's: retriever=bm25s-0.3.16, k1=1.5, b=0.75): approved as a new "
                   "version\n")
    assert gate(*approve)[1].startswith("unchanged:")  # the same manifest again: nothing
    code, _, err = gate("run-manifest", *snapshot, "--run", again, *chunks, "--system",
                        "retriever=renamed", "--scores",
                        "examples/pydoc/answers/bm25-300.scores.jsonl", *judge)
    assert code == 0, err
    code, out, err = gate(*approve)  # the same files, another system: kept, and said
    assert code == 0 and out.startswith("unchanged:") and err == (
        "note: its manifest describes the run otherwise — system: retriever=renamed (the "
        "approved baseline's: retriever=my-retriever): the approved manifest is kept\n"), err
    code, _, err = gate("run-manifest", *snapshot, "--run", again, *chunks)
    assert code == 0, err
    code, out, err = gate(*approve, "--force")
    assert code == 0 and "drops" not in err and "scores: none" in err, err


def test_an_approval_says_what_the_test_set_can_certify(repo):
    """Under a configuration, per gated measure: the spread of the per-query differences
    from the baseline it replaces (on the same snapshot), the drop found 80 % of the time
    and the queries the margin needs — checked against pytrec_eval's per-query values and
    scipy's normal quantiles; the first approval of a folder measures the run's own spread."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    from scipy.stats import norm

    (repo / "gate.toml").write_text(
        'snapshot = "examples/cranfield/snapshot.json"\nbaseline = "baselines/cranfield"\n'
        '[[gate]]\nmeasure = "P@10"\nmargin = 0.05\n'
        '[[gate]]\nmeasure = "Recall@10"\nmargin = 0.02\n'
        '[[gate]]\nmeasure = "nDCG@10"\nmargin = 0.1\nreport-only = true\n')
    qrels: dict[str, dict[str, int]] = {}
    for line in (repo / "examples" / "cranfield" / "qrels.tsv").read_text().splitlines():
        qid, _, doc, grade = line.split()
        qrels.setdefault(qid, {})[doc] = int(grade)

    def per_query(run: str, measure: str) -> np.ndarray:
        ranked: dict[str, dict[str, float]] = {}
        for line in (repo / run).read_text().splitlines():
            qid, _, doc, _, score, _ = line.split()
            ranked.setdefault(qid, {})[doc] = float(score)
        got = pytrec_eval.RelevanceEvaluator(qrels, {measure}).evaluate(ranked)
        return np.array([got[q][measure] if q in got else 0.0 for q in sorted(qrels)])

    z = norm.ppf(1 - 0.05 / 2) + norm.ppf(0.8)  # two gates in the family: α/2 each
    gates = (("P@10", "P_10", 0.05), ("Recall@10", "recall_10", 0.02))

    def said(out: str, spreads: list[float], source: str) -> None:
        lines = out.splitlines()
        assert lines[1] == "what the test set can certify (the gates of the configuration):"
        for line, (measure, _, margin), spread in zip(lines[2:4], gates, spreads):
            drop = z * spread / 15  # √225
            needs = math.ceil((z * spread / margin) ** 2)
            tail = "is within it" if drop <= margin else f"needs {needs:,} queries"
            assert line == (f"  {measure}: 225 queries, spread {spread:.3f} ({source}): a drop "
                            f"of {drop:.3f} is found 80 % of the time (one-sided, level 0.025);"
                            f" margin {margin:g} {tail}")
        assert lines[4].startswith("  a drop of the margin is not found 80 % of the time: it "
                                   "usually ends inconclusive, which passes under fail-on = "
                                   '"regression": set fail-on = "inconclusive" to block it, a '
                                   "margin of at least")
        assert len(lines) == 5  # the report-only gate is not one

    replaced = [float(np.std(per_query("examples/cranfield/runs/hybrid.trec", oracle)
                             - per_query("baselines/cranfield/bm25.trec", oracle), ddof=1))
                for _, oracle, _ in gates]  # read before the approval replaces bm25
    code, out, err = gate("baseline", "approve", "--candidate",
                          "examples/cranfield/runs/hybrid.trec", "--to", "baselines/cranfield")
    assert code == 0, err
    said(out, replaced, "per-query differences from the baseline before it")
    code, out, err = gate("baseline", "approve", "--candidate",
                          "examples/cranfield/runs/dense.trec", "--to", "baselines/new")
    assert code == 0, err
    said(out, [float(np.std(per_query("examples/cranfield/runs/dense.trec", oracle), ddof=1))
               for _, oracle, _ in gates],
         "the run's own per-query values: no earlier baseline on this snapshot")


def test_a_chunk_table_file_named_none_is_a_table(repo):
    """The drop is read from what each manifest pins, not from the words of the note: a table
    file named `none` is a table, not a dropped one."""
    again, snapshot, approve = pydoc_again(repo)
    scores = ("--scores", "examples/pydoc/answers/bm25-300.scores.jsonl", *PYDOC_JUDGE)
    named_none = repo / "examples" / "pydoc" / "none"
    shutil.copy(repo / "examples" / "pydoc" / "chunks-300.jsonl", named_none)
    code, _, err = gate("run-manifest", *snapshot, "--run", again, "--chunks", named_none,
                        *scores)
    assert code == 0, err
    code, _, err = gate(*approve)  # the same table under the name none: a new version
    assert code == 0 and "drops" not in err, err
    code, _, err = gate("run-manifest", *snapshot, "--run", again, "--chunks", named_none,
                        "--chunking-version", "tokens-300-overlap-50", *scores)
    assert code == 0, err
    assert gate(*approve)[0] == 0


def test_a_chunk_run_s_manifest_with_its_version_alone_drops_the_table(tmp_path):
    """On chunk judgments a manifest may name the chunking by its version alone: approving
    the baseline's own run so would leave the baseline without the table it pinned."""
    from test_run import world

    world(tmp_path, "chunk")
    run = tmp_path / "run.trec"
    run.write_text("".join(f"{q} Q0 {d}#0 {r} {5 - r} t\n" for q, docs in
                           (("q1", ["d1", "d3"]), ("q2", ["d2"]), ("q3", ["d3"]),
                            ("q4", ["d4"])) for r, d in enumerate(docs, 1)))
    snapshot = ("--snapshot", tmp_path / "snapshot.json")
    approve = ("baseline", "approve", "--candidate", run, "--to", tmp_path / "base",
               *snapshot, "--commit", "none")
    manifest = ("run-manifest", *snapshot, "--run", run, "--commit", "none")
    assert gate(*manifest, "--chunks", tmp_path / "chunks.jsonl", "--chunking-version",
                "v1")[0] == 0
    assert gate(*approve)[0] == 0
    assert gate(*manifest, "--chunking-version", "v1")[0] == 0
    code, _, err = gate(*approve)
    assert code == 2 and "its manifest drops the baseline's chunk table" in err, err
