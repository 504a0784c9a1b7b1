"""The report as a reviewer reads it, from the command line: the interval that decided in the
row, the diagnosis before the rest, and one line that says what to do next."""

from __future__ import annotations

import html
import json
import re
import shlex
import shutil
from pathlib import Path

import pytest
from conftest import BASELINE, ROOT, RUNS, SNAPSHOT, gate
from test_report_words import _set

import retrieval_gate.gating.unjudged as unjudged
from retrieval_gate.core.untrusted import visible
from retrieval_gate.inputs.snapshot import fingerprint
from retrieval_gate.report.cells import p_value, signed

WIDTH = 160  # characters of a comparison table's line in the text report, at most


@pytest.fixture(scope="module")
def titles(tmp_path_factory) -> dict[str, str]:
    """``gate check`` of the Cranfield example's mistake (BM25 over the titles only): exit 1,
    Recall@10 and nDCG@10 regressions (nDCG@10 one the sign test alone would not flag). The
    text on standard output, the JSON, Markdown and HTML reports."""
    folder = tmp_path_factory.mktemp("titles")
    code, out, err = gate("check", "--no-config", "--snapshot", SNAPSHOT, "--baseline", BASELINE,
                          "--candidate", RUNS / "bm25-titles.trec", "--json",
                          folder / "r.json", "--markdown", folder / "r.md", "--html",
                          folder / "r.html")
    assert code == 1, err
    return {"text": out, **{kind: (folder / f"r.{kind}").read_text(encoding="utf-8")
                            for kind in ("json", "md", "html")}}


def test_the_row_shows_the_bound_that_decided(titles, tmp_path):
    """nDCG@10: Δ −0.0430, 95% CI [−0.0735, −0.0150], margin 0.02. The row shows the
    family's one-sided 97.5% bound (below 0), and the decision: a regression — the Holm-adjusted
    regression p is below α, though the sign test alone is not (92 better, 108 worse). Under
    the rule before (bonferroni) the sign test is a condition, and the decision says it failed."""
    ndcg = next(c for c in json.loads(titles["json"])["comparisons"] if c["measure"] == "nDCG@10")
    assert ndcg["decision"] == "regression" and ndcg["ci_high"] < 0
    assert ndcg["ci_high_adjusted"] < 0 and ndcg["p_regression_holm"] < 0.05
    assert ndcg["sign_p_holm"] >= 0.05
    bound = f"≤ {signed(ndcg['ci_high_adjusted'])}"
    lines = titles["text"].splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("measure "))
    table = lines[header:lines.index("", header)]
    assert "  97.5% bound  " in table[0]
    [row] = [line for line in table if line.startswith("nDCG@10 ")]
    assert f"  {bound}  " in row and row.endswith("  0.02    regression")
    assert all(len(line) <= WIDTH for line in table)
    assert f"{bound}</td>" in titles["html"]

    (tmp_path / "gate.toml").write_text(f'snapshot = "{SNAPSHOT}"\nbaseline = "{BASELINE}"\n'
                                        'regression-test = "bonferroni"\n')
    code, out, _ = gate("check", "--config", tmp_path / "gate.toml", "--candidate",
                        RUNS / "bm25-titles.trec", "--json", tmp_path / "r.json", "--markdown",
                        tmp_path / "r.md", "--html", tmp_path / "r.html")
    assert code == 1
    before = next(c for c in json.loads((tmp_path / "r.json").read_text())["comparisons"]
                  if c["measure"] == "nDCG@10")
    assert before["decision"] == "inconclusive" and before["ci_high_adjusted"] < 0
    bound = f"≤ {signed(before['ci_high_adjusted'])}"
    [row] = [line for line in out.splitlines() if line.startswith("nDCG@10 ")]
    assert f"  {bound}  " in row
    assert row.endswith(f"  0.02    inconclusive (sign test p {p_value(before['sign_p_holm'])})")
    markdown = (tmp_path / "r.md").read_text(encoding="utf-8")
    assert ("| measure | slice | n | baseline | candidate | Δ | 95% CI | 97.5% bound | queries | "
            "margin | decision |") in markdown
    [md_row] = [line for line in markdown.splitlines()
                if line.startswith("| nDCG@10 | all | 225 |")]
    assert md_row.endswith(f"| {bound} | 92 better, 108 worse, 25 same | 0.02 | "
                           r"**inconclusive** \(sign test p 0\.144\) |")
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert f"<td class=\"v\">{bound}</td>" in page
    assert "inconclusive (sign test p 0.144)" in page


# -- the diagnosis first ---------------------------------------------------------------------

def _order(text: str, starts: list[str]) -> list[int]:
    """Where the first line starting with each of ``starts`` is (a ValueError if one is not
    there)."""
    lines = text.splitlines()
    return [next(i for i, line in enumerate(lines) if line.startswith(start))
            for start in starts]


DIAGNOSIS = ["measure ", "Newly failing queries", "Largest per-query drops",
             "What was retrieved instead"]
