"""Retrieval measures: parseable, immutable names and their one definition each.

A measure is written ``Name[(param=value,...)][@k] [stage]``, for example ``nDCG@10``,
``RR(rel=2)@10``, ``nDCG(gain=linear)`` or ``Recall@50 [candidates]``. Without ``@k`` a measure
covers the whole ranked list. Names are matched case-insensitively and aliases are canonicalised
(``MRR@3`` → ``RR@3``); the ``str()`` of a :class:`Measure` is its canonical name.

:data:`FAMILIES` is the one table of the measures: each :class:`Family` with its aliases,
definition, trec_eval names and the parameters it takes (each a :class:`Param`: type and
range, default, description). Parsing, its refusals, ``str()``, the reports' definition lines and the
listings in messages all read it.

Notation: R = number of relevant judgments of the query (grade ≥ threshold; negative grades
never count), ranks are 1-based, "top k" is the first k items (all items without ``@k``).
Every measure is 0 for an empty ranking. Relevance uses the policy threshold unless the measure
sets its own with ``rel=N``; nDCG never uses the threshold (its gains are the grades).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from retrieval_gate.core.errors import InputError
from retrieval_gate.core.exported import exported
from retrieval_gate.core.limits import MAX_CUTOFF, MAX_GRADE, MIN_GRADE
from retrieval_gate.core.model import NEVER, JudgedRows
from retrieval_gate.core.stages import STAGE_NAME

EXPONENTIAL = "exponential"
LINEAR = "linear"
COUNT = "count"
RANK = "rank"


def _cut(rows: JudgedRows, k: int | None) -> np.ndarray:
    return np.ones(len(rows.rank), dtype=bool) if k is None else rows.rank <= k


def _per_query(rows: JudgedRows, mask: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Sum per query of ``weights`` (or count) over the rows selected by ``mask``."""
    w = mask.astype(np.float64) if weights is None else np.where(mask, weights, 0.0)
    return np.bincount(rows.qidx, weights=w, minlength=rows.n_queries)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, and 0 where den is 0."""
    den = np.asarray(den, dtype=np.float64)
    return np.divide(num, den, out=np.zeros(len(num)), where=den > 0)


def _precision_at_relevant(rows: JudgedRows, rel: np.ndarray) -> np.ndarray:
    """Per row: (relevant items at or above this rank) / rank — P@rank."""
    cumulative = np.cumsum(rel)
    starts = np.searchsorted(rows.qidx, np.arange(rows.n_queries))
    before = np.concatenate(([0], cumulative))[starts]
    return (cumulative - before[rows.qidx]) / rows.rank


def _units_within(rows: JudgedRows, k: int | None, threshold: int) -> np.ndarray:
    """Per judged unit: relevant (grade ≥ threshold) and covered within the top k."""
    covered = rows.judgment_rank != NEVER if k is None else rows.judgment_rank <= k
    return covered & rows.relevant_units(threshold)


def recall(rows: JudgedRows, k: int | None, threshold: int) -> np.ndarray:
    """Recall@k = relevant units covered in the top k / R (trec_eval ``recall_k``); 0 when
    R = 0. A unit is a judged document or chunk (covered where it is ranked) or a judged span
    (covered where the items ranked so far together cover it). The denominator is R, never
    min(k, R): missing evidence stays in it."""
    hits = np.bincount(rows.judgment_qidx[_units_within(rows, k, threshold)],
                       minlength=rows.n_queries)
    return _ratio(hits.astype(np.float64), rows.n_relevant(threshold))


def _facts_covered(rows: JudgedRows, k: int | None, threshold: int) -> np.ndarray:
    """Per required (query, fact): some relevant unit stating it is covered in the top k."""
    within = _units_within(rows, k, threshold) & (rows.judgment_fact >= 0)
    width = max(int(rows.judgment_fact.max(initial=-1)), int(rows.required_fact.max(initial=-1))
                ) + 1
    supported = rows.judgment_qidx[within] * width + rows.judgment_fact[within]
    return np.isin(rows.required_qidx * width + rows.required_fact, supported)


def fact_coverage(rows: JudgedRows, k: int | None, threshold: int) -> np.ndarray:
    """FactCoverage@k = required facts with at least one relevant unit stating it covered in
    the top k / required facts; 0 for a query that requires none. A query requires the facts
    it lists, or else every fact labelled on its judgments; any one of several units stating a
    fact supports it, and ten units repeating one fact support one fact."""
    covered = np.bincount(rows.required_qidx, weights=_facts_covered(rows, k, threshold),
                          minlength=rows.n_queries)
    return _ratio(covered, np.bincount(rows.required_qidx, minlength=rows.n_queries))


def all_facts(rows: JudgedRows, k: int | None, threshold: int) -> np.ndarray:
    """AllFacts@k = 1 when every required fact is covered in the top k (FactCoverage@k = 1),
    else 0; 0 for a query that requires none."""
    missing = np.bincount(rows.required_qidx, weights=~_facts_covered(rows, k, threshold),
                          minlength=rows.n_queries)
    required = np.bincount(rows.required_qidx, minlength=rows.n_queries)
    return ((required > 0) & (missing == 0)).astype(np.float64)


def precision(rows: JudgedRows, k: int | None, threshold: int) -> np.ndarray:
    """P@k = relevant in top k / k (trec_eval ``P_k``): a short list is padded with
    non-relevant items, never rewarded. ``P`` without k = relevant retrieved / retrieved
    (trec_eval ``set_P``), 0 for an empty list."""
    hits = _per_query(rows, _cut(rows, k) & rows.relevant(threshold))
    return hits / k if k is not None else _ratio(hits, rows.retrieved)


def hit(rows: JudgedRows, k: int | None, threshold: int) -> np.ndarray:
    """Hit@k (Success@k) = 1 if any relevant item is in the top k, else 0 (trec_eval
    ``success_k``)."""
    return (_per_query(rows, _cut(rows, k) & rows.relevant(threshold)) > 0).astype(np.float64)


def reciprocal_rank(rows: JudgedRows, k: int | None, threshold: int) -> np.ndarray:
    """RR@k = 1 / rank of the first relevant item within the top k, else 0. Without k it is
    trec_eval's ``recip_rank`` over the whole list; its mean over queries is MRR."""
    selected = np.flatnonzero(_cut(rows, k) & rows.relevant(threshold))
    out = np.zeros(rows.n_queries)
    if len(selected):
        q = rows.qidx[selected]
        first = np.concatenate(([True], q[1:] != q[:-1]))
        out[q[first]] = 1.0 / rows.rank[selected[first]]
    return out


