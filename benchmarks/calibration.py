"""How often does the gate cry wolf, and which drops does it catch? A Monte-Carlo calibration of
the verdict rule on REAL per-query scores.

Run by hand from the project root, with the venv's Python::

    python benchmarks/calibration.py            # --help for the options; --quick for a smoke run

Data. The Cranfield example shipped in the repository: ``examples/cranfield/qrels.tsv`` (225
queries, graded) and the runs ``baselines/cranfield/bm25.trec``, ``examples/cranfield/runs/
dense.trec`` and ``hybrid.trec``, scored per query with the library (``read_qrels`` /
``read_run`` / ``score_run``, default ScoringPolicy) on nDCG@10 and Recall@10. Each *pair* of
runs (default: dense vs bm25, and hybrid vs dense) gives 225 real paired per-query differences
``d = candidate − baseline`` per measure: the "population" that test sets are drawn from.
(trec_eval's ``tests/data/trec_eval/results.test`` is not used: it is ONE run on three topics, so
it has no paired differences to resample.)

Test sets. A simulated test set of n ∈ {25, 50, 100, 225} queries is drawn **with replacement**
from the 225 (the population is the empirical distribution of the real queries; drawing 225 of
225 without replacement would give the same test set every time).

Scenarios simulated on each test set (both measures of a query travel together):

* **null, centred** — ``d − mean(d)`` (mean over the 225): the population mean difference is
  exactly 0, but its median need not be, and unchanged queries (d = 0) no longer tie. Null
  hypothesis "equal means" — the one the bootstrap interval and the t-test are about.
* **null, sign-flip** — each drawn query's real difference gets a random sign, the same for both
  measures: baseline and candidate are swapped on that query with probability 1/2. Scores stay
  real observed scores and unchanged queries stay ties. Null "the two runs are exchangeable per
  query" (symmetric about 0: mean = median = 0) — the one the sign test is exact under.
* **injected drop** of size δ, mechanism ``swap`` (default): as in the sign-flip null, but each
  changed query is oriented so that the candidate is the *worse* of the two runs with probability
  ``p = 1/2 + δ / (2·mean|d|)`` (one uniform draw per query, compared with each measure's p), so
  the expected mean difference is exactly −δ. Every per-query score is a real score of a real run
  (nothing to clip) and unchanged queries stay unchanged: the candidate loses on more queries
  than it wins, by the real magnitudes of real changes. Mechanism ``shift`` (``--mechanism
  shift``): candidate = clip(baseline + centred d − δ, 0, 1) — every query loses δ, clipped
  into [0, 1], so the realised drop is smaller than δ; this flatters the sign test (every
  unchanged query becomes a loss). The table states the realised population mean drop.

Decision. Each simulated test set goes through the library's own rule, as ``check._compare``
applies it with a single gated measure (Holm is then the identity): ``compare.sign_test``,
``compare.bootstrap_ci`` (BCa, two-sided 1 − α, with the gate's fixed bootstrap seed
``GatePolicy().seed``, fresh per call, as the gate does) and ``policy.decide`` with margin
``DEFAULT_MARGIN`` and α. The default gate, which gates both measures with Holm across them, is
simulated on the same test sets under both nulls (its verdict is ``policy.verdict`` of the two
decisions). Beside it, the one-sided paired t-test ``scipy.stats.ttest_1samp(d, 0,
alternative='less')`` at the same α on the same samples.

Resamples: the gate uses 10,000; here ``--resamples`` (default 2,000) keeps the run to a few
minutes. B only sets the Monte-Carlo noise of the interval's ends, not their expected position.

Output: Markdown tables (rates are shares of ``--sims`` simulated test sets per cell; a false-
alarm rate is given ± 2 standard errors, or as "< 3/sims", the 95% upper bound, when no alarm
occurred) and a plain-language reading. Seeded: every cell has its own
``numpy.random.default_rng([seed, pair, scenario, n, drop])``, so the output is deterministic
and a cell does not depend on which other cells run.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats

from retrieval_gate.compare import bootstrap_ci, holm, minimum_detectable_drop, sign_test
from retrieval_gate.formats import read_qrels, read_run
from retrieval_gate.measures import parse_measures
from retrieval_gate.policy import DEFAULT_MARGIN, Decision, GatePolicy, decide, verdict
from retrieval_gate.scoring import score_run

ROOT = Path(__file__).resolve().parent.parent
QRELS = ROOT / "examples" / "cranfield" / "qrels.tsv"
RUNS = {
    "bm25": ROOT / "baselines" / "cranfield" / "bm25.trec",
    "dense": ROOT / "examples" / "cranfield" / "runs" / "dense.trec",
    "hybrid": ROOT / "examples" / "cranfield" / "runs" / "hybrid.trec",
    "bm25-titles": ROOT / "examples" / "cranfield" / "runs" / "bm25-titles.trec",
}
MEASURES = ("nDCG@10", "Recall@10")
SIZES = (25, 50, 100, 225)
DROPS = (0.01, 0.02, 0.03, 0.05, 0.08)
DEFAULT_PAIRS = ("dense:bm25", "hybrid:dense")
POLICY = GatePolicy()
ALPHA = POLICY.alpha
MARGIN = DEFAULT_MARGIN
RELIABLE = 0.8  # power at which a drop counts as "reliably caught"


# --------------------------------------------------------------------------------------------
# Data


@dataclass(frozen=True)
class Pair:
    """Real per-query scores of two runs on the same queries: ``baseline`` and ``candidate`` of
    shape (queries, measures), and their differences ``d = candidate − baseline``."""

    name: str
    baseline: np.ndarray
    candidate: np.ndarray

    @property
    def d(self) -> np.ndarray:
        return self.candidate - self.baseline


def load_pair(spec: str) -> Pair:
    """Score ``candidate:baseline`` (names of :data:`RUNS`) per query on :data:`MEASURES`."""
    cand_name, base_name = spec.split(":")
    qrels = read_qrels(QRELS)
    measures = parse_measures(MEASURES)
    scores = [score_run(qrels, read_run(RUNS[name]), measures) for name in (base_name, cand_name)]
    if scores[0].query_ids != scores[1].query_ids:
        raise SystemExit(f"{spec}: the two runs score different queries")
    return Pair(f"{cand_name} vs {base_name}", scores[0].values, scores[1].values)


# --------------------------------------------------------------------------------------------
# Scenarios: each returns simulated differences of shape (sims, measures, n)

Scenario = Callable[[Pair, int, int, np.random.Generator], np.ndarray]


def _draw(pair: Pair, n: int, sims: int, rng: np.random.Generator) -> np.ndarray:
    """Query indices of ``sims`` test sets of n queries drawn with replacement."""
    return rng.integers(0, pair.d.shape[0], (sims, n))


def null_centred(pair: Pair, n: int, sims: int, rng: np.random.Generator) -> np.ndarray:
    """No change, "equal means": the real differences minus their mean over all queries."""
    centred = pair.d - pair.d.mean(axis=0)
    return np.transpose(centred[_draw(pair, n, sims, rng)], (0, 2, 1))


def null_sign_flip(pair: Pair, n: int, sims: int, rng: np.random.Generator) -> np.ndarray:
    """No change, "exchangeable runs": each drawn query's baseline and candidate are swapped
    with probability 1/2 (the same swap for every measure)."""
    d = pair.d[_draw(pair, n, sims, rng)]
    signs = rng.choice(np.array([-1.0, 1.0]), size=(sims, n, 1))
    return np.transpose(d * signs, (0, 2, 1))


def worse_probability(pair: Pair, drop: float) -> np.ndarray:
    """Per measure, the share of changed queries on which the candidate must be the worse run
    for an expected mean difference of −drop (capped at 1)."""
    return np.minimum(1.0, 0.5 + drop / (2 * np.abs(pair.d).mean(axis=0)))


def drop_swap(drop: float) -> Scenario:
    """Injected drop, ``swap`` mechanism: the candidate is the worse of the two real runs on a
    changed query with probability :func:`worse_probability` (one uniform per query)."""

    def simulate(pair: Pair, n: int, sims: int, rng: np.random.Generator) -> np.ndarray:
        magnitude = np.abs(pair.d[_draw(pair, n, sims, rng)])
        worse = rng.random((sims, n, 1)) < worse_probability(pair, drop)
        return np.transpose(np.where(worse, -magnitude, magnitude), (0, 2, 1))

    return simulate


def drop_shift(drop: float) -> Scenario:
    """Injected drop, ``shift`` mechanism: candidate = clip(baseline + centred d − drop, 0, 1)."""

    def simulate(pair: Pair, n: int, sims: int, rng: np.random.Generator) -> np.ndarray:
        idx = _draw(pair, n, sims, rng)
        base = pair.baseline[idx]
        cand = np.clip(base + (pair.d - pair.d.mean(axis=0))[idx] - drop, 0.0, 1.0)
        return np.transpose(cand - base, (0, 2, 1))

    return simulate


def realised_drop(pair: Pair, drop: float, mechanism: str) -> np.ndarray:
    """Population mean drop (over all queries, per measure) that the mechanism really injects."""
    if mechanism == "swap":
        p = worse_probability(pair, drop)
        return (2 * p - 1) * np.abs(pair.d).mean(axis=0)
    cand = np.clip(pair.baseline + pair.d - pair.d.mean(axis=0) - drop, 0.0, 1.0)
    return -(cand - pair.baseline).mean(axis=0)


# --------------------------------------------------------------------------------------------
# The rule, applied to simulated test sets


@dataclass
class Tally:
    """Counts over the simulated test sets of one cell, per measure (index) and for the default
    two-measure gate (``joint_*``)."""

    sims: int
    regression: np.ndarray
    passed: np.ndarray
    ttest: np.ndarray
    joint_regression: int = 0
    joint_pass: int = 0
    mde: np.ndarray | None = None  # per measure, median over the test sets


def gate(d: np.ndarray, resamples: int) -> tuple[list[Decision], list[Decision], list[float]]:
    """The library's rule on one test set (measures × n): per-measure decisions with a single
    gated measure (Holm = identity), the decisions with both measures gated (Holm across them),
    and the per-measure minimum detectable drop the report would state."""
    n = d.shape[1]
    intervals = bootstrap_ci(d, rng=np.random.default_rng(POLICY.seed), resamples=resamples,
                             alpha=ALPHA, method=POLICY.bootstrap)
    p = [sign_test(row, POLICY.tie_band).p_regression for row in d]
    means = [math.fsum(row.tolist()) / n for row in d]
    single = [decide(n, m, iv.low, iv.high, pj, MARGIN, ALPHA)
              for m, iv, pj in zip(means, intervals, p)]
    joint = [decide(n, m, iv.low, iv.high, pj, MARGIN, ALPHA)
             for m, iv, pj in zip(means, intervals, holm(p).tolist())]
    mde = [minimum_detectable_drop(row, ALPHA, POLICY.power) or 0.0 for row in d]
    return single, joint, mde


def run_cell(samples: np.ndarray, resamples: int) -> Tally:
    """Apply the rule and the t-test to every simulated test set (sims × measures × n)."""
    sims, m, _ = samples.shape
    tally = Tally(sims, np.zeros(m, int), np.zeros(m, int), np.zeros(m, int))
    mdes = []
    for d in samples:
        single, joint, mde = gate(d, resamples)
        tally.regression += np.array([s == "regression" for s in single])
        tally.passed += np.array([s == "pass" for s in single])
        overall = verdict(joint)
        tally.joint_regression += overall == "regression"
        tally.joint_pass += overall == "pass"
        mdes.append(mde)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = stats.ttest_1samp(samples, 0.0, axis=-1, alternative="less").pvalue
    tally.ttest = np.sum(np.nan_to_num(p, nan=1.0) < ALPHA, axis=0)
    tally.mde = np.median(np.asarray(mdes), axis=0)
    return tally


def simulate(pair: Pair, pair_id: int, scenario_id: int, scenario: Scenario, n: int,
             drop_id: int, sims: int, seed: int, resamples: int) -> Tally:
    """One cell: its own generator, ``sims`` test sets, the rule on each."""
    rng = np.random.default_rng([seed, pair_id, scenario_id, n, drop_id])
    return run_cell(scenario(pair, n, sims, rng), resamples)


# --------------------------------------------------------------------------------------------
# Formatting


def rate(count: int, sims: int) -> str:
    return f"{count / sims:.3f}"


def rate_se(count: int, sims: int) -> str:
    """Share ± 2 standard errors; with no event, the 95% upper bound 3/sims."""
    if count == 0:
        return f"0 (< {3 / sims:.3f})"
    p = count / sims
    return f"{p:.3f} ± {2 * math.sqrt(p * (1 - p) / sims):.3f}"


def describe_pair(pair: Pair) -> str:
    """One line per measure: the real differences' mean, SD, median, ties, wins/losses."""
    lines = []
    for j, name in enumerate(MEASURES):
        d = pair.d[:, j]
        lines.append(f"- {name}: mean d = {d.mean():+.4f}, SD = {d.std(ddof=1):.4f}, median = "
                     f"{np.median(d):+.4f}, mean |d| = {np.abs(d).mean():.4f}, ties (d = 0) "
                     f"{np.mean(d == 0):.0%}, wins/losses {int(np.sum(d > 0))}/"
                     f"{int(np.sum(d < 0))}")
    return "\n".join(lines)


