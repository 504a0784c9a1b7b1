"""The report as a reviewer reads it, from the command line: the interval that decided in the
row."""

from __future__ import annotations

import json

import pytest
from conftest import BASELINE, RUNS, SNAPSHOT, gate

from retrieval_gate.report.text import p_value, signed

WIDTH = 160  # characters of a comparison table's line in the text report, at most


@pytest.fixture(scope="module")
def titles(tmp_path_factory) -> dict[str, str]:
    """``gate check`` of the Cranfield example's mistake (BM25 over the titles only): exit 1,
    Recall@10 a regression, nDCG@10 inconclusive with its 95% interval wholly below 0. The
    text on standard output, the JSON, Markdown and HTML reports."""
    folder = tmp_path_factory.mktemp("titles")
    code, out, err = gate("check", "--no-config", "--snapshot", SNAPSHOT, "--baseline", BASELINE,
                          "--candidate", RUNS / "bm25-titles.trec", "--json",
                          folder / "r.json", "--markdown", folder / "r.md", "--html",
                          folder / "r.html")
    assert code == 1, err
    return {"text": out, **{kind: (folder / f"r.{kind}").read_text(encoding="utf-8")
                            for kind in ("json", "md", "html")}}


def test_the_row_shows_the_bound_that_decided(titles):
    """nDCG@10: Δ −0.0430, 95% CI [−0.0735, −0.0150], margin 0.02 — and inconclusive. The row
    shows the family's 97.5% bound, which decided (below 0 here too), and the decision says
    what failed: the Holm-adjusted sign test (92 better, 108 worse)."""
    ndcg = next(c for c in json.loads(titles["json"])["comparisons"] if c["measure"] == "nDCG@10")
    assert ndcg["decision"] == "inconclusive" and ndcg["ci_high"] < 0
    assert ndcg["ci_high_adjusted"] < 0 and ndcg["sign_p_holm"] >= 0.05
    bound = f"≤ {signed(ndcg['ci_high_adjusted'])}"
    lines = titles["text"].splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("measure "))
    table = lines[header:lines.index("", header)]
    assert "  97.5% bound  " in table[0]
    [row] = [line for line in table if line.startswith("nDCG@10 ")]
    assert f"  {bound}  " in row
    assert row.endswith(f"  0.02    inconclusive (sign test p {p_value(ndcg['sign_p_holm'])})")
    assert all(len(line) <= WIDTH for line in table)

    markdown = titles["md"]
    assert ("| measure | slice | n | baseline | candidate | Δ | 95% CI | 97.5% bound | queries | "
            "margin | decision |") in markdown
    [md_row] = [line for line in markdown.splitlines()
                if line.startswith("| nDCG@10 | all | 225 |")]
    assert md_row.endswith(f"| {bound} | 92 better, 108 worse, 25 same | 0.02 | "
                           r"**inconclusive** \(sign test p 0\.144\) |")
    assert f"<td class=\"v\">{bound}</td>" in titles["html"]
    assert "inconclusive (sign test p 0.144)" in titles["html"]
