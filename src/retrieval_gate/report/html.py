"""The HTML report of ``gate check``: one self-contained page for a reviewer — the verdict, a
forest plot of every gated comparison, the sorted per-query differences of every gated
measure, the evidence funnel, costs and unanswerable queries, a per-query table, warnings and
definitions; and the page of a gate that could not decide.

Self-contained: inline CSS, inline SVG drawn here, and one small inline script that only makes
the per-query table sortable (everything is readable with JavaScript off). Nothing is loaded:
the page's Content-Security-Policy is ``default-src 'none'`` and allows only its own style
sheet and script, by their SHA-256 hashes, so even a slip in escaping could neither load a
resource nor run an injected script.

Every string from the inputs (paths, the snapshot's name, system fields, slices, measure names,
query ids and texts, warnings) goes through :func:`~retrieval_gate.report.safe.html`: cut to a
length per kind of value, made :func:`~retrieval_gate.core.untrusted.visible`, HTML-escaped
(also in attribute values), and with ``::`` and ``##[`` written as character references, so
that no line of the file is a GitHub workflow command when a job prints it. Deterministic: the same report gives the same
bytes (no clock time, no random identifiers).
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from retrieval_gate.core.untrusted import capped
from retrieval_gate.decide.policy import GatePolicy
from retrieval_gate.gating.outcome import Comparison, FunnelReport, QueryRow, Report, RunSummary
from retrieval_gate.report.cells import (
    Labels,
    bootstrap_name,
    deciding_bound,
    decision_reason,
    decision_words,
    detectable,
    interval,
    labels,
    mean_cell,
    sentence,
    signed,
    test_p,
    wins_losses_ties,
)
from retrieval_gate.report.safe import LINE, NAME, PATH, TEXT
from retrieval_gate.report.safe import html as escape
from retrieval_gate.report.sections import (
    Table,
    abstention_note,
    cost_notes,
    cost_rule,
    cost_table,
    funnel_table,
    leak_summary,
    leak_table,
    leaks_not_shown,
    score_lines,
    statistics,
    timed_on,
    unanswerable_table,
)
from retrieval_gate.report.verdict import (
    ERRORS_SHOWN,
    chunkings,
    error_lines,
    error_verdict,
    failure_step,
    headline,
    next_step,
)

__all__ = ["CONTENT_SECURITY_POLICY", "failure_html", "report_html"]

_SHORT = 26  # characters of a measure's name beside a plot (the full name is in its tooltip)
_NEWLY_FAILING_SHOWN = 50

# Okabe–Ito, a palette told apart with every common colour-vision deficiency; every mark also
# has its own shape and a text label, so colour is never the only cue.
_COLOUR = {"regression": "#D55E00", "inconclusive": "#E69F00", "pass": "#009E73",
           "improved": "#0072B2", "win": "#0072B2", "loss": "#D55E00", "tie": "#7a7a7a"}
_INK = "#222"


# --------------------------------------------------------------------------------------------
# The page's own style sheet and script, allowed by hash.

_CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",sans-serif;
color:#1d1d1f;background:#fff;margin:0 auto;max-width:1180px;padding:0 16px 48px}
h1{font-size:1.5rem;margin:0}h2{font-size:1.2rem;margin:2rem 0 .5rem;
border-bottom:1px solid #ddd;padding-bottom:.2rem}h3{font-size:1rem;margin:1.2rem 0 .3rem}
code,.num,td.v{font-family:ui-monospace,"SFMono-Regular",Menlo,Consolas,monospace;
font-size:.9em}
.verdict{border-left:8px solid;padding:12px 16px;margin:16px 0;background:#f6f6f6}
.verdict.pass{border-color:#009E73;background:#eef8f4}
.verdict.regression{border-color:#D55E00;background:#fcf0e8}
.verdict.inconclusive{border-color:#E69F00;background:#fdf6e6}
.status{font-weight:800;letter-spacing:.04em;margin-right:.4em}
.why{font-size:1.1rem;margin:.4rem 0 .6rem}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:0}
dl.facts dt{font-weight:600}dl.facts dd{margin:0;overflow-wrap:anywhere}
nav{font-size:.9rem}nav a{margin-right:1em}
table{border-collapse:collapse;margin:.4rem 0 1rem;font-size:.88rem}
th,td{border-bottom:1px solid #e3e3e3;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.v{text-align:right;white-space:nowrap}
td.text{min-width:260px;max-width:420px;overflow-wrap:anywhere}
.leaks{border:2px solid #D55E00;padding:8px 14px;margin:12px 0;background:#fff7f2}
.leaks h2{margin-top:.3rem}
figure{margin:.5rem 0 1.2rem}figcaption{font-size:.88rem;color:#444;margin-top:.2rem}
svg{display:block;width:100%;height:auto;font-family:inherit}
svg text{fill:#1d1d1f}svg .small{font-size:11px;fill:#444}
svg .mono{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}
.q:hover{opacity:.6}
ul.legend{list-style:none;padding:0;margin:.3rem 0;display:flex;flex-wrap:wrap;gap:4px 18px;
font-size:.88rem}ul.legend svg{display:inline;width:14px;height:14px;vertical-align:-2px}
.scroll{overflow-x:auto}
th button{font:inherit;font-weight:600;border:0;background:none;padding:0;cursor:pointer;
text-align:left}
th[aria-sort=ascending] button::after{content:" \\25B2"}
th[aria-sort=descending] button::after{content:" \\25BC"}
.note{color:#444;font-size:.9rem}
"""

