"""What two runs' latencies measure, and whether ``gate check`` compares them.

A run ``gate run`` made says what each query's ``latency_ms`` measures
(``provenance.runner.latency``, :attr:`~retrieval_gate.inputs.run_manifest.RunManifest.latency`):

- ``call`` or ``stage``: the wall time of the query's own call — or of each of its chained
  stages — timed by the runner: one kind, *timed per query* (which stages carry it is compared
  apart, as for every run);
- ``batch``: the wall time of the batch call that answered it — every query of a batch
  carries the same value, the time it waited for its answer;
- ``reported``: the latency the batch function reported for the query, by its own clock.

A run made otherwise does not say, and its latencies are taken as they are.

**Rules.** Latencies of two kinds (both known) are not one cost: a gated ``latency_ms`` is
*not comparable* (exit 3), one shown only is left out with a warning. A **relative** gate
(``max-increase``) on batch latencies is invalid input (exit 2): the queries of a batch share
one value, so N queries hold about N / batch-size independent values, and the paired bootstrap
— which resamples queries as independent — would give an interval too narrow for them. An
absolute budget (``max``) on them decides what it says, the time each query waited for its
answer, and a warning says what the values are, as it does when they are shown.
"""

from __future__ import annotations

from collections.abc import Sequence

from retrieval_gate.core.errors import InputError, NotComparableError
from retrieval_gate.decide.policy import CostGate
from retrieval_gate.decide.signals import PairedSignal
from retrieval_gate.inputs.run_manifest import RunManifest

METRIC = "latency_ms"
BATCH = "batch"
_KIND = {"call": "timed", "stage": "timed", BATCH: BATCH, "reported": "reported"}
_SAID = {"timed": "each query's own call, timed by gate run",
         BATCH: "the wall time of the batch call that answered each query (gate run "
                "--batch-size)",
         "reported": "the latency the batch function reported for each query"}
_ROLES = ("baseline", "candidate")


def _kinds(manifests: tuple[RunManifest, RunManifest]) -> tuple[str | None, str | None]:
    """Each run's kind of latency (see the module docstring), None when it does not say."""
    found = [None if m.latency is None else _KIND.get(m.latency) for m in manifests]
    return found[0], found[1]


def _differ(kinds: tuple[str | None, str | None]) -> bool:
    return None not in kinds and kinds[0] != kinds[1]


def _measured(kinds: tuple[str | None, str | None]) -> str:
    return "; ".join(f"the {role}'s are {_SAID[kind]}" for role, kind in zip(_ROLES, kinds)
                     if kind is not None)


def require_latency_gates(manifests: tuple[RunManifest, RunManifest],
                          costs: Sequence[CostGate], config: str | None) -> None:
    """NotComparableError (exit 3) when ``latency_ms`` is gated and the runs measure it as
    different kinds; InputError (exit 2) for a relative gate on batch latencies (see the
    module docstring)."""
    gated = [(i, gate) for i, gate in enumerate(costs) if gate.metric == METRIC]
    if not gated:
        return
    kinds = _kinds(manifests)
    if _differ(kinds):
        raise NotComparableError(
            f"not comparable: {METRIC} is gated, and the runs measure it differently: "
            f"{_measured(kinds)} — a latency measured another way is another cost: make both "
            "runs the same way, or remove the cost gate")
    for i, gate in gated:
        if gate.max_increase is not None and BATCH in kinds:
            role = _ROLES[kinds.index(BATCH)]
            raise InputError(config or "gate policy", f"{gate.name} is gated relatively "
                             f"(max-increase), and the {role}'s latencies are batch wall "
                             "times: the queries of a batch share one value, so the paired "
                             "bootstrap would count each query as a value of its own",
                             "gate an absolute budget (max = MILLISECONDS), time each query "
                             "(gate run without --batch-size), or have the batch function "
                             "report each query's latency", f'$["cost"][{i}]')


def compared_latency(signals: list[PairedSignal], manifests: tuple[RunManifest, RunManifest]
                     ) -> tuple[list[PairedSignal], list[str]]:
    """The cost signals without ``latency_ms`` when the runs measure it as different kinds
    (a gated one was refused before), and the warnings: that one, or what batch latencies
    are."""
    if not any(signal.name == METRIC for signal in signals):
        return signals, []
    kinds = _kinds(manifests)
    if _differ(kinds):
        said = (f"{METRIC}: the runs measure it differently ({_measured(kinds)}), so it is "
                "not compared — make both runs the same way")
        return [s for s in signals if s.name != METRIC], [said]
    return signals, [f"{METRIC}: the {role}'s latencies are {_SAID[BATCH]}: the queries of a "
                     "batch share one value, the time each waited for its answer"
                     for role, kind in zip(_ROLES, kinds) if kind == BATCH]
