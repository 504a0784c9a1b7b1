"""GitHub Actions output of ``gate check --github``: the job summary, workflow annotations and
step outputs.

- Summary: the Markdown report appended to ``$GITHUB_STEP_SUMMARY`` (at most
  :data:`~retrieval_gate.report.markdown.MAX_CHARS` characters, far below GitHub's 1 MiB).
- Standard output (:func:`workflow_safe`): the report, every line made
  :func:`~retrieval_gate.core.untrusted.command_safe` and the whole between
  ``::stop-commands::TOKEN`` and ``::TOKEN::`` (a fresh random token each run), so nothing read
  from the inputs can run as a workflow command; then the gate's own annotations.
- Annotations: ``::error`` for each regression, ``::warning`` for each inconclusive comparison
  and each report warning; at most 10 of each kind (GitHub's limit per step) and a summary line
  for the rest. Untrusted parts are made visible and capped; message data escapes ``%``, CR and
  LF; property values (``title``) also ``:`` and ``,`` (actions/toolkit's ``escapeData`` /
  ``escapeProperty``).
- Outputs appended to ``$GITHUB_OUTPUT``: ``verdict`` (pass, regression, inconclusive, or for a
  gate that could not decide: invalid, not-comparable, error), ``exit-code`` and ``report`` (the
  JSON report's path).
"""

from __future__ import annotations

import os
import re
import secrets
import uuid
from collections.abc import Mapping
from pathlib import Path

from retrieval_gate.core.errors import EnvironmentFault
from retrieval_gate.core.untrusted import capped, command_safe, visible
from retrieval_gate.decide.policy import SCORE_PREFIX
from retrieval_gate.gating.outcome import Report
from retrieval_gate.report.cells import comparison_detail, cost_name, labels
from retrieval_gate.report.registry import renderer
from retrieval_gate.report.sections import cost_detail, leak_summary
from retrieval_gate.report.verdict import error_lines, error_verdict

__all__ = [
    "escape_data",
    "escape_property",
    "publish",
    "publish_failure",
    "workflow_annotations",
    "workflow_safe",
]

MAX_PER_KIND = 10
_MESSAGE = 1000  # characters of untrusted text in one annotation


def escape_data(text: str) -> str:
    """A workflow-command message: ``%`` → ``%25``, CR → ``%0D``, LF → ``%0A``."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow-command property value: as a message, and ``:`` → ``%3A``, ``,`` → ``%2C``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _command(kind: str, title: str, message: str) -> str:
    """A workflow command; the message quotes input, so it is made visible and capped."""
    message = capped(visible(message), _MESSAGE)
    return f"::{kind} title={escape_property(title)}::{escape_data(message)}"


def workflow_safe(text: str) -> str:
    """``text`` for standard output under GitHub Actions: every line (split where the runner
    splits: LF, CR, CRLF) made :func:`command_safe`, and the whole between
    ``::stop-commands::TOKEN`` and ``::TOKEN::`` with a fresh random token, so that the runner
    runs no command in it even under a parsing rule not covered by :func:`command_safe`."""
    token = f"retrieval-gate-{secrets.token_hex(16)}"
    lines = re.split(r"\r\n|\r|\n", text)
    if lines[-1] == "":
        lines.pop()
    return "".join(f"{line}\n" for line in [f"::stop-commands::{token}",
                                            *map(command_safe, lines), f"::{token}::"])


def _capped(kind: str, items: list[tuple[str, str]]) -> list[str]:
    lines = [_command(kind, title, message) for title, message in items[:MAX_PER_KIND]]
    if len(items) > MAX_PER_KIND:
        lines.append(_command(kind, "retrieval-gate", f"{len(items) - MAX_PER_KIND} more — see "
                              "the job summary and the JSON report"))
    return lines


def workflow_annotations(report: Report) -> list[str]:
    """The workflow commands for ``report`` (see the module docstring): the leaks, then the
    gating comparisons and the gated costs that regressed (errors) or could not be decided
    (warnings), then the report's warnings."""
    found = [*_leak(report), *_comparisons(report), *_costs(report)]
    errors = [(title, message) for kind, title, message in found if kind == "error"]
    warnings = [(title, message) for kind, title, message in found if kind == "warning"]
    warnings += [("retrieval-gate", w) for w in report.warnings]
    return _capped("error", errors) + _capped("warning", warnings)