_SCRIPT = """
"use strict";
(function () {
  function key(row, column) {
    var cell = row.cells[column];
    var value = cell.getAttribute("data-v");
    return value === null ? cell.textContent : parseFloat(value);
  }
  function compare(a, b) {
    if (typeof a === "number" && typeof b === "number") { return a - b; }
    return String(a).localeCompare(String(b), "en", {numeric: true});
  }
  function sortBy(table, th, column) {
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    var cells = table.tHead.rows[0].cells;
    for (var i = 0; i < cells.length; i++) { cells[i].removeAttribute("aria-sort"); }
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var order = compare(key(a, column), key(b, column));
      if (order !== 0) { return ascending ? order : -order; }
      return Number(a.getAttribute("data-i")) - Number(b.getAttribute("data-i"));
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }
  var tables = document.querySelectorAll("table.sortable");
  Array.prototype.forEach.call(tables, function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, column) {
      var button = document.createElement("button");
      button.type = "button";
      button.textContent = th.textContent;
      th.textContent = "";
      th.appendChild(button);
      button.addEventListener("click", function () { sortBy(table, th, column); });
    });
  });
}());
"""


def _sha256(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode()).digest()).decode() + "'"


CONTENT_SECURITY_POLICY = (f"default-src 'none'; style-src {_sha256(_CSS)}; "
                           f"script-src {_sha256(_SCRIPT)}; base-uri 'none'; form-action 'none'")


# --------------------------------------------------------------------------------------------
# Small HTML and SVG helpers


def _n(value: float) -> str:
    """An SVG coordinate: one decimal, no ``-0.0``."""
    text = f"{value:.1f}"
    return "0.0" if text == "-0.0" else text


def _table(rows: Sequence[Sequence[str]], numeric: Iterable[int] = (), limit: int = NAME
           ) -> str:
    """A header row and body rows of plain cells (every cell escaped); ``numeric`` columns
    right-aligned. Empty for no rows."""
    if not rows:
        return ""
    right = set(numeric)
    head = "".join(f"<th>{escape(cell, limit)}</th>" for cell in rows[0])
    body = "\n".join(
        "<tr>" + "".join(f'<td class="v">{escape(cell, limit)}</td>' if i in right else
                         f"<td>{escape(cell, limit)}</td>" for i, cell in enumerate(row)) + "</tr>"
        for row in rows[1:])
    return (f'<div class="scroll"><table><thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n'
            "</tbody></table></div>")


def _drawn(table: Table) -> str:
    """A section's table. A page wraps long cells, so each may show as much of a value from the
    inputs as the table's widest column allows."""
    return _table(table.rows, table.numeric, max(n for n in table.limits if n is not None))


def _ticks(low: float, high: float, count: int = 6) -> list[float]:
    """Round tick values covering [low, high] (about ``count`` of them)."""
    raw = (high - low) / count
    magnitude = 10.0 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    return [round(i * step, 12) + 0.0 for i in range(math.ceil(low / step - 1e-9),
                                                     math.floor(high / step + 1e-9) + 1)]


def _tick_label(value: float) -> str:
    return "0" if value == 0 else f"{value:+g}".replace("-", "−")


@dataclass(frozen=True)
class _Scale:
    """A linear map from data values in [low, high] to pixels in [start, end]."""

    low: float
    high: float
    start: float
    end: float

    @classmethod
    def covering(cls, values: Iterable[float], start: float, end: float,
                 pad: float = 0.06) -> _Scale:
        """A scale over ``values`` (and 0), widened by ``pad`` of its span on both sides."""
        points = [0.0, *values]
        low, high = min(points), max(points)
        if high - low < 1e-12:
            low, high = low - 1.0, high + 1.0
        span = high - low
        return cls(low - pad * span, high + pad * span, start, end)

    def __call__(self, value: float) -> float:
        return self.start + (value - self.low) / (self.high - self.low) * (self.end - self.start)


