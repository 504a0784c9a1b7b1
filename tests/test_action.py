"""The GitHub Action (``action.yml``) and the workflows, checked with real tools.

1. ``action.yml`` against check-jsonschema's vendored ``github-actions`` schema, both workflows
   (``.github/workflows/ci.yml``, ``examples/workflows/retrieval-gate.yml``) against
   ``github-workflows``.
2. zizmor, offline: no finding of medium severity or above.
3. The composite action run step by step in a simulated Actions environment:

   - action.yml is parsed (ruamel.yaml, which check-jsonschema brings); each ``run:`` step is
     executed the way the runner executes ``shell: bash`` — ``bash --noprofile --norc -eo
     pipefail FILE`` — in order, with the step's ``env:`` and ``working-directory:``. A tiny
     evaluator substitutes exactly the expressions action.yml uses (``inputs.X``,
     ``steps.ID.outputs.Y``, ``github.token``; ``if: always()``) and fails on any other, so the
     simulation cannot silently drift from the file.
   - Each step gets fresh ``GITHUB_OUTPUT`` / ``GITHUB_STEP_SUMMARY`` files; outputs are parsed in
     both the ``name=value`` and the ``name<<DELIMITER`` forms (the runner's rule) and fed to
     later steps; a step without ``if:`` is skipped once a step failed. Also set:
     ``GITHUB_ACTIONS=true``, ``RUNNER_TEMP``, ``GITHUB_ACTION_PATH`` = the repository root,
     ``GITHUB_WORKSPACE``, ``GITHUB_REPOSITORY``, ``GITHUB_EVENT_NAME=pull_request`` and
     ``GITHUB_EVENT_PATH``: a payload of a same-repository pull request or of a fork's.
   - The install step is the real one: ``python3 -m venv`` and ``pip install`` of this
     repository into ``$RUNNER_TEMP/retrieval-gate-venv`` (about 15 s with pip's cache). All
     cases share one ``RUNNER_TEMP``, as several uses of the action in one job do, so later
     cases take the action's own "already installed" path (a stamp file naming
     ``GITHUB_ACTION_PATH``). Nothing of the gate is faked; this is the least fake choice that
     keeps the file near 30 s.
   - The comment step is stubbed at the ``gh`` boundary only: a fake ``gh`` first on ``PATH``
     records its arguments (and the body it was given), answers the comment listing with canned
     pages (in one case a page holding an existing marker comment), and can refuse writes with
     GitHub's 403 message.

   Cases: pass (zero-config: pyproject's ``[tool.retrieval-gate]``, the embedded Cranfield
   example), regression (the titles-only run), invalid input (a candidate that does not
   exist), and the comment modes, a fork, a read-only token, a runner without python3.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ACTION = ROOT / "action.yml"
WORKFLOWS = [ROOT / ".github" / "workflows" / "ci.yml",
             ROOT / ".github" / "workflows" / "docs.yml",
             ROOT / "examples" / "workflows" / "retrieval-gate.yml"]
MARKER = "<!-- retrieval-gate report -->"
REPO = "octo-org/retriever"
PR_NUMBER = 17
TITLES_RUN = "examples/cranfield/runs/bm25-titles.trec"


# --- 1, 2: schemas and zizmor ------------------------------------------------------------------


def _check_jsonschema(schema: str, *files: Path) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("check_jsonschema")
    return subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema,
                           *map(str, files)], capture_output=True, text=True, check=False)


def test_action_matches_the_github_actions_schema():
    done = _check_jsonschema("vendor.github-actions", ACTION)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_workflow_matches_the_github_workflows_schema(workflow):
    done = _check_jsonschema("vendor.github-workflows", workflow)
    assert done.returncode == 0, done.stdout + done.stderr


def _zizmor() -> str:
    beside = Path(sys.executable).with_name("zizmor")
    found = str(beside) if beside.exists() else shutil.which("zizmor")
    if found is None:
        pytest.skip("zizmor is not installed (pip install -e '.[test]')")
    return found


def test_zizmor_finds_nothing_of_medium_severity_or_above():
    done = subprocess.run([_zizmor(), "--offline", "--no-config", "--min-severity", "medium",
                           "--format", "json", str(ACTION), *map(str, WORKFLOWS)],
                          capture_output=True, text=True, check=False, cwd=ROOT)
    assert done.stdout.strip(), done.stderr
    findings = json.loads(done.stdout)
    assert findings == [], json.dumps(findings, indent=2)
    assert done.returncode == 0, done.stderr


# --- 3: the action in a simulated Actions environment ------------------------------------------


def _load_action() -> dict:
    yaml = pytest.importorskip("ruamel.yaml")
    return yaml.YAML(typ="safe").load(ACTION.read_text(encoding="utf-8"))


_EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def _evaluate(expression: str, context: dict) -> str:
    """The expressions action.yml uses, and nothing else."""
    if match := re.fullmatch(r"inputs\.([A-Za-z_][\w-]*)", expression):
        return context["inputs"][match[1]]  # KeyError: an input action.yml does not declare
    if match := re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expression):
        return context["steps"].get(match[1], {}).get(match[2], "")
    if expression == "github.token":
        return context["token"]
    raise AssertionError(f"the simulation does not know the expression ${{{{ {expression} }}}}")


def _substitute(text: str, context: dict) -> str:
    return _EXPRESSION.sub(lambda m: _evaluate(m[1], context), str(text))


def _parse_outputs(text: str) -> list[tuple[str, str]]:
    """The runner's rule: ``name=value`` if ``=`` comes before any ``<<``, else a
    ``name<<DELIMITER`` block ending at a line equal to the delimiter."""
    pairs, lines, at = [], text.split("\n"), 0
    while at < len(lines):
        line = lines[at]
        at += 1
        if not line:
            continue
        equals, heredoc = line.find("="), line.find("<<")
        if equals >= 0 and (heredoc < 0 or equals < heredoc):
            pairs.append((line[:equals], line[equals + 1:]))
            continue
        assert heredoc > 0, f"malformed output line {line!r}"
        name, delimiter, value = line[:heredoc], line[heredoc + 2:], []
        while lines[at] != delimiter:  # IndexError: an unterminated block
            value.append(lines[at])
            at += 1
        at += 1
        pairs.append((name, "\n".join(value)))
    return pairs


@dataclass
class Step:
    name: str
    id: str | None
    ran: bool
    returncode: int = 0
    stdout: str = ""
    stderr: str = ""
    outputs: dict[str, str] = field(default_factory=dict)
    output_lines: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Run:
    steps: list[Step]
    outputs: dict[str, str]
    summary: str
    returncode: int
    gh_calls: list[dict]

    def step(self, name_start: str) -> Step:
        (found,) = [s for s in self.steps if s.name.startswith(name_start)]
        return found

    @property
    def stdout(self) -> str:
        return "".join(s.stdout for s in self.steps)


FAKE_GH = """\
#!{python}
# A fake gh CLI: records each call, answers comment listings with canned pages.
import json, os, sys

