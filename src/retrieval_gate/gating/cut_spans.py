"""Span judgments cut by one run's chunking: the decisions they would bias are not trusted.

Spans made from one chunking's chunks begin and end on its boundaries
(:mod:`retrieval_gate.scoring.chunkcut`): that chunking holds each span in one chunk, another
needs two or more, so a comparison of the two favours the chunking that cut them. When at
least :data:`~retrieval_gate.scoring.chunkcut.CUT_SHARE` of the relevant spans are cut by one
run's chunking and the runs' chunkings differ, every retrieval measure's decision *in that
run's favour* is not trusted — a ``regression`` when it is the baseline's chunking, a ``pass``
(and an improvement) when it is the candidate's — and is ``inconclusive`` instead, saying why;
a decision against the favoured run stands (it holds in spite of the bias). Runs of one
chunking (the same chunk table, else the same version) are favoured alike, whichever of them
the cut was seen in: their decisions stand; runs whose manifests do not tell are taken for one
chunking when the cut is seen in both, for two when in one. Only relevance measures
(higher is better) are concerned: Stale and MixedVersions read no span.
``accept-cut-spans = true`` in the configuration decides anyway (the report still warns).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from retrieval_gate.decide.policy import Comparison

_FAVOURED = {"baseline": "regression", "candidate": "pass"}  # the decision a favour would make
_PASS = "this pass may come from the cut"
_FIX = ("narrow the spans to their evidence (gate qrels to-spans --evidence), or decide anyway "
        "with accept-cut-spans = true")


def favoured(spans_cut: Sequence[str], chunkings: tuple[dict[str, Any] | None,
                                                         dict[str, Any] | None]) -> tuple[str, ...]:
    """The runs (``baseline``, ``candidate``) that span judgments cut by their chunking favour:
    those of ``spans_cut`` — none when the runs are of the same chunking, whichever of them
    the cut was seen in (:func:`same_chunking`); when neither says, when the cut was seen in
    both."""
    same = same_chunking(*chunkings)
    return () if same or (same is None and len(spans_cut) == 2) else tuple(spans_cut)


def distrusted_pass(c: Comparison) -> bool:
    """Whether ``c`` is a pass made inconclusive because the spans favour the candidate."""
    return c.decision_note is not None and _PASS in c.decision_note


def same_chunking(base: dict[str, Any] | None, cand: dict[str, Any] | None) -> bool | None:
    """Whether two run manifests' ``chunking`` records name the same chunking: the same chunk
    table when both pin one, else the same version when both state one; None when that cannot
    be told (one or neither states anything comparable: items as given)."""
    base, cand = base or {}, cand or {}
    for key in ("sha256", "version"):
        if key in base and key in cand:
            return bool(base[key] == cand[key])
    return None


def distrust_cut_spans(comparisons: Sequence[Comparison], measures: Sequence[str],
                       favoured_runs: Sequence[str]) -> tuple[Comparison, ...]:
    """``comparisons`` with each decision of a retrieval measure (``measures``) that favours a
    run of ``favoured_runs`` made ``inconclusive``, with the reason (see the module
    docstring)."""
    out = []
    for c in comparisons:
        roles = [role for role in favoured_runs if _FAVOURED[role] == c.decision]
        if c.measure in measures and roles:
            role = roles[0]
            what = "this drop may come from the cut" if role == "baseline" else _PASS
            c = replace(c, decision="inconclusive", improvement=False, decision_note=(
                f"the span judgments were cut by the {role}'s chunking, which favours it: "
                f"{what}, not from retrieval — {_FIX}"))
        out.append(c)
    return tuple(out)