def _shape(kind: str, x: float, y: float, r: float = 6.5) -> str:
    """The mark of a decision: a square (regression), a diamond (inconclusive), a circle
    (pass) or an upward triangle (pass, improved)."""
    paint = f'fill="{_COLOUR[kind]}" stroke="{_INK}" stroke-width="1.2"'
    if kind == "regression":
        return (f'<rect x="{_n(x - r)}" y="{_n(y - r)}" width="{_n(2 * r)}" '
                f'height="{_n(2 * r)}" {paint}/>')
    if kind == "inconclusive":
        r *= 1.3
        points = [(x, y - r), (x + r, y), (x, y + r), (x - r, y)]
    elif kind == "improved":
        r *= 1.25
        points = [(x, y - r), (x + r, y + 0.8 * r), (x - r, y + 0.8 * r)]
    else:
        return f'<circle cx="{_n(x)}" cy="{_n(y)}" r="{_n(r)}" {paint}/>'
    return ('<polygon points="' + " ".join(f"{_n(px)},{_n(py)}" for px, py in points)
            + f'" {paint}/>')


def _kind(c: Comparison) -> str:
    """The mark of a comparison: its decision, or ``improved`` for an improving pass."""
    return "improved" if c.decision == "pass" and c.improvement else c.decision


def _legend() -> str:
    """The forest plot's key: shape, colour and words of each decision, and the margin."""
    items = (("regression", "regression"), ("inconclusive", "inconclusive"), ("pass", "pass"),
             ("improved", "pass, improved (whole interval better than 0)"))
    marks = "".join(f'<li><svg viewBox="0 0 16 16" aria-hidden="true">{_shape(kind, 8, 8, 5)}'
                    f"</svg> {words}</li>" for kind, words in items)
    margin = ('<li><svg viewBox="0 0 16 16" aria-hidden="true"><line x1="8" y1="0" x2="8" '
              f'y2="16" stroke="{_COLOUR["regression"]}" stroke-width="2" '
              'stroke-dasharray="3 2"/></svg> margin: a change beyond it is material</li>')
    return f'<ul class="legend">{marks}{margin}</ul>'


# --------------------------------------------------------------------------------------------
# 1. The verdict


def _system(summary: RunSummary) -> str:
    """A run's manifest ``system`` as ``key=value`` pairs (nested values as JSON)."""
    def shown(value: Any) -> str:
        return value if isinstance(value, str) else json.dumps(value, sort_keys=True,
                                                               ensure_ascii=False)
    return ", ".join(f"{key}={shown(value)}" for key, value in summary.system.items()) or "-"


def _verdict(report: Report, lab: Labels) -> str:
    word, why = headline(report)
    snap = report.snapshot
    n_all = max((c.n for c in report.comparisons if c.slice == "all"), default=len(report.queries))
    facts = [
        ("exit code", f"<span class=\"num\">{report.exit_code}</span>"),
        ("candidate", f"<code>{escape(report.candidate.path, PATH)}</code>"),
        ("candidate system", escape(_system(report.candidate), LINE)),
        ("baseline", f"<code>{escape(report.baseline.path, PATH)}</code>"),
        ("baseline system", escape(_system(report.baseline), LINE)),
        ("snapshot", (f"{escape(snap.name, NAME)} <code>{escape(snap.fingerprint, NAME)}</code>, "
                     f"{n_all} answerable queries")),
        ("evidence", escape(chunkings(report, lambda name: capped(name, NAME)), LINE)),
        ("statistics", escape(statistics(report, lab), LINE)),
        *([("config", f"<code>{escape(report.config, PATH)}</code>")] if report.config else []),
    ]
    rows = "\n".join(f"<dt>{name}</dt><dd>{value}</dd>" for name, value in facts)
    return (f'<header class="verdict {report.verdict}" id="verdict">\n'
            f'<h1><span class="status">{word}</span> retrieval-gate report</h1>\n'
            f'<p class="why">{escape(sentence(why), 5 * LINE)}.</p>\n'
            f'<p class="next"><strong>Next:</strong> {escape(next_step(report), 2 * LINE)}.</p>\n'
            f'<dl class="facts">\n{rows}\n</dl>\n</header>')


def _leaks(report: Report, lab: Labels) -> str:
    """The leaks, before anything else: a sentence, the first rows, how many more."""
    summary = leak_summary(report)
    if summary is None:
        return ""
    more = leaks_not_shown(report)
    return ('<section class="leaks" id="leaks">\n<h2>Leaks</h2>\n'
            f"<p><strong>{escape(sentence(summary), 2 * LINE)}.</strong></p>\n"
            + _drawn(leak_table(report))
            + (f"<p>{escape(more)}</p>" if more else "") + "\n</section>")


# --------------------------------------------------------------------------------------------
# 2. The forest plot