def null_table(nulls: dict[int, tuple[Tally, Tally]], j: int) -> str:
    """n × (false alarm, pass, inconclusive, t-test) under both nulls, for measure j."""
    head = ("| n | centred: false alarm (regression) | pass | inconclusive | t-test rejects "
            "| sign-flip: false alarm (regression) | pass | inconclusive | t-test rejects "
            "| median MDE |\n|---:|---|---:|---:|---:|---|---:|---:|---:|---:|")
    rows = []
    for n, cells in nulls.items():
        parts = []
        for t in cells:
            inconclusive = t.sims - t.regression[j] - t.passed[j]
            parts += [rate_se(int(t.regression[j]), t.sims), rate(int(t.passed[j]), t.sims),
                      rate(int(inconclusive), t.sims), rate(int(t.ttest[j]), t.sims)]
        mde = cells[1].mde
        shown = f"{mde[j]:.3f}" if mde is not None else "n/a"
        rows.append(f"| {n} | " + " | ".join(parts) + f" | {shown} |")
    return "\n".join([head, *rows])


def joint_table(nulls: dict[int, tuple[Tally, Tally]]) -> str:
    """n × false alarm and pass of the default gate (both measures, Holm) under both nulls."""
    head = ("| n | centred: false alarm | pass | sign-flip: false alarm | pass |\n"
            "|---:|---|---:|---|---:|")
    rows = [f"| {n} | {rate_se(c.joint_regression, c.sims)} | {rate(c.joint_pass, c.sims)} | "
            f"{rate_se(f.joint_regression, f.sims)} | {rate(f.joint_pass, f.sims)} |"
            for n, (c, f) in nulls.items()]
    return "\n".join([head, *rows])