args = sys.argv[1:]
call = {{"args": args}}
for flag in ("--input", "--body-file"):
    if flag in args:
        with open(args[args.index(flag) + 1], encoding="utf-8") as handle:
            call["body"] = handle.read()
with open(os.environ["FAKE_GH_LOG"], "a", encoding="utf-8") as handle:
    handle.write(json.dumps(call) + "\\n")
listing = args[0] == "api" and "--method" not in args and args[-1].endswith("/comments")
if listing:
    sys.stdout.write(os.environ.get("FAKE_GH_COMMENTS", "[]"))
elif args[:2] == ["api", "user"]:  # what GITHUB_TOKEN answers: it may not read /user
    sys.stderr.write("HTTP 403: Resource not accessible by integration\\n")
    sys.exit(1)
elif os.environ.get("FAKE_GH_WRITE") == "403":
    sys.stderr.write("HTTP 403: Resource not accessible by integration "
                     "(https://api.github.com/repos/x/y/issues/17/comments)\\n")
    sys.exit(1)
else:
    print("{{}}" if args[0] == "api" else "https://github.com/x/y/pull/17#issuecomment-1")
"""


def _event(path: Path, head_repo: str | None) -> None:
    head = {"ref": "feature", "sha": "0" * 40,
            "repo": None if head_repo is None else {"full_name": head_repo}}
    path.write_text(json.dumps({"action": "synchronize", "number": PR_NUMBER, "pull_request": {
        "number": PR_NUMBER, "head": head, "base": {"ref": "main", "repo": {"full_name": REPO}},
    }}), encoding="utf-8")


def run_action(tmp: Path, runner_temp: Path, inputs: dict[str, str] | None = None, *,
               head_repo: str | None = REPO, comments: str = "[]", gh_write: str = "ok",
               path: str | None = None) -> Run:
    """Run action.yml's steps as the runner would (see the module docstring)."""
    action = _load_action()
    declared = action["inputs"]
    unknown = set(inputs or {}) - set(declared)
    assert not unknown, f"inputs action.yml does not declare: {unknown}"
    context = {"inputs": {}, "steps": {}, "token": "ghs_faketoken"}
    for name, spec in declared.items():
        value = (inputs or {}).get(name, spec.get("default", ""))
        context["inputs"][name] = _substitute(value, context)

    bin_dir = tmp / "bin"
    bin_dir.mkdir(parents=True)
    gh = bin_dir / "gh"
    gh.write_text(FAKE_GH.format(python=sys.executable), encoding="utf-8")
    gh.chmod(0o755)
    event = tmp / "event.json"
    _event(event, head_repo)
    log = tmp / "gh-calls.jsonl"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GITHUB_", "RUNNER_", "GH_", "INPUT_", "ACTIONS_"))}
    env.update({
        "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}" if path is None else path,
        "CI": "true", "GITHUB_ACTIONS": "true", "RUNNER_OS": "Linux",
        "RUNNER_TEMP": str(runner_temp), "GITHUB_ACTION_PATH": str(ROOT),
        "GITHUB_WORKSPACE": str(ROOT), "GITHUB_REPOSITORY": REPO,
        "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event),
        "GITHUB_SERVER_URL": "https://github.com", "GITHUB_RUN_ID": "4242",
        "GITHUB_SHA": "1" * 40, "GITHUB_ACTOR": "octocat",
        "FAKE_GH_LOG": str(log), "FAKE_GH_COMMENTS": comments, "FAKE_GH_WRITE": gh_write,
    })
    bash = shutil.which("bash")

    steps, summary, failed, returncode = [], "", False, 0
    for index, spec in enumerate(action["runs"]["steps"]):
        name = spec.get("name", f"step {index}")
        condition = spec.get("if")
        installing_only = "inputs.install-only != 'true'"
        assert condition in (None, "always()", "${{ always() }}", installing_only,
                             f"always() && {installing_only}"), \
            f"the simulation does not know if: {condition}"
        skipped = (condition is not None and installing_only in condition
                   and context["inputs"]["install-only"] == "true")
        if skipped or (failed and (condition is None or "always()" not in condition)):
            steps.append(Step(name, spec.get("id"), ran=False))
            continue
        assert spec.get("shell") == "bash" and "run" in spec, f"{name}: not a bash run step"
        script = tmp / f"step-{index}.sh"
        script.write_text(spec["run"], encoding="utf-8")
        outputs, step_summary = tmp / f"output-{index}", tmp / f"summary-{index}"
        outputs.touch()
        step_summary.touch()
        step_env = dict(env, GITHUB_OUTPUT=str(outputs), GITHUB_STEP_SUMMARY=str(step_summary))
        for key, value in (spec.get("env") or {}).items():
            step_env[key] = _substitute(value, context)
        cwd = ROOT / _substitute(spec.get("working-directory", "."), context)
        done = subprocess.run([bash, "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                              cwd=cwd, env=step_env, capture_output=True, text=True,
                              check=False, timeout=300)
        pairs = _parse_outputs(outputs.read_text(encoding="utf-8"))
        step = Step(name, spec.get("id"), True, done.returncode, done.stdout, done.stderr,
                    dict(pairs), pairs)
        steps.append(step)
        if step.id:
            context["steps"][step.id] = step.outputs
        summary += step_summary.read_text(encoding="utf-8")
        if done.returncode != 0 and not failed:
            failed, returncode = True, done.returncode
    action_outputs = {name: _substitute(spec["value"], context)
                      for name, spec in action["outputs"].items()}
    calls = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] \
        if log.exists() else []
    return Run(steps, action_outputs, summary, returncode, calls)


