"""Layer 6, gating: a check from its inputs to its outcome — both runs scored on the snapshot,
compared, and the :class:`~retrieval_gate.gating.outcome.Report` built."""