_FOREST_W, _LABEL_END, _PLOT_L, _PLOT_R = 1100, 196, 210, 700
_ROW_H, _TOP, _BOTTOM = 36, 30, 34


def _margin_at(c: Comparison) -> float:
    """Where a comparison's margin lies on the Δ axis: −margin, or +margin when lower is
    better (a rise is the regression)."""
    return c.margin if c.lower_is_better else -c.margin


def _forest(comparisons: Sequence[Comparison], slice_name: str, number: int, lab: Labels
            ) -> str:
    """One slice's forest plot: per gated measure, Δ as a mark and its interval as a line, the
    zero line, and the margin as a dashed line in the row, with the numbers beside."""
    scale = _Scale.covering([v for c in comparisons for v in
                             (c.ci_low, c.ci_high, c.mean_diff, _margin_at(c))],
                            _PLOT_L, _PLOT_R)
    height = _TOP + _ROW_H * len(comparisons) + _BOTTOM
    bottom = height - _BOTTOM
    parts = [(f'<svg class="forest" viewBox="0 0 {_FOREST_W} {height}" role="img" '
             f'aria-labelledby="forest-{number}-title" '
             f'data-slice="{escape(slice_name, NAME)}">'),
             (f'<title id="forest-{number}-title">Forest plot of slice '
             f'{escape(slice_name, NAME)}: mean difference and {lab.ci} per gated measure'
             "</title>")]
    for tick in _ticks(scale.low, scale.high):
        x = scale(tick)
        parts.append(f'<line x1="{_n(x)}" y1="{_TOP - 6}" x2="{_n(x)}" y2="{bottom}" '
                     f'stroke="{"#555" if tick == 0 else "#e4e4e4"}" '
                     f'stroke-width="{1.5 if tick == 0 else 1}"/>'
                     f'<text x="{_n(x)}" y="{bottom + 16}" text-anchor="middle" '
                     f'class="small">{_tick_label(tick)}</text>')
    parts.append(f'<text x="{(_PLOT_L + _PLOT_R) // 2}" y="{bottom + 31}" text-anchor="middle" '
                 'class="small">Δ = candidate − baseline (mean over the queries)</text>'
                 f'<text x="{_PLOT_R + 14}" y="{_TOP - 10}" class="small">Δ [{lab.ci}] · '
                 "margin · decision</text>")
    for i, c in enumerate(comparisons):
        parts.append(_forest_row(c, scale, _TOP + _ROW_H * i, lab))
    parts.append("</svg>")
    return "\n".join(parts)


def _forest_row(c: Comparison, scale: _Scale, top: float, lab: Labels) -> str:
    """One measure's row of a forest plot."""
    y = top + _ROW_H / 2
    kind = _kind(c)
    colour = _COLOUR[kind]
    margin_x = scale(_margin_at(c))
    material = ((margin_x, _PLOT_R) if c.lower_is_better else (_PLOT_L, margin_x))
    low, high = scale(c.ci_low), scale(c.ci_high)
    words = (f"{signed(c.mean_diff)} {interval(c.ci_low, c.ci_high)} · "
             f"{'+' if c.lower_is_better else '−'}{c.margin:g} · {decision_words(c.decision, c.improvement)}")
    tooltip = (f"{escape(c.measure, NAME)}: Δ {signed(c.mean_diff)}, {lab.ci} "
               f"{interval(c.ci_low, c.ci_high)}, margin {c.margin:g}"
               f"{' (lower is better: a rise is the regression)' if c.lower_is_better else ''}"
               f", n = {c.n}, {decision_words(c.decision, c.improvement)}")
    return "\n".join([
        f'<g class="comparison {kind}" data-measure="{escape(c.measure, NAME)}">',
        f"<title>{tooltip}</title>",
        (f'<rect x="{_n(material[0])}" y="{_n(top + 3)}" width="{_n(material[1] - material[0])}" '
        f'height="{_ROW_H - 6}" fill="{_COLOUR["regression"]}" fill-opacity="0.07"/>'),
        (f'<line x1="{_n(margin_x)}" y1="{_n(top + 2)}" x2="{_n(margin_x)}" '
        f'y2="{_n(top + _ROW_H - 2)}" stroke="{_COLOUR["regression"]}" stroke-width="2" '
        'stroke-dasharray="4 3"/>'),
        (f'<text x="{_LABEL_END}" y="{_n(y + 4)}" text-anchor="end">'
        f"{escape(c.measure, _SHORT)}</text>"),
        (f'<line x1="{_n(low)}" y1="{_n(y)}" x2="{_n(high)}" y2="{_n(y)}" stroke="{colour}" '
        'stroke-width="3"/>'),
        *(f'<line x1="{_n(x)}" y1="{_n(y - 6)}" x2="{_n(x)}" y2="{_n(y + 6)}" '
          f'stroke="{colour}" stroke-width="2"/>' for x in (low, high)),
        _shape(kind, scale(c.mean_diff), y),
        f'<text x="{_PLOT_R + 14}" y="{_n(y + 4)}" class="mono">{words}</text>',
        "</g>"])


