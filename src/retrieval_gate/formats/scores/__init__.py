"""Readers of per-query score files: the native JSON Lines and CSV, and evaluation tools'
outputs. Each format is one module whose reader returns
:class:`~retrieval_gate.formats.scores.rows.ScoreRows`; this module maps a format's name to its
reader, imported on first use.

Formats: ``jsonl`` and ``csv`` (native, told apart by the content when no format is given),
``ragas`` (a Ragas result's DataFrame saved as CSV or JSON Lines), ``deepeval`` (a DeepEval
test-run file), ``promptfoo`` (``promptfoo eval -o output.json``), ``inspect`` (an inspect_ai
``.eval`` log).
"""

from __future__ import annotations

import importlib
import re

from retrieval_gate.core.errors import InputError
from retrieval_gate.formats.scores.rows import ScoreRows
from retrieval_gate.formats.source import Blob

# format name → (module, reader function)
READERS = {
    "jsonl": ("native", "read_jsonl"),
    "csv": ("native", "read_csv"),
    "ragas": ("ragas", "read"),
    "deepeval": ("deepeval", "read"),
    "promptfoo": ("promptfoo", "read"),
    "inspect": ("inspect_ai", "read"),
}
FORMATS = tuple(READERS)
TOOLS = tuple(f for f in FORMATS if f not in ("jsonl", "csv"))  # the formats of tools' outputs


def detect_format(blob: Blob, option: str = "--scores-format") -> str:
    """The native format of ``blob``: ``jsonl`` when its first character opens a JSON object,
    else ``csv``; InputError for a JSON document (a tool's output: its format must be named)."""
    blob.require_content()
    first = re.match(rb"(?:\xef\xbb\xbf)?\s*(\S)", bytes(blob.data[:4096]))
    if first is None or first[1] not in (b"{", b"["):
        return "csv"
    if first[1] == b"[" or _one_document(blob):
        tools = ", ".join(TOOLS)
        raise InputError(blob.name, "is one JSON document, not JSON Lines of scores",
                         f"write one line per query, or name the tool's format with {option} "
                         f"({tools})")
    return "jsonl"


def read_scores(blob: Blob, format: str | None = None, option: str = "--scores-format"
                ) -> ScoreRows:
    """The rows of a score file read once (``blob``), in ``format`` (None: native JSON Lines or
    CSV, see :func:`detect_format`); InputError for an unknown format."""
    blob.require_content()
    if format is None:
        format = detect_format(blob, option)
    if format not in READERS:
        raise InputError(option, f"unknown score format '{format}'",
                         f"use one of {', '.join(FORMATS)}")
    module, function = READERS[format]
    reader = getattr(importlib.import_module(f"retrieval_gate.formats.scores.{module}"),
                     function)
    return reader(bytes(blob.data), blob.name)


def _one_document(blob: Blob) -> bool:
    """Whether a file that opens with ``{`` is one JSON document spread over several lines
    (a tool's output) rather than JSON Lines: its first line does not close its object."""
    first_line = bytes(blob.data[:1 << 16]).split(b"\n", 1)[0].strip()
    return first_line in (b"{", b"\xef\xbb\xbf{")