@pytest.fixture(scope="module")
def runner_temp(tmp_path_factory) -> Path:
    """One RUNNER_TEMP for the module, as for several uses of the action in one job: the first
    case installs the gate for real, the others reuse the venv."""
    return tmp_path_factory.mktemp("runner-temp")


def _check_common(run: Run, verdict: str, code: int) -> None:
    """What every run that reached the gate must satisfy."""
    gate = run.step("Run the gate")
    assert gate.ran and gate.returncode == 0, gate.stdout + gate.stderr
    names = [n for n, _ in gate.output_lines]
    assert len(names) == len(set(names)), f"an output written twice: {names}"
    assert run.outputs["verdict"] == verdict
    assert run.outputs["exit-code"] == str(code)
    assert run.returncode == code
    final = run.step("Exit with the gate's code")
    assert final.ran and final.returncode == code
    # The summary (job summary and Markdown output): the marker, then the verdict.
    lines = [line for line in run.summary.splitlines() if line.strip()]
    assert lines[0] == MARKER
    assert lines[1].startswith("### ") and verdict.upper() in lines[1], lines[1]
    summary_file = Path(run.outputs["summary"])
    assert summary_file.is_file()
    assert summary_file.read_text(encoding="utf-8").startswith(MARKER)


def _line(pattern: str, text: str) -> bool:
    """A line of ``text`` starts with ``pattern`` (a workflow command is a whole line)."""
    return any(re.match(pattern, line) for line in text.splitlines())


