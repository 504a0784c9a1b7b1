"""Output files: `gate check` writes all its reports or none — when it fails, and when Ctrl-C
arrives at any of its renames — and every output (`-o`, `--json`, `--markdown`, `--junit`)
writes through to a device or FIFO and through a symbolic link to the file it points to, never
replacing either with a regular file."""

from __future__ import annotations

import json
import os
import shutil
import stat
import threading
from pathlib import Path

import pytest
from conftest import INTERRUPTED, RENAMES, UNLINKS, gate, interrupted_runs
from test_approve import make_small_set

from retrieval_gate.core.errors import InputError
from retrieval_gate.formats.atomic import Spool, write_texts

ROOT_USER = os.geteuid() == 0


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    return make_small_set(tmp_path_factory.mktemp("small"))


def check(small: Path, *outputs: str | Path, env: dict[str, str] | None = None
          ) -> tuple[int, str, str]:
    return gate("check", "--snapshot", small / "snapshot.json", "--baseline",
                small / "old.trec", "--candidate", small / "new.trec", *outputs, env=env)


def listing(folder: Path) -> dict[str, bytes]:
    """Every entry of ``folder`` (hidden temporary files included) → its bytes."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def score(tmp_path: Path, output: str | Path) -> tuple[int, str, str]:
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    if not qrels.exists():
        qrels.write_text("q1 0 d1 1\nq2 0 d2 1\n")
        run.write_text("q1 Q0 d1 1 2 t\nq2 Q0 d3 1 2 t\n")
    return gate("score", qrels, run, "--output-format", "json", "-o", output)


def device(tmp_path: Path, name: str, minor: int) -> Path:
    """A character device with the numbers of /dev/null (minor 3) or /dev/full (7): made
    beside the test's files as root, else the system's own (which a non-root process could
    not replace even if it tried)."""
    if not ROOT_USER:
        return Path("/dev/null" if minor == 3 else "/dev/full")
    node = tmp_path / name
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, minor))
    return node


# -- all reports or none -----------------------------------------------------------------------

def test_all_reports_land_and_a_replaced_file_keeps_its_mode(small, tmp_path):
    (tmp_path / "r.json").write_text("old")
    (tmp_path / "r.json").chmod(0o640)
    code, _, err = check(small, "--json", tmp_path / "r.json", "--markdown", tmp_path / "r.md",
                         "--junit", tmp_path / "r.xml")
    assert code == 0, err
    assert sorted(listing(tmp_path)) == ["r.json", "r.md", "r.xml"]
    assert json.loads((tmp_path / "r.json").read_text())["verdict"] in ("pass", "inconclusive")
    assert (tmp_path / "r.json").stat().st_mode & 0o777 == 0o640


def test_a_report_that_cannot_be_written_leaves_no_report(small, tmp_path):
    (tmp_path / "r.json").write_text("old")
    before = listing(tmp_path)
    code, out, err = check(small, "--json", tmp_path / "r.json", "--junit", tmp_path / "r.xml",
                           "--markdown", tmp_path / "missing" / "r.md")
    assert code == 2 and out == ""
    assert err == (f"error: {tmp_path}/missing/r.md: cannot write here (No such file or "
                   "directory) — create its folder first, or choose another path\n")
    assert listing(tmp_path) == before


@pytest.mark.parametrize("markdown", [False, True])
def test_reports_are_taken_back_when_github_publishing_fails(small, tmp_path, markdown):
    """The summary file cannot be appended to (it is a folder): the reports already renamed
    into place are put back (one report or several)."""
    (tmp_path / "r.json").write_text("old")
    (tmp_path / "summary").mkdir()
    before = listing(tmp_path)
    actions = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(tmp_path / "summary"),
               "GITHUB_OUTPUT": str(tmp_path / "output"), "RUNNER_TEMP": str(tmp_path)}
    more = ("--markdown", tmp_path / "r.md") if markdown else ()
    code, _, err = check(small, "--json", tmp_path / "r.json", *more, env=actions)
    assert code == 74 and err.count("\n") == 1 and "Is a directory" in err
    assert listing(tmp_path) == before


def test_a_report_refused_in_github_mode_still_gets_the_outputs(small, tmp_path):
    actions = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
               "GITHUB_OUTPUT": str(tmp_path / "output"), "RUNNER_TEMP": str(tmp_path)}
    code, out, err = check(small, "--markdown", tmp_path / "missing" / "r.md", env=actions)
    assert code == 2 and err.startswith(f"error: {tmp_path}/missing/r.md: cannot write here")
    assert out.startswith("::error title=retrieval-gate%3A invalid::")
    assert "verdict<<" in (tmp_path / "output").read_text()
    assert "### INVALID" in (tmp_path / "summary.md").read_text()
    assert not (tmp_path / "retrieval-gate-report.json").exists()


def test_one_file_asked_for_twice_is_refused(small, tmp_path):
    code, _, err = check(small, "--json", tmp_path / "r", "--markdown", f"{tmp_path}/./r")
    assert code == 2 and err == (f"error: {tmp_path}/./r: is asked for twice (as {tmp_path}/r) "
                                 "— give each output its own file\n")
    assert listing(tmp_path) == {}


def test_a_report_to_a_full_device_lands_no_file(small, tmp_path):
    full = device(tmp_path, "full", 7)
    code, _, err = check(small, "--markdown", tmp_path / "r.md", "--json", full)
    assert code == 74
    assert err == (f"error: {full}: cannot write (No space left on device) — free space or fix "
                   "the permissions, then run the command again\n")
    assert not (tmp_path / "r.md").exists()
    assert stat.S_ISCHR(full.stat().st_mode)


@pytest.mark.parametrize("calls", [RENAMES, UNLINKS], ids=["renames", "unlinks"])
def test_ctrl_c_while_the_reports_land_leaves_every_one_old_or_every_one_new(small, tmp_path,
                                                                           calls):
    """SIGINT as any one of the reports' renames returns, and at every rename after it (the
    undo's too): exit 130 with its one line, and every report as it was before, byte for byte —
    three replaced, one created and deleted again — never some new and others old, none lost,
    no temporary file. SIGINT as the hard links to the former reports are deleted, at the end:
    every report new, no temporary file. With no such call left to interrupt, the check ends
    normally."""
    out = tmp_path / "out"
    old = {"r.json": b"old json\n", "r.md": b"old markdown\n", "r.xml": b"old junit\n"}

    def reset() -> None:
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        for name, data in old.items():
            (out / name).write_bytes(data)

    def all_new() -> bool:
        now = listing(out)
        return sorted(now) == ["r.html", "r.json", "r.md", "r.xml"] and not any(
            now[name] == data for name, data in old.items())

    args = ["check", "--snapshot", small / "snapshot.json", "--baseline", small / "old.trec",
            "--candidate", small / "new.trec", "--json", out / "r.json", "--markdown",
            out / "r.md", "--html", out / "r.html", "--junit", out / "r.xml"]
    interrupted = 0
    for run in interrupted_runs(args, reset, calls):
        if run.returncode == 130:
            interrupted += 1
            assert (run.stdout, run.stderr) == ("", INTERRUPTED)
            assert listing(out) == old if calls == RENAMES else all_new()
    # a rename per report; a hard link deleted per report replaced
    assert interrupted == (4 if calls == RENAMES else 3)
    assert run.returncode == 0, run.stderr
    assert all_new()


# -- devices, FIFOs, symbolic links ------------------------------------------------------------

@pytest.mark.parametrize("minor, code", [(3, 0), (7, 74)])
def test_output_to_a_device_writes_through_and_keeps_the_device(tmp_path, minor, code):
    node = device(tmp_path, "node", minor)
    got, _, err = score(tmp_path, node)
    assert got == code, err
    assert stat.S_ISCHR(node.stat().st_mode)
    assert os.major(node.stat().st_rdev) == 1 and os.minor(node.stat().st_rdev) == minor
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_output_to_a_fifo_writes_through_to_its_reader(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    code, _, err = score(tmp_path, fifo)
    reader.join(timeout=60)
    assert code == 0, err
    assert json.loads(received[0])["means"]["nDCG@10"] == 0.5
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_output_through_a_symbolic_link_replaces_the_file_it_points_to(tmp_path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "scores.json"
    target.write_text("old")
    target.chmod(0o600)
    link = tmp_path / "link.json"
    link.symlink_to(Path("real") / "scores.json")
    code, _, err = score(tmp_path, link)
    assert code == 0, err
    assert link.is_symlink() and os.readlink(link) == "real/scores.json"
    assert json.loads(target.read_text())["means"]["nDCG@10"] == 0.5
    assert target.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == ["scores.json"]


def test_output_through_a_dangling_link_creates_the_file_it_points_to(tmp_path):
    link = tmp_path / "link.json"
    link.symlink_to("made.json")
    code, _, err = score(tmp_path, link)
    assert code == 0, err
    assert link.is_symlink() and (tmp_path / "made.json").is_file()


def test_a_spooled_file_lands_with_the_others_or_none_does(tmp_path):
    """A file written a piece at a time to a spool is renamed into place with the others;
    when the transaction fails, neither lands and the spool's temporary file is gone."""
    spool = Spool(tmp_path / "big.txt")
    spool.write(b"a\n")
    spool.write(b"b\n")
    assert not (tmp_path / "big.txt").exists()
    write_texts([(tmp_path / "big.txt", spool), (tmp_path / "small.txt", "s\n")])
    assert listing(tmp_path) == {"big.txt": b"a\nb\n", "small.txt": b"s\n"}
    (tmp_path / "folder").mkdir()
    spool = Spool(tmp_path / "again.txt")
    spool.write(b"x")
    with pytest.raises(InputError, match="is a folder"):
        write_texts([(tmp_path / "again.txt", spool), (tmp_path / "folder", "t")])
    assert listing(tmp_path) == {"big.txt": b"a\nb\n", "small.txt": b"s\n"}


