"""The HTML report: its markup as a parser reads it, and the page as a real browser shows it.

Unit tests (no browser) parse the page with the standard library's ``html.parser``: hostile
query ids and texts, system values, paths, slice names, warnings and stage names are text, never
markup, script or a workflow command in a log; one plotted mark per query in every per-query
plot; the policy's own levels in the labels; the Content-Security-Policy's hashes match the
page's style sheet and script; the same report gives the same bytes.

Browser tests open the embedded examples' pages from ``file://`` in headless Chromium (Debian's
``chromium`` package; CI installs it) and check what a reviewer gets: the verdict rendered, one
mark per query, no request but the page itself, no console error or uncaught exception, a
sortable table with scripts on and every section without them, and a screenshot
(``GATE_SCREENSHOT=1`` also writes ``docs/report-screenshot.png``).

How the browser is driven: the Chrome DevTools Protocol over ``--remote-debugging-pipe``
(JSON messages separated by NUL bytes on the browser's file descriptors 3 and 4), with the
small client below, standard library only. That is the transport Playwright itself uses to
drive Chromium, without its driver (a Node.js runtime in a 40 MB wheel, pinned to browser
builds it downloads) and without a WebSocket client or an open debugging port: nothing to
install but the browser, no port another process could reach. ``os.posix_spawn`` places the
pipe ends on descriptors 3 and 4 in the child (no ``preexec_fn``). ``--no-sandbox``: the
tests run as root in containers and on runners whose AppArmor forbids Chromium's user
namespaces; the only page loaded is the report itself (its policy forbids every load) or the
tests' own control page.
"""

from __future__ import annotations

import base64
import dataclasses
import fcntl
import hashlib
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT
from test_injection import PAYLOADS, assert_no_foreign_command

from retrieval_gate.core.untrusted import capped, visible
from retrieval_gate.gating.gate import run_gate
from retrieval_gate.gating.outcome import (
    FunnelReport,
    FunnelRow,
    QueryChange,
    Report,
    UnanswerableRow,
    UnanswerableSide,
)
from retrieval_gate.inputs.config import load_config
from retrieval_gate.report.cells import p_value, signed
from retrieval_gate.report.html import report_html
from retrieval_gate.report.safe import NAME, TEXT
from retrieval_gate.report.verdict import headline

EXAMPLES = {"cranfield": "pyproject.toml", "pipeline": "examples/pydoc/pipeline.toml",
            "policies": "examples/policies/gate.toml", "spans": "examples/pydoc/gate.toml",
            "answers": "examples/pydoc/answers.toml"}
HOSTILE = ['<script>alert(1)</script>', '"><img src=x onerror=alert(1)>', "a\u2028b",
           "::error::forged", "'><svg onload=alert(1)>", *PAYLOADS]
VIEWPORT = {"width": 1200, "height": 1600}


def build(config: str) -> Report:
    """The report of an embedded example, with paths as ``gate check`` in the repository
    shows them."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)
        cfg = load_config(config)
        return run_gate(cfg.snapshot, cfg.baseline, cfg.candidate, cfg.policy, str(cfg.source))


@pytest.fixture(scope="module")
def reports() -> dict[str, Report]:
    return {name: build(config) for name, config in EXAMPLES.items()}


def hostile_report(report: Report) -> Report:
    """``report`` with a payload in every string the inputs control."""
    side = UnanswerableSide(2, 1.5, 0, None)
    queries = tuple(dataclasses.replace(row, query=f"{payload}{i}", text=payload)
                    for i, (row, payload) in enumerate(zip(report.queries, HOSTILE)))
    system = {"name": HOSTILE[0], HOSTILE[1]: HOSTILE[2], "nested": {"x": HOSTILE[3]}}
    return dataclasses.replace(
        report,
        snapshot=dataclasses.replace(report.snapshot, name=HOSTILE[1]),
        baseline=dataclasses.replace(report.baseline, path=HOSTILE[0], system=system),
        candidate=dataclasses.replace(report.candidate, path=HOSTILE[3], system=system,
                                      timed_on=HOSTILE[4]),
        config=HOSTILE[2],
        comparisons=report.comparisons + tuple(dataclasses.replace(c, slice=HOSTILE[1])
                                               for c in report.comparisons),
        queries=queries + report.queries[len(queries):],
        newly_failing=tuple(QueryChange("Hit@10", p, p, 1.0, 0.0) for p in HOSTILE),
        warnings=tuple(HOSTILE),
        unanswerable=tuple(UnanswerableRow(p, p, side, side) for p in HOSTILE),
        funnel=FunnelReport((HOSTILE[0],), 10, ((HOSTILE[0], 5, 4),),
                            (FunnelRow(HOSTILE[1], HOSTILE[1], 1, 2),), None, ()))


# -- the page as a parser reads it -----------------------------------------------------------


class Page(HTMLParser):
    """The elements (tag, attributes) and the texts of an HTML page."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.texts: list[str] = []
        self.feed(page)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.texts.append(data)

    def marks(self) -> list[list[str | None]]:
        """Per per-query plot, the ``data-query`` of each plotted mark."""
        plots: list[list[str | None]] = []
        inside = False
        for tag, attrs in self.elements:
            classes = (attrs.get("class") or "").split()
            if tag == "svg":
                inside = "per-query" in classes
                if inside:
                    plots.append([])
            elif tag == "rect" and inside and "q" in classes:
                plots[-1].append(attrs.get("data-query"))
        return plots