_KIND = {"regression": "error", "inconclusive": "warning"}  # the annotation of a decision


def _leak(report: Report) -> list[tuple[str, str, str]]:
    """(kind, title, message) of the leaks, when either run leaks: an error when they fail the
    gate, else a warning; the message names the first leak."""
    leaks, summary = report.leaks, leak_summary(report)
    if leaks is None or summary is None or not (leaks.candidate.count or leaks.baseline.count):
        return []
    first = (leaks.candidate.rows or leaks.baseline.rows)[:1]
    example = "" if not first else (f"; e.g. query {first[0].query} rank {first[0].rank}: "
                                    f"{first[0].item}")
    return [("error" if leaks.fails else "warning", "retrieval leak", summary + example)]


def _comparisons(report: Report) -> list[tuple[str, str, str]]:
    ci = labels(report.policy, report.family).ci
    return [(_KIND[c.decision], f"{_signal(c.measure)} {c.decision}: {c.measure}",
             f"{c.measure} on '{c.slice}': {comparison_detail(c, ci)}")
            for c in report.comparisons if c.gating and c.decision in _KIND]


def _costs(report: Report) -> list[tuple[str, str, str]]:
    return [(_KIND[row.decision], f"cost {row.decision}: {cost_name(row)}", cost_detail(row))
            for row in report.costs if row.decision is not None and row.decision in _KIND]


def _append(variable: str, text: str, env: Mapping[str, str]) -> None:
    """Append ``text`` to the file the environment ``variable`` names (nothing when unset);
    EnvironmentFault (exit 74) naming the variable and its file when the machine refuses."""
    path = env.get(variable)
    if not path:
        return
    try:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise EnvironmentFault(f"${variable} ({visible(path)}): cannot append ({reason}) — "
                               "free space or fix the permissions, then run the command "
                               "again") from None


def _outputs(values: Mapping[str, str], env: Mapping[str, str]) -> None:
    """``name<<DELIMITER`` blocks, safe for any value."""
    text = ""
    for name, value in values.items():
        delimiter = f"ghadelimiter_{uuid.uuid4()}"
        text += f"{name}<<{delimiter}\n{value}\n{delimiter}\n"
    _append("GITHUB_OUTPUT", text, env)


def default_report_path(env: Mapping[str, str]) -> Path:
    """Where the JSON report goes without ``--json``: ``$RUNNER_TEMP`` (else the system's
    temporary folder) / retrieval-gate-report.json."""
    import tempfile

    return Path(env.get("RUNNER_TEMP") or tempfile.gettempdir()) / "retrieval-gate-report.json"


def publish(report: Report, markdown: str, json_path: Path,
            env: Mapping[str, str] = os.environ) -> list[str]:
    """Append the summary and the outputs; return the annotation lines to print."""
    _append("GITHUB_STEP_SUMMARY", markdown, env)
    _outputs({"verdict": report.verdict, "exit-code": str(report.exit_code),
              "report": str(json_path)}, env)
    return workflow_annotations(report)


def publish_failure(message: str, exit_code: int, env: Mapping[str, str] = os.environ
                    ) -> list[str]:
    """For input the gate refused (or a crash): a short summary, the outputs, and one
    ``::error`` per message line (at most 10). The message quotes untrusted text: each line is
    Markdown-escaped in the summary (at most 50 lines), made visible and capped in the
    annotations."""
    verdict = error_verdict(exit_code)
    _append("GITHUB_STEP_SUMMARY", renderer("markdown").failure(message, exit_code), env)
    _outputs({"verdict": verdict, "exit-code": str(exit_code), "report": ""}, env)
    return _capped("error", [(f"retrieval-gate: {verdict}", line)
                             for line in error_lines(message)])


def _signal(measure: str) -> str:
    """What a comparison is about, for an annotation's title: an answer-level score, or
    retrieval."""
    return "answer" if measure.startswith(SCORE_PREFIX) else "retrieval"