def average_precision(rows: JudgedRows, k: int | None, threshold: int) -> np.ndarray:
    """AP@k = Σ over relevant ranks i ≤ k of P@i, / R (trec_eval ``map_cut_k``; without k,
    ``map``). The denominator is R, not min(k, R); 0 when R = 0."""
    rel = rows.relevant(threshold)
    total = _per_query(rows, _cut(rows, k) & rel, _precision_at_relevant(rows, rel))
    return _ratio(total, rows.n_relevant(threshold))


def context_precision(rows: JudgedRows, k: int | None, threshold: int) -> np.ndarray:
    """CP@k = Σ over relevant ranks i ≤ k of P@i, / (relevant in top k): how early the
    relevant items of the top k come; 0 when the top k holds no relevant item."""
    rel = rows.relevant(threshold)
    selected = _cut(rows, k) & rel
    total = _per_query(rows, selected, _precision_at_relevant(rows, rel))
    return _ratio(total, _per_query(rows, selected))


def _gain(grades: np.ndarray, gain: str) -> np.ndarray:
    positive = np.maximum(grades, 0).astype(np.float64)
    return np.exp2(positive) - 1.0 if gain == EXPONENTIAL else positive


def ndcg(rows: JudgedRows, k: int | None, gain: str) -> np.ndarray:
    """nDCG@k = DCG@k / IDCG@k with DCG = Σ_{i ≤ k} gain(grade_i) / log2(i + 1).

    gain(g) = 2^g − 1 (``exponential``, the default, as the seeds use) or g (``linear``,
    trec_eval's ``ndcg_cut_k``; without k, trec_eval's ``ndcg``). Negative grades and unjudged
    items gain 0. The ideal ranking comes from *all* judgments of the query (not from the
    retrieved items), cut at k; IDCG = 0 gives 0. The relevance threshold does not apply."""
    discount = np.log2(rows.rank + 1.0)
    dcg = _per_query(rows, _cut(rows, k), _gain(rows.grade, gain) / discount)
    ideal_cut = np.ones(len(rows.ideal_rank), dtype=bool) if k is None else rows.ideal_rank <= k
    ideal_gain = _gain(rows.ideal_grade, gain) / np.log2(rows.ideal_rank + 1.0)
    idcg = np.bincount(
        rows.ideal_qidx, weights=np.where(ideal_cut, ideal_gain, 0.0), minlength=rows.n_queries
    )
    return _ratio(dcg, idcg)


