"""Pipeline stages: the evaluation contract of each stage, token budgets, and the evidence
funnel.

A pipeline run gives one ranking per stage, in pipeline order — for example ``candidates``
(first-stage retrieval), ``reranked`` (after a reranker) and ``context`` (what is packed into
the generator's prompt). The snapshot pins each stage's **contract**: its ``cutoff`` (only the
first ``cutoff`` items of its ranking count: what the stage passes on) and, for a context stage,
its token ``budget``. A measure names the stage it reads: ``Recall@50 [candidates]``.

**Budget.** Items are taken in rank order while their tokens add up to at most the budget; the
first item that would cross it, and every item after it, are absent (a packer that skips an
item and fits a smaller one later must say so in its own context ranking). Token counts come
from the pipeline — the run's items or its chunk table — counted with its generator's
tokenizer; the gate counts nothing itself.

**Funnel.** For every relevant unit (a judged document, chunk or span with grade ≥ the
threshold) of every answerable query, the first stage that lost it:

- ``never retrieved`` — not in the first stage's ranking (within its cutoff);
- ``cut at <stage>`` — in the previous stage, not in this stage's ranking within its cutoff
  (for a stage with a budget: *dropped at packing*);
- ``over budget`` — in a budgeted stage's ranking, but only past its token budget (truncated).

A unit that reaches the last stage is ``reached``, whatever happened on the way (a later stage
may bring back what an earlier one missed). A span counts as in a stage when the stage's items
together cover it (``min_coverage`` of its characters).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from retrieval_gate.core.errors import InputError

STAGE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
REACHED = "reached"
NEVER_RETRIEVED = "never retrieved"
OVER_BUDGET = "over budget"


@dataclass(frozen=True)
class StageContract:
    """One stage of the snapshot's pipeline: its name, how many of its items count
    (``cutoff``, None: all) and its token ``budget`` (None: unbounded)."""

    name: str
    cutoff: int | None = None
    budget: int | None = None

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"name": self.name}
        if self.cutoff is not None:
            out["cutoff"] = self.cutoff
        if self.budget is not None:
            out["budget"] = self.budget
        return out

    def describe(self) -> str:
        """``reranked (top 20)``, ``context (top 20, 1,000 tokens)``, ``candidates (all)``."""
        parts = [f"top {self.cutoff}" if self.cutoff is not None else "all items"]
        if self.budget is not None:
            parts.append(f"{self.budget:,} tokens")
        return f"{self.name} ({', '.join(parts)})"


def contracts_of(entries: Sequence[dict[str, object]], source: str) -> tuple[StageContract, ...]:
    """The stage contracts of a schema-valid ``stages`` array; names must be distinct."""
    stages = tuple(StageContract(str(e["name"]), _int(e.get("cutoff")), _int(e.get("budget")))
                   for e in entries)
    names = [s.name for s in stages]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InputError(source, f"stage '{twice[0]}' is listed twice",
                         "give each stage of the pipeline once", '$["stages"]')
    return stages


def _int(value: object) -> int | None:
    return None if value is None else int(str(value))


def parse_contract(text: str) -> StageContract:
    """``NAME[:CUTOFF[:BUDGET]]`` (``context::1000``: a budget, no cutoff) → a contract."""
    name, _, rest = text.partition(":")
    cutoff_text, _, budget_text = rest.partition(":")
    fix = ("write NAME[:CUTOFF[:BUDGET]], e.g. candidates:50, reranked:20 or context:20:1000 "
           "(a cutoff in items, a budget in tokens)")
    if not STAGE_NAME.fullmatch(name):
        raise InputError("--stage", f"'{text[:40]}': '{name[:40]}' is not a stage name "
                         "(letters, digits, _ . -; at most 64)", fix)
    values: list[int | None] = []
    for label, value in (("cutoff", cutoff_text), ("budget", budget_text)):
        if value == "":
            values.append(None)
        elif re.fullmatch(r"[0-9]{1,9}", value) and int(value) >= 1:
            values.append(int(value))
        else:
            raise InputError("--stage", f"'{text[:40]}': {label} '{value[:20]}' is not a "
                             "positive integer", fix)
    if ":" in budget_text:
        raise InputError("--stage", f"'{text[:40]}' has more than three parts", fix)
    return StageContract(name, values[0], values[1])


def loss_labels(stages: Sequence[StageContract]) -> dict[str, str]:
    """Loss kind key → its words: ``never retrieved``, ``cut at reranked (top 20)``
    (``dropped at packing (context)`` for a budgeted stage), ``over budget (context, 1,000
    tokens)``."""
    out = {}
    for i, stage in enumerate(stages):
        if i == 0:
            out[stage.name] = NEVER_RETRIEVED
        elif stage.budget is not None:
            out[stage.name] = f"dropped at packing ({stage.name})"
        else:
            out[stage.name] = f"cut at {stage.name} (top {stage.cutoff})" if stage.cutoff \
                else f"cut at {stage.name}"
        if stage.budget is not None:
            out[f"{stage.name}:budget"] = f"{OVER_BUDGET} ({stage.name}, {stage.budget:,} tokens)"
    return out


@dataclass(frozen=True, eq=False)
class Funnel:
    """Where each relevant unit of one run was lost: ``lost[u]`` is the index of the loss
    kind of unit ``u`` in ``kinds`` (−1: reached the last stage); ``qidx[u]`` its query
    (position among the answerable queries)."""

    kinds: tuple[str, ...]
    qidx: np.ndarray
    lost: np.ndarray
    n_queries: int

    def counts(self) -> dict[str, int]:
        """Units lost per kind, and ``reached``."""
        tally = np.bincount(self.lost + 1, minlength=len(self.kinds) + 1)
        return {REACHED: int(tally[0]), **{k: int(tally[i + 1])
                                          for i, k in enumerate(self.kinds)}}

    def per_query(self) -> np.ndarray:
        """(queries, 1 + kinds) counts: reached, then each kind."""
        width = len(self.kinds) + 1
        flat = np.bincount(self.qidx * width + self.lost + 1,
                           minlength=self.n_queries * width)
        return flat.reshape(self.n_queries, width)


def funnel(stages: Sequence[StageContract], listed: Sequence[np.ndarray],
           within_budget: Sequence[np.ndarray | None], qidx: np.ndarray, n_queries: int
           ) -> Funnel:
    """The funnel of one run from per-stage coverage of its relevant units: ``listed[i][u]``
    — unit ``u`` is in stage ``i``'s ranking within its cutoff; ``within_budget[i][u]`` — and
    within its budget (None for a stage without one)."""
    kinds: list[str] = []
    for stage in stages:
        kinds.append(stage.name)
        if stage.budget is not None:
            kinds.append(f"{stage.name}:budget")
    lost = np.full(len(qidx), -1, dtype=np.int64)
    last = len(stages) - 1
    final = within_budget[last]
    reached_last = listed[last] if final is None else final
    undecided = ~reached_last
    for i, stage in enumerate(stages):
        gone = undecided & ~listed[i]
        lost[gone] = kinds.index(stage.name)
        undecided &= ~gone
        budget = within_budget[i]
        if budget is not None:
            over = undecided & ~budget
            lost[over] = kinds.index(f"{stage.name}:budget")
            undecided &= ~over
    assert not undecided.any()  # a unit in every stage within budget reached the last one
    return Funnel(tuple(kinds), qidx, lost, n_queries)