def drop_table(drops: dict[float, dict[int, Tally]], realised: dict[float, np.ndarray],
               j: int) -> str:
    """drop × n: power of the rule / power of the t-test / share of pass, for measure j."""
    sizes = list(next(iter(drops.values())))
    head = ("| drop (realised) | " + " | ".join(f"n = {n}: rule / t-test / pass" for n in sizes)
            + " |\n|---|" + "---|" * len(sizes))
    rows = []
    for drop, cells in drops.items():
        parts = [f"{rate(int(t.regression[j]), t.sims)} / {rate(int(t.ttest[j]), t.sims)} / "
                 f"{rate(int(t.passed[j]), t.sims)}" for t in cells.values()]
        rows.append(f"| {drop:.2f} ({realised[drop][j]:.3f}) | " + " | ".join(parts) + " |")
    return "\n".join([head, *rows])


# --------------------------------------------------------------------------------------------
# Reading


@dataclass(frozen=True)
class Result:
    """Every cell of one pair: ``nulls[n] = (centred, sign-flip)``, ``drops[drop][n]``, and the
    realised population drop per measure."""

    pair: Pair
    nulls: dict[int, tuple[Tally, Tally]]
    drops: dict[float, dict[int, Tally]]
    realised: dict[float, np.ndarray]


