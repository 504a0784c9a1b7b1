"""What the run-building scripts of the examples share: reading a collection, ranking written
scores the way trec_eval orders them, and writing or checking run and data files."""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

DATA = Path(__file__).resolve().parent / "cranfield"
BASELINES = DATA.parent.parent / "baselines" / "cranfield"
DEPTH = 100
PYDOC = DATA.parent / "pydoc"
PYDOC_BASELINES = BASELINES.parent / "pydoc"


def read_jsonl(path: Path) -> list[dict[str, str]]:
    """Read one JSON object per line."""
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def full_text(doc: dict[str, str]) -> str:
    """Abstract, with the title prepended when the abstract does not already start with it."""
    text, title = doc["text"], doc["title"]
    return text if text.startswith(title) else f"{title} {text}"


def jsonl_lines(rows: Iterable[Mapping[str, object]]) -> list[str]:
    """One compact JSON object per line, keys in the given order, non-ASCII text kept as UTF-8
    (JSON still escapes every control character, so a line never breaks inside a value)."""
    return [json.dumps(row, ensure_ascii=False) + "\n" for row in rows]


def trec_lines(
    query_id: str, written: Mapping[str, str], tag: str, depth: int = DEPTH
) -> list[str]:
    """The top ``depth`` of ``written`` (doc id → score as written) as TREC lines, ranked by
    the written score descending, ties by doc id descending (strcmp: trec_eval's order)."""
    ranked = sorted(written, key=lambda d: (float(written[d]), d), reverse=True)[:depth]
    return [f"{query_id} Q0 {d} {r} {written[d]} {tag}\n" for r, d in enumerate(ranked, 1)]


def write_atomic(path: Path, lines: list[str]) -> None:
    """Write ``lines`` to ``path`` via a temp file in the same folder and ``os.replace``."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o644)  # mkstemp creates 0600; make it a normal, readable file
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.writelines(lines)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write_or_check(shipped: Path, lines: list[str], check: bool) -> bool:
    """Write ``lines`` to ``shipped``, or (``check``) compare them with it byte for byte and say
    so; False when they differ or it is missing."""
    if not check:
        write_atomic(shipped, lines)
        print(f"wrote {shipped} ({len(lines)} lines)")
        return True
    if not shipped.exists():
        print(f"{shipped.name}: MISSING")
        return False
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / shipped.name
        write_atomic(fresh, lines)
        same = filecmp.cmp(fresh, shipped, shallow=False)
    print(f"{shipped.name}: {'identical' if same else 'DIFFERS'}")
    return same


def wants_check(description: str, argv: list[str] | None) -> bool:
    """Parse a script's only option, ``--check``: rebuild into a temporary folder and compare
    with the shipped files instead of writing them."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true",
                        help="rebuild into a temp dir and compare with the shipped files")
    return parser.parse_args(argv).check
