"""Rendering the result of ``gate score``: a JSON document and a plain-text table.

JSON (keys sorted, floats in Python's shortest round-trip form, so the same inputs always give
the same bytes) has exactly these top-level keys: ``settings``, ``measures``, ``means``,
``per_query``, ``unanswerable``, ``counts``, ``warnings``. Several named runs give
``{"runs": {name: document}}``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from retrieval_gate.core.untrusted import visible
from retrieval_gate.report.cells import mean_cell
from retrieval_gate.scoring.scores import Scores


def scores_document(scores: Scores, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON-ready document of one scored run; ``inputs`` names the files (and k)."""
    threshold = scores.policy.threshold
    return {
        "settings": {
            **inputs,
            **scores.policy.as_dict(),
            "definitions": {str(m): m.describe(threshold) for m in scores.measures},
        },
        "measures": [str(m) for m in scores.measures],
        "means": scores.means(),
        "per_query": scores.per_query(),
        "unanswerable": list(scores.unanswerable),
        "counts": {
            "queries": len(scores.query_ids) + len(scores.unanswerable),
            "answerable": len(scores.query_ids),
            "unanswerable": len(scores.unanswerable),
        },
        "warnings": list(scores.warnings),
    }


def to_json(document: Mapping[str, Any], open_levels: int = 2) -> str:
    """Deterministic JSON text: keys sorted, UTF-8 kept, floats in their shortest round-trip
    form, final newline. The first ``open_levels`` levels of objects and arrays are indented by
    two spaces; anything deeper is written on one line (one query's scores, one comparison),
    which keeps big reports short and uses the standard library's C encoder for the bulk."""
    return _encode(document, open_levels, "") + "\n"


_ENCODER = json.JSONEncoder(sort_keys=True, ensure_ascii=False, allow_nan=False)


def _encode(value: Any, open_levels: int, indent: str) -> str:
    if open_levels <= 0 or not isinstance(value, (dict, list)) or not value:
        return _ENCODER.encode(value)
    inner = indent + "  "
    if isinstance(value, dict):
        items = [f"{inner}{_ENCODER.encode(str(k))}: "
                 f"{_encode(value[k], open_levels - 1, inner)}" for k in sorted(value)]
        return "{\n" + ",\n".join(items) + f"\n{indent}}}"
    items = [f"{inner}{_encode(v, open_levels - 1, inner)}" for v in value]
    return "[\n" + ",\n".join(items) + f"\n{indent}]"


def scores_text(scores: Scores, inputs: Mapping[str, Any], title: str | None = None) -> str:
    """Per-query rows, a mean row, the definitions (gain and threshold) and the warnings."""
    names = [str(m) for m in scores.measures]
    ids = [visible(q) for q in scores.query_ids]  # one line per query, whatever the id holds
    width = max([len("query"), len("mean"), *(len(q) for q in ids)])
    columns = [max(len(n), 6) for n in names]
    lines = []
    if title:
        lines.append(f"== {visible(title)} ==")
    lines.append("  ".join(f"{k}: {visible(str(v))}" for k, v in inputs.items() if v is not None))
    lines.extend(f"  {m.describe(scores.policy.threshold)}" for m in scores.measures)
    lines.append("")
    lines.append("  ".join(["query".ljust(width), *(n.rjust(c) for n, c in zip(names, columns))]))
    for qid, row in zip(ids, scores.per_query().values()):
        lines.append("  ".join([qid.ljust(width), *(mean_cell(row[n]).rjust(c)
                                                     for n, c in zip(names, columns))]))
    means = scores.means()
    lines.append("  ".join(["mean".ljust(width), *(mean_cell(means[n]).rjust(c)
                                                   for n, c in zip(names, columns))]))
    lines.append(f"{len(scores.query_ids)} answerable queries averaged (macro mean)")
    if scores.unanswerable:
        lines.append(f"unanswerable, not averaged ({len(scores.unanswerable)}): "
                     + ", ".join(map(visible, scores.unanswerable)))
    lines.extend(f"warning: {visible(w)}" for w in scores.warnings)
    return "\n".join(lines) + "\n"