def _comparison_table(comparisons: Sequence[Comparison], lab: Labels, policy: GatePolicy
                      ) -> str:
    """The forest plot's numbers, with what the plot cannot show (the deciding bound, W/L/T,
    p, detectable drop, why a decision is what it is, notes)."""
    rows = [["measure", "slice", "n", "baseline", "candidate", "Δ", lab.ci, lab.bound, "W/L/T",
             lab.p, "margin at", f"detectable drop ({lab.power})", "decision"]]
    for c in comparisons:
        notes = "; ".join(filter(None, [c.decision_note, c.ci_note]))
        why = decision_reason(c, policy)
        rows.append([c.measure, c.slice, str(c.n), mean_cell(c.baseline_mean),
                     mean_cell(c.candidate_mean), signed(c.mean_diff),
                     interval(c.ci_low, c.ci_high), deciding_bound(c), wins_losses_ties(c),
                     test_p(c, policy),
                     f"{'+' if c.lower_is_better else '−'}{c.margin:g}",
                     detectable(c),
                     decision_words(c.decision, c.improvement) + (f" ({why})" if why else "")
                     + (f" — {notes}" if notes else "")])
    return _table(rows, numeric=(2, 3, 4, 5, 6, 7, 9, 11), limit=LINE)


def _forests(report: Report, lab: Labels) -> str:
    """Section 2: a forest plot per slice, its key and the comparisons' numbers."""
    slices = list(dict.fromkeys(c.slice for c in report.comparisons))
    parts = ['<section id="comparisons">', "<h2>Gated comparisons</h2>", _legend()]
    for number, name in enumerate(slices):
        rows = [c for c in report.comparisons if c.slice == name]
        parts += ["<figure>", _forest(rows, name, number, lab),
                  (f"<figcaption>Slice <strong>{escape(name, NAME)}</strong>: per gated measure, "
                  f"the mean per-query difference Δ (mark) and its {lab.ci} (line); the "
                  "dashed line is the margin, the shaded side a material change (for a "
                  "measure where lower is better, a rise).</figcaption>"), "</figure>"]
    if report.comparisons:
        parts.append(_comparison_table(report.comparisons, lab, report.policy))
    parts.append("</section>")
    return "\n".join(parts)


# --------------------------------------------------------------------------------------------
# 3. Sorted per-query differences

_QUERY_W, _QUERY_H, _Q_L, _Q_R, _Q_TOP, _Q_BOTTOM = 1100, 250, 64, 1090, 14, 226


def _plotted(report: Report) -> list[Comparison]:
    """One comparison per gated measure with per-query values in the report (slice ``all``
    when gated there, else its first slice)."""
    chosen: dict[str, Comparison] = {}
    for c in report.comparisons:
        if c.measure not in chosen or (c.slice == "all" and chosen[c.measure].slice != "all"):
            chosen[c.measure] = c
    have = {name for row in report.queries for name in row.baseline}
    return [c for c in chosen.values() if c.measure in have]


def _valued(report: Report, c: Comparison) -> list[int]:
    """The queries with a value of ``c``'s measure in both runs (a gated score's pair dropped
    for a failed score has none)."""
    return [i for i, row in enumerate(report.queries)
            if row.baseline.get(c.measure) is not None
            and row.candidate.get(c.measure) is not None]


def _better(c: Comparison, row: QueryRow) -> float:
    """How much better the candidate is on one query: candidate − baseline, turned round when
    lower is better (the query has a value in both runs: :func:`_valued`)."""
    base, cand = row.baseline[c.measure], row.candidate[c.measure]
    assert base is not None and cand is not None
    return -(cand - base) if c.lower_is_better else cand - base


def _outcome(better: float, tie_band: float) -> str:
    return "win" if better > tie_band else "loss" if better < -tie_band else "tie"