def test_hostile_text_is_text(reports):
    report = hostile_report(reports["cranfield"])
    page = report_html(report)
    parsed = Page(page)
    # Not markup: only the page's own elements, one script, no handler, no link out.
    tags = {tag for tag, _ in parsed.elements}
    assert "img" not in tags and tags <= {
        "html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "h3", "span",
        "p", "dl", "dt", "dd", "code", "nav", "a", "section", "ul", "li", "svg", "rect",
        "circle", "polygon", "line", "text", "g", "figure", "figcaption", "div", "table",
        "thead", "tbody", "tr", "th", "td", "strong", "script"}
    assert [tag for tag, _ in parsed.elements].count("script") == 1
    attributes = [(name, value) for _, attrs in parsed.elements for name, value in attrs.items()]
    assert not [name for name, _ in attributes if name.startswith("on")]
    assert all(value.startswith("#") for name, value in attributes if name == "href" and value)
    assert "src" not in {name for name, _ in attributes}
    # Not a line break or a workflow command when a job prints the file.
    assert "\u2028" not in page and "\r" not in page
    assert_no_foreign_command(page)
    # Shown as the text it is (capped and visible).
    text = "\n".join(parsed.texts)
    for payload in HOSTILE:
        assert visible(capped(payload, TEXT)) in text
    assert "a\\u2028b" in text and "<script>alert(1)</script>" in text
    for marks in parsed.marks():
        assert sorted(marks) == sorted(visible(capped(row.query, NAME)) for row in report.queries)


@pytest.mark.parametrize("example", EXAMPLES)
def test_one_mark_per_query_in_every_plot(reports, example):
    report = reports[example]
    plots = Page(report_html(report)).marks()
    gated = {c.measure for c in report.comparisons} & set(report.queries[0].baseline)
    assert len(plots) == len(gated) > 0
    for marks in plots:
        assert sorted(marks) == sorted(row.query for row in report.queries)


def test_marks_are_sorted_wins_first_and_lower_is_better_turned(reports):
    """Sorted by how much better the candidate is: for Stale@10 (lower is better) a fall."""
    report = reports["policies"]
    stale = next(c for c in report.comparisons if c.measure == "Stale@10")
    assert stale.lower_is_better
    rows = [dataclasses.replace(row, candidate={**row.candidate, "Stale@10": value})
            for row, value in zip(report.queries, [0.5, 0.0, 0.0, 0.0, 0.1])]
    report = dataclasses.replace(report, queries=tuple(rows) + report.queries[len(rows):])
    page = report_html(report)
    plot = page[page.index('data-measure="Stale@10" data-queries'):]
    classes = re.findall(r'<rect class="q (\w+)" data-query="([^"]+)"', plot)[:len(report.queries)]
    assert classes[-2:] == [("loss", report.queries[4].query), ("loss", report.queries[0].query)]
    assert {outcome for outcome, _ in classes[:-2]} == {"tie"}


def test_the_margin_is_on_the_side_of_a_regression(reports):
    """−margin for higher-is-better measures, +margin for lower-is-better ones."""
    page = report_html(reports["policies"])
    start = page.index('<svg class="forest"')
    forest = page[start:page.index("</svg>", start)]
    zero = float(re.search(r'<line x1="([\d.]+)"[^>]*stroke="#555"', forest).group(1))
    for c in reports["policies"].comparisons:
        group = forest[forest.index(f'data-measure="{c.measure}"'):]
        margin = float(re.search(r'<line x1="([\d.]+)"[^>]*stroke-dasharray', group).group(1))
        assert (margin > zero) == c.lower_is_better, c.measure