def judged(rows: JudgedRows, k: int | None, weight: str = COUNT) -> np.ndarray:
    """Judged@k = judged items in the top k / k (ir_measures' ``Judged@k``): an empty slot of
    a list shorter than k is not a judged item, so returning fewer items never raises it.
    Without k, judged items / items returned, 0 for an empty list. An item is judged when the
    query's judgments give it a grade ≥ 0 — or, with access data, when its asker may not see
    it or it is not in force on the query's day: its value for the query is known (it gains 0
    by rule) and no judgment could change it, so it is not unjudged (nor asked to be
    judged). ``weight=rank`` weighs the item at rank r by 1/r, in the sum and in the slots
    (H_k = 1 + 1/2 + … + 1/k; without k, over the items returned): the judged share where a
    reader — and every rank-discounted measure — looks first."""
    if weight == COUNT:
        count = _per_query(rows, _cut(rows, k) & rows.judged)
        return count / k if k is not None else _ratio(count, rows.retrieved)
    weighted = _per_query(rows, _cut(rows, k) & rows.judged, 1.0 / rows.rank)
    slots = harmonic(np.full(rows.n_queries, k) if k is not None else rows.retrieved)
    return _ratio(weighted, slots)


def harmonic(n: np.ndarray) -> np.ndarray:
    """H_n = 1 + 1/2 + … + 1/n per element (0 for n = 0), summed exactly for small n and
    by the asymptotic series (its next term below 1e-16 of it) above 64."""
    n = np.asarray(n, dtype=np.int64)
    table = np.concatenate(([0.0], np.cumsum(1.0 / np.arange(1, 65))))
    big = np.maximum(n, 1).astype(np.float64)
    series = (np.log(big) + np.euler_gamma + 1 / (2 * big) - 1 / (12 * big ** 2)
              + 1 / (120 * big ** 4) - 1 / (252 * big ** 6))
    return np.where(n <= 64, table[np.minimum(n, 64)], series)


def stale(rows: JudgedRows, k: int | None) -> np.ndarray:
    """Stale@k = items in the top k that are not in force on the query's day / k (without k,
    / items returned): superseded or not yet valid. 0 without access data. Lower is better."""
    if rows.stale is None:
        return np.zeros(rows.n_queries)
    count = _per_query(rows, _cut(rows, k) & rows.stale)
    return count / k if k is not None else _ratio(count, rows.retrieved)