REST = ["Warnings:", "Detectable drop", "Regression p", "Definitions:"]


def test_the_text_report_puts_the_diagnosis_first(titles):
    """Verdict, the table, what regressed and where; then warnings, statistics, definitions."""
    at = _order(titles["text"], ["REGRESSION: ", "Next: ", *DIAGNOSIS, *REST])
    assert at == sorted(at) and at[:2] == [0, 1]


MARKDOWN = ["| measure |", "**Evidence funnel**", "<details><summary>Newly failing",
            "<details><summary>Largest per-query drops", "<details><summary>What was retrieved",
            "<details><summary>Unanswerable", "**Cost**", "<details><summary>Warnings",
            "<details><summary>How this was decided"]


def test_a_pipeline_shows_the_funnel_first_and_costs_with_the_rest(tmp_path):
    code, out, _ = gate("check", "--config", ROOT / "examples" / "pydoc" / "pipeline.toml",
                        "--markdown", tmp_path / "r.md")
    assert code == 1
    at = _order(out, ["measure ", "Evidence funnel", *DIAGNOSIS[1:], "Unanswerable queries",
                      "Cost ", *REST])
    assert at == sorted(at)
    at = _order((tmp_path / "r.md").read_text(encoding="utf-8"), MARKDOWN)
    assert at == sorted(at)


def test_a_cost_regression_is_shown_straight_after_the_table(tmp_path):
    """The pipeline example the other way round: the baseline system as the candidate takes
    ×1.22 the packing bug's time at p95, and the gate allows +10%."""
    folder = ROOT / "examples" / "pydoc"
    (tmp_path / "gate.toml").write_text(
        f'snapshot = "{folder / "pipeline-snapshot.json"}"\n'
        f'baseline = "{folder / "pipeline" / "packing-bug" / "context.jsonl"}"\n'
        f'candidate = "{folder / "pipeline" / "baseline" / "context.jsonl"}"\n'
        '[[gate]]\nmeasure = "Recall [context]"\nmargin = 0.08\n'
        '[[cost]]\nmetric = "latency_ms"\nstat = "p95"\nmax-increase = 0.1\n')
    code, out, err = gate("check", "--config", tmp_path / "gate.toml", "--markdown",
                          tmp_path / "r.md")
    assert code == 1, err
    assert out.startswith("REGRESSION: material regression in latency_ms p95")
    at = _order((tmp_path / "r.md").read_text(encoding="utf-8"),
                [MARKDOWN[0], MARKDOWN[6], *MARKDOWN[1:6], *MARKDOWN[7:]])
    assert at == sorted(at)
    lines = out.splitlines()
    table = _order(out, ["measure "])[0]
    assert lines[table + 2] == "" and lines[table + 3].startswith("Cost (")
    at = _order(out, ["Cost (", "Evidence funnel", "Newly failing queries", "Warnings:"])
    assert at == sorted(at)
    assert lines[1].startswith("Next: look at latency_ms p95: 9.9 → 12.1 (×1.223, ")


# -- what to do next -------------------------------------------------------------------------

def _next(*args: str | Path, folder: Path) -> tuple[str, str, str]:
    """``gate check ARGS``: the text report's line under the headline, and the Markdown and HTML
    reports' (HTML as the page's text)."""
    code, out, err = gate("check", *args, "--markdown", folder / "r.md", "--html",
                          folder / "r.html")
    assert code in (0, 1), err
    lines = out.splitlines()
    assert lines[1].startswith("Next: "), out
    markdown = (folder / "r.md").read_text(encoding="utf-8").splitlines()
    [in_markdown] = [line for line in markdown if line.startswith("**Next:** ")]
    assert markdown.index(in_markdown) == 5  # the paragraph after the headline's
    page = (folder / "r.html").read_text(encoding="utf-8")
    [in_html] = re.findall(r'<p class="next"><strong>Next:</strong> (.*)</p>', page)
    return lines[1].removeprefix("Next: "), in_markdown.removeprefix("**Next:** "), in_html


EXAMPLES = {  # gate check arguments → the line that says what to do next
    "regression: the diagnosis below": (
        ("--candidate", RUNS / "bm25-titles.trec"),
        "the largest drops and what was retrieved instead are below"),
    "regression: where the evidence was lost": (
        ("--config", ROOT / "examples" / "pydoc" / "pipeline.toml"),
        "look at stage context: it lost 58 more units"),
    "leaks": (("--config", ROOT / "examples" / "policies" / "gate.toml"),
              "fix the permission filter: the candidate returns items its askers may not see"),
    "regression of a decision": (
        ("--config", ROOT / "examples" / "policies" / "gate.toml", "--candidate",
         ROOT / "examples" / "policies" / "runs" / "eager-abstain.jsonl"),
        ("look at the 9 queries where FalseAbstain got worse (the JSON report has every "
         "query's values)")),
    "inconclusive: spread": (
        ("--config", ROOT / "examples" / "pydoc" / "gate.toml", "--gate", "Recall@10=0.03"),
        "add queries: about 441 would decide it"),
    "pass": ((), "nothing to do"),
}