def test_sections_in_order(reports):
    for example, sections in (("policies", ["verdict", "leaks", "comparisons", "per-query",
                                            "unanswerable", "queries", "notes"]),
                              ("pipeline", ["verdict", "comparisons", "per-query", "funnel",
                                            "costs", "unanswerable", "queries", "notes"]),
                              ("cranfield", ["verdict", "comparisons", "per-query", "queries",
                                             "notes"])):
        page = report_html(reports[example])
        found = re.findall(r'<(?:header|section)[^>]* id="([\w-]+)"', page)
        assert found == sections, example


def test_levels_come_from_the_policy(reports):
    report = reports["pipeline"]
    report = dataclasses.replace(report, policy=dataclasses.replace(report.policy, alpha=0.1))
    page = report_html(report)
    assert "90% CI" in page and "95%" not in page


def test_policy_hashes_match_the_page(reports):
    """The Content-Security-Policy allows exactly the page's own style sheet and script."""
    page = report_html(reports["cranfield"])
    parsed = Page(page)
    policy = next(attrs["content"] for tag, attrs in parsed.elements
                  if tag == "meta" and attrs.get("http-equiv") == "Content-Security-Policy")
    assert policy is not None and policy.startswith("default-src 'none';")
    for kind, directive in (("style", "style-src"), ("script", "script-src")):
        [source] = re.findall(f"<{kind}>(.*?)</{kind}>", page, re.DOTALL)
        digest = base64.b64encode(hashlib.sha256(source.encode()).digest()).decode()
        assert f"{directive} 'sha256-{digest}';" in policy
    assert "unsafe" not in policy


def test_same_report_same_bytes():
    first, second = (report_html(build(EXAMPLES["pipeline"])) for _ in range(2))
    assert first.encode() == second.encode()


def test_without_queries_or_comparisons(reports):
    report = dataclasses.replace(reports["cranfield"], queries=(), comparisons=())
    page = report_html(report)
    assert "per-query" not in page and 'id="queries"' not in page
    assert Page(page).marks() == []


# -- a headless Chromium over the DevTools protocol ------------------------------------------

FLAGS = ["--headless", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
         "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--disable-default-apps", "--mute-audio", "--hide-scrollbars",
         "--force-color-profile=srgb", "--font-render-hinting=none"]
TIMEOUT = 20.0


def chromium() -> str:
    """The browser's executable; the test fails (it does not skip) without one."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail("Chromium is not installed, and the HTML report's browser tests need it: "
                    "install Debian's package with `sudo apt-get install -y chromium` (.ci/run "
                    "and the CI workflow do this when it is missing)", pytrace=False)
    return found


class Browser:
    """Headless Chromium and its DevTools protocol on a pipe: every message is recorded."""

    def __init__(self, executable: str, profile: Path) -> None:
        profile.mkdir(parents=True, exist_ok=True)
        to_browser, from_browser = os.pipe(), os.pipe()
        # The child's ends, above 4 so that placing them on 3 and 4 clobbers nothing.
        theirs = (fcntl.fcntl(to_browser[0], fcntl.F_DUPFD_CLOEXEC, 10),
                  fcntl.fcntl(from_browser[1], fcntl.F_DUPFD_CLOEXEC, 10))
        for fd in (to_browser[0], from_browser[1]):
            os.close(fd)
        self.log = profile / "chromium.log"
        self.pid = os.posix_spawn(
            executable, [executable, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            dict(os.environ), setpgroup=0, file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_OPEN, 1, str(self.log), os.O_WRONLY | os.O_CREAT, 0o600),
                (os.POSIX_SPAWN_DUP2, 1, 2),
                (os.POSIX_SPAWN_DUP2, theirs[0], 3), (os.POSIX_SPAWN_DUP2, theirs[1], 4)])
        for fd in theirs:
            os.close(fd)
        self._out, self._in = to_browser[1], from_browser[0]
        self._inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._ids = iter(range(1, 1 << 30))
        self.events: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        buffer = b""
        while chunk := os.read(self._in, 1 << 16):
            *messages, buffer = (buffer + chunk).split(b"\0")
            for message in messages:
                self._inbox.put(json.loads(message))
        self._inbox.put(None)

    def _next(self, deadline: float) -> dict[str, Any]:
        try:
            message = self._inbox.get(timeout=max(deadline - time.monotonic(), 0.01))
        except queue.Empty:
            raise AssertionError(f"Chromium did not answer in {TIMEOUT:g} s; its log: "
                                 f"{self.log.read_text()[-2000:]}") from None
        if message is None:
            raise AssertionError(f"Chromium exited; its log: {self.log.read_text()[-2000:]}")
        return message

    def send(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        """Call ``method`` (in ``session``, a page) and return its result; events that arrive
        meanwhile are recorded."""
        number = next(self._ids)
        message = {"id": number, "method": method, "params": params,
                   **({"sessionId": session} if session else {})}
        os.write(self._out, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT
        while True:
            reply = self._next(deadline)
            if reply.get("id") == number:
                assert "error" not in reply, (method, reply["error"])
                return reply["result"]
            self.events.append(reply)

    def wait(self, matches: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The first recorded or next event that ``matches``."""
        deadline = time.monotonic() + TIMEOUT
        seen = 0
        while True:
            for event in self.events[seen:]:
                if matches(event):
                    return event
            seen = len(self.events)
            self.events.append(self._next(deadline))

    def close(self) -> None:
        """Ask the browser to quit; end its process group (its own pid) if it does not."""
        try:
            self.send("Browser.close")
        except AssertionError:
            pass
        deadline = time.monotonic() + 5
        while os.waitpid(self.pid, os.WNOHANG) == (0, 0):
            if time.monotonic() > deadline:
                os.killpg(self.pid, signal.SIGKILL)  # its own process group: the browser's
                os.waitpid(self.pid, 0)
                break
            time.sleep(0.05)
        os.close(self._out)


