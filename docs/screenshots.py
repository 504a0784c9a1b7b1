"""Regenerate the documentation's screenshots from the shipped examples, in headless Chromium:

- ``docs/images/report.png``: the HTML report of ``gate check --config
  examples/pydoc/answers.toml`` with the reader-cut candidate (a regression of answers while
  retrieval holds);
- ``docs/images/pr-comment.png``: the pull-request comment of the same check (its Markdown
  report, rendered as GitHub renders a comment: markdown-it with tables, in GitHub's fonts
  and colours).

Run from the repository root: ``python docs/screenshots.py`` (``--out DIR`` writes elsewhere;
needs Debian's ``chromium`` and the ``test`` extra's markdown-it-py). The pictures are not
compared byte for byte anywhere: fonts differ between machines.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECK = ["check", "--config", "examples/pydoc/answers.toml", "--candidate",
         "examples/pydoc/answers/bm25-200-reader-cut32.trec"]
COMMENT_PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><style>
body{{font:14px -apple-system,BlinkMacSystemFont,"Segoe UI","Noto Sans",Helvetica,Arial,sans-serif;
color:#1f2328;background:#fff;margin:0;padding:24px}}
.comment{{border:1px solid #d1d9e0;border-radius:6px;max-width:880px}}
.head{{background:#f6f8fa;border-bottom:1px solid #d1d9e0;padding:8px 16px;color:#59636e}}
.body{{padding:16px}} table{{border-collapse:collapse;margin:8px 0}}
td,th{{border:1px solid #d1d9e0;padding:4px 10px}} th{{background:#f6f8fa}}
code{{background:#eff1f3;border-radius:4px;padding:1px 4px;font-size:85%}}
details{{margin:6px 0}} summary{{cursor:pointer}}
</style></head><body><div class="comment"><div class="head"><b>github-actions</b> bot
commented</div><div class="body">{body}</div></div></body></html>"""


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        sys.exit("chromium is missing: apt-get install -y chromium")
    return found


def screenshot(page: Path, png: Path, height: int) -> None:
    """``page`` as a PNG of 1200 × ``height`` pixels."""
    subprocess.run([chromium(), "--headless=new", "--no-sandbox", "--disable-gpu",
                    "--hide-scrollbars", f"--window-size=1200,{height}",
                    f"--screenshot={png}", page.resolve().as_uri()],
                   check=True, capture_output=True, timeout=120)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    args = parser.parse_args()
    from markdown_it import MarkdownIt

    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        html, markdown = folder / "report.html", folder / "comment.md"
        done = subprocess.run([sys.executable, "-m", "retrieval_gate", *CHECK, "--html",
                               str(html), "--markdown", str(markdown)], cwd=ROOT,
                              capture_output=True, text=True, check=False)
        if done.returncode not in (0, 1):  # pass or regression: the reports are written
            sys.exit(done.stderr)
        body = MarkdownIt("gfm-like", {"html": True}).render(markdown.read_text(encoding="utf-8"))
        comment = folder / "comment.html"
        comment.write_text(COMMENT_PAGE.format(body=body), encoding="utf-8")
        screenshot(html, args.out / "report.png", 1500)
        screenshot(comment, args.out / "pr-comment.png", 900)
    print(f"wrote {args.out / 'report.png'} and {args.out / 'pr-comment.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