def mixed_versions(rows: JudgedRows, k: int | None) -> np.ndarray:
    """MixedVersions@k = 1 when the top k holds two or more distinct documents of one family
    (versions linked by ``supersedes``) and at least one of them is not in force on the
    query's day — a current and a superseded rule side by side; else 0. Documents are counted,
    not items: two chunks of one superseded document, with no other version beside them, are
    not mixed versions. Its mean is the share of such queries. Lower is better; 0 without
    access data."""
    out = np.zeros(rows.n_queries)
    if rows.family is None or rows.stale is None or rows.version is None:
        return out
    picked = np.flatnonzero(_cut(rows, k) & (rows.family >= 0))
    if not len(picked):
        return out
    group = rows.qidx[picked] * (int(rows.family.max()) + 1) + rows.family[picked]
    order = np.lexsort((rows.version[picked], group))
    group, version, picked = group[order], rows.version[picked][order], picked[order]
    new_version = np.ones(len(group), dtype=bool)
    new_version[1:] = (group[1:] != group[:-1]) | (version[1:] != version[:-1])
    groups, inverse = np.unique(group, return_inverse=True)
    inverse = inverse.ravel()
    versions = np.bincount(inverse[new_version], minlength=len(groups))
    any_stale = np.bincount(inverse, weights=rows.stale[picked], minlength=len(groups)) > 0
    mixed = (versions >= 2) & any_stale
    out[np.unique(rows.qidx[picked][mixed[inverse]])] = 1.0
    return out


# ---------------------------------------------------------------------------------------------
# The table: every family and the parameters it takes, as data. Parsing, the refusals, str(),
# the definition lines of the reports and the listings in messages are all read from it.

Slot = Literal["cutoff", "keyword", "stage"]
"""Where a name writes a parameter: ``@k``, ``(key=value,...)`` or `` [stage]``."""

_INTEGER = re.compile(r"-?[0-9]+")
_NOT_VALID = "parameter '{given}' is not valid for {family}"
_TAKES = "{family} takes {takes}"


@dataclass(frozen=True, eq=False)
class Param:
    """A parameter a measure family takes, as data.

    ``key`` is the :class:`Measure` field it sets — for a ``keyword`` parameter also the key a
    name writes (``rel=2``, case-insensitive) — and ``slot`` where a name writes it. ``syntax``
    and ``example`` show how it is written, ``values`` its type and range, ``description`` what
    it does. Its value is an integer in [``low``, ``high``] when those are set, else one of
    ``choices`` (each spelling, case-insensitive, to its canonical value), else a text that
    ``pattern`` matches. ``default`` is the value when a name leaves it out (None: nothing is
    set, and ``default_text`` says what stands in); a ``required`` parameter may not be left
    out. ``problem`` and ``fix`` are the words of a refusal (format fields: ``given`` as
    written, ``short`` — up to 24 characters, else the first 12 and "…" — ``family``,
    ``takes``: the family's keyword parameters, ``values``). ``form`` writes the value into a
    canonical name; ``states`` is the clause a keyword parameter adds to its measure's
    definition line, with the value in ``meanings``' words."""

    key: str
    slot: Slot
    syntax: str
    example: str
    values: str
    description: str
    form: str
    default: int | str | None = None
    default_text: str = ""
    required: bool = False
    low: int | None = None
    high: int | None = None
    choices: Mapping[str, str] | None = None
    pattern: re.Pattern[str] | None = None
    problem: str = _NOT_VALID
    fix: str = _TAKES
    states: str = "{}"
    meanings: Mapping[str, str] = field(default_factory=dict)

    def read(self, text: str) -> int | str | None:
        """The value ``text`` writes, or None when it is not one of this parameter's values.
        An integer is read only when it has at most 12 characters: a thousand-digit one is
        refused, never converted."""
        if self.low is not None and self.high is not None:
            fits = _INTEGER.fullmatch(text) and len(text) <= 12
            return int(text) if fits and self.low <= int(text) <= self.high else None
        if self.choices is not None:
            return self.choices.get(text.lower())
        return text if self.pattern is not None and self.pattern.fullmatch(text) else None

    @property
    def usage(self) -> str:
        """How it is written, with its values unless the syntax lists them (its choices)."""
        return self.syntax if self.choices is not None else f"{self.syntax} ({self.values})"

    def shown(self, value: int | str) -> str:
        """``value`` in the words of a definition line."""
        return self.meanings.get(str(value), str(value))