def _writes(run: Run) -> list[dict]:
    return [c for c in run.gh_calls if c["args"][0] != "api" or "--method" in c["args"]]


@pytest.mark.install
def test_pass_zero_config_updates_the_existing_sticky_comment(tmp_path, runner_temp):
    pages = (json.dumps([{"id": 5, "body": "LGTM", "user": {"login": "octocat"}}]) + "\n"
             + json.dumps([{"id": 777, "body": f"{MARKER}\n### REGRESSION ❌ old",
                            "user": {"login": "github-actions[bot]"}},
                           {"id": 8, "body": None, "user": None}]))
    run = run_action(tmp_path, runner_temp, comments=pages)
    install = run.step("Install retrieval-gate")
    assert install.returncode == 0, install.stdout + install.stderr
    assert (runner_temp / "retrieval-gate-venv" / ".installed-from").read_text() == str(ROOT)
    _check_common(run, "pass", 0)
    report = json.loads(Path(run.outputs["report"]).read_text(encoding="utf-8"))
    assert report["verdict"] == "pass" and report["exit_code"] == 0
    assert "::error" not in run.step("Run the gate").stdout

    who, listing, patch = run.gh_calls
    assert who["args"] == ["api", "user", "--jq", ".login"]
    assert listing["args"] == ["api", "--paginate", f"repos/{REPO}/issues/{PR_NUMBER}/comments"]
    assert patch["args"][:4] == ["api", "--method", "PATCH", f"repos/{REPO}/issues/comments/777"]
    body = json.loads(patch["body"])["body"]
    assert body.startswith(MARKER) and "PASS" in body.splitlines()[1]
    assert "/actions/runs/4242" in body


@pytest.mark.install
def test_regression_creates_one_comment_and_fails_with_exit_1(tmp_path, runner_temp):
    run = run_action(tmp_path, runner_temp, {"candidate": TITLES_RUN})
    _check_common(run, "regression", 1)
    gate_stdout = run.step("Run the gate").stdout
    assert _line(r"::error title=retrieval regression%3A Recall@10::", gate_stdout)
    assert json.loads(Path(run.outputs["report"]).read_text())["verdict"] == "regression"

    (write,) = _writes(run)
    assert write["args"] == ["pr", "comment", str(PR_NUMBER), "--repo", REPO,
                             "--body-file", write["args"][-1]]
    assert write["body"].startswith(MARKER) and "REGRESSION" in write["body"].splitlines()[1]


@pytest.mark.install
def test_a_strangers_comment_with_the_marker_is_never_updated(tmp_path, runner_temp):
    """Anyone can paste the marker into a comment; the action creates its own instead of
    writing its report into that one (whose author could then edit it)."""
    pages = json.dumps([{"id": 666, "body": f"{MARKER}\n### PASS ✅ (forged)",
                         "user": {"login": "mallory"}}])
    run = run_action(tmp_path, runner_temp, comments=pages)
    (write,) = _writes(run)
    assert write["args"][:2] == ["pr", "comment"]
    assert not any("666" in arg for call in run.gh_calls for arg in call["args"])