class Tab:
    """One page of the browser, opened on ``url``; what it requested and reported."""

    def __init__(self, browser: Browser, url: str, scripts: bool = True) -> None:
        self.browser, self.url = browser, url
        self.target = browser.send("Target.createTarget", url="about:blank")["targetId"]
        self.session = browser.send("Target.attachToTarget", targetId=self.target,
                                    flatten=True)["sessionId"]
        for domain in ("Network", "Page", "Runtime", "Log"):
            self.send(f"{domain}.enable")
        self.send("Emulation.setDeviceMetricsOverride", **VIEWPORT, deviceScaleFactor=1,
                  mobile=False)
        self.send("Emulation.setScriptExecutionDisabled", value=not scripts)
        self.send("Page.navigate", url=url)
        browser.wait(lambda e: e.get("sessionId") == self.session
                     and e.get("method") == "Page.loadEventFired")

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        return self.browser.send(method, self.session, **params)

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def _events(self, method: str) -> list[dict[str, Any]]:
        return [e["params"] for e in self.browser.events
                if e.get("sessionId") == self.session and e.get("method") == method]

    def requests(self) -> list[str]:
        """Every URL the page requested (or opened a WebSocket to)."""
        return ([e["request"]["url"] for e in self._events("Network.requestWillBeSent")]
                + [e["url"] for e in self._events("Network.webSocketCreated")])

    def errors(self) -> list[str]:
        """Console errors and assertions, log errors (a refused load among them), uncaught
        exceptions and dialogs."""
        return ([f"console.{e['type']}: {e['args']}" for e in
                 self._events("Runtime.consoleAPICalled") if e["type"] in ("error", "assert")]
                + [f"log: {e['entry']['text']}" for e in self._events("Log.entryAdded")
                   if e["entry"]["level"] == "error"]
                + [f"exception: {e['exceptionDetails']}"
                   for e in self._events("Runtime.exceptionThrown")]
                + [f"dialog: {e['message']}"
                   for e in self._events("Page.javascriptDialogOpening")])

    def screenshot(self) -> bytes:
        self.evaluate("1")  # every event the load raised is recorded before the picture
        return base64.b64decode(self.send("Page.captureScreenshot", format="png")["data"])

    def close(self) -> None:
        self.browser.send("Target.closeTarget", targetId=self.target)


@pytest.fixture(scope="module")
def browser(tmp_path_factory) -> Iterator[Browser]:
    running = Browser(chromium(), tmp_path_factory.mktemp("chromium-profile"))
    yield running
    running.close()


@pytest.fixture(scope="module")
def pages(reports, tmp_path_factory) -> dict[str, Path]:
    """Each example's HTML report, as ``gate check --html`` would write it."""
    folder = tmp_path_factory.mktemp("html")
    written = {}
    for name, report in {**reports, "hostile": hostile_report(reports["cranfield"])}.items():
        written[name] = folder / f"{name}.html"
        written[name].write_text(report_html(report), encoding="utf-8")
    return written