@pytest.mark.parametrize("case", EXAMPLES)
def test_one_line_says_what_to_do_next(case, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    args, step = EXAMPLES[case]
    text, markdown, page = _next(*args, folder=tmp_path)
    assert text == step
    assert markdown.replace("\\", "").replace("\u200b", "") == f"{step}."
    assert html.unescape(page) == f"{step}."


def test_inconclusive_next_step_reuses_the_headline_count(tmp_path, monkeypatch):
    """Too few queries and too much spread: the count of queries that would decide is the
    headline's (at least min-queries)."""
    monkeypatch.chdir(ROOT)
    code, out, _ = gate("check", "--config", ROOT / "examples" / "pydoc" / "gate.toml",
                        "--gate", "Recall@10=0.03")
    assert code == 0
    first, second = out.splitlines()[:2]
    assert first.startswith("INCONCLUSIVE: ") and "would need about 441 queries" in first
    assert second == "Next: add queries: about 441 would decide it"
    (tmp_path / "gate.toml").write_text(
        f'snapshot = "{SNAPSHOT}"\nbaseline = "{BASELINE}"\n'
        f'candidate = "{RUNS / "hybrid.trec"}"\nmin-queries = 300\n')
    code, out, _ = gate("check", "--config", tmp_path / "gate.toml")
    first, second = out.splitlines()[:2]
    assert "only 225 queries, fewer than min-queries = 300" in first
    assert second == "Next: add queries: at least 300 are needed to certify anything"


def test_a_pool_bias_asks_for_judgments_first(tmp_path, monkeypatch):
    """The candidate surfaces clearly more unjudged items: judging them comes first, with the
    commands that do it — paths quoted for a shell, and shown as text (a folder named with a
    line break and a workflow command neither breaks the line nor runs)."""
    monkeypatch.setattr(unjudged, "POOL_ITEMS", 1)
    folder = tmp_path / "it's\n::error::here"
    folder.mkdir()
    runs = _set(folder, {"judged": {"q1": ["d1", "d2"], "q2": ["d3"]},
                         "new": {"q1": ["d1", "d7", "d8"], "q2": ["d3", "d5", "d6"]}})
    code, out, err = gate("check", "--no-config", "--snapshot", folder / "snapshot.json",
                          "--baseline", runs["judged"], "--candidate", runs["new"], "--gate",
                          "Recall@3=0.02", "--markdown", tmp_path / "r.md")
    assert code == 0, err
    snapshot, new, judged = (visible(shlex.quote(str(folder / name))) for name in
                             ("snapshot.json", "new.jsonl", "judged.jsonl"))
    assert out.splitlines()[1] == (
        f"Next: judge the candidate's unjudged items first: gate pool export --snapshot "
        f"{snapshot} --candidate {new} --baseline {judged} -k 3 -o pool.jsonl, then gate "
        "pool merge")
    assert not any(line.lstrip().startswith("::") for line in out.splitlines())
    [line] = [line for line in (tmp_path / "r.md").read_text(encoding="utf-8").splitlines()
              if line.startswith("**Next:** judge")]
    assert line.endswith("judged\\.jsonl' \\-k 3 \\-o pool\\.jsonl, then gate pool merge.")
    assert "s\\\\n::error::here" in line  # the line break escaped, the backslash too


@pytest.mark.parametrize("case", ["invalid", "not-comparable"])
def test_a_gate_that_could_not_decide_gives_the_errors_advice(tmp_path, case):
    candidate = tmp_path / "hybrid.trec"
    shutil.copy(RUNS / "hybrid.trec", candidate)
    manifest = json.loads((RUNS / "hybrid.trec.manifest.json").read_text())
    if case == "not-comparable":  # made on an earlier version of the judgments
        manifest["snapshot"]["components"]["qrels"]["version"] = "old"
        manifest["snapshot"]["fingerprint"] = fingerprint(manifest["snapshot"]["components"])
        (tmp_path / "hybrid.trec.manifest.json").write_text(json.dumps(manifest))
        advice = "candidate: re-run it on the current snapshot (qrels changed)"
    else:
        advice = ("write one beside the run with: gate run-manifest --snapshot SNAPSHOT --run "
                  f"{candidate} (for a file of per-query scores only: --scores {candidate})")
    code, _, err = gate("check", "--no-config", "--snapshot", SNAPSHOT, "--baseline", BASELINE,
                        "--candidate", candidate, "--markdown", tmp_path / "r.md", "--html",
                        tmp_path / "r.html")
    assert code == (3 if case == "not-comparable" else 2)
    assert advice in err
    markdown = (tmp_path / "r.md").read_text(encoding="utf-8").splitlines()
    [line] = [line for line in markdown if line.startswith("**Next:** ")]
    assert line.replace("\\", "").replace("\u200b", "") == f"**Next:** {advice}."
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert f"<p><strong>Next:</strong> {html.escape(advice)}.</p>" in page
