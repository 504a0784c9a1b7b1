"""Regenerate the documentation's screenshots from the shipped examples, in headless Chromium,
and check that they still show what the gate writes:

- ``docs/images/cranfield-report.png``: the HTML report of ``gate check`` in the repository
  (the zero-configuration Cranfield check: hybrid against the BM25 baseline);
- ``docs/images/report.png``: the HTML report of ``gate check --config
  examples/pydoc/answers.toml`` with the reader-cut candidate (a regression of answers while
  retrieval holds);
- ``docs/images/pr-comment.png``: the pull-request comment of the same check (its Markdown
  report, rendered as GitHub renders a comment: markdown-it with tables, in GitHub's fonts
  and colours).

A picture is not compared byte for byte (fonts differ between machines); the page it was
taken of is. ``docs/images/screenshots.json`` records, per picture, the SHA-256 of the page
rendered — the report's HTML, or the comment page made from the Markdown report — and
``--check`` makes every page again and compares: a report that changed since its picture was
taken fails the check (exit 1, naming the pictures), which the test suite and the docs job
run. The reports are deterministic (the same inputs give the same bytes), so the hash changes
exactly when what the picture shows would.

Run from the repository root: ``python docs/screenshots.py`` (``--out DIR`` writes elsewhere;
needs Debian's ``chromium`` and the ``test`` extra's markdown-it-py), ``python
docs/screenshots.py --check`` (needs neither Chromium nor anything beyond the ``test`` extra).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ROOT / "docs" / "images"
RECORD = "screenshots.json"
ANSWERS = ["check", "--config", "examples/pydoc/answers.toml", "--candidate",
           "examples/pydoc/answers/bm25-200-reader-cut32.trec"]
COMMENT_PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><style>
body{{font:14px -apple-system,BlinkMacSystemFont,"Segoe UI","Noto Sans",Helvetica,Arial,sans-serif;
color:#1f2328;background:#fff;margin:0;padding:24px}}
.comment{{border:1px solid #d1d9e0;border-radius:6px;max-width:880px}}
.head{{background:#f6f8fa;border-bottom:1px solid #d1d9e0;padding:8px 16px;color:#59636e}}
.body{{padding:16px}}
table{{border-collapse:collapse;margin:8px 0;display:block;width:max-content;max-width:100%;
overflow:auto}}
td,th{{border:1px solid #d1d9e0;padding:4px 10px}} th{{background:#f6f8fa}}
code{{background:#eff1f3;border-radius:4px;padding:1px 4px;font-size:85%}}
details{{margin:6px 0}} summary{{cursor:pointer}}
</style></head><body><div class="comment"><div class="head"><b>github-actions</b> bot
commented</div><div class="body">{body}</div></div></body></html>"""


@dataclass(frozen=True)
class Shot:
    """One picture: its file, the ``gate`` command whose report it shows, which report
    (``html``, or ``markdown`` rendered as a comment) and the window's size (the table of
    three gated measures needs 1,400 pixels to show its decisions)."""

    png: str
    command: tuple[str, ...]
    report: str
    width: int
    height: int


SHOTS = (Shot("cranfield-report.png", ("check",), "html", 1200, 1600),
         Shot("report.png", tuple(ANSWERS), "html", 1400, 1500),
         Shot("pr-comment.png", tuple(ANSWERS), "markdown", 1200, 900))


def page(shot: Shot, folder: Path) -> Path:
    """The page ``shot`` is taken of, made in ``folder`` from a fresh run of its command."""
    report = folder / f"{shot.png}.{'html' if shot.report == 'html' else 'md'}"
    done = subprocess.run([sys.executable, "-m", "retrieval_gate", *shot.command,
                           f"--{shot.report}", str(report)], cwd=ROOT, capture_output=True,
                          text=True, check=False)
    if done.returncode not in (0, 1):  # pass or regression: the reports are written
        sys.exit(f"gate {' '.join(shot.command)}: exit {done.returncode}\n{done.stderr}")
    if shot.report == "html":
        return report
    from markdown_it import MarkdownIt

    body = MarkdownIt("gfm-like", {"html": True}).render(report.read_text(encoding="utf-8"))
    comment = folder / f"{shot.png}.html"
    comment.write_text(COMMENT_PAGE.format(body=body), encoding="utf-8")
    return comment


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        sys.exit("chromium is missing: apt-get install -y chromium")
    return found


def screenshot(source: Path, png: Path, width: int, height: int) -> None:
    """``source`` as a PNG of ``width`` × ``height`` pixels."""
    subprocess.run([chromium(), "--headless=new", "--no-sandbox", "--disable-gpu",
                    "--hide-scrollbars", f"--window-size={width},{height}",
                    f"--screenshot={png}", source.resolve().as_uri()],
                   check=True, capture_output=True, timeout=120)


def take(out: Path) -> None:
    """Every picture into ``out``, with the record of the pages they show."""
    out.mkdir(parents=True, exist_ok=True)
    record = {}
    with tempfile.TemporaryDirectory() as scratch:
        for shot in SHOTS:
            source = page(shot, Path(scratch))
            screenshot(source, out / shot.png, shot.width, shot.height)
            record[shot.png] = {"command": "gate " + " ".join(shot.command),
                                "report": shot.report, "page_sha256": sha256(source)}
    (out / RECORD).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {', '.join(shot.png for shot in SHOTS)} and {RECORD} in {out}")


def stale(images: Path = IMAGES) -> list[str]:
    """The pictures whose page has changed since they were taken (or were never recorded)."""
    recorded = json.loads((images / RECORD).read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as scratch:
        return [shot.png for shot in SHOTS
                if recorded.get(shot.png, {}).get("page_sha256")
                != sha256(page(shot, Path(scratch)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=IMAGES)
    parser.add_argument("--check", action="store_true",
                        help="compare the pages with those the pictures were taken of")
    args = parser.parse_args()
    if not args.check:
        take(args.out)
        return 0
    changed = stale(args.out)
    if changed:
        print(f"stale screenshots: {', '.join(changed)} — the report changed since they were "
              "taken: run python docs/screenshots.py and commit docs/images", file=sys.stderr)
        return 1
    print(f"the screenshots show the current reports ({len(SHOTS)} checked)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
