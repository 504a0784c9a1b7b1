"""Layer 8, commands: one library call per ``gate`` command other than ``check`` (approve,
init, history, pool, qrels to-spans, validate, score, snapshot diff)."""