def caught_at(result: Result, j: int, n: int) -> float | None:
    """The smallest simulated drop whose rule power reaches :data:`RELIABLE` at n."""
    for drop, cells in result.drops.items():
        t = cells[n]
        if t.regression[j] / t.sims >= RELIABLE:
            return drop
    return None


def _z(p: float) -> float:
    return float(stats.norm.ppf(p))


def _drop_text(drop: float | None) -> str:
    return f"{drop:.2f}" if drop is not None else f"> {max(DROPS):.2f}"


CENTRED_WHY = (
    " Why the centred null is the harder one: centring turns every unchanged query (d = 0) into "
    "a small loss, so the candidate loses on most queries while its mean is unchanged; the sign "
    "test then no longer protects, and the rule rests on the BCa upper bound alone — a one-sided "
    "2.5% test that is liberal with few queries and skewed, tied differences. Holm adjusts only "
    "the sign-test p-values, not the intervals, so two gated measures can nearly double it.")


def _beyond_noise(count: int, sims: int) -> str:
    p = count / sims
    return " †" if p - 2 * math.sqrt(p * (1 - p) / sims) > ALPHA else ""


def false_alarm_text(results: list[Result], which: int, label: str) -> str:
    """The false-alarm sentence for one null (0 = centred, 1 = sign-flip): the largest rates,
    and every cell whose rate exceeds α."""
    single = [(r.pair.name, name, n, cells[which].regression[j], cells[which].sims)
              for r in results for n, cells in r.nulls.items()
              for j, name in enumerate(MEASURES)]
    joint = [(r.pair.name, "both measures", n, cells[which].joint_regression, cells[which].sims)
             for r in results for n, cells in r.nulls.items()]
    ttest = max(c[which].ttest.max() / c[which].sims for r in results for c in r.nulls.values())
    over = [f"{pair}, {name}, n = {n}: {rate_se(int(k), sims)}{_beyond_noise(int(k), sims)}"
            for pair, name, n, k, sims in single + joint if k / sims > ALPHA]
    text = (f"- **False alarms, {label} null.** Under no change the rule said `regression` in "
            f"at most {max(k / s for *_, k, s in single):.3f} of the test sets of a cell with "
            f"one gated measure, and the default two-measure gate (Holm) in at most "
            f"{max(k / s for *_, k, s in joint):.3f}, against α = {ALPHA} (the one-sided t-test "
            f"alone: up to {ttest:.3f}). ")
    if not over:
        return text + "Every cell is below α."
    return (text + "Cells above α († more than 2·SE above it): " + "; ".join(over) + ".")