def test_a_spool_goes_through_a_link_and_is_copied_to_a_device(tmp_path):
    (tmp_path / "real").mkdir()
    link = tmp_path / "link.txt"
    link.symlink_to(Path("real") / "file.txt")
    spool = Spool(link)
    spool.write(b"linked\n")
    write_texts([(link, spool)])
    assert link.is_symlink() and listing(tmp_path / "real") == {"file.txt": b"linked\n"}
    node = device(tmp_path, "node", 3)
    spool = Spool(node)
    spool.write(b"x" * 10)
    temporary = spool.temporary
    assert temporary is not None and Path(temporary).exists()
    write_texts([(node, spool)])
    assert not Path(temporary).exists() and stat.S_ISCHR(node.stat().st_mode)


def test_a_spool_where_no_file_can_be_is_refused_at_once(tmp_path):
    with pytest.raises(InputError, match="cannot write here .No such file or directory. — "
                       "create its folder first"):
        Spool(tmp_path / "missing" / "run.jsonl")
    with pytest.raises(InputError, match="is a folder"):
        Spool(tmp_path)


def test_output_through_a_link_loop_is_invalid_input(tmp_path):
    (tmp_path / "loop").symlink_to("loop")
    code, _, err = score(tmp_path, tmp_path / "loop")
    assert code == 2 and err.startswith(f"error: {tmp_path}/loop: cannot write here (Too many "
                                        "levels of symbolic links) — fix the symbolic link")


def test_a_path_the_system_refuses_as_input_still_gets_its_error_report(small, tmp_path):
    """A candidate whose name is too long for the file system is invalid input (exit 2), and
    the reports hold its error as for any other."""
    long = small / ("c" * 300 + ".trec")
    code, out, err = gate("check", "--snapshot", small / "snapshot.json", "--baseline",
                          small / "old.trec", "--candidate", long, "--json", tmp_path / "r.json")
    assert code == 2 and out == "" and "cannot be used (File name too long)" in err
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["exit_code"] == 2 and report["verdict"] == "invalid"
