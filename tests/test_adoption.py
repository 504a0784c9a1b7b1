"""Adoption: `gate init` into an empty folder and its refusal, and the flow of a pull request
that changes the test set, end to end in a real git repository — the snapshot changes, the
baseline system's run is made again on it, `gate check` compares on the new snapshot, and on
merge the approval replaces the baseline without --force and records the change."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import CRANFIELD, INTERRUPTED, ROOT, RUNS, gate, interrupted_runs

from retrieval_gate.inputs.config import load_config


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid",
                           *args], cwd=repo, capture_output=True, text=True, check=True)
    return done.stdout


def test_init_writes_a_gated_repository_and_refuses_to_overwrite(tmp_path, monkeypatch):
    (tmp_path / "eval").mkdir()
    for name in ("queries.jsonl", "qrels.tsv"):
        shutil.copy(CRANFIELD / name, tmp_path / "eval" / name)
    monkeypatch.chdir(tmp_path)
    code, out, err = gate("init", "--queries", "eval/queries.jsonl", "--qrels", "eval/qrels.tsv")
    assert code == 0, err
    assert out.splitlines()[:3] == ["wrote eval/snapshot.json", "wrote gate.toml",
                                    "wrote .github/workflows/retrieval-gate.yml"]
    workflow = (tmp_path / ".github/workflows/retrieval-gate.yml").read_text()
    assert "eval/snapshot.json" in workflow and "baselines/main" in workflow
    assert 'snapshot = "eval/snapshot.json"' in (tmp_path / "gate.toml").read_text()
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    code, _, err = gate("init", "--queries", "eval/queries.jsonl", "--qrels", "eval/qrels.tsv")
    assert code == 2 and "exists already" in err
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
    code, _, err = gate("init", "--queries", "eval/queries.jsonl", "--qrels", "eval/qrels.tsv",
                        "--snapshot", "other.json", "--candidate", "runs/$(rm -rf ~).trec")
    assert code == 2 and "not a plain relative path" in err
    assert not (tmp_path / "other.json").exists()


def test_init_says_what_the_test_set_can_certify(tmp_path, monkeypatch):
    """Per default gate, the drop found 80 % of the time and the queries its margin needs at
    each assumed spread — (z₀.₉₇₅ + z₀.₈) · σ / √n and ⌈((z₀.₉₇₅ + z₀.₈) · σ / δ)²⌉, two gates
    at α/2 each, from scipy — on the command line and in gate.toml, which states fail-on."""
    from scipy.stats import norm

    (tmp_path / "eval").mkdir()
    lines = (CRANFIELD / "queries.jsonl").read_text().splitlines()[:60]
    (tmp_path / "eval" / "queries.jsonl").write_text("\n".join(lines) + "\n")
    kept = {json.loads(line)["id"] for line in lines}
    (tmp_path / "eval" / "qrels.tsv").write_text("".join(
        line + "\n" for line in (CRANFIELD / "qrels.tsv").read_text().splitlines()
        if line.split()[0] in kept))
    monkeypatch.chdir(tmp_path)
    code, out, err = gate("init", "--queries", "eval/queries.jsonl", "--qrels", "eval/qrels.tsv")
    assert code == 0, err
    z = norm.ppf(0.975) + norm.ppf(0.8)
    drops = " / ".join(f"{z * s / 60 ** 0.5:.3f}" for s in (0.1, 0.2, 0.3))
    needs = " / ".join(f"{int(-(-(z * s / 0.02) ** 2 // 1)):,}" for s in (0.1, 0.2, 0.3))
    said = [("60 answerable queries, each gated measure at one-sided level 0.025; if the "
             "per-query differences of a change spread 0.1 / 0.2 / 0.3:"),
            *(f"  {m}: a drop of {drops} is found 80 % of the time; margin 0.02 needs {needs} "
              "queries" for m in ("Recall@10", "nDCG@10"))]
    shown = out.splitlines()
    start = shown.index("what the test set can certify (gate.toml says it too):")
    assert shown[start + 1:start + 4] == [f"  {line}" for line in said]
    config = (tmp_path / "gate.toml").read_text()
    assert all(f"#   {line.strip()}\n" in config for line in said)
    assert '\nfail-on = "regression"\n' in config
    assert load_config(tmp_path / "gate.toml").policy.fail_on == "regression"


@pytest.mark.parametrize("obstacle", [".github", ".github/workflows"])
def test_init_that_cannot_write_its_last_file_leaves_nothing(tmp_path, monkeypatch, obstacle):
    """A file where the workflow's folder must be (root-proof, unlike a read-only folder):
    exit 74 naming it, none of the three files nor a folder or temporary file left behind,
    and once the file is moved away the same command succeeds."""
    (tmp_path / "eval").mkdir()
    for name in ("queries.jsonl", "qrels.tsv"):
        shutil.copy(CRANFIELD / name, tmp_path / "eval" / name)
    (tmp_path / obstacle).parent.mkdir(exist_ok=True)
    (tmp_path / obstacle).write_text("in the way\n")
    before = sorted(tmp_path.rglob("*"))
    monkeypatch.chdir(tmp_path)
    args = ("init", "--queries", "eval/queries.jsonl", "--qrels", "eval/qrels.tsv")
    code, out, err = gate(*args)
    assert code == 74 and out == ""
    assert err == (f"error: {obstacle}: cannot create this folder (a file is in its place) — "
                   "move the file away, then run the command again\n")
    assert sorted(tmp_path.rglob("*")) == before
    (tmp_path / obstacle).unlink()
    code, out, err = gate(*args)
    assert code == 0, err
    assert (tmp_path / ".github/workflows/retrieval-gate.yml").is_file()
    assert (tmp_path / "gate.toml").is_file() and (tmp_path / "eval/snapshot.json").is_file()


def test_init_interrupted_at_any_rename_writes_all_three_files_or_none(tmp_path):
    """SIGINT as any one of the three files' renames returns, and at every rename after it:
    exit 130, and none of the three files nor the folders made for them is left — or, at the
    last rename, which ends the write, all three are — never one or two; no temporary file."""
    inputs = {name: (CRANFIELD / name).read_bytes() for name in ("queries.jsonl", "qrels.tsv")}
    repo = tmp_path / "repo"
    none = ["eval", "eval/qrels.tsv", "eval/queries.jsonl"]
    every = sorted([*none, ".github", ".github/workflows", ".github/workflows/retrieval-gate.yml",
                    "eval/snapshot.json", "gate.toml"])

    def reset() -> None:
        shutil.rmtree(repo, ignore_errors=True)
        (repo / "eval").mkdir(parents=True)
        for name, data in inputs.items():
            (repo / "eval" / name).write_bytes(data)

    def entries() -> list[str]:
        return sorted(p.relative_to(repo).as_posix() for p in repo.rglob("*"))

    seen = []
    for run in interrupted_runs(["init", "--queries", "eval/queries.jsonl", "--qrels",
                                 "eval/qrels.tsv"], reset, cwd=repo):
        assert run.returncode in (0, 130), run.stderr
        if run.returncode == 130:
            assert run.stderr == INTERRUPTED
        seen.append({tuple(none): "none", tuple(every): "all"}[tuple(entries())])
    assert run.returncode == 0
    assert seen == ["none", "none", "all", "all"]


def test_a_pull_request_that_changes_the_test_set(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    (repo / "eval").mkdir(parents=True)
    (repo / "runs").mkdir()
    for name in ("queries.jsonl", "qrels.tsv"):
        shutil.copy(CRANFIELD / name, repo / "eval" / name)
    shutil.copy(RUNS / "hybrid.trec", repo / "runs" / "candidate.trec")
    shutil.copy(ROOT / "baselines/cranfield/bm25.trec", repo / "runs" / "baseline.trec")
    monkeypatch.chdir(repo)
    git(repo, "init", "-q", "-b", "main")
    assert gate("init", "--queries", "eval/queries.jsonl", "--qrels", "eval/qrels.tsv")[0] == 0
    assert gate("run-manifest", "--snapshot", "eval/snapshot.json", "--run",
                "runs/baseline.trec", "--system", "name=bm25")[0] == 0
    assert gate("baseline", "approve", "--candidate", "runs/baseline.trec", "--to",
                "baselines/main")[0] == 0
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "gate the retriever")

    # The pull request: new judgments, so a new snapshot; the baseline system's run made again
    # on it, and the candidate made on it.
    git(repo, "checkout", "-q", "-b", "more-judgments")
    with (repo / "eval/qrels.tsv").open("a") as qrels:
        qrels.write("1 0 1390 2\n1 0 1391 1\n")
    code, _, err = gate("snapshot", "freeze", "--queries", "eval/queries.jsonl", "--qrels",
                        "eval/qrels.tsv", "--qrels-version", "v2", "--corpus-version",
                        "unversioned", "--permissions-version", "public", "--unit", "document",
                        "-o", "eval/snapshot.json")
    assert code == 0, err
    for run, name in (("baseline", "bm25"), ("candidate", "hybrid")):
        assert gate("run-manifest", "--snapshot", "eval/snapshot.json", "--run",
                    f"runs/{run}.trec", "--system", f"name={name}")[0] == 0
    # against the approved baseline (made on main's snapshot): not comparable, and says why
    code, _, err = gate("check")
    assert code == 3 and "qrels" in err
    # what changed, against main's test set
    main = tmp_path / "main"
    git(repo, "worktree", "add", "-q", str(main), "main")
    code, out, err = gate("snapshot", "diff", main / "eval/snapshot.json", "eval/snapshot.json")
    assert code == 0, err
    assert "queries +0 −0 (0 reworded); judgments +2 −0 (0 regraded)" in out
    git(repo, "worktree", "remove", str(main))
    # the pull request's check: both runs on the new snapshot
    code, out, err = gate("check", "--baseline", "runs/baseline.trec")
    assert code == 0, err
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "judge two more documents")

    # On merge, main approves the baseline system's run on the new snapshot: no --force
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "more-judgments")
    code, out, err = gate("baseline", "approve", "--candidate", "runs/baseline.trec", "--to",
                          "baselines/main")
    assert code == 0, err
    assert "the snapshot moved on" in out
    history = [json.loads(line) for line in
               (repo / "baselines/main/history.jsonl").read_text().splitlines()]
    assert len(history) == 2 and "snapshot_change" in history[1]
    assert gate("check")[0] == 0  # the approved baseline and the candidate, one snapshot
    code, out, _ = gate("history", "baselines/main")
    assert code == 0 and "* the test set changed at this approval" in out
