"""What a check gates, resolved against its snapshot: each gate's measure (a retrieval measure,
an abstention decision or a per-query score), the slices it is compared on, and the measures
the gate scores for itself.

Slices: ``all`` is every answerable query of the snapshot; ``unanswerable`` the queries marked
``answerable: false`` (where ``Abstain`` is decided); any other slice name is a query tag.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from retrieval_gate.core.errors import InputError
from retrieval_gate.decide.policy import SCORE_PREFIX, GatedMeasure, GatePolicy, PairPolicy
from retrieval_gate.inputs.snapshot import Snapshot, TestSet
from retrieval_gate.scoring.measures import Measure

ALL = "all"
UNANSWERABLE = "unanswerable"
ABSTAIN, FALSE_ABSTAIN = "Abstain", "FalseAbstain"
DEFAULT_POLICY = GatePolicy()


@dataclass(frozen=True)
class Gated:
    """What the policy gates, resolved against the snapshot: the retrieval measures, the
    abstention decisions, the per-query scores (``score:NAME``, with whether lower is better)
    and each gate with the name its comparisons carry."""

    measures: tuple[Measure, ...]
    decisions: tuple[str, ...]
    scores: tuple[tuple[str, bool], ...]
    named: tuple[tuple[str, GatedMeasure], ...]


def resolve_gates(snap: Snapshot, policy: GatePolicy, config: str | None) -> Gated:
    """The gates resolved (:func:`_resolved`): retrieval measures, abstention decisions
    (``Abstain``, ``FalseAbstain``) and per-query scores (``score:NAME``). A (measure, slice)
    gated twice is an error, as is one score gated both as lower-is-better and not."""
    source = config or "gate policy"
    resolved = [_resolved(gate, i, snap, source) for i, gate in enumerate(policy.gates)]
    named = tuple((name, gate) for (name, _), gate in zip(resolved, policy.gates))
    keys = [(name, gate.slice) for name, gate in named]
    if len(set(keys)) != len(keys):
        raise InputError(source, "a measure is gated twice on one slice", "gate each measure "
                         "once per slice (a gate without slice covers every slice)",
                         '$["gate"]')
    lower = {name: gate.lower_is_better for name, gate in named}
    if any(gate.lower_is_better != lower[name] for name, gate in named):
        raise InputError(source, "a score is gated both as lower-is-better and not",
                         "give every gate of one score the same lower-is-better",
                         '$["gate"]')
    measures = tuple(dict.fromkeys(m for _, m in resolved if m is not None))
    decisions = tuple(dict.fromkeys(n for n, _ in named if n in (ABSTAIN, FALSE_ABSTAIN)))
    scores = tuple((n, lower[n]) for n in dict.fromkeys(n for n, _ in named
                                                       if n.startswith(SCORE_PREFIX)))
    return Gated(measures, decisions, scores, named)


def _resolved(gate: GatedMeasure, i: int, snap: Snapshot, source: str
              ) -> tuple[str, Measure | None]:
    """One gate's name as its comparisons carry it, and its retrieval measure (None for a
    decision or a score): parsed with the snapshot's default gain, on the last stage of a
    pipeline when it names none, and one of the snapshot's measures. ``lower-is-better`` is
    for scores only: the others have their own direction."""
    if gate.lower_is_better and not gate.measure.startswith(SCORE_PREFIX):
        raise InputError(source, f"lower-is-better is set on {gate.measure}, which has its "
                         "own direction", "set lower-is-better on per-query scores "
                         "(score:NAME) only", f'$["gate"][{i}]["lower-is-better"]')
    _require_defined_on_slice(gate, i, source)
    if gate.measure in (ABSTAIN, FALSE_ABSTAIN):
        return gate.measure, None
    if gate.measure.startswith(SCORE_PREFIX):
        from retrieval_gate.formats.scores.rows import check_score_name

        check_score_name(gate.measure.removeprefix(SCORE_PREFIX), source,
                         f'$["gate"][{i}]["measure"]')
        return gate.measure, None
    try:
        measure = snap.gated(gate.measure)
    except InputError as exc:
        raise InputError(source, exc.problem, exc.fix, f'$["gate"][{i}]') from None
    if measure not in snap.measures:
        raise InputError(source, f"gated measure {measure} is not one of the snapshot's "
                         f"measures ({', '.join(map(str, snap.measures))})",
                         "gate one of them, or freeze a snapshot that scores it",
                         f'$["gate"][{i}]["measure"]')
    return str(measure), measure


def _require_defined_on_slice(gate: GatedMeasure, i: int, source: str) -> None:
    """InputError (exit 2) for a gate on a slice where its measure is not defined: on
    ``unanswerable``, only ``Abstain`` and per-query scores are (a retrieval measure is 0 for
    every run there, since no item is relevant, and ``FalseAbstain`` counts answerable
    queries); ``Abstain`` is defined there only. A comparison of zeros would pass and join the
    family, raising every other comparison's Holm-adjusted p."""
    if gate.slice is None or gate.measure.startswith(SCORE_PREFIX):
        return
    on_unanswerable = gate.slice == UNANSWERABLE
    if (gate.measure == ABSTAIN) == on_unanswerable:
        return
    if gate.measure == ABSTAIN:
        problem = (f"Abstain is gated on slice '{gate.slice}', where it is not defined: it is "
                   "the share of the unanswerable queries a run abstains on")
        fix = ("gate Abstain without a slice (it is decided on 'unanswerable'), or gate "
               f"FalseAbstain on '{gate.slice}'")
    else:
        why = ("it counts abstentions on answerable queries" if gate.measure == FALSE_ABSTAIN
               else "no item is relevant to an unanswerable query, so every run scores 0")
        problem = f"{gate.measure} is gated on slice 'unanswerable', where it is not defined: {why}"
        fix = ("on 'unanswerable' gate Abstain or per-query scores (score:NAME); gate "
               f"{gate.measure} on an answerable slice")
    raise InputError(source, problem, fix, f'$["gate"][{i}]["slice"]')


