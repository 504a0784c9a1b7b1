"""Retrieval measures: parseable, immutable names and their one definition each.

A measure is written ``Name[(param=value,...)][@k]``, for example ``nDCG@10``,
``RR(rel=2)@10`` or ``nDCG(gain=linear)``. Without ``@k`` a measure covers the whole ranked list.
Names are matched case-insensitively and aliases are canonicalised (``MRR@3`` → ``RR@3``); the
``str()`` of a :class:`Measure` is its canonical name.

Notation: R = number of relevant judgments of the query (grade ≥ threshold; negative grades
never count), ranks are 1-based, "top k" is the first k items (all items without ``@k``).
Every measure is 0 for an empty ranking. Relevance uses the policy threshold unless the measure
sets its own with ``rel=N``; nDCG never uses the threshold (its gains are the grades).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from retrieval_gate.core.errors import InputError
from retrieval_gate.core.limits import MAX_CUTOFF, MAX_GRADE, MIN_GRADE
from retrieval_gate.core.model import NEVER, JudgedRows
from retrieval_gate.core.stages import STAGE_NAME

EXPONENTIAL = "exponential"
LINEAR = "linear"


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


def judged(rows: JudgedRows, k: int | None, threshold: int) -> np.ndarray:
    """Judged@k = judged items in the top k / k (ir_measures' ``Judged@k``): an empty slot of
    a list shorter than k is not a judged item, so returning fewer items never raises it.
    Without k, judged items / items returned, 0 for an empty list. An item is judged when the
    query's judgments give it a grade ≥ 0 — or, with access data, when its asker may not see
    it or it is not in force on the query's day: its value for the query is known (it gains 0
    by rule) and no judgment could change it, so it is not unjudged (nor asked to be
    judged)."""
    count = _per_query(rows, _cut(rows, k) & rows.judged)
    return count / k if k is not None else _ratio(count, rows.retrieved)


def stale(rows: JudgedRows, k: int | None, threshold: int) -> np.ndarray:
    """Stale@k = items in the top k that are not in force on the query's day / k (without k,
    / items returned): superseded or not yet valid. 0 without access data. Lower is better."""
    if rows.stale is None:
        return np.zeros(rows.n_queries)
    count = _per_query(rows, _cut(rows, k) & rows.stale)
    return count / k if k is not None else _ratio(count, rows.retrieved)


def mixed_versions(rows: JudgedRows, k: int | None, threshold: int) -> np.ndarray:
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


@dataclass(frozen=True)
class _Family:
    name: str
    aliases: tuple[str, ...]
    compute: Callable[..., np.ndarray]
    summary: str
    binary: bool = True  # uses the relevance threshold (accepts rel=N)
    lower_is_better: bool = False


_FAMILIES = (
    _Family("Recall", ("R",), recall, "relevant in top k / R"),
    _Family("P", ("Precision",), precision, "relevant in top k / k"),
    _Family("Hit", ("Success",), hit, "1 if any relevant in top k"),
    _Family("RR", ("MRR",), reciprocal_rank, "1 / rank of the first relevant within k"),
    _Family("AP", ("MAP",), average_precision, "Σ P@i over relevant ranks i ≤ k / R"),
    _Family("nDCG", ("NDCG",), ndcg, "DCG@k / IDCG@k", binary=False),
    _Family("CP", (), context_precision, "Σ P@i over relevant ranks i ≤ k / relevant in top k"),
    _Family("Judged", (), judged, "judged in top k / k", binary=False),
    _Family("FactCoverage", (), fact_coverage, "required facts stated by a relevant unit in "
            "top k / required facts"),
    _Family("AllFacts", (), all_facts, "1 if every required fact is stated in top k"),
    _Family("Stale", (), stale, "items not in force on the query's day in top k / k; lower is "
            "better", binary=False, lower_is_better=True),
    _Family("MixedVersions", (), mixed_versions, "1 if top k holds two or more distinct "
            "documents of one family, one of them not in force on the query's day; lower is "
            "better", binary=False, lower_is_better=True),
)
FACT_FAMILIES = ("FactCoverage", "AllFacts")
_BY_NAME = {n.lower(): f for f in _FAMILIES for n in (f.name, *f.aliases)}
_GAINS = {"exponential": EXPONENTIAL, "exp": EXPONENTIAL, "linear": LINEAR, "lin": LINEAR}
_SYNTAX = re.compile(r"^(?P<name>[A-Za-z]+)(?:\((?P<params>[^()]*)\))?(?:@(?P<k>[^@\[\]]*?))?"
                     r"(?:\s*\[(?P<stage>[^\[\]]*)\])?$")

KNOWN_MEASURES = ", ".join(
    f"{f.name}@k" + (f" ({', '.join(a + '@k' for a in f.aliases)})" if f.aliases else "")
    for f in _FAMILIES
)
_FIX_NAME = (
    f"use one of {KNOWN_MEASURES}, optionally with (rel=N) or, for nDCG, (gain=linear); "
    "leave out @k to cover the whole list"
)


@dataclass(frozen=True)
class Measure:
    """A measure value: family, cutoff ``k`` (None = whole list), optional relevance threshold
    ``rel`` (None = the policy's), for nDCG the ``gain``, and for a pipeline run the ``stage``
    whose ranking it reads (None: the run has one stage). Immutable and hashable; ``str()`` is
    the canonical name: ``Recall@50 [candidates]``."""

    family: str
    k: int | None = None
    rel: int | None = None
    gain: str | None = None
    stage: str | None = None

    def __post_init__(self) -> None:
        if self.family == "nDCG" and self.gain is None:
            object.__setattr__(self, "gain", EXPONENTIAL)

    def __str__(self) -> str:
        params = []
        if self.gain == LINEAR:
            params.append(f"gain={LINEAR}")
        if self.rel is not None:
            params.append(f"rel={self.rel}")
        text = self.family + (f"({','.join(params)})" if params else "")
        text = text if self.k is None else f"{text}@{self.k}"
        return text if self.stage is None else f"{text} [{self.stage}]"

    def at_stage(self, stage: str | None) -> Measure:
        """This measure read on ``stage``."""
        return Measure(self.family, self.k, self.rel, self.gain, stage)

    @property
    def lower_is_better(self) -> bool:
        """True for measures of harm (Stale, MixedVersions): a rise is the regression."""
        return _BY_NAME[self.family.lower()].lower_is_better

    @property
    def uses_threshold(self) -> bool:
        return _BY_NAME[self.family.lower()].binary

    def threshold(self, default: int) -> int:
        """The relevance threshold this measure applies."""
        return default if self.rel is None else self.rel

    def describe(self, default_threshold: int) -> str:
        """One line stating the definition, gain and threshold, for reports."""
        family = _BY_NAME[self.family.lower()]
        if self.family == "nDCG":
            gain = "2^g − 1" if self.gain == EXPONENTIAL else "g (linear)"
            return f"{self}: {family.summary}; gain {gain}, discount log2(rank + 1)"
        if not family.binary:
            return f"{self}: {family.summary}"
        return f"{self}: {family.summary}; relevant = grade ≥ {self.threshold(default_threshold)}"

    def compute(self, rows: JudgedRows, default_threshold: int) -> np.ndarray:
        """Per-query values (float64 array, one per query of ``rows``)."""
        family = _BY_NAME[self.family.lower()]
        if self.family == "nDCG":
            return ndcg(rows, self.k, self.gain or EXPONENTIAL)
        return family.compute(rows, self.k, self.threshold(default_threshold))


def parse_measure(text: str, default_gain: str = EXPONENTIAL) -> Measure:
    """Parse ``Name[(param=value,...)][@k]`` into a :class:`Measure`, or raise InputError.
    ``default_gain`` is the gain of an nDCG named without ``gain=``."""
    source = f"measure '{text}'"
    match = _SYNTAX.match(text.strip())
    if not match:
        raise InputError(source, "is not of the form Name[(param=value)][@k] [stage]", _FIX_NAME)
    family = _BY_NAME.get(match["name"].lower())
    if family is None:
        raise InputError(source, f"unknown measure name '{match['name']}'", _FIX_NAME)
    k = None
    if match["k"] is not None:
        if not re.fullmatch(r"[0-9]+", match["k"]) or not _small(match["k"], 1, MAX_CUTOFF):
            shown = match["k"] if len(match["k"]) <= 24 else f"{match['k'][:12]}…"
            raise InputError(source, f"cutoff k = '{shown}' is not a positive integer up to "
                             f"{MAX_CUTOFF:,}", "write a cutoff such as @10, or leave out @k "
                             "to cover the whole list")
        k = int(match["k"])
    rel = None
    gain = _GAINS[default_gain] if family.name == "nDCG" else None
    for param in filter(None, (p.strip() for p in (match["params"] or "").split(","))):
        key, _, value = (s.strip() for s in param.partition("="))
        key = key.lower()
        if key == "rel" and family.binary and re.fullmatch(r"-?[0-9]+", value) and _small(
                value, MIN_GRADE, MAX_GRADE):
            rel = int(value)
        elif key == "gain" and family.name == "nDCG" and value.lower() in _GAINS:
            gain = _GAINS[value.lower()]
        else:
            allowed = f"rel=N (an integer grade, {MIN_GRADE}..{MAX_GRADE})" if family.binary else (
                "gain=exponential|linear" if family.name == "nDCG" else "no parameters")
            raise InputError(source, f"parameter '{param}' is not valid for {family.name}",
                             f"{family.name} takes {allowed}")
    stage = match["stage"]
    if stage is not None and not STAGE_NAME.fullmatch(stage.strip()):
        raise InputError(source, f"stage '{stage[:24]}' is not a stage name",
                         "name a stage of the snapshot's pipeline in brackets, e.g. "
                         "Recall@50 [candidates] (letters, digits, _ . -; at most 64)")
    return Measure(family.name, k, rel, gain, None if stage is None else stage.strip())


def _small(digits: str, low: int, high: int) -> bool:
    """True when the integer written ``digits`` lies in [low, high] (read only if short)."""
    return len(digits) <= 12 and low <= int(digits) <= high


def parse_measures(names: Iterable[str], default_gain: str = EXPONENTIAL
                   ) -> tuple[Measure, ...]:
    """Parse several names, keeping the order given and dropping exact repeats."""
    return tuple(dict.fromkeys(parse_measure(n, default_gain) for n in names))


def default_measures(k: int) -> tuple[Measure, ...]:
    """The default set at cutoff k: Recall, P, Hit, RR, nDCG, AP."""
    if k <= 0:
        raise InputError("--k", f"cutoff {k} is not a positive integer", "pass -k 1 or more")
    return tuple(parse_measure(f"{n}@{k}") for n in ("Recall", "P", "Hit", "RR", "nDCG", "AP"))