CUTOFF = Param(
    key="k", slot="cutoff", syntax="@k", example="@10", form="@{}",
    values=f"a positive integer up to {MAX_CUTOFF:,}", low=1, high=MAX_CUTOFF,
    description="how many of the top items the measure reads",
    default_text="the whole ranked list",
    problem="cutoff k = '{short}' is not {values}",
    fix="write a cutoff such as @10, or leave out @k to cover the whole list")
REL = Param(
    key="rel", slot="keyword", syntax="rel=N", example="rel=N", form="rel={}",
    values=f"an integer grade, {MIN_GRADE}..{MAX_GRADE}", low=MIN_GRADE, high=MAX_GRADE,
    description="the measure's own relevance threshold: relevant = grade ≥ N",
    default_text="the policy's threshold (--threshold, 1 by default)",
    states="relevant = grade ≥ {}")
GAIN = Param(
    key="gain", slot="keyword", syntax="gain=exponential|linear", example="gain=linear",
    form="gain={}", values="exponential (or exp) or linear (or lin)",
    choices={"exponential": EXPONENTIAL, "exp": EXPONENTIAL, "linear": LINEAR, "lin": LINEAR},
    description="the gain of a grade g: 2^g − 1 (exponential) or g (linear, as trec_eval)",
    default=EXPONENTIAL, default_text="exponential, or the snapshot's scoring.gain",
    states="gain {}, discount log2(rank + 1)",
    meanings={EXPONENTIAL: "2^g − 1", LINEAR: "g (linear)"})
STAGE = Param(
    key="stage", slot="stage", syntax="[stage]", example="[candidates]", form=" [{}]",
    values="letters, digits, _ . -; at most 64", pattern=STAGE_NAME,
    description="the pipeline stage whose ranking the measure reads",
    default_text="the last stage of the snapshot's pipeline (a run of one stage: itself)",
    problem="stage '{given:.24}' is not a stage name",
    fix="name a stage of the snapshot's pipeline in brackets, e.g. Recall@50 [candidates] "
        "({values})")
WEIGHT = Param(
    key="weight", slot="keyword", syntax="weight=count|rank", example="weight=rank",
    form="weight={}", values="count or rank", choices={COUNT: COUNT, RANK: RANK},
    description="how an item weighs: each the same (count), or 1/r at rank r (rank)",
    default=COUNT, default_text="count",
    meanings={COUNT: "", RANK: "rank r weighs 1/r, over H_k"})
_THRESHOLDED = (CUTOFF, REL, STAGE)
_UNTHRESHOLDED = (CUTOFF, STAGE)


