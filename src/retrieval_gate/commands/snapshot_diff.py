"""``gate snapshot diff``: what changed in the test set between two snapshots — queries added,
removed or reworded, judgments added, removed or regraded — by count, so a pull request that
changes the test set says how much it changed."""

from __future__ import annotations

import os
from dataclasses import dataclass

from retrieval_gate.core.model import Qrels
from retrieval_gate.inputs.snapshot import load_snapshot, load_test_set


@dataclass(frozen=True)
class TestSetChange:
    """Counts of what changed from an old snapshot's test set to a new one's, and the
    components whose identity changed (queries, qrels, corpus, scoring, ...)."""

    queries_added: int
    queries_removed: int
    queries_reworded: int
    judgments_added: int
    judgments_removed: int
    judgments_regraded: int
    components: tuple[str, ...]

    def summary(self) -> str:
        """One line: ``queries +12 −3 (5 reworded); judgments +40 −2 (7 regraded); changed:
        qrels, queries``."""
        changed = ", ".join(self.components) or "nothing"
        return (f"queries +{self.queries_added} −{self.queries_removed} "
                f"({self.queries_reworded} reworded); judgments +{self.judgments_added} "
                f"−{self.judgments_removed} ({self.judgments_regraded} regraded); changed: "
                f"{changed}")


def _labels(qrels: Qrels) -> dict[tuple[str, str], int]:
    """(query, unit) → grade; a span's unit is ``doc[start:end]``."""
    if qrels.spans is not None:
        return {(q, s.key): s.grade for q, spans in qrels.spans.items() for s in spans}
    return {(q, d): g for q, labels in qrels.judgments.items() for d, g in labels.items()}


def test_set_change(old: str | os.PathLike[str], new: str | os.PathLike[str]
                    ) -> TestSetChange:
    """Compare the test sets of two snapshots (each with its pinned files, hashes checked)."""
    before, after = load_snapshot(old), load_snapshot(new)
    a, b = load_test_set(before), load_test_set(after)
    qa, qb = {q.id: q.text for q in a.queries}, {q.id: q.text for q in b.queries}
    la, lb = _labels(a.qrels), _labels(b.qrels)
    components = tuple(c for c in sorted(set(before.identity) | set(after.identity))
                       if before.identity.get(c) != after.identity.get(c))
    return TestSetChange(
        len(qb.keys() - qa.keys()), len(qa.keys() - qb.keys()),
        sum(qa[q] != qb[q] for q in qa.keys() & qb.keys()),
        len(lb.keys() - la.keys()), len(la.keys() - lb.keys()),
        sum(la[k] != lb[k] for k in la.keys() & lb.keys()), components)