def reading(results: list[Result], sims: int) -> str:
    """Plain-language summary, every number computed from the simulations and the data."""
    small = min(DROPS)
    below = max(t.regression.max() / t.sims for r in results for t in r.drops[small].values())
    at_margin = max(t.regression.max() / t.sims for r in results
                    for t in r.drops.get(MARGIN, {}).values()) if MARGIN in DROPS else None
    lines = [false_alarm_text(results, 1, "sign-flip"),
             false_alarm_text(results, 0, "centred") + CENTRED_WHY,
             (f"- **Drops below the margin.** A true drop of {small} (smaller than the margin "
              f"{MARGIN}, so not material) was called `regression` in at most {below:.3f} of "
              "test sets.")]
    for r in results:
        for j, name in enumerate(MEASURES):
            sd = float(r.pair.d[:, j].std(ddof=1))
            caught = ", ".join(f"{n}: {_drop_text(caught_at(r, j, n))}" for n in SIZES)
            passes = ", ".join(f"{r.nulls[n][1].passed[j] / r.nulls[n][1].sims:.0%}"
                               for n in SIZES)
            lines.append(
                f"- **{r.pair.name}, {name}** (SD of the real per-query differences {sd:.3f}): "
                f"smallest simulated drop caught with power ≥ {RELIABLE:.0%}, by n — {caught}. "
                f"Under no change (sign-flip) it says `pass` in {passes} of test sets at n = "
                f"{', '.join(map(str, SIZES))}; the rest is `inconclusive`.")
    sds = [float(r.pair.d[:, j].std(ddof=1)) for r in results for j in range(len(MEASURES))]
    zz = _z(1 - ALPHA / 2) + _z(RELIABLE)
    lo, hi = min(sds), max(sds)
    n_max = max(SIZES)
    margin_line = (
        f"a true drop equal to the margin was flagged in at most {at_margin:.3f} of test sets"
        if at_margin is not None else "a true drop equal to the margin is flagged at most "
        "about half of the time")
    lines.append(
        f"- **What it means.** `regression` is a claim that the drop is *material*: {margin_line} "
        "(the observed mean must itself fall below −margin), so a drop is caught reliably only "
        f"once it exceeds both the margin + 0.84·SE and {zz:.1f}·SE, where SE = SD/√n is the "
        "standard error of the mean difference; the t-test, which tests any drop below zero, "
        "catches small drops more often. Certifying `pass` (ci_low > −margin) when nothing "
        f"changed takes, with probability {RELIABLE:.0%}, n ≈ ({zz:.1f}·SD/margin)² queries: "
        f"with SD {lo:.2f}–{hi:.2f} as in these pairs and margin {MARGIN}, "
        f"{math.ceil((zz * lo / MARGIN) ** 2)}–{math.ceil((zz * hi / MARGIN) ** 2)} queries; at "
        f"n = {n_max} the margin one can certify is ≈ {zz:.1f}·SD/√n = "
        f"{zz * lo / math.sqrt(n_max):.3f}–{zz * hi / math.sqrt(n_max):.3f}. So choose n and "
        "the margin together from the SD of your own per-query differences (the gate reports "
        "the minimum detectable drop, 2.8·SD/√n, on every run): with few queries, a tight "
        "margin mostly yields `inconclusive`, rarely a false `regression`. Two unrelated "
        "systems, as here, differ on most queries; a small change to one system leaves most "
        "queries unchanged and has a much smaller SD, so it needs far fewer queries.")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Main


