"""``gate history``: a baseline folder's approvals as a table, so a team sees the trend across
approvals and snapshots in the measures it gates. Each approval appends one JSON line to the
folder's ``history.jsonl`` (see :mod:`retrieval_gate.commands.approve`), with the measures gated by the
configuration it ran under."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from retrieval_gate.commands.approve import HISTORY, gated_measures
from retrieval_gate.core.errors import GateError, InputError
from retrieval_gate.core.untrusted import visible
from retrieval_gate.decide.policy import GatedMeasure
from retrieval_gate.formats.jsonfmt import json_lines
from retrieval_gate.formats.source import read_text
from retrieval_gate.inputs.baseline_folder import read_folder
from retrieval_gate.inputs.config import find_config
from retrieval_gate.inputs.run_manifest import manifest_path
from retrieval_gate.inputs.snapshot import load_snapshot
from retrieval_gate.scoring.measures import parse_measure

_MEANS = 5  # measures shown as columns, at most


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
    gated = line.get("gated", [])
    return (all(isinstance(line.get(k, ""), str) for k in ("at", "version"))
            and isinstance(gated, list) and all(isinstance(m, str) for m in gated)
            and isinstance(line.get("commit"), (str, type(None)))
            and all(isinstance(line.get(k, {}), dict) for k in ("snapshot", "system"))
            and isinstance(means, dict) and all(
                v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)
                              and math.isfinite(v)) for v in means.values()))


def history_table(folder: str | os.PathLike[str]) -> str:
    """One row per approval: date, commit, version, snapshot, system, and the means of the
    gated measures (:func:`shown_measures`; a snapshot change is marked with ``*``)."""
    lines = read_history(folder)
    measures = shown_measures(lines, folder)
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


def shown_measures(lines: list[dict[str, Any]], folder: str | os.PathLike[str]
                   ) -> list[str]:
    """The measures ``gate history`` shows (at most :data:`_MEANS`, those some approval has a
    mean of): the gated ones the approvals record, the latest approval's first; for a history
    whose lines record none (written before approvals recorded them), those the configuration
    in the current folder gates; without one, the snapshot's measures in the snapshot's order
    (as the approved baseline's manifest lists its scores); else the means as the lines hold
    them."""
    scored = dict.fromkeys(m for line in lines for m in line.get("means", {}))

    def sources() -> Iterator[list[str]]:
        yield [m for line in reversed(lines) for m in line.get("gated", ())]
        found = find_config()
        if found is not None:
            yield _configured(found.policy.gates, found.snapshot)
        yield _snapshot_order(folder)
        yield list(scored)
    for names in sources():
        shown = [m for m in dict.fromkeys(names) if m in scored][:_MEANS]
        if shown:
            return shown
    return []


def _configured(gates: tuple[GatedMeasure, ...], snapshot: Path | None) -> list[str]:
    """The names of the measures ``gates`` decide on, resolved against the configuration's
    snapshot when it names one that can be read."""
    if snapshot is not None and snapshot.is_file():
        return gated_measures(gates, load_snapshot(snapshot, verify_files=False))
    names = []
    for gate in gates:
        try:
            names.append(str(parse_measure(gate.measure)))
        except InputError:
            continue
    return names


def _snapshot_order(folder: str | os.PathLike[str]) -> list[str]:
    """The approved baseline's scores in the order its approval wrote them (the snapshot's
    order of its measures); none when the folder holds no approved manifest that can be
    read."""
    try:
        run = read_folder(folder).run
        document = json.loads(manifest_path(run).read_text(encoding="utf-8")) if run else {}
    except (GateError, OSError, ValueError):
        return []
    scores = document.get("approved", {}).get("scores", {}) if isinstance(document, dict) else {}
    return list(scores) if isinstance(scores, dict) else []