def _query_plot(report: Report, c: Comparison, lab: Labels) -> str:
    """One gated measure's per-query differences, sorted: one bar per query (a tie is a thin
    mark on the zero line), wins above, losses below, each with its query in a tooltip."""
    band = report.policy.tie_band
    order = sorted(_valued(report, c), key=lambda i: (-_better(c, report.queries[i]), i))
    values = [_better(c, report.queries[i]) for i in order]
    scale = _Scale.covering(values, _Q_BOTTOM, _Q_TOP, pad=0.04)
    zero = scale(0.0)
    step = (_Q_R - _Q_L) / max(len(order), 1)
    width = step * (0.8 if step > 3 else 1.0)
    counts = {"win": 0, "loss": 0, "tie": 0}
    parts = [(f'<svg class="per-query" viewBox="0 0 {_QUERY_W} {_QUERY_H}" role="img" '
             f'data-measure="{escape(c.measure, NAME)}" data-queries="{len(order)}">'),
             f"<title>Per-query differences of {escape(c.measure, NAME)}, sorted</title>"]
    for tick in _ticks(scale.low, scale.high, 5):
        y = scale(tick)
        parts.append(f'<line x1="{_Q_L}" y1="{_n(y)}" x2="{_Q_R}" y2="{_n(y)}" stroke="#ececec"/>'
                     f'<text x="{_Q_L - 6}" y="{_n(y + 4)}" text-anchor="end" '
                     f'class="small">{_tick_label(tick)}</text>')
    for slot, (i, value) in enumerate(zip(order, values)):
        row = report.queries[i]
        outcome = _outcome(value, band)
        counts[outcome] += 1
        top, bottom = sorted((scale(value), zero))
        if bottom - top < 1.5:
            top, bottom = zero - 0.75, zero + 0.75
        base, cand = row.baseline[c.measure], row.candidate[c.measure]
        assert base is not None and cand is not None  # only valued queries are plotted
        parts.append(
            f'<rect class="q {outcome}" data-query="{escape(row.query, NAME)}" '
            f'x="{_n(_Q_L + slot * step)}" y="{_n(top)}" width="{width:.2f}" '
            f'height="{_n(bottom - top)}" fill="{_COLOUR[outcome]}"><title>'
            f"{escape(row.query, NAME)}: {escape(row.text, TEXT)}\n"
            f"baseline {base:.4f} → candidate {cand:.4f} (Δ {signed(cand - base)})"
            "</title></rect>")
    direction = " (lower is better: a fall is a win)" if c.lower_is_better else ""
    parts += [(f'<line x1="{_Q_L}" y1="{_n(zero)}" x2="{_Q_R}" y2="{_n(zero)}" stroke="#333" '
              'stroke-width="1.2"/>'),
              (f'<text x="{_Q_R - 4}" y="{_Q_TOP + 12}" text-anchor="end" class="small">'
               f"▲ candidate better ({counts['win']})</text>"),
              (f'<text x="{_Q_L + 6}" y="{_Q_BOTTOM - 6}" class="small">'
               f"▼ candidate worse ({counts['loss']})</text>"),
              (f'<text x="{_Q_R}" y="{_QUERY_H - 6}" text-anchor="end" class="small">'
              f"{len(order)} queries, sorted by how much better the candidate is{direction}"
              "</text>"),
              "</svg>"]
    caption = (f"<figcaption>{escape(c.measure, NAME)}: {counts['win']} queries better, "
               f"{counts['loss']} worse, {counts['tie']} tied (tie band {band:g}); slice "
               f"{escape(c.slice, NAME)}: mean Δ {signed(c.mean_diff)}, {lab.ci} "
               f"{interval(c.ci_low, c.ci_high)} — "
               f"{decision_words(c.decision, c.improvement)}. Hover a bar for its query.</figcaption>")
    return f"<figure>\n<h3>{escape(c.measure, NAME)}</h3>\n" + "\n".join(parts) + \
        f"\n{caption}\n</figure>"


def _per_query(report: Report, lab: Labels) -> str:
    """Section 3: the sorted per-query differences of every gated measure."""
    plotted = _plotted(report)
    if not plotted:
        return ""
    missing = [c.measure for c in report.comparisons
               if c.measure not in {p.measure for p in plotted}]
    note = ("" if not missing else
            f'<p class="note">Not plotted (a decision per query, not a score in the per-query '
            f"data): {escape(', '.join(dict.fromkeys(missing)), LINE)}.</p>")
    return "\n".join(['<section id="per-query">', "<h2>Per-query differences</h2>",
                      ('<p class="note">Every answerable query, candidate − baseline, sorted; '
                      "wins above the zero line, losses below.</p>"),
                      *(_query_plot(report, c, lab) for c in plotted), note, "</section>"])


# --------------------------------------------------------------------------------------------
# 4. Funnel, costs, unanswerable queries

_FUNNEL_W, _F_L, _F_R, _F_ROW = 1100, 330, 900, 44