@dataclass(frozen=True, eq=False)
class Family:
    """A measure family, as data: its canonical name and aliases (any case), the function
    that computes it (rows, k, then the values of its keyword parameters in order), its
    definition line in every report (``summary``, followed by its keyword parameters'
    clauses), its definition in the Measures page's table (docs/concepts/measures.md), trec_eval's names of it (with a
    cutoff, ``{k}`` standing for k; without one) and the parameter setting they need, the
    parameters it takes, whether lower is better (a measure of harm) and whether it reads the
    facts a query requires."""

    name: str
    aliases: tuple[str, ...]
    compute: Callable[..., np.ndarray]
    summary: str
    definition: str
    params: tuple[Param, ...] = _THRESHOLDED
    trec_eval: tuple[str | None, str | None] = (None, None)
    trec_eval_needs: str = ""
    lower_is_better: bool = False
    reads_facts: bool = False

    @property
    def keywords(self) -> tuple[Param, ...]:
        """The parameters written in parentheses, in the order a canonical name writes them."""
        return tuple(p for p in self.params if p.slot == "keyword")

    @property
    def takes(self) -> str:
        """The keyword parameters, as a refusal lists them."""
        return ", ".join(p.usage for p in self.keywords) or "no parameters"

    def param(self, slot: Slot, key: str) -> Param | None:
        """The parameter a name writes in ``slot`` (under ``key``, for a keyword), if taken."""
        return next((p for p in self.params if p.slot == slot
                     and (slot != "keyword" or p.key == key)), None)

    def measure(self, source: str, written: Sequence[tuple[Slot, str, str, str]],
                defaults: Mapping[str, str]) -> Measure:
        """The measure a name of this family writes: ``written`` holds (slot, key, value text,
        text as written) in the order they are checked; ``defaults`` gives, as written, the
        value of a parameter left out (instead of its own default). The first written
        parameter the family does not take, or whose value is not one of its values, is
        refused (InputError), and so is a required parameter left out."""
        values = self._defaults(defaults)
        for slot, key, text, given in written:
            param = self.param(slot, key)
            value = None if param is None else param.read(text)
            if param is None or value is None:
                raise self._refusal(source, param, given)
            values[param.key] = value
        for param in self.params:
            if param.required and values[param.key] is None:
                raise InputError(source, f"{self.name} needs {param.usage}",
                                 f"write it, e.g. {self.name}{param.example}")
        return Measure(self.name, **values)

    def _defaults(self, given: Mapping[str, str]) -> dict[str, Any]:
        """Each parameter's value when a name leaves it out: its default, or the value written
        in ``given`` for a keyword parameter it names (ValueError if not one of its values)."""
        values: dict[str, Any] = {p.key: p.default for p in self.params}
        for key, text in given.items():
            param = self.param("keyword", key)
            if param is not None:
                values[key] = param.read(text)
                if values[key] is None:
                    raise ValueError(f"default {key}={text!r} is not one of {param.values}")
        return values

    def _refusal(self, source: str, param: Param | None, given: str) -> InputError:
        """The error for ``given``: not a parameter of the family (``param`` None), or not one
        of ``param``'s values."""
        problem, fix, values = ((_NOT_VALID, _TAKES, "") if param is None
                                else (param.problem, param.fix, param.values))
        words = {"given": given, "short": given if len(given) <= 24 else f"{given[:12]}…",
                 "family": self.name, "takes": self.takes, "values": values}
        return InputError(source, problem.format(**words), fix.format(**words))


FAMILIES = (
    Family("Recall", ("R",), recall, "relevant in top k / R", "relevant in top k / R",
           trec_eval=("recall_{k}", None)),
    Family("P", ("Precision",), precision, "relevant in top k / k",
           "relevant in top k / k (short lists are not rewarded); `P` = relevant retrieved / "
           "retrieved", trec_eval=("P_{k}", "set_P")),
    Family("Hit", ("Success",), hit, "1 if any relevant in top k",
           "1 if any relevant item in top k, else 0", trec_eval=("success_{k}", None)),
    Family("RR", ("MRR",), reciprocal_rank, "1 / rank of the first relevant within k",
           "1 / rank of the first relevant item within k, else 0; its mean is MRR",
           trec_eval=(None, "recip_rank")),
    Family("AP", ("MAP",), average_precision, "Σ P@i over relevant ranks i ≤ k / R",
           "Σ over relevant ranks i ≤ k of P@i, / R", trec_eval=("map_cut_{k}", "map")),
    Family("nDCG", ("NDCG",), ndcg, "DCG@k / IDCG@k",
           "DCG@k / IDCG@k, DCG = Σ_{i≤k} (2^g_i − 1) / log2(i + 1)",
           params=(CUTOFF, GAIN, STAGE), trec_eval=("ndcg_cut_{k}", "ndcg"),
           trec_eval_needs="gain=linear"),
    Family("CP", (), context_precision, "Σ P@i over relevant ranks i ≤ k / relevant in top k",
           "context precision: Σ over relevant ranks i ≤ k of P@i, / relevant in top k"),
    Family("Judged", (), judged, "judged in top k / k",
           "items with a judgment (grade ≥ 0) in top k / k (an empty slot is not judged; "
           "ir_measures' `Judged@k`); an item its asker may not see, or not in force on the "
           "query's day, counts as judged: it gains 0 by rule, and no judgment could change "
           "that; `Judged(weight=rank)@k` weighs rank r by 1/r, over H_k",
           params=(CUTOFF, WEIGHT, STAGE)),
    Family("FactCoverage", (), fact_coverage,
           "required facts stated by a relevant unit in top k / required facts",
           "required facts stated by a relevant unit covered in top k / required facts (0 for "
           "a query that requires none, with a warning)", reads_facts=True),
    Family("AllFacts", (), all_facts, "1 if every required fact is stated in top k",
           "1 if every required fact is stated by a relevant unit in top k, else 0",
           reads_facts=True),
    Family("Stale", (), stale,
           "items not in force on the query's day in top k / k; lower is better",
           "items not in force on the query's `as_of` in top k / k; lower is better",
           params=_UNTHRESHOLDED, lower_is_better=True),
    Family("MixedVersions", (), mixed_versions,
           "1 if top k holds two or more distinct documents of one family, one of them not in "
           "force on the query's day; lower is better",
           "1 if top k holds two or more distinct documents of one family (`supersedes`), one "
           "of them not in force; documents, not items: two chunks of one document are one; "
           "lower is better", params=_UNTHRESHOLDED, lower_is_better=True),
)
FACT_FAMILIES = tuple(f.name for f in FAMILIES if f.reads_facts)
_CANONICAL = {f.name: f for f in FAMILIES}
_BY_NAME = {n.lower(): f for f in FAMILIES for n in (f.name, *f.aliases)}
_SYNTAX = re.compile(r"^(?P<name>[A-Za-z]+)(?:\((?P<params>[^()]*)\))?(?:@(?P<k>[^@\[\]]*?))?"
                     r"(?:\s*\[(?P<stage>[^\[\]]*)\])?$")


