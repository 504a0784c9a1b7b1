"""What does a `regression` or a `pass` from the gate guarantee, and what does it cost? A
Monte-Carlo calibration of the decision rule on REAL per-query scores.

Run by hand from the project root, with the venv's Python::

    python benchmarks/calibration.py            # --help for the options; --quick for a smoke run

Data. The Cranfield example shipped in the repository (225 queries, graded judgments), scored
per query with the library (``read_qrels`` / ``read_run`` / ``score_run``) on eight measures:
nDCG@10, Recall@10, P@10, RR@10, AP@10, nDCG@5, Recall@20, P@5. Four real pairs of runs give the
"populations" of paired per-query differences ``d = candidate − baseline`` that test sets are
drawn from:

* two different systems: dense vs bm25, and hybrid vs dense (the shipped runs);
* two near-equal ones, the kind of change a pull request makes: reciprocal rank fusion of the
  shipped bm25 and dense runs with k = 20 instead of 60, and with the dense run weighted 1.3,
  each against the shipped hybrid run (RRF with k = 60, rebuilt here byte for byte — checked).
  Most queries are unchanged (exact ties).

Test sets. n ∈ {25, 50, 100, 225} queries drawn **with replacement** from the 225 (the
population is the empirical distribution of the real queries). Every measure of a drawn query
travels with it.

Families. The gate decides every gated (measure, slice) at once; the m comparisons form one
family. A family of m here gates the first m measures above on the test set: m = 1 (nDCG@10),
2 (nDCG@10 and Recall@10: the default gate's measures), 4, 8.

Scenarios (the candidate is truly no worse unless said otherwise):

* **sign-flip** — each drawn query's difference gets a random sign, the same for all its
  measures: the runs are swapped on that query with probability ½. Exchangeable runs; ties stay
  ties.
* **centred** — ``d − mean(d)`` per measure over the 225: the mean difference is exactly 0, but
  unchanged queries become small losses, so the candidate is slightly worse on most queries and
  much better on a few. The harsh, skewed null.
* **boundary** — ``d − mean(d) − (margin − ε)`` with ε = 0.001: every gated measure truly drops by
  0.019, just less than the margin 0.02. The rule ``interval`` promises to flag this at most α
  of the time; the rule ``estimate`` does not (a drop this close to the margin is
  indistinguishable from a material one with few queries).
* **drop** of δ = 1× and 2× the margin (power): each changed query is oriented so that the
  candidate is the worse of the two real runs with probability ``½ + δ / (2·mean|d|)`` (one
  uniform draw per query, compared with each measure's probability): the expected mean
  difference is exactly −δ, every score is a real score of a real run, unchanged queries stay
  unchanged.

Decision. Every simulated test set goes through the library's own ``policy.compare()`` with the
default policy (α = 0.05, BCa, seed 0, ``min-queries``) except for the gated measures (margin
0.02 each) and ``--resamples``, as one slice: the family's intervals are adjusted by compare()
itself. The rule ``estimate`` is compare()'s own decision; the rule ``interval`` is
``policy.decide(..., rule="interval")`` on the statistics compare() returned — what compare()
returns under that rule, without a second bootstrap (the first test set of every cell checks
that they agree). For reference, ``unadjusted`` is ``policy.decide()`` with the family's bound
replaced by the shown interval's upper end, as if each comparison were alone (for m = 2 that
is Bonferroni at one-sided α/m, half the margin of safety the gate keeps). A family says
``regression`` if any comparison does, ``pass`` if all do.

Resamples: the gate uses 10,000; here ``--resamples`` (default 1,000) keeps a run to minutes. B
only sets the Monte-Carlo noise of the interval's ends, not their expected position.

Output: Markdown tables; a rate is the share of ``--sims`` test sets, with ± 2 standard errors
where it is a false-alarm rate (or "< 3/sims", the 95% upper bound, when none occurred); † marks
a rate more than 2 standard errors above α. Seeded: every cell has its own
``numpy.random.default_rng([seed, pair, scenario, n])``, and the same test sets serve
every family and both rules, so the output is deterministic and the rules are compared on
identical data.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from retrieval_gate.formats import read_qrels, read_run
from retrieval_gate.measures import parse_measures
from retrieval_gate.policy import (
    DEFAULT_MARGIN,
    REGRESSION_RULES,
    GatedMeasure,
    GatePolicy,
    compare,
    decide,
)
from retrieval_gate.scoring import score_run

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))  # the example's own fusion script
import make_hybrid_run

QRELS = ROOT / "examples" / "cranfield" / "qrels.tsv"
BM25 = ROOT / "baselines" / "cranfield" / "bm25.trec"
DENSE = ROOT / "examples" / "cranfield" / "runs" / "dense.trec"
HYBRID = ROOT / "examples" / "cranfield" / "runs" / "hybrid.trec"
MEASURES = ("nDCG@10", "Recall@10", "P@10", "RR@10", "AP@10", "nDCG@5", "Recall@20", "P@5")
FAMILIES = (1, 2, 4, 8)
SIZES = (25, 50, 100, 225)
MARGIN = DEFAULT_MARGIN
ALPHA = GatePolicy().alpha
EPSILON = 0.001
DROPS = (MARGIN, 2 * MARGIN)
POWER_FAMILIES = (1, 2)
BOUNDS = (*REGRESSION_RULES, "unadjusted")


# --------------------------------------------------------------------------------------------
# Data


@dataclass(frozen=True)
class Pair:
    """Real per-query differences ``d`` (queries × measures) of a candidate and a baseline run;
    ``near_equal`` for a small change of one system."""

    name: str
    d: np.ndarray
    near_equal: bool


def rrf_run(k: int, dense_weight: float = 1.0) -> str:
    """Reciprocal rank fusion of the shipped bm25 and dense runs by
    ``examples/make_hybrid_run.py`` (which builds the shipped hybrid run with k = 60, weights
    1): score ``Σ w / (k + rank)`` written with 8 decimals, ranked by the written score, ties
    by doc id descending, top 100."""
    runs = [make_hybrid_run.read_ranks(BM25), make_hybrid_run.read_ranks(DENSE)]
    return "".join(make_hybrid_run.fuse(runs, k, (1.0, dense_weight), "rrf"))


def load_pairs() -> list[Pair]:
    """The four pairs of the module docstring, scored per query on :data:`MEASURES`."""
    qrels = read_qrels(QRELS)
    measures = parse_measures(MEASURES)

    def scores(path: Path) -> np.ndarray:
        return score_run(qrels, read_run(path), measures).values

    shipped = HYBRID.read_text(encoding="utf-8").splitlines()
    rebuilt = [line.rsplit(" ", 1)[0] for line in rrf_run(60).splitlines()]
    if rebuilt != [line.rsplit(" ", 1)[0] for line in shipped]:
        raise SystemExit("RRF with k = 60 does not rebuild the shipped hybrid run")
    bm25, dense, hybrid = scores(BM25), scores(DENSE), scores(HYBRID)
    with tempfile.TemporaryDirectory() as folder:
        tweaks = {}
        for name, k, weight in (("rrf k=20", 20, 1.0), ("rrf dense×1.3", 60, 1.3)):
            path = Path(folder) / "run.trec"
            path.write_text(rrf_run(k, weight), encoding="utf-8")
            tweaks[name] = scores(path)
    return [Pair("dense vs bm25", dense - bm25, False),
            Pair("hybrid vs dense", hybrid - dense, False),
            *(Pair(f"{name} vs hybrid", values - hybrid, True) for name, values in tweaks.items())]


# --------------------------------------------------------------------------------------------
# Scenarios: each returns simulated differences of shape (sims, n, measures)

Scenario = Callable[[np.ndarray, int, int, np.random.Generator], np.ndarray]


def _draw(d: np.ndarray, n: int, sims: int, rng: np.random.Generator) -> np.ndarray:
    return d[rng.integers(0, d.shape[0], (sims, n))]


def sign_flip(d: np.ndarray, n: int, sims: int, rng: np.random.Generator) -> np.ndarray:
    drawn = _draw(d, n, sims, rng)
    return drawn * rng.choice(np.array([-1.0, 1.0]), size=(sims, n, 1))


def centred(d: np.ndarray, n: int, sims: int, rng: np.random.Generator) -> np.ndarray:
    return _draw(d - d.mean(axis=0), n, sims, rng)


def boundary(d: np.ndarray, n: int, sims: int, rng: np.random.Generator) -> np.ndarray:
    return _draw(d - d.mean(axis=0) - (MARGIN - EPSILON), n, sims, rng)


def drop(delta: float) -> Scenario:
    def simulate(d: np.ndarray, n: int, sims: int, rng: np.random.Generator) -> np.ndarray:
        magnitude = np.abs(_draw(d, n, sims, rng))
        worse_p = np.minimum(1.0, 0.5 + delta / (2 * np.abs(d).mean(axis=0)))
        worse = rng.random((sims, n, 1)) < worse_p
        return np.where(worse, -magnitude, magnitude)

    return simulate


# --------------------------------------------------------------------------------------------
# The rule, through the library


@dataclass
class Cell:
    """Counts over the ``sims`` test sets of one (pair, scenario, n): per family, how many were
    called ``regression`` under each rule (and unadjusted), and how many passed."""

    sims: int
    regression: dict[tuple[int, str], int] = dataclasses.field(default_factory=dict)
    passed: dict[int, int] = dataclasses.field(default_factory=dict)

    def rate(self, family: int, rule: str) -> float:
        return self.regression[family, rule] / self.sims


def policy_for(family: int, resamples: int, min_queries: int) -> GatePolicy:
    return GatePolicy(gates=tuple(GatedMeasure(m, MARGIN) for m in MEASURES[:family]),
                      resamples=resamples, min_queries=min_queries)


def run_cell(samples: np.ndarray, families: Sequence[int], resamples: int,
             min_queries: int) -> Cell:
    """Every family and both rules on every simulated test set (sims × n × measures)."""
    cell = Cell(samples.shape[0])
    policies = {m: policy_for(m, resamples, min_queries) for m in families}
    for m in families:
        for rule in BOUNDS:
            cell.regression[m, rule] = 0
        cell.passed[m] = 0
    for index, d in enumerate(samples):
        n = d.shape[0]
        for m, policy in policies.items():
            comparisons = compare(np.zeros((n, m)), d[:, :m], MEASURES[:m],
                                  {"all": np.arange(n)}, policy)
            strict = [decide(c.n, c.mean_diff, c.ci_low, c.ci_high, c.sign_p_holm, c.margin,
                             policy.alpha, ci_high_adjusted=c.ci_high_adjusted, rule="interval",
                             min_queries=policy.min_queries) for c in comparisons]
            unadjusted = [decide(c.n, c.mean_diff, c.ci_low, c.ci_high, c.sign_p_holm, c.margin,
                                 policy.alpha, min_queries=policy.min_queries)
                          for c in comparisons]
            if index == 0:
                again = compare(np.zeros((n, m)), d[:, :m], MEASURES[:m], {"all": np.arange(n)},
                                dataclasses.replace(policy, regression_rule="interval"))
                assert [c.decision for c in again] == strict
            cell.regression[m, "estimate"] += any(c.decision == "regression" for c in comparisons)
            cell.regression[m, "interval"] += "regression" in strict
            cell.regression[m, "unadjusted"] += "regression" in unadjusted
            cell.passed[m] += all(c.decision == "pass" for c in comparisons)
    return cell


# --------------------------------------------------------------------------------------------
# Formatting


def rate_se(count: int, sims: int) -> str:
    """Share ± 2 standard errors, † when more than 2 SE above α; with no event, the 95% upper
    bound 3/sims."""
    if count == 0:
        return f"0 (< {3 / sims:.3f})"
    p = count / sims
    se = math.sqrt(p * (1 - p) / sims)
    return f"{p:.3f} ± {2 * se:.3f}" + (" †" if p - 2 * se > ALPHA else "")


def worst(cells: dict[str, Cell], family: int, rule: str) -> tuple[str, Cell]:
    """The pair whose rate is highest."""
    return max(cells.items(), key=lambda item: item[1].rate(family, rule))


def alarm_table(results: dict[str, dict[int, dict[str, Cell]]], scenario: str, rule: str,
                sizes: Sequence[int], families: Sequence[int]) -> str:
    """n × family: the highest family-wise `regression` rate over the pairs, and its pair."""
    head = ("| n | " + " | ".join(f"m = {m}" for m in families) + " |\n|---:|"
            + "---|" * len(families))
    rows = []
    for n in sizes:
        parts = []
        for m in families:
            name, cell = worst(results[scenario][n], m, rule)
            parts.append(f"{rate_se(cell.regression[m, rule], cell.sims)} ({name})")
        rows.append(f"| {n} | " + " | ".join(parts) + " |")
    return "\n".join([head, *rows])


def pair_table(results: dict[str, dict[int, dict[str, Cell]]], scenarios: Sequence[str],
               rule: str, sizes: Sequence[int], family: int) -> str:
    """n × (scenario, pair): the family-wise `regression` rate of one family, every pair."""
    columns = [(scenario, name) for scenario in scenarios for name in results[scenario][sizes[0]]]
    head = ("| n | " + " | ".join(f"{scenario}: {name}" for scenario, name in columns)
            + " |\n|---:|" + "---|" * len(columns))
    rows = []
    for n in sizes:
        cells = [results[scenario][n][name] for scenario, name in columns]
        rows.append(f"| {n} | " + " | ".join(rate_se(c.regression[family, rule], c.sims)
                                             for c in cells) + " |")
    return "\n".join([head, *rows])


def power_table(results: dict[str, dict[int, dict[str, Cell]]], sizes: Sequence[int],
                family: int) -> str:
    """(drop, pair) × n: share called `regression` by each rule (estimate / interval), and
    unadjusted."""
    head = ("| true drop | pair | " + " | ".join(f"n = {n}" for n in sizes) + " |\n|---|---|"
            + "---:|" * len(sizes))
    rows = []
    for delta in DROPS:
        scenario = f"drop {delta:g}"
        for name in results[scenario][sizes[0]]:
            parts = [" / ".join(f"{results[scenario][n][name].rate(family, rule):.2f}"
                                for rule in BOUNDS) for n in sizes]
            rows.append(f"| {delta:g} ({delta / MARGIN:g}× margin) | {name} | "
                        + " | ".join(parts) + " |")
    return "\n".join([head, *rows])


def pass_table(results: dict[str, dict[int, dict[str, Cell]]], sizes: Sequence[int],
               families: Sequence[int]) -> str:
    """Pass rates: under no change (sign-flip; what certifying non-inferiority takes), and at a
    true drop of the margin (a false pass; the guarantee is ≤ α/2)."""
    head = ("| n | pair | " + " | ".join(f"no change, m = {m}" for m in families) + " | "
            + " | ".join(f"drop = margin, m = {m}" for m in POWER_FAMILIES) + " |\n|---:|---|"
            + "---:|" * (len(families) + len(POWER_FAMILIES)))
    rows = []
    for n in sizes:
        for name, cell in results["sign-flip"][n].items():
            at_margin = results.get(f"drop {MARGIN:g}", {}).get(n, {}).get(name)
            parts = [f"{cell.passed[m] / cell.sims:.2f}" for m in families]
            parts += [f"{at_margin.passed[m] / at_margin.sims:.3f}" if at_margin else "-"
                      for m in POWER_FAMILIES]
            rows.append(f"| {n} | {name} | " + " | ".join(parts) + " |")
    return "\n".join([head, *rows])


def describe(pair: Pair) -> str:
    """One line per measure: mean difference, SD, share of ties."""
    return "\n".join(
        f"  - {name}: mean d = {pair.d[:, j].mean():+.4f}, SD {pair.d[:, j].std(ddof=1):.3f}, "
        f"ties {np.mean(pair.d[:, j] == 0):.0%}" for j, name in enumerate(MEASURES))


# --------------------------------------------------------------------------------------------
# Main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sims", type=int, default=1000,
                        help="simulated test sets per cell (default 1000)")
    parser.add_argument("--resamples", type=int, default=1000,
                        help="bootstrap resamples per interval (default 1000; the gate uses "
                        "10000)")
    parser.add_argument("--seed", type=int, default=0, help="simulation seed (default 0)")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES),
                        help="test-set sizes (default 25 50 100 225)")
    parser.add_argument("--min-queries", type=int, default=GatePolicy().min_queries,
                        help="the policy's min-queries (default: the gate's default); lower it "
                        "to simulate smaller test sets")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 100 sims, 500 resamples, n = 25 and 100")
    args = parser.parse_args(argv)
    if args.quick:
        args.sims, args.resamples, args.sizes = 100, 500, [25, 100]
    return args


SCENARIOS: dict[str, tuple[Scenario, bool, Sequence[int]]] = {
    # name: (simulation, near-equal pairs too, families)
    "sign-flip": (sign_flip, True, FAMILIES),
    "centred": (centred, True, FAMILIES),
    "boundary": (boundary, False, FAMILIES),
    **{f"drop {delta:g}": (drop(delta), False, POWER_FAMILIES) for delta in DROPS},
}


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    start = time.perf_counter()
    pairs = load_pairs()
    results: dict[str, dict[int, dict[str, Cell]]] = {}
    for scenario_id, (scenario, (simulate, near_equal, families)) in enumerate(
            SCENARIOS.items()):
        results[scenario] = {}
        for n in args.sizes:
            results[scenario][n] = {}
            for pair_id, pair in enumerate(pairs):
                if pair.near_equal and not near_equal:
                    continue
                rng = np.random.default_rng([args.seed, pair_id, scenario_id, n])
                samples = simulate(pair.d, n, args.sims, rng)
                results[scenario][n][pair.name] = run_cell(samples, families, args.resamples,
                                                           args.min_queries)
    elapsed = time.perf_counter() - start

    sizes = args.sizes
    print(f"# Calibration of the decision rule on real Cranfield differences\n\n"
          f"Margin {MARGIN}, α = {ALPHA}, BCa with {args.resamples:,} resamples (gate seed "
          f"{GatePolicy().seed}), min-queries {args.min_queries}, {args.sims} simulated test sets "
          f"per cell (largest ± 2·SE of a rate: {2 * math.sqrt(0.25 / args.sims):.3f}), seed "
          f"{args.seed}; test sets drawn with replacement from 225 queries; a family of m gates "
          f"the first m of {', '.join(MEASURES)}.\n")
    print("Pairs (mean, SD and ties of the real per-query differences):\n")
    for pair in pairs:
        print(f"- {pair.name}{' (near-equal)' if pair.near_equal else ''}:\n{describe(pair)}")
    for rule in ("estimate", "unadjusted"):
        print(f"\n## The default gate (m = 2), {rule}, no change: share called `regression`, "
              f"every pair\n\n{pair_table(results, ('sign-flip', 'centred'), rule, sizes, 2)}")
    for rule in BOUNDS:
        for scenario in ("sign-flip", "centred", "boundary"):
            print(f"\n## `{rule}`, {scenario}: share of test sets called `regression` "
                  f"(highest over the pairs)\n\n"
                  f"{alarm_table(results, scenario, rule, sizes, FAMILIES)}")
    for m in POWER_FAMILIES:
        print(f"\n## Power, family of {m}: share called `regression`, rule estimate / "
              f"interval / unadjusted\n\n{power_table(results, sizes, m)}")
    print(f"\n## `pass`: share of test sets certified non-inferior\n\n"
          f"{pass_table(results, sizes, FAMILIES)}")
    shown = " ".join(["python", "benchmarks/calibration.py",
                      *(sys.argv[1:] if argv is None else argv)])
    print(f"\n_Simulation time {elapsed:.0f} s; `{shown}`._")
    return 0


if __name__ == "__main__":
    sys.exit(main())
