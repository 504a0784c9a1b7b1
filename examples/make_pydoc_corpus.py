"""Rebuild pydoc/corpus.jsonl from the Python documentation topics behind help().

What it does: reads ``pydoc_data.topics.topics`` (CPython's Language Reference topics, the text
that ``help("try")`` prints; PSF License Version 2) from the running interpreter and writes one
JSON object per line, ``{"id": TOPIC_NAME, "text": TOPIC_TEXT}``, every topic, sorted by name,
text exactly as in the module. The shipped corpus is the topics of CPython 3.11.7; another
Python's topics differ (other wording, other topics), so this script refuses to run on any other
version rather than write or compare a different corpus.

Run from any directory, with Python 3.11.7:

    python examples/make_pydoc_corpus.py          # (re)writes pydoc/corpus.jsonl
    python examples/make_pydoc_corpus.py --check  # rebuild into a temp dir, compare, exit 1 on diff
"""

from __future__ import annotations

import platform
import sys

from runfiles import PYDOC, jsonl_lines, wants_check, write_or_check

PYTHON = "3.11.7"


def topic_rows() -> list[dict[str, str]]:
    """Every topic of the running Python as ``{"id", "text"}``, sorted by topic name."""
    from pydoc_data.topics import topics

    return [{"id": name, "text": topics[name]} for name in sorted(topics)]


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit code."""
    check = wants_check(__doc__.splitlines()[0], argv)
    running = platform.python_version()
    if running != PYTHON:
        print(f"error: the shipped corpus is the topics of Python {PYTHON}; this is Python "
              f"{running}, whose topics differ — run this script with Python {PYTHON}",
              file=sys.stderr)
        return 2
    return 0 if write_or_check(PYDOC / "corpus.jsonl", jsonl_lines(topic_rows()), check) else 1


if __name__ == "__main__":
    sys.exit(main())