@pytest.mark.install
def test_invalid_input_from_a_fork_fails_with_exit_2_and_no_comment(tmp_path, runner_temp):
    run = run_action(tmp_path, runner_temp, {"candidate": "runs/does-not-exist.trec"},
                     head_repo="someone/retriever")
    _check_common(run, "invalid", 2)
    assert run.outputs["report"] == ""
    assert _line(r"::error title=retrieval-gate%3A invalid::.*does-not-exist",
                 run.step("Run the gate").stdout)
    assert run.gh_calls == []
    comment = run.step("Comment on the pull request")
    assert comment.returncode == 0
    assert _line(r"::warning title=retrieval-gate::pull request from a fork "
                 r"\(someone/retriever\).*read-only", comment.stdout)


@pytest.mark.install
def test_a_gate_that_stops_before_its_outputs_still_gives_them(tmp_path, runner_temp):
    """A usage error (click refuses the option before the command runs) writes no outputs and
    no summary: the action fills them in."""
    run = run_action(tmp_path, runner_temp, {"fail-on": "sometimes", "comment": "off"})
    _check_common(run, "invalid", 2)
    assert run.outputs["report"] == ""
    assert _line(r"::error title=retrieval-gate::the gate exited with 2 before writing",
                 run.step("Run the gate").stdout)
    assert "invalid value for '--fail-on'" in run.step("Run the gate").stderr


@pytest.mark.install
def test_on_failure_mode_posts_nothing_for_a_pass(tmp_path, runner_temp):
    run = run_action(tmp_path, runner_temp, {"comment": "on-failure", "fail-on": "regression"})
    _check_common(run, "pass", 0)
    assert [c["args"][:2] for c in run.gh_calls] == [["api", "user"], ["api", "--paginate"]]
    assert _writes(run) == []


@pytest.mark.install
def test_comment_off_and_fail_on_never(tmp_path, runner_temp):
    run = run_action(tmp_path, runner_temp, {"candidate": TITLES_RUN, "fail-on": "never",
                                             "comment": "off"})
    _check_common(run, "regression", 0)
    assert run.gh_calls == []


@pytest.mark.install
def test_a_read_only_token_is_a_warning_not_a_failure(tmp_path, runner_temp):
    run = run_action(tmp_path, runner_temp, {"candidate": TITLES_RUN}, gh_write="403")
    _check_common(run, "regression", 1)
    assert len(_writes(run)) == 1
    comment = run.step("Comment on the pull request")
    assert comment.returncode == 0
    assert _line(r"::warning title=retrieval-gate::the token cannot write to pull requests",
                 comment.stdout)


@pytest.mark.install
def test_a_second_use_in_the_job_reuses_the_install(tmp_path, runner_temp):
    first = run_action(tmp_path / "first", runner_temp, {"comment": "off"})
    second = run_action(tmp_path / "second", runner_temp, {"comment": "off"})
    assert first.returncode == second.returncode == 0
    install = second.step("Install retrieval-gate")
    assert "retrieval-gate already installed" in install.stdout
    assert first.outputs["report"] != second.outputs["report"]  # a folder of its own per use


@pytest.mark.install
def test_without_python3_the_install_step_says_so(tmp_path):
    empty = tmp_path / "empty-path"
    empty.mkdir()
    run = run_action(tmp_path, tmp_path, path=str(empty))
    install = run.step("Install retrieval-gate")
    assert install.returncode == 1
    assert install.stdout.startswith("::error title=retrieval-gate::No python3 interpreter found")
    assert not run.step("Run the gate").ran
    assert not run.step("Exit with the gate's code").ran
    assert run.step("Comment on the pull request").returncode == 0  # if: always(); no report
    assert run.returncode == 1 and run.outputs["verdict"] == ""


def test_inputs_reach_the_scripts_only_through_env():
    """No ``${{ }}`` inside ``run:`` (script injection); every run step is bash."""
    action = _load_action()
    for step in action["runs"]["steps"]:
        assert "${{" not in step["run"], step["name"]
        assert step["shell"] == "bash"