def slice_rows(test_set: TestSet, policy: GatePolicy, config: str | None,
               extra: list[str | None] | None = None) -> dict[str, np.ndarray]:
    """Slice name → positions (in the answerable order) of its answerable queries; the
    ``unanswerable`` slice (the queries marked ``answerable: false``, where ``Abstain`` is
    decided) → their positions after the answerable ones."""
    position = {q: i for i, q in enumerate(test_set.answerable)}
    slices = {}
    for name in dict.fromkeys([*policy.slices, *(s for s in extra or () if s)]):
        if name == ALL:
            slices[name] = np.arange(len(position))
            continue
        if name == UNANSWERABLE:
            if not test_set.unanswerable:
                raise InputError(config or "gate policy", "slice 'unanswerable' is empty: no "
                                 "query is marked answerable: false", "mark the questions the "
                                 "corpus cannot answer, or remove the slice", '$["slices"]')
            slices[name] = np.arange(len(test_set.unanswerable)) + len(position)
            continue
        members = [position[q.id] for q in test_set.queries if name in q.tags and q.id in position]
        if not members:
            raise InputError(config or "gate policy", f"slice '{name}' matches no answerable "
                             "query (slices other than 'all' are query tags)",
                             f"tag queries with \"{name}\" in the query set, or remove the slice",
                             '$["slices"]')
        slices[name] = np.asarray(members)
    return slices


def pair_policies(policy: GatePolicy, named: tuple[tuple[str, GatedMeasure], ...],
                  slices: dict[str, np.ndarray]) -> dict[tuple[str, str], PairPolicy]:
    """Each gate's (measure, slice) comparisons: on its own slice, else on every answerable
    slice of the policy (``Abstain``: on the unanswerable one); a gate on one slice wins over
    the same measure's gate on every slice."""
    answerable = [s for s in policy.slices if s != UNANSWERABLE]
    pairs = {}
    for name, gate in sorted(named, key=lambda pair: pair[1].slice is not None):
        where = [gate.slice] if gate.slice else ([UNANSWERABLE] if name == ABSTAIN
                                                 else answerable)
        for slice_name in where:
            pairs[(name, slice_name)] = PairPolicy(gate.margin, gate.min_queries,
                                                   gate.report_only)
    return pairs


@dataclass(frozen=True)
class Cover:
    """The gate's own measures on the last stage: ``Hit`` and ``Judged`` at the deepest cutoff
    of the gated measures there (for the newly failing queries and the unjudged share), and
    every measure scored: the snapshot's and these."""

    hit: Measure
    judged: Measure
    cutoff: int | None
    measures: tuple[Measure, ...]

    @staticmethod
    def of(snap: Snapshot, gated: Gated) -> Cover:
        final = snap.stages[-1].name if snap.stages else None
        cutoff = max((m.k for m in gated.measures if m.k is not None and m.stage == final),
                     default=None)
        hit, judged = Measure("Hit", cutoff, stage=final), Measure("Judged", cutoff, stage=final)
        return Cover(hit, judged, cutoff, tuple(dict.fromkeys((*snap.measures, hit, judged))))