def opened(browser: Browser, page: Path, scripts: bool = True) -> Tab:
    return Tab(browser, page.resolve().as_uri(), scripts)


QUERY_MARKS = ("Array.from(document.querySelectorAll('svg.per-query'), svg => "
               "svg.querySelectorAll('.q').length)")


@pytest.mark.parametrize("example", ["cranfield", "pipeline", "policies", "answers"])
def test_the_browser_shows_the_report_and_loads_nothing(browser, reports, pages, example,
                                                        tmp_path):
    report = reports[example]
    tab = opened(browser, pages[example])
    word, why = headline(report)
    assert tab.evaluate("document.querySelector('.status').textContent") == word
    assert tab.evaluate("document.querySelector('.why').textContent") == \
        visible(why[0].upper() + why[1:]) + "."
    forests = tab.evaluate("Array.from(document.querySelectorAll('svg.forest'))"
                           ".filter(f => f.getBoundingClientRect().height > 0).length")
    assert forests == len({c.slice for c in report.comparisons})  # one plot per slice
    marks = tab.evaluate(QUERY_MARKS)
    assert marks and set(marks) == {len(report.queries)}
    drawn = tab.evaluate("Array.from(document.querySelectorAll('svg.per-query .q'))"
                         ".filter(q => q.getBoundingClientRect().width > 0).length")
    assert drawn == sum(marks)
    if report.answer_scores is not None:  # a per-query plot per gated score, and its section
        plotted = tab.evaluate("Array.from(document.querySelectorAll('svg.per-query'),"
                               " svg => svg.dataset.measure)")
        assert {s.name for s in report.answer_scores.scores} <= set(plotted)
        assert tab.evaluate("document.querySelector('#scores li').textContent").startswith(
            "score:token_f1: the per-query mean")
    if report.leaks is not None:  # leaks come straight after the verdict
        assert tab.evaluate("document.querySelector('#verdict').nextElementSibling.id") == "leaks"
    picture = tab.screenshot()
    assert tab.requests() == [tab.url]
    assert tab.errors() == []
    tab.close()
    assert picture.startswith(b"\x89PNG\r\n\x1a\n")
    (tmp_path / f"{example}.png").write_bytes(picture)


def test_hostile_text_runs_nothing_in_the_browser(browser, reports, pages):
    tab = opened(browser, pages["hostile"])
    assert tab.evaluate("document.querySelectorAll('img, iframe, object, embed').length") == 0
    assert tab.evaluate("document.scripts.length") == 1
    shown = tab.evaluate("document.body.innerText")
    assert "<script>alert(1)</script>" in shown and "a\\u2028b" in shown
    assert tab.evaluate(QUERY_MARKS)[0] == len(reports["cranfield"].queries)
    assert tab.requests() == [tab.url]
    assert tab.errors() == []
    tab.close()


