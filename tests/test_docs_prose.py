"""Numbers the documentation's prose quotes are numbers its tested blocks print: a recipe that
explains "the bound, −0.0648, shows the loss is real" must not keep saying −0.0545 once the
output it explains says −0.0648.

A number with three or more decimals outside the fenced blocks of a page that has
```` ```console ```` blocks (which ``tests/test_docs_examples.py`` runs and compares) must
appear in one of the documentation's console blocks — as written, or as a number of those
blocks rounded to its decimals, its sign aside (0.988 for 0.9878, "lose 0.008" for −0.0082). What the tested blocks cannot show is
listed in :data:`MEASURED_ELSEWHERE`, each with where it is measured."""

from __future__ import annotations

import re
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
NUMBER = re.compile(r"(?<![\w.])[+−-]?\d+\.\d{3,}(?![\w])")
MEASURED_ELSEWHERE = {
    ("docs/recipes/embedding-model.md", "0.0023"):
        "nDCG@10's Holm-adjusted regression p: the JSON report's p_regression_holm",
    ("docs/concepts/reading-the-report.md", "0.144"):
        "nDCG@10's sign test p in the same check: the JSON report's sign_p_holm",
    ("docs/concepts/reading-the-report.md", "+0.0050"): "the notation of a bound, an example",
    ("docs/concepts/reading-the-report.md", "0.076"): "the notation of a decision, an example",
    ("docs/recipes/re-chunking.md", "−0.403"):
        "the comparison without --evidence the prose describes, not a block of the page",
    **{("docs/recipes/run-your-retriever.md", n):
       "the libraries' runs: tests/test_run_langchain.py, test_run_llamaindex.py and "
       "test_run_haystack.py run the recipe (the runners extra; LangChain's by machine)"
       for n in ("0.7290", "0.8202", "0.5379", "0.5417", "0.6573", "0.7312", "0.8258",
                 "0.7552", "0.8596")},
}


def pages() -> list[Path]:
    return sorted([*ROOT.glob("docs/**/*.md"), ROOT / "README.md"])


def console(text: str) -> list[str]:
    return [m.group(2) for m in FENCE.finditer(text) if m.group(1).strip() == "console"]


def plain(number: str) -> Decimal:
    return Decimal(number.replace("−", "-").lstrip("+"))


def printed() -> set[Decimal]:
    """Every number the documentation's console blocks print."""
    return {plain(n) for page in pages() for block in console(page.read_text("utf-8"))
            for n in NUMBER.findall(block)}


def unprinted(name: str, text: str, shown: set[Decimal]) -> list[str]:
    """The numbers of ``text``'s prose (page ``name``) that no block prints (see the module
    docstring)."""
    missing = []
    for number in NUMBER.findall(FENCE.sub("", text)):
        value = abs(plain(number))
        quantum = Decimal(1).scaleb(value.as_tuple().exponent)
        if (name, number) not in MEASURED_ELSEWHERE and not any(
                value == abs(s).quantize(quantum, ROUND_HALF_EVEN) for s in shown):
            missing.append(number)
    return missing


def test_every_number_the_prose_quotes_is_printed_by_a_tested_block() -> None:
    shown = printed()
    unknown = [f"{page.relative_to(ROOT).as_posix()}: {number}" for page in pages()
               if console(page.read_text("utf-8"))  # else its numbers are the concepts' own
               for number in unprinted(page.relative_to(ROOT).as_posix(),
                                       page.read_text("utf-8"), shown)]
    assert unknown == []


def test_a_number_no_block_prints_is_found() -> None:
    """The check can fail: the numbers the re-chunking recipe quoted after its output changed
    are found, the ones it quotes now are not."""
    said = ("the 97.5 % bound, +0.0551, is above −0.08; its bound (−0.0545) shows it; the "
            "low end, −0.0579, and the bound (−0.0648); the chunks lose 0.008")
    assert unprinted("docs/recipes/re-chunking.md", said, printed()) == ["+0.0551", "−0.0545"]
    assert all((ROOT / page).exists() for page, _ in MEASURED_ELSEWHERE)