def calibrate(pair: Pair, pair_id: int, args: argparse.Namespace) -> Result:
    """All cells of one pair: both nulls at every n, every drop at every n."""
    common = {"sims": args.sims, "seed": args.seed, "resamples": args.resamples}
    nulls = {n: (simulate(pair, pair_id, 0, null_centred, n, 0, **common),
                 simulate(pair, pair_id, 1, null_sign_flip, n, 0, **common)) for n in args.sizes}
    make = drop_swap if args.mechanism == "swap" else drop_shift
    drops = {drop: {n: simulate(pair, pair_id, 2, make(drop), n, k + 1, **common)
                    for n in args.sizes} for k, drop in enumerate(args.drops)}
    realised = {drop: realised_drop(pair, drop, args.mechanism) for drop in args.drops}
    return Result(pair, nulls, drops, realised)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sims", type=int, default=1000,
                        help="simulated test sets per cell (default 1000)")
    parser.add_argument("--resamples", type=int, default=2000,
                        help="bootstrap resamples per interval (default 2000; the gate uses "
                        "10000)")
    parser.add_argument("--seed", type=int, default=0, help="simulation seed (default 0)")
    parser.add_argument("--pairs", nargs="+", default=list(DEFAULT_PAIRS),
                        help=f"candidate:baseline run pairs among {', '.join(RUNS)} "
                        f"(default {' '.join(DEFAULT_PAIRS)})")
    parser.add_argument("--mechanism", choices=("swap", "shift"), default="swap",
                        help="how a drop is injected (default swap; see the module docstring)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 100 sims, 1000 resamples, first pair only")
    args = parser.parse_args(argv)
    if args.quick:
        args.sims, args.resamples, args.pairs = 100, 1000, args.pairs[:1]
    args.sizes, args.drops = SIZES, DROPS
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    start = time.perf_counter()
    results = [calibrate(load_pair(spec), pair_id, args) for pair_id, spec in enumerate(args.pairs)]
    elapsed = time.perf_counter() - start

    print(f"# Calibration of the verdict rule on real Cranfield differences\n\n"
          f"Margin {MARGIN}, α = {ALPHA}, BCa with {args.resamples:,} resamples (gate seed "
          f"{POLICY.seed}), {args.sims} simulated test sets per cell (largest ± 2·SE of a rate: "
          f"{2 * math.sqrt(0.25 / args.sims):.3f}), seed {args.seed}, drop mechanism "
          f"`{args.mechanism}`, test sets drawn with replacement from 225 queries. Rule and "
          "t-test columns are the share of test sets called `regression` / rejected at α; "
          "`pass` is the share certified non-inferior; median MDE is the minimum detectable "
          "drop the gate's report would state.\n")
    for r in results:
        name = r.pair.name
        print(f"## {name}\n\nReal per-query differences (225 queries):\n"
              f"{describe_pair(r.pair)}\n")
        for j, measure in enumerate(MEASURES):
            print(f"### {name}, {measure}: no change\n\n{null_table(r.nulls, j)}\n")
            print(f"### {name}, {measure}: injected drops (`{args.mechanism}`), rule / t-test "
                  f"/ pass\n\n{drop_table(r.drops, r.realised, j)}\n")
        print(f"### {name}: default gate (both measures, Holm), no change\n\n"
              f"{joint_table(r.nulls)}\n")
    print(f"## Reading\n\n{reading(results, args.sims)}\n")
    shown = " ".join(["python", "benchmarks/calibration.py",
                      *(sys.argv[1:] if argv is None else argv)])
    print(f"_Simulation time {elapsed:.0f} s; `{shown}`._")
    return 0


if __name__ == "__main__":
    sys.exit(main())
