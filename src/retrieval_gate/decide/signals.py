"""Paired signals: everything the gate decides on, as one type, decided as one family.

A :class:`PairedSignal` is a named per-query value of the baseline and of the candidate on the
gate's rows (the snapshot's answerable queries, then its unanswerable ones), its direction
(higher or lower is better), its kind and the rows it covers. Its sources:

- retrieval measures (``nDCG@10``, ...: kind ``score``, bounded in [0, 1]);
- abstention decisions (``Abstain``, ``FalseAbstain``: kind ``decision``, 0/1 per query);
- per-query scores of a run's score file (``score:NAME``: kind ``decision`` when every value
  of both runs is 0 or 1, else ``score``).

A ``decision`` signal's sign test, on the discordant pairs only, is the exact McNemar test.
Costs (latency, context tokens) are the third kind, ``cost``: a ratio of statistics decided by
:mod:`retrieval_gate.decide.cost` in the same family. :func:`compare_signals` decides every
(signal, slice) the policy gates with one Bonferroni level and one Holm adjustment over all of
them, whatever their source.

**Failed scores** (NaN: a judge that failed) are a score signal's only missing values; the
policy's ``missing`` says what they mean (:func:`apply_missing`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from retrieval_gate.core.errors import InputError
from retrieval_gate.decide.policy import (
    Comparison,
    GatePolicy,
    Missing,
    Paired,
    PairPolicy,
    decide_pairs,
    family_level,
    in_family,
    paired,
)

SignalKind = Literal["score", "decision", "cost"]


@dataclass(frozen=True, eq=False)
class PairedSignal:
    """One signal: ``name`` (as gated), ``kind``, ``lower_is_better``, both runs' values on
    the gate's rows (NaN nowhere: see :func:`apply_missing`) and ``covers``, the rows where the
    pair is defined (False where a failed score's pair was dropped)."""

    name: str
    kind: SignalKind
    lower_is_better: bool
    baseline: np.ndarray
    candidate: np.ndarray
    covers: np.ndarray

    @staticmethod
    def of(name: str, baseline: np.ndarray, candidate: np.ndarray,
           lower_is_better: bool = False, kind: SignalKind | None = None) -> PairedSignal:
        """A signal covering every row; its kind ``decision`` when every value is 0 or 1 (and
        ``kind`` is not given), else ``score``."""
        if kind is None:
            both = np.concatenate([baseline, candidate])
            kind = "decision" if len(both) and np.isin(both, (0.0, 1.0)).all() else "score"
        return PairedSignal(name, kind, lower_is_better, baseline, candidate,
                            np.ones(len(baseline), dtype=bool))


    @staticmethod
    def cost(metric: str, baseline: np.ndarray, candidate: np.ndarray) -> PairedSignal:
        """A per-query cost (``latency_ms``, ``context_tokens``) of both runs, NaN where a run
        does not give it: covering the queries both runs give it for."""
        covers = ~(np.isnan(baseline) | np.isnan(candidate))
        return PairedSignal(metric, "cost", True, baseline, candidate, covers)

    def paired(self) -> tuple[np.ndarray, np.ndarray]:
        """Both runs' values on the rows the signal covers."""
        return self.baseline[self.covers], self.candidate[self.covers]


@dataclass(frozen=True)
class MissingCount:
    """What ``missing`` did to one score signal: the queries whose score failed in the
    baseline, in the candidate, and the pairs dropped or scored as the worst value."""

    name: str
    policy: Missing
    baseline: int
    candidate: int
    pairs: int


def apply_missing(name: str, baseline: np.ndarray, candidate: np.ndarray,
                  lower_is_better: bool, policy: Missing, query_ids: Sequence[str],
                  sources: tuple[str, str], absent: np.ndarray | None = None
                  ) -> tuple[PairedSignal, MissingCount]:
    """The signal of score ``name`` from both runs' per-query values, NaN where a score failed
    — or where either file leaves the query out (``absent``: not a failure, and not covered,
    whatever the policy) —:

    - ``error`` (the default): InputError (exit 2) naming the first query whose score failed
      and its file (``sources``: the baseline's and the candidate's score files);
    - ``drop-pair``: the query is left out of this signal in both runs (its pair is not
      covered), counted;
    - ``worst``: the failed value is replaced by the worst value of this score seen in either
      run (the lowest; the highest when lower is better), counted — a judge's failure counts
      against the run it happened in.
    """
    out = np.zeros(len(baseline), dtype=bool) if absent is None else absent
    failed = np.isnan(baseline) & ~out, np.isnan(candidate) & ~out
    either = failed[0] | failed[1]
    count = MissingCount(name, policy, int(failed[0].sum()), int(failed[1].sum()),
                         int(either.sum()))
    if either.any() and policy == "error":
        side = 0 if failed[0].any() else 1
        first = int(np.flatnonzero(failed[side])[0])
        raise InputError(sources[side], f"{name} of query {query_ids[first]} is missing or "
                         f"failed (null or NaN){_more(int(failed[side].sum()) - 1)}",
                         "score it again, or set missing = \"drop-pair\" (leave such queries "
                         "out of both runs) or \"worst\" (score them as the worst value) in the "
                         "gate's configuration")
    dropped = either | out
    if either.any() and policy == "worst":
        seen = np.concatenate([baseline[~failed[0] & ~out], candidate[~failed[1] & ~out]])
        if not len(seen):
            raise InputError(sources[0], f"score {name} failed on every query of both runs",
                             "score the runs again: there is no value to compare")
        worst = seen.max() if lower_is_better else seen.min()
        baseline = np.where(failed[0], worst, baseline)
        candidate = np.where(failed[1], worst, candidate)
        dropped = out
    kept = ~dropped
    both = np.concatenate([baseline[kept], candidate[kept]])
    kind: SignalKind = "decision" if len(both) and np.isin(both, (0.0, 1.0)).all() else "score"
    return PairedSignal(name, kind, lower_is_better, np.where(dropped, 0.0, baseline),
                        np.where(dropped, 0.0, candidate), kept), count


def _more(n: int) -> str:
    return f", and {n} more" if n > 0 else ""


def family_of(signals: Sequence[PairedSignal], slices: Mapping[str, np.ndarray],
              pairs: Mapping[tuple[str, str], PairPolicy], policy: GatePolicy) -> int:
    """How many of the (signal, slice) comparisons ``pairs`` are members of the family, each
    counted on the queries its signal covers in the slice."""
    covered = {s.name: s.covers for s in signals}
    return sum(in_family(int(covered[name][slices[slice_name]].sum()), pair, policy)
               for (name, slice_name), pair in pairs.items())


def compare_signals(signals: Sequence[PairedSignal], slices: Mapping[str, np.ndarray],
                    pairs: Mapping[tuple[str, str], PairPolicy], policy: GatePolicy,
                    family: int, others: Sequence[float] = ()) -> tuple[Comparison, ...]:
    """Every (signal, slice) of ``pairs`` decided in the family of ``family`` members (see
    :func:`retrieval_gate.decide.policy.compare`): :func:`paired_signals`, then
    :func:`~retrieval_gate.decide.policy.decide_pairs` with ``others``, the regression
    p-values of the family's relative cost gates. Comparisons come slice by slice, signals in
    order, for the signals covering every row; then those of each signal with dropped
    pairs."""
    return decide_pairs(paired_signals(signals, slices, pairs, policy, family), policy, family,
                        others)


def paired_signals(signals: Sequence[PairedSignal], slices: Mapping[str, np.ndarray],
                   pairs: Mapping[tuple[str, str], PairPolicy], policy: GatePolicy,
                   family: int) -> list[Paired]:
    """The paired statistics of every (signal, slice) of ``pairs`` at the family's level,
    before the family decides: signals covering the same rows are resampled together, slice
    by slice."""
    alpha = family_level(policy.alpha, family, family_of(signals, slices, pairs, policy),
                         "comparisons")
    groups: dict[bytes, list[PairedSignal]] = {}
    for signal in signals:
        groups.setdefault(np.packbits(signal.covers).tobytes(), []).append(signal)
    rows: list[Paired] = []
    for group in groups.values():
        covers = group[0].covers
        names = [s.name for s in group]
        base = np.column_stack([s.baseline for s in group])
        cand = np.column_stack([s.candidate for s in group])
        within = {name: at[covers[at]] for name, at in slices.items()}
        rows += paired(base, cand, names, within, policy, [s.lower_is_better for s in group],
                       {key: pair for key, pair in pairs.items() if key[0] in names}, alpha)
    return rows
