"""What ``gate init`` and ``gate baseline approve`` say a test set can certify, per gated
measure (the numbers: :mod:`retrieval_gate.decide.power`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from retrieval_gate.commands.validate import CheckedRun
from retrieval_gate.core.errors import InputError
from retrieval_gate.decide.policy import SCORE_PREFIX, GatePolicy
from retrieval_gate.decide.power import (
    SPREADS,
    Certifiable,
    certifiable,
    detectable_drop,
    family_size,
    queries_for,
)
from retrieval_gate.inputs.snapshot import Snapshot

_FROM = {"previous": "per-query differences from the baseline before it",
         "baseline": "the run's own per-query values: no earlier baseline on this snapshot"}


def measured(rows: Sequence[Certifiable], fail_on: str = "regression") -> list[str]:
    """One line per gated measure with a measured spread, and the advice when the set cannot
    find a drop of the margin (under the policy's ``fail_on``)."""
    lines = []
    for row in rows:
        if row.drop is None:
            why = ("too few to estimate a spread" if row.n < 2 else
                   f"every one the same in {_FROM[row.source]}: no spread to measure from")
            lines.append(f"{row.measure}: {row.n} queries — {why}")
            continue
        said = (f"{row.measure}: {row.n} queries, spread {row.spread:.3f} ({_FROM[row.source]}):"
                f" a drop of {row.drop:.3f} is found 80 % of the time (one-sided, level "
                f"{row.alpha:.3g}); margin {row.margin:g} ")
        lines.append(said + ("is within it" if row.supported else
                             f"needs {row.needs:,} queries"))
    if any(row.drop is not None and not row.supported for row in rows):
        lines.append(advice(rows, fail_on))
    return lines


def assumed(n: int, margins: Sequence[tuple[str, float]], alpha: float) -> list[str]:
    """Lines for a test set without a run yet: per gated measure, the drop found 80 % of the
    time and the queries its margin needs at each assumed spread of :data:`SPREADS`."""
    if n < 2:
        return [f"{n} answerable {'query' if n == 1 else 'queries'}: too few to find any drop"]
    spreads = " / ".join(f"{s:g}" for s in SPREADS)
    head = (f"{n} answerable queries, each gated measure at one-sided level {alpha:.3g}; if "
            f"the per-query differences of a change spread {spreads}:")
    lines = [head]
    for measure, margin in margins:
        drops = " / ".join(f"{detectable_drop(s, n, alpha):.3f}" for s in SPREADS)
        needs = " / ".join(f"{queries_for(s, margin, alpha):,}" for s in SPREADS)
        lines.append(f"  {measure}: a drop of {drops} is found 80 % of the time; margin "
                     f"{margin:g} needs {needs} queries")
    return lines


def advice(rows: Sequence[Certifiable], fail_on: str) -> str:
    """What to do when the set cannot find a drop of its margin: block what it cannot decide,
    or a margin it supports."""
    wide = max((row for row in rows if row.drop is not None), key=lambda r: r.drop or 0.0)
    said = ("a drop of the margin is not found 80 % of the time: it usually ends "
            "inconclusive, ")
    if fail_on == "never":
        return said + ("and fail-on = \"never\" blocks nothing: the report is what decides; "
                       f"a margin of at least {wide.drop:.3f} ({wide.measure}) or more queries "
                       "would decide such a drop")
    if fail_on == "regression":
        return said + ("which passes under fail-on = \"regression\": set fail-on = "
                       f"\"inconclusive\" to block it, a margin of at least {wide.drop:.3f} "
                       f"({wide.measure}), or add queries")
    return said + (f"which fail-on = \"{fail_on}\" blocks, with every change the set cannot "
                   f"decide; a margin of at least {wide.drop:.3f} ({wide.measure}) or more "
                   "queries would decide them")


def approval_power(policy: GatePolicy, snap: Snapshot, approved: CheckedRun,
                   before: CheckedRun | None) -> list[Certifiable]:
    """Per measure the policy gates on every query (not report-only; retrieval measures and
    per-query scores): what the test set can certify, its spread measured on ``approved`` —
    the per-query differences from ``before`` (the baseline it replaces, on the same
    snapshot) when there is one, else the approved run's own per-query values (module
    docstring of :mod:`retrieval_gate.decide.power`)."""
    alpha = policy.alpha / family_size(policy)
    rows = []
    for gate in policy.gates:
        if gate.report_only or (gate.slice not in (None, "all")):
            continue
        now = _values(gate.measure, snap, approved)
        then = None if before is None else _values(gate.measure, snap, before)
        if now is None:
            continue
        if then is not None and len(then) == len(now):
            both = ~(np.isnan(now) | np.isnan(then))
            rows.append(certifiable(gate.measure, now[both] - then[both], gate.margin, alpha,
                                    "previous"))
        else:
            rows.append(certifiable(gate.measure, now[~np.isnan(now)], gate.margin, alpha,
                                    "baseline"))
    return rows


def _values(measure: str, snap: Snapshot, run: CheckedRun) -> np.ndarray | None:
    """The run's per-query values of a gated measure over the answerable queries (a score's
    failed values NaN), or None when the run does not score it."""
    if measure.startswith(SCORE_PREFIX):
        answers = run.answer_scores
        name = measure.removeprefix(SCORE_PREFIX)
        if answers is None or name not in answers.names:
            return None
        return answers.column(name)[:len(run.scores.query_ids)]
    try:
        parsed = snap.gated(measure)
    except InputError:
        return None
    names = [str(m) for m in run.scores.measures]
    if str(parsed) not in names:
        return None
    return run.scores.values[:, names.index(str(parsed))]