def test_the_row_shows_the_bound_that_decided_in_the_browser(browser, tmp_path):
    """The Cranfield example's mistake (BM25 over the titles) under the rule before (test
    bonferroni): nDCG@10's 95% interval lies wholly below 0 and it is inconclusive. Its row
    shows the 97.5% bound and why the decision is what it is (the sign test)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)
        cfg = load_config("pyproject.toml")
        report = run_gate(cfg.snapshot, cfg.baseline, "examples/cranfield/runs/bm25-titles.trec",
                       dataclasses.replace(cfg.policy, regression_test="bonferroni"),
                       str(cfg.source))
    ndcg = next(c for c in report.comparisons if c.measure == "nDCG@10")
    assert ndcg.decision == "inconclusive" and ndcg.ci_high < 0
    page = tmp_path / "titles.html"
    page.write_text(report_html(report), encoding="utf-8")
    tab = opened(browser, page)
    cells = tab.evaluate(
        "(() => { const table = document.querySelector('#comparisons table');"
        " const head = Array.from(table.tHead.rows[0].cells, th => th.textContent);"
        " const row = Array.from(table.tBodies[0].rows)"
        ".find(tr => tr.cells[0].textContent === 'nDCG@10');"
        " return Object.fromEntries(head.map((name, i) => [name, row.cells[i].textContent]));"
        " })()")
    assert cells["95% CI"] == f"[{signed(ndcg.ci_low)}, {signed(ndcg.ci_high)}]"
    assert cells["97.5% bound"] == f"≤ {signed(ndcg.ci_high_adjusted)}"
    assert cells["decision"] == f"inconclusive (sign test p {p_value(ndcg.sign_p_holm)})"
    assert tab.requests() == [tab.url] and tab.errors() == []
    tab.close()


def test_the_table_sorts_when_scripts_run(browser, reports, pages):
    tab = opened(browser, pages["cranfield"])
    column = tab.evaluate("Array.from(document.querySelectorAll('#query-table th'))"
                          ".findIndex(th => th.textContent === 'Recall@10 Δ')")
    assert column > 1
    values = (f"Array.from(document.querySelectorAll('#query-table tbody tr'), "
              f"tr => Number(tr.cells[{column}].getAttribute('data-v')))")
    unsorted = tab.evaluate(values)
    tab.evaluate(f"document.querySelectorAll('#query-table th button')[{column}].click()")
    assert tab.evaluate(values) == sorted(unsorted)
    tab.evaluate(f"document.querySelectorAll('#query-table th button')[{column}].click()")
    assert tab.evaluate(values) == sorted(unsorted, reverse=True)
    assert tab.evaluate(f"document.querySelectorAll('#query-table th')[{column}]"
                        ".getAttribute('aria-sort')") == "descending"
    assert tab.errors() == []
    tab.close()


def test_everything_is_there_without_scripts(browser, reports, pages):
    tab = opened(browser, pages["pipeline"], scripts=False)
    assert tab.evaluate("document.querySelectorAll('#query-table th button').length") == 0
    assert tab.evaluate("Array.from(document.querySelectorAll('section'), s => s.id)") == [
        "comparisons", "per-query", "funnel", "costs", "unanswerable", "queries", "notes"]
    assert tab.evaluate("document.querySelectorAll('#query-table tbody tr').length") == \
        len(reports["pipeline"].queries)
    assert set(tab.evaluate(QUERY_MARKS)) == {len(reports["pipeline"].queries)}
    assert tab.requests() == [tab.url] and tab.errors() == []
    tab.close()


def test_the_recorder_sees_requests_and_errors(browser, tmp_path):
    """The browser checks are not vacuous: a page without the report's policy that loads an
    image from the network and fails is recorded doing so."""
    control = tmp_path / "control.html"
    control.write_text('<!DOCTYPE html><img src="http://127.0.0.1:9/x.png"><script>'
                       'console.error("boom"); undefined_function();</script>')
    tab = opened(browser, control)
    tab.evaluate("1")
    assert "http://127.0.0.1:9/x.png" in tab.requests()
    errors = tab.errors()
    assert any("boom" in e for e in errors) and any("undefined_function" in e for e in errors)
    tab.close()


def test_the_policy_blocks_what_a_slip_would_inject(browser, reports, tmp_path):
    """Markup that escaping let through by mistake would still load nothing and run nothing:
    the report's policy refuses it, and the browser checks would see the attempt."""
    injected = ('<img src="http://127.0.0.1:9/x.png"><script>window.injected = 1;</script>'
                '<p style="color: red" onclick="x()">styled</p>')
    page = tmp_path / "injected.html"
    page.write_text(report_html(reports["cranfield"]).replace("<nav>", injected + "<nav>"))
    tab = opened(browser, page)
    assert tab.evaluate("window.injected === undefined") is True
    assert tab.evaluate("getComputedStyle(document.querySelector('p[onclick]')).color") != \
        "rgb(255, 0, 0)"
    assert "http://127.0.0.1:9/x.png" in tab.requests()
    refused = [e for e in tab.errors() if "Content Security Policy" in e]
    assert [kind for kind in ("Loading the image", "inline script", "inline style")
            if not any(kind in e for e in refused)] == []
    tab.close()


def test_the_documentation_screenshots_are_made_from_the_examples(browser, tmp_path):
    """docs/screenshots.py renders the HTML reports and the pull-request comment of the shipped
    examples in headless Chromium, and records the pages it took: the same pages as the
    pictures the documentation shows (whose record docs/screenshots.py --check compares in
    tests/test_docs_site.py)."""
    done = subprocess.run([sys.executable, str(ROOT / "docs" / "screenshots.py"), "--out",
                           str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    for name in ("cranfield-report.png", "report.png", "pr-comment.png"):
        assert (tmp_path / name).read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert (tmp_path / "screenshots.json").read_text() == \
        (ROOT / "docs" / "images" / "screenshots.json").read_text()
