"""The scoring policy: how scoring treats the inputs' edge cases, and the one definition of its
vocabulary (names, choices, defaults, help texts).

Choices come from the ``Literal`` types below (the first is the default) and help texts from
:data:`POLICY_HELP`; the command-line options, the snapshot manifest and its schema are built
from or checked against them. This module imports no numpy, so that ``gate --help`` can build
its options from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, get_args

from retrieval_gate.core.exported import exported

UnjudgedPolicy = Literal["nonrelevant", "error"]
DuplicatesPolicy = Literal["error", "first"]
MissingPolicy = Literal["error", "zero"]
ExtraPolicy = Literal["error", "ignore"]
UnlabeledPolicy = Literal["error", "zero"]
PolicyOrigin = Literal["options", "snapshot"]

# The scoring policies: their one definition. Choices come from the Literal types above (the
# first is the default), help texts from here; the command line, the snapshot manifest and its
# schema are built from or checked against these.
_POLICY_TYPES = {"unjudged": UnjudgedPolicy, "duplicates": DuplicatesPolicy,
                 "missing": MissingPolicy, "extra": ExtraPolicy, "unlabeled": UnlabeledPolicy}
POLICY_HELP = {
    "unjudged": "An unjudged item is non-relevant (default) or an error.",
    "duplicates": "An item repeated in one ranking is an error (default) or keeps its first rank.",
    "missing": "A query absent from the run is an error (default) or scores 0 (trec_eval -c).",
    "extra": "A run query outside the qrels / query set is an error (default) or ignored.",
    "unlabeled": "An answerable query without a relevant judgment is an error (default) or "
                 "scores 0 with a warning.",
}
POLICY_NAMES = tuple(_POLICY_TYPES)


@exported
@dataclass(frozen=True)
class ScoringPolicy:
    """How scoring treats the inputs' edge cases.

    - ``threshold``: an item is relevant for binary measures iff its grade ≥ threshold (never
      applied to nDCG gains); negative grades are never relevant.
    - ``unjudged``: an item absent from the query's judgments (or judged with a negative grade,
      trec_eval's "in pool, unjudged") is non-relevant, or an error.
    - ``duplicates``: an item id repeated in one ranking is an error, or only its first
      (best-ranked) occurrence is kept.
    - ``missing``: a query of the query set absent from the run is an error, or scores 0 on every
      measure (trec_eval ``-c``).
    - ``extra``: a run query outside the query set is an error, or ignored (trec_eval's default).
    - ``unlabeled``: an answerable query with no judgment at or above the threshold is an error
      (missing labels are not a zero), or scores 0 as trec_eval does, with a warning.

    ``origin`` says where the policy was set — command-line ``options`` (``gate score``) or a
    ``snapshot`` manifest — so that an error can say how to change it (:meth:`fix`); it is not
    part of the policy's value (equality, :meth:`as_dict`).
    """

    threshold: int = 1
    unjudged: UnjudgedPolicy = "nonrelevant"
    duplicates: DuplicatesPolicy = "error"
    missing: MissingPolicy = "error"
    extra: ExtraPolicy = "error"
    unlabeled: UnlabeledPolicy = "error"
    origin: PolicyOrigin = field(default="options", compare=False)

    def __post_init__(self) -> None:
        for name in POLICY_NAMES:
            value, allowed = getattr(self, name), policy_choices(name)
            if value not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")

    def as_dict(self) -> dict[str, object]:
        """The policy's value: threshold and every policy, by name."""
        return {"threshold": self.threshold, **{n: getattr(self, n) for n in POLICY_NAMES}}

    def fix(self, name: str, value: str) -> str:
        """How the user sets policy ``name`` to ``value`` where this policy came from."""
        if self.origin == "snapshot":
            return (f'set "{name}": "{value}" in the snapshot\'s scoring (gate snapshot freeze '
                    f"--{name} {value}) and re-run both runs on the new snapshot")
        return f"pass --{name} {value}"


def policy_choices(name: str) -> tuple[str, ...]:
    """The values policy ``name`` accepts, its default first."""
    return get_args(_POLICY_TYPES[name])