def family_of(name: str) -> Family | None:
    """The family a measure name starts with (its canonical name or an alias, any case)."""
    return _BY_NAME.get(name.lower())


def _listed(name: str, family: Family) -> str:
    """A name as the listing writes it: ``Recall@k``."""
    return name + (CUTOFF.syntax if CUTOFF in family.params else "")


def _options() -> str:
    """The keyword parameters as the listing offers them: ``(rel=N) or, for nDCG,
    (gain=linear)``; one that fewer than half of the families take names them."""
    text = ""
    for param in dict.fromkeys(p for f in FAMILIES for p in f.keywords):
        takers = [f.name for f in FAMILIES if param in f.params]
        few = 2 * len(takers) < len(FAMILIES)
        option = (f"for {', '.join(takers)}, " if few else "") + f"({param.example})"
        text += option if not text else (" or, " if few else " or ") + option
    return text


KNOWN_MEASURES = ", ".join(
    _listed(f.name, f) + (f" ({', '.join(_listed(a, f) for a in f.aliases)})" if f.aliases
                          else "")
    for f in FAMILIES
)
_FIX_NAME = (f"use one of {KNOWN_MEASURES}, optionally with {_options()}; leave out "
             f"{CUTOFF.syntax} to cover the whole list")


@exported
@dataclass(frozen=True)
class Measure:
    """A measure value: family, cutoff ``k`` (None = whole list), optional relevance threshold
    ``rel`` (None = the policy's), for nDCG the ``gain``, for Judged the ``weight``, and for a
    pipeline run the ``stage`` whose ranking it reads (None: the run has one stage). Its fields
    are the keys of the
    parameters of :data:`FAMILIES`; one its family takes and leaves out gets the parameter's
    default. Immutable and hashable; ``str()`` is the canonical name: ``Recall@50
    [candidates]``."""

    family: str
    k: int | None = None
    rel: int | None = None
    gain: str | None = None
    weight: str | None = None
    stage: str | None = None

    def __post_init__(self) -> None:
        if self.family not in _CANONICAL:
            raise ValueError(f"no measure family {self.family!r}")
        for param in self._family.params:
            if getattr(self, param.key) is None and param.default is not None:
                object.__setattr__(self, param.key, param.default)

    @property
    def _family(self) -> Family:
        return _CANONICAL[self.family]

    def _written(self, slot: Slot) -> list[str]:
        """The parameters of ``slot`` that differ from their defaults, as a name writes them."""
        return [p.form.format(value) for p in self._family.params
                if p.slot == slot and (value := getattr(self, p.key)) != p.default]

    def __str__(self) -> str:
        keywords = self._written("keyword")
        return "".join([self.family, f"({','.join(keywords)})" if keywords else "",
                        *self._written("cutoff"), *self._written("stage")])

    def at_stage(self, stage: str | None) -> Measure:
        """This measure read on ``stage``."""
        return replace(self, stage=stage)

    @property
    def lower_is_better(self) -> bool:
        """True for measures of harm (Stale, MixedVersions): a rise is the regression."""
        return self._family.lower_is_better

    @property
    def uses_threshold(self) -> bool:
        return REL in self._family.params

    def threshold(self, default: int) -> int:
        """The relevance threshold this measure applies."""
        return default if self.rel is None else self.rel

    def _settings(self, default_threshold: int) -> list[tuple[Param, int | str]]:
        """Each keyword parameter and the value it applies (``rel``: :meth:`threshold`)."""
        return [(p, self.threshold(default_threshold) if p is REL else getattr(self, p.key))
                for p in self._family.keywords]

    def describe(self, default_threshold: int) -> str:
        """One line stating the definition, gain and threshold, for reports."""
        clauses = [p.states.format(p.shown(v)) for p, v in self._settings(default_threshold)]
        return f"{self}: " + "; ".join([self._family.summary, *filter(None, clauses)])

    def compute(self, rows: JudgedRows, default_threshold: int) -> np.ndarray:
        """Per-query values (float64 array, one per query of ``rows``)."""
        settings = self._settings(default_threshold)
        return self._family.compute(rows, self.k, *(v for _, v in settings))