def _funnel_plot(funnel: FunnelReport) -> str:
    """Relevant units reaching each stage, baseline and candidate bars side by side, labelled."""
    height = 16 + _F_ROW * len(funnel.reaching)
    total = max(funnel.units, 1)
    parts = [f'<svg class="funnel" viewBox="0 0 {_FUNNEL_W} {height}" role="img">',
             f"<title>Relevant units reaching each stage, of {funnel.units}</title>"]
    for i, ((_, base, cand), described) in enumerate(zip(funnel.reaching, funnel.stages)):
        top = 8 + _F_ROW * i
        parts.append(f'<text x="{_F_L - 10}" y="{top + 24}" text-anchor="end">reach '
                     f"{escape(described, NAME)}</text>")
        for j, (role, value, colour) in enumerate((("baseline", base, "#56B4E9"),
                                                   ("candidate", cand, "#0072B2"))):
            y = top + 2 + j * 19
            w = (_F_R - _F_L) * value / total
            parts.append(f'<rect x="{_F_L}" y="{y}" width="{_n(w)}" height="16" '
                         f'fill="{colour}"/><text x="{_n(_F_L + w + 6)}" y="{y + 13}" '
                         f'class="small">{role} {value}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def _funnel(report: Report, lab: Labels) -> str:
    funnel = report.funnel
    if funnel is None:
        return ""
    return "\n".join(['<section id="funnel">', "<h2>Evidence funnel</h2>",
                      (f"<p>{funnel.units} relevant units of the answerable queries; where each "
                      "was lost first.</p>"), "<figure>", _funnel_plot(funnel), "</figure>",
                      _drawn(funnel_table(funnel)),
                      "</section>"])


def _costs(report: Report, lab: Labels) -> str:
    table = cost_table(report)
    if not table.rows:
        return ""
    where = timed_on(report, lambda place: escape(place, TEXT))
    return "\n".join(['<section id="costs">', "<h2>Cost</h2>",
                      ("<p>Paired over the queries both runs record"
                       + (f"; {where}" if where else "") + ".</p>"),
                      _drawn(table),
                      *(f'<p class="note">{escape(note, 2 * LINE)}.</p>'
                        for note in cost_notes(report)),
                      f'<p class="note">Rule: {escape(cost_rule(report), LINE)}.</p>',
                      "</section>"])


def _scores(report: Report, lab: Labels) -> str:
    """The gated per-query scores: kind, samples, spread, failed scores, files and judges."""
    lines = score_lines(report)
    if not lines:
        return ""
    return "\n".join(['<section id="scores">', "<h2>Per-query scores</h2>", "<ul>",
                      *(f"<li>{escape(line, 2 * LINE)}</li>" for line in lines), "</ul>",
                      "</section>"])


def _unanswerable(report: Report, lab: Labels) -> str:
    table = unanswerable_table(report)
    if not table.rows:
        return ""
    note = abstention_note(report)
    return "\n".join(['<section id="unanswerable">',
                      f"<h2>Unanswerable queries ({len(table.rows) - 1})</h2>",
                      f"<p>{escape(sentence(note), 2 * LINE)}.</p>" if note else "",
                      _drawn(table), "</section>"])


# --------------------------------------------------------------------------------------------
# 5. The per-query table


def _value_cell(value: float | None) -> str:
    """A value of the query table; a dropped pair's (None) is shown as a dash (sorted as
    text)."""
    if value is None:
        return '<td class="v">-</td>'
    return f'<td class="v" data-v="{value!r}">{value:.4f}</td>'


def _diff_cell(base: float | None, cand: float | None) -> str:
    if base is None or cand is None:
        return _value_cell(None)
    value = cand - base
    return f'<td class="v" data-v="{value + 0.0!r}">{signed(value)}</td>'


def _query_table(report: Report, lab: Labels) -> str:
    """Section 5: every answerable query with each plotted measure's values in both runs and
    their difference; sortable by any column when scripts run."""
    plotted = _plotted(report)
    if not report.queries:
        return ""
    tagged = any(row.slices != ("all",) for row in report.queries)
    head = ["query", "text", *(["slices"] if tagged else []),
            *(f"{escape(c.measure, NAME)} {part}" for c in plotted
              for part in ("baseline", "candidate", "Δ"))]
    lines = ['<section id="queries">', f"<h2>Queries ({len(report.queries)})</h2>",
             '<p class="note">Click a column header to sort (original order on ties).</p>',
             '<div class="scroll"><table class="sortable" id="query-table"><thead><tr>'
             + "".join(f"<th>{cell}</th>" for cell in head) + "</tr></thead>", "<tbody>"]
    for i, row in enumerate(report.queries):
        cells = [f"<td><code>{escape(row.query, NAME)}</code></td>",
                 f'<td class="text">{escape(row.text, TEXT)}</td>',
                 *([f"<td>{escape(', '.join(row.slices), NAME)}</td>"] if tagged else [])]
        for c in plotted:
            base, cand = row.baseline[c.measure], row.candidate[c.measure]
            cells += [_value_cell(base), _value_cell(cand), _diff_cell(base, cand)]
        lines.append(f'<tr data-i="{i}">' + "".join(cells) + "</tr>")
    lines += ["</tbody></table></div>", _newly_failing(report), "</section>"]
    return "\n".join(lines)


def _newly_failing(report: Report) -> str:
    failing = report.newly_failing
    if not failing:
        return ""
    items = "\n".join(f"<li><code>{escape(q.query, NAME)}</code> {escape(q.text, TEXT)}</li>"
                      for q in failing[:_NEWLY_FAILING_SHOWN])
    more = (f"<p>… and {len(failing) - _NEWLY_FAILING_SHOWN} more (see the JSON report)</p>"
            if len(failing) > _NEWLY_FAILING_SHOWN else "")
    return (f"<h3>Newly failing queries ({len(failing)})</h3>\n<p>"
            f"{escape(report.hit_measure, NAME)} = 1 in the baseline, 0 in the candidate.</p>\n"
            f"<ul>\n{items}\n</ul>{more}")


# --------------------------------------------------------------------------------------------
# 6. Warnings and definitions


def _notes(report: Report, lab: Labels) -> str:
    snap, policy = report.snapshot, report.policy
    warnings = "\n".join(f"<li>{escape(w)}</li>" for w in report.warnings)
    definitions = "\n".join(f"<li>{escape(m.describe(snap.policy.threshold))}</li>"
                            for m in report.defined)
    decided = [
        (f"α = {policy.alpha:g}; {policy.resamples} {bootstrap_name(policy)} bootstrap resamples of the queries, "
        f"seed {policy.seed}; tie band {policy.tie_band:g}; regression rule "
        f"{policy.regression_rule}, test {policy.regression_test}; min-queries "
        f"{policy.min_queries}; fail on {policy.fail_on}"),
        f"rule: {lab.rule}",
        *([f"cost: {cost_rule(report)}"] if policy.costs else []),
    ]
    return "\n".join(['<section id="notes">',
                      *([f"<h2>Warnings ({len(report.warnings)})</h2>",
                         f"<ul>\n{warnings}\n</ul>"] if report.warnings else []),
                      "<h2>How this was decided</h2>",
                      "<ul>\n" + "\n".join(f"<li>{escape(line, 2 * LINE)}</li>"
                                            for line in decided) + "\n</ul>",
                      "<h3>Definitions</h3>", f"<ul>\n{definitions}\n</ul>", "</section>"])


# --------------------------------------------------------------------------------------------
# The page

_Section = Callable[[Report, Labels], str]

# The sections after the verdict, in the page's order: (anchor, link text, section). The
# navigation links every section shown (not empty) that has a link text; the leaks come before
# it, to be read first.
_SECTIONS: tuple[tuple[str, str | None, _Section], ...] = (
    ("leaks", "Leaks", _leaks), ("comparisons", "Comparisons", _forests),
    ("per-query", "Per-query differences", _per_query), ("funnel", "Funnel", _funnel),
    ("costs", "Cost", _costs), ("scores", "Scores", _scores),
    ("unanswerable", "Unanswerable", _unanswerable), ("queries", "Queries", _query_table),
    ("notes", "Notes", _notes))


def report_html(report: Report) -> str:
    """The report as one self-contained HTML5 page (see the module docstring)."""
    lab = labels(report.policy, report.family, report.family_costs)
    word, _ = headline(report)
    sections = [(anchor, name, section(report, lab)) for anchor, name, section in _SECTIONS]
    nav = "<nav>" + "".join(f'<a href="#{anchor}">{name}</a>'
                            for anchor, name, shown in sections if shown and name) + "</nav>"
    leaks, *others = (shown for _, _, shown in sections)
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">',
        '<meta name="referrer" content="no-referrer">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{word} · retrieval-gate · {escape(report.snapshot.name, NAME)}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        *filter(None, [_verdict(report, lab), leaks, nav, *others]),
        f"<script>{_SCRIPT}</script>",
        "</body>",
        "</html>",
        ""])


def failure_html(message: str, exit_code: int) -> str:
    """For a gate that could not decide: a page with the status, what to do next (the error's
    own advice) and the error lines (at most
    :data:`~retrieval_gate.report.verdict.ERRORS_SHOWN`), escaped, and never a workflow
    command in a log (as the report's own text)."""
    verdict = error_verdict(exit_code).upper()
    items = "".join(f"<li>{escape(line, LINE)}</li>\n"
                    for line in error_lines(message)[:ERRORS_SHOWN])
    step = failure_step(message)
    advice = ("" if step is None else
              f"<p><strong>Next:</strong> {escape(step, 2 * LINE)}.</p>\n")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "style-src 'unsafe-inline'\">\n"
            f"<title>{verdict}: retrieval-gate</title></head>\n<body>\n"
            f"<h1>{verdict} ⛔ retrieval-gate</h1>\n<p>The gate could not compare the runs "
            f"(exit {exit_code}).</p>\n{advice}<ul>\n{items}</ul>\n</body></html>\n")
