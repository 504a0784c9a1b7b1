"""GitHub Actions output of ``gate check --github``: the job summary, workflow annotations and
step outputs.

- Summary: the Markdown report appended to ``$GITHUB_STEP_SUMMARY`` (GitHub shows at most 1 MiB
  per step; the report caps its lists far below that, and a larger one is cut with a note).
- Annotations on standard output: ``::error`` for each regression, ``::warning`` for each
  inconclusive comparison and each report warning; at most 10 of each kind (GitHub's limit per
  step) and a summary line for the rest. Message data escapes ``%``, CR and LF; property values
  (``title``) also ``:`` and ``,`` (actions/toolkit's ``escapeData`` / ``escapeProperty``).
- Outputs appended to ``$GITHUB_OUTPUT``: ``verdict`` (pass, regression, inconclusive, or for a
  gate that could not decide: invalid, not-comparable, error), ``exit-code`` and ``report`` (the
  JSON report's path).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from pathlib import Path

from retrieval_gate.errors import EXIT_INVALID, EXIT_NOT_COMPARABLE
from retrieval_gate.policy import labels
from retrieval_gate.report.markdown import MARKER
from retrieval_gate.report.model import Report
from retrieval_gate.report.text import signed

__all__ = ["annotations", "error_verdict", "escape_data", "escape_property", "publish",
           "publish_failure"]

MAX_PER_KIND = 10
MAX_SUMMARY_BYTES = 1_000_000


def escape_data(text: str) -> str:
    """A workflow-command message: ``%`` → ``%25``, CR → ``%0D``, LF → ``%0A``."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow-command property value: as a message, and ``:`` → ``%3A``, ``,`` → ``%2C``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _command(kind: str, title: str, message: str) -> str:
    return f"::{kind} title={escape_property(title)}::{escape_data(message)}"


def _capped(kind: str, items: list[tuple[str, str]]) -> list[str]:
    lines = [_command(kind, title, message) for title, message in items[:MAX_PER_KIND]]
    if len(items) > MAX_PER_KIND:
        lines.append(_command(kind, "retrieval-gate", f"{len(items) - MAX_PER_KIND} more — see "
                              "the job summary and the JSON report"))
    return lines


def annotations(report: Report) -> list[str]:
    """The workflow commands for ``report`` (see the module docstring)."""
    errors, warnings = [], []
    ci = labels(report.policy, len(report.comparisons)).ci
    for c in report.comparisons:
        detail = (f"{c.measure} on '{c.slice}': Δ {signed(c.mean_diff)}, {ci} "
                  f"[{signed(c.ci_low)}, {signed(c.ci_high)}], margin {c.margin:g}, n = {c.n}")
        if c.decision == "regression":
            errors.append((f"retrieval regression: {c.measure}", detail))
        elif c.decision == "inconclusive":
            warnings.append((f"retrieval inconclusive: {c.measure}", detail))
    warnings += [("retrieval-gate", w) for w in report.warnings]
    return _capped("error", errors) + _capped("warning", warnings)


def _append(path: str | None, text: str) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text)


def _outputs(values: Mapping[str, str], env: Mapping[str, str]) -> None:
    """``name<<DELIMITER`` blocks, safe for any value."""
    text = ""
    for name, value in values.items():
        delimiter = f"ghadelimiter_{uuid.uuid4()}"
        text += f"{name}<<{delimiter}\n{value}\n{delimiter}\n"
    _append(env.get("GITHUB_OUTPUT"), text)


def default_report_path(env: Mapping[str, str]) -> Path:
    """Where the JSON report goes without ``--json``: ``$RUNNER_TEMP`` (else the system's
    temporary folder) / retrieval-gate-report.json."""
    import tempfile

    return Path(env.get("RUNNER_TEMP") or tempfile.gettempdir()) / "retrieval-gate-report.json"


def _summary_text(markdown: str) -> str:
    encoded = markdown.encode("utf-8")
    if len(encoded) <= MAX_SUMMARY_BYTES:
        return markdown
    cut = encoded[:MAX_SUMMARY_BYTES].decode("utf-8", errors="ignore")
    return cut[:cut.rfind("\n") + 1] + "\n… cut at 1 MB; the JSON report has everything.\n"


def publish(report: Report, markdown: str, json_path: Path,
            env: Mapping[str, str] = os.environ) -> list[str]:
    """Append the summary and the outputs; return the annotation lines to print."""
    _append(env.get("GITHUB_STEP_SUMMARY"), _summary_text(markdown))
    _outputs({"verdict": report.verdict, "exit-code": str(report.exit_code),
              "report": str(json_path)}, env)
    return annotations(report)


def error_verdict(exit_code: int) -> str:
    """The ``verdict`` output of a gate that could not decide."""
    return {EXIT_INVALID: "invalid", EXIT_NOT_COMPARABLE: "not-comparable"}.get(exit_code,
                                                                             "error")


def publish_failure(message: str, exit_code: int, env: Mapping[str, str] = os.environ
                    ) -> list[str]:
    """For input the gate refused (or a crash): a short summary, the outputs, and one
    ``::error`` per message line (at most 10)."""
    verdict = error_verdict(exit_code)
    lines = message.splitlines() or [message]
    body = "\n".join(f"- `{line}`" if "`" not in line else f"- {line}" for line in lines)
    _append(env.get("GITHUB_STEP_SUMMARY"),
            f"{MARKER}\n### {verdict.upper()} ⛔ retrieval-gate\n\n**The gate could not compare "
            f"the runs (exit {exit_code}).**\n\n{body}\n")
    _outputs({"verdict": verdict, "exit-code": str(exit_code), "report": ""}, env)
    return _capped("error", [(f"retrieval-gate: {verdict}", line) for line in lines])
