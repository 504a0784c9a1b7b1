"""The gate's policy and its decision rule (DESIGN §5–6).

For one gated (measure, slice) with margin δ (the largest mean drop that is not material), the
mean per-query difference d̄ = mean(candidate − baseline), the two-sided 1 − α bootstrap interval
[ci_low, ci_high] and the Holm-adjusted one-sided sign-test p-value:

- ``regression`` — d̄ ≤ −δ, ci_high < 0 and sign_p_holm < α: a material drop, significant by both
  the bootstrap and the sign test;
- ``pass`` — ci_low > −δ: non-inferior (any drop is smaller than the margin);
- ``inconclusive`` — otherwise: this test set cannot tell (too few queries or too much spread).

``improvement`` is a separate flag: ci_low > 0. A slice without a query is ``inconclusive``.
The overall verdict is ``regression`` if any comparison is, else ``inconclusive`` if any is, else
``pass``; the exit code follows ``fail_on``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from retrieval_gate.errors import EXIT_INCONCLUSIVE, EXIT_PASS, EXIT_REGRESSION

Decision = Literal["pass", "regression", "inconclusive"]
FailOn = Literal["regression", "inconclusive", "never"]
DEFAULT_MARGIN = 0.02
POWER = 0.8  # power of the minimum detectable drop


@dataclass(frozen=True)
class GatedMeasure:
    """A measure the gate decides on (its name, resolved against the snapshot later) and its
    margin."""

    measure: str
    margin: float = DEFAULT_MARGIN


@dataclass(frozen=True)
class GatePolicy:
    """Everything the decision depends on besides the data. Defaults: Recall@10 and nDCG@10
    with margin 0.02, the ``all`` slice, α = 0.05, 10,000 BCa resamples with seed 0, tie band 0,
    fail on regression."""

    gates: tuple[GatedMeasure, ...] = (GatedMeasure("Recall@10"), GatedMeasure("nDCG@10"))
    slices: tuple[str, ...] = ("all",)
    alpha: float = 0.05
    resamples: int = 10_000
    seed: int = 0
    tie_band: float = 0.0
    bootstrap: Literal["bca", "percentile"] = "bca"
    fail_on: FailOn = "regression"
    power: float = field(default=POWER, init=False)

    def as_dict(self) -> dict[str, object]:
        return {
            "gates": [{"measure": g.measure, "margin": g.margin} for g in self.gates],
            "slices": list(self.slices),
            "alpha": self.alpha,
            "resamples": self.resamples,
            "seed": self.seed,
            "tie_band": self.tie_band,
            "bootstrap": self.bootstrap,
            "fail_on": self.fail_on,
            "power": self.power,
        }


def decide(n: int, mean_diff: float, ci_low: float, ci_high: float, sign_p_holm: float,
           margin: float, alpha: float) -> Decision:
    """The decision rule of the module docstring; ``n == 0`` → ``inconclusive``."""
    if n == 0:
        return "inconclusive"
    if mean_diff <= -margin and ci_high < 0 and sign_p_holm < alpha:
        return "regression"
    if ci_low > -margin:
        return "pass"
    return "inconclusive"


def verdict(decisions: list[Decision]) -> Decision:
    """``regression`` if any, else ``inconclusive`` if any, else ``pass``."""
    if "regression" in decisions:
        return "regression"
    return "inconclusive" if "inconclusive" in decisions else "pass"


def exit_code(overall: Decision, fail_on: FailOn) -> int:
    """0 pass; 1 regression; 4 inconclusive under ``fail_on = inconclusive`` (else 0); always 0
    under ``fail_on = never``."""
    if fail_on == "never" or overall == "pass":
        return EXIT_PASS
    if overall == "regression":
        return EXIT_REGRESSION
    return EXIT_INCONCLUSIVE if fail_on == "inconclusive" else EXIT_PASS
