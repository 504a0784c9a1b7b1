"""What a test set can certify: the smallest drop it finds, and the queries a margin needs.

A gated comparison is decided one-sided at Holm's strictest level ``α/m`` (``m`` comparisons
in the family). With per-query differences that spread ``σ`` (their standard deviation) over
``n`` queries, a true drop of

    D = (z₁₋α/m + z_power) · σ / √n

is found significant with probability ``power`` (80 %: the normal approximation of
:func:`~retrieval_gate.decide.paired.minimum_detectable_drop`, the report's detectable drop),
and a margin δ needs

    n ≥ ((z₁₋α/m + z_power) · σ / δ)²

queries for a drop of δ to be found so. A drop smaller than D is usually ``inconclusive``:
under ``fail-on = "regression"`` it passes.

**The spread.** Before a candidate exists the differences' spread is not known. It is taken,
in order of preference, from the per-query differences between the approved baseline and the
one before it on the same snapshot (a change of the team's own kind), else from the spread of
the baseline's own per-query values (the differences of a candidate that agrees with the
baseline no better than an unrelated run with the same spread: an upper estimate for a close
variant), else — with no run at all — from the three spreads :data:`SPREADS` (per-query
differences of a change to a retriever's ranking on a [0, 1] measure), each said.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from retrieval_gate.decide.paired import detection_z
from retrieval_gate.decide.policy import POWER, GatePolicy

SPREADS = (0.1, 0.2, 0.3)  # assumed spreads of per-query differences, when none is measured
def detectable_drop(spread: float, n: int, alpha: float, power: float = POWER) -> float | None:
    """``D`` of the module docstring (None for n < 2: no spread can be estimated)."""
    if n < 2:
        return None
    return detection_z(alpha, power) * spread / math.sqrt(n)


def queries_for(spread: float, margin: float, alpha: float, power: float = POWER) -> int:
    """The queries a margin needs (module docstring), at least 2; 2 for no spread."""
    if spread <= 0:
        return 2
    return max(2, math.ceil((detection_z(alpha, power) * spread / margin) ** 2 - 1e-9))


def family_size(policy: GatePolicy) -> int:
    """The comparisons of the policy's family, as the check counts them from the gates alone:
    a gate on one slice is one, a gate on every slice one per answerable slice of the policy,
    a report-only gate none, and each relative cost gate one (at least 1)."""
    answerable = [s for s in policy.slices if s != "unanswerable"] or ["all"]
    quality = sum(1 if gate.slice else len(answerable)
                  for gate in policy.gates if not gate.report_only)
    costs = sum(1 for cost in policy.costs if cost.max_increase is not None)
    return max(1, quality + costs)


@dataclass(frozen=True)
class Certifiable:
    """One gated measure's power on a test set: ``n`` queries, the ``spread`` of the
    per-query differences and where it comes from (``previous``, ``baseline`` or
    ``assumed``), the family's level ``alpha`` (α/m), the smallest ``drop`` found 80 % of the
    time (None for fewer than 2 queries or no spread: nothing to estimate it from), the
    ``margin`` and the queries it ``needs``."""

    measure: str
    n: int
    spread: float
    source: str
    alpha: float
    drop: float | None
    margin: float
    needs: int

    @property
    def supported(self) -> bool:
        """Whether the set finds a drop of the margin 80 % of the time."""
        return self.drop is not None and self.drop <= self.margin


def certifiable(measure: str, values: np.ndarray | Sequence[float], margin: float,
                alpha: float, source: str) -> Certifiable:
    """:class:`Certifiable` for ``values``: per-query differences (``source`` ``previous``)
    or the baseline's per-query values (``baseline``), whose standard deviation (ddof 1) is
    the spread; ``alpha`` is the family's α/m."""
    array = np.asarray(values, dtype=float)
    spread = float(np.std(array, ddof=1)) if array.size >= 2 else 0.0
    drop = detectable_drop(spread, int(array.size), alpha) if spread > 0 else None
    return Certifiable(measure, int(array.size), spread, source, alpha, drop, margin,
                       queries_for(spread, margin, alpha))