def _written(match: re.Match[str]) -> list[tuple[Slot, str, str, str]]:
    """What a name writes, in the order it is checked — cutoff, keyword parameters from left
    to right, stage — as (slot, key, value text, text as written)."""
    out: list[tuple[Slot, str, str, str]] = []
    if match["k"] is not None:
        out.append(("cutoff", CUTOFF.key, match["k"], match["k"]))
    for param in filter(None, (p.strip() for p in (match["params"] or "").split(","))):
        key, _, value = (s.strip() for s in param.partition("="))
        out.append(("keyword", key.lower(), value, param))
    if match["stage"] is not None:
        out.append(("stage", STAGE.key, match["stage"].strip(), match["stage"]))
    return out


@exported
def parse_measure(text: str, default_gain: str = EXPONENTIAL) -> Measure:
    """Parse ``Name[(param=value,...)][@k] [stage]`` into a :class:`Measure`, or raise
    InputError. ``default_gain`` is the gain of an nDCG named without ``gain=``."""
    source = f"measure '{text}'"
    match = _SYNTAX.match(text.strip())
    if not match:
        raise InputError(source, "is not of the form Name[(param=value)][@k] [stage]", _FIX_NAME)
    family = family_of(match["name"])
    if family is None:
        raise InputError(source, f"unknown measure name '{match['name']}'", _FIX_NAME)
    return family.measure(source, _written(match), {GAIN.key: default_gain})


@exported
def parse_measures(names: Iterable[str], default_gain: str = EXPONENTIAL
                   ) -> tuple[Measure, ...]:
    """Parse several names, keeping the order given and dropping exact repeats."""
    return tuple(dict.fromkeys(parse_measure(n, default_gain) for n in names))


def default_measures(k: int) -> tuple[Measure, ...]:
    """The default set at cutoff k: Recall, P, Hit, RR, nDCG, AP."""
    if k <= 0:
        raise InputError("--k", f"cutoff {k} is not a positive integer", "pass -k 1 or more")
    return tuple(parse_measure(f"{n}@{k}") for n in ("Recall", "P", "Hit", "RR", "nDCG", "AP"))
