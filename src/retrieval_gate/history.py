"""``gate history``: a baseline folder's approvals as a table, so a team sees the trend across
approvals and snapshots. Each approval appends one JSON line to the folder's
``history.jsonl`` (see :mod:`retrieval_gate.approve`)."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from retrieval_gate.approve import HISTORY
from retrieval_gate.errors import InputError
from retrieval_gate.formats.jsonfmt import json_lines
from retrieval_gate.formats.source import read_text
from retrieval_gate.untrusted import visible

_MEANS = 4  # measures shown as columns


def read_history(folder: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The folder's approvals, oldest first; InputError when it has no history."""
    path = Path(folder) / HISTORY
    if not path.is_file():
        raise InputError(str(folder), f"has no {HISTORY} (no approval recorded one yet)",
                         "approve a baseline into it with gate baseline approve")
    lines = []
    for number, line in json_lines(read_text(path), str(path)):
        if not _approval(line):
            raise InputError(str(path), "line is not an approval (at, commit, version, "
                             "snapshot, system, means)", "the history is written by gate "
                             "baseline approve: restore the line, or delete it", number)
        lines.append(line)
    return lines


def _approval(line: dict[str, Any]) -> bool:
    """Whether ``line`` has the shape an approval writes (absent fields are allowed)."""
    means = line.get("means", {})
    return (all(isinstance(line.get(k, ""), str) for k in ("at", "version"))
            and isinstance(line.get("commit"), (str, type(None)))
            and all(isinstance(line.get(k, {}), dict) for k in ("snapshot", "system"))
            and isinstance(means, dict) and all(
                v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)
                              and math.isfinite(v)) for v in means.values()))


def history_table(folder: str | os.PathLike[str]) -> str:
    """One row per approval: date, commit, version, snapshot, system, and the means of the
    first measures (a snapshot change is marked with ``*``)."""
    lines = read_history(folder)
    measures = list(dict.fromkeys(m for line in lines for m in line.get("means", {})))[:_MEANS]
    header = ["approved", "commit", "version", "snapshot", "system", *measures]
    rows = [header]
    for line in lines:
        system = line.get("system") or {}
        name = system.get("name") or system.get("retriever") or "-"
        snapshot = line.get("snapshot", {})
        moved = "*" if "snapshot_change" in line else ""
        means = line.get("means", {})
        rows.append([str(line.get("at", "-")), str(line.get("commit") or "none")[:12],
                     str(line.get("version", "-")),
                     (f"{snapshot.get('name', '-')} {str(snapshot.get('fingerprint', ''))[7:19]}"
                     f"{moved}"), str(name),
                     *("-" if means.get(m) is None else f"{means[m]:.4f}" for m in measures)])
    rows = [[visible(cell) for cell in row] for row in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    out = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    if any("snapshot_change" in line for line in lines):
        out.append("* the test set changed at this approval (a new snapshot)")
    return "".join(f"{line}\n" for line in out)