@pytest.mark.install
def test_install_only_exposes_the_gate_and_checks_nothing(tmp_path, runner_temp):
    """The install-only mode installs the gate (or reuses the job's install) and gives its
    path as the ``gate`` output, for later steps to run that very version; no check runs."""
    run = run_action(tmp_path, runner_temp, {"install-only": "true"})
    assert run.returncode == 0
    assert [s.name for s in run.steps if s.ran] == ["Install retrieval-gate",
                                                    "Run the retriever"]
    assert run.step("Run the retriever").stdout.startswith("No retriever given")
    gate = Path(run.outputs["gate"])
    assert gate.name == "gate" and gate.is_file()
    version = subprocess.run([str(gate), "--version"], capture_output=True, text=True,
                             check=True)
    assert version.stdout.startswith("retrieval-gate, version ")


# --- gate run in the action --------------------------------------------------------------------


@pytest.mark.install
def test_a_python_retriever_is_run_in_its_python_then_gated(tmp_path, runner_temp):
    """``retriever`` runs ``gate run`` in ``retriever-python``'s environment (here the job's
    other venv: the action's own, standing in for the job's Python) with the gate installed
    there from the action's folder; the run it writes is the candidate the check gates."""
    output = tmp_path / "runs" / "overlap.jsonl"
    python = runner_temp / "retrieval-gate-venv" / "bin" / "python"
    run = run_action(tmp_path / "action", runner_temp, {
        "working-directory": "examples/cranfield", "snapshot": "snapshot.json",
        "baseline": "../../baselines/cranfield/bm25.trec", "retriever": "overlap_retriever:search",
        "retriever-python": str(python), "run-output": str(output),
        "run-options": "--system retriever=overlap --concurrency 2", "comment": "off"})
    step = run.step("Run the retriever")
    assert step.ran and step.returncode == 0, step.stdout + step.stderr
    assert run.outputs["run"] == str(output)
    assert len(output.read_text(encoding="utf-8").splitlines()) == 225
    manifest = json.loads(output.with_name("overlap.jsonl.manifest.json").read_text())
    assert manifest["system"] == {"retriever": "overlap"}
    assert manifest["provenance"]["runner"]["settings"]["concurrency"] == 2
    _check_common(run, "regression", 1)
    report = json.loads(Path(run.outputs["report"]).read_text())
    assert report["candidate"]["path"] == str(output)


@pytest.mark.install
def test_a_retriever_that_fails_stops_the_job_before_the_check(tmp_path, runner_temp):
    """An endpoint nobody answers: gate run exits 2 (run by the action's own gate — an HTTP
    retriever needs nothing of the job's Python), the error is annotated, nothing is checked.
    The options are split at white space and nothing else: no command substitution, no glob."""
    run = run_action(tmp_path, runner_temp, {
        "retriever": "http://127.0.0.1:9/search", "snapshot": "examples/cranfield/snapshot.json",
        "run-output": str(tmp_path / "endpoint.jsonl"), "retriever-python": "no-such-python",
        "run-options": "--system retriever=$(touch${IFS}pwned) --timeout 2"})
    step = run.step("Run the retriever")
    assert step.returncode == 2
    assert "failed" in step.stderr and "127.0.0.1:9" in step.stderr
    assert _line(r"::error title=retrieval-gate::gate run exited with 2", step.stdout)
    assert not run.step("Run the gate").ran
    assert run.returncode == 2 and run.outputs["run"] == "" and run.outputs["verdict"] == ""
    assert not (tmp_path / "endpoint.jsonl").exists()
    assert not list(ROOT.rglob("pwned")) and not list(tmp_path.rglob("pwned"))


@pytest.mark.install
def test_a_python_retriever_without_its_python_is_refused(tmp_path, runner_temp):
    run = run_action(tmp_path, runner_temp, {"retriever": "my_search:search",
                                             "retriever-python": "no-such-python"})
    step = run.step("Run the retriever")
    assert step.returncode == 2
    assert _line(r"::error title=retrieval-gate::retriever-python: no interpreter "
                 r"'no-such-python' found", step.stdout)
    assert not run.step("Run the gate").ran and run.returncode == 2
