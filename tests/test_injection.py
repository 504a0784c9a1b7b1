"""Hostile text in the inputs cannot steer the CI runner or the pull-request page.

A snapshot whose query ids and texts, tags (gated as slices), snapshot name, system values and
run file names carry payloads — workflow commands after LF, CR, U+2028 and U+0085,
``::stop-commands::``, ``##[…]``, backticks, links, images, raw HTML, ``<details>``,
mentions, issue references, emphasis, pipes, control characters and long strings — goes
through the real command line, and the outputs are read the way their consumers read them:

- standard output and standard error as GitHub's runner parses them (actions/runner,
  ``ActionCommandManager.TryProcessCommand``): lines split at LF, CR and CRLF; a command is a
  line that starts with ``::`` once leading white space is trimmed, or that holds ``##[``;
  ``::stop-commands::TOKEN`` pauses every command until ``::TOKEN::``. The only commands found
  must be the gate's own annotations, with the pause honoured and also with it ignored (the
  line escaping alone must suffice);
- the Markdown rendered by a real CommonMark/GFM renderer (markdown-it-py with tables,
  strikethrough and linkify as GitHub autolinks: ``www.``, ``http(s)://``, e-mail addresses;
  raw HTML allowed, as GitHub allows it before sanitising): no link, image, raw HTML other than
  the report's own ``<details>``/``<summary>``, no emphasis or strikethrough from the payload,
  no mention, issue reference or bare link in the text GitHub post-processes, every table row
  has as many cell separators as its header (GFM would silently drop or pad cells) and every
  cell renders exactly the (capped, visible) value;
- JUnit XML parsed by ElementTree.

A hypothesis property checks the text and Markdown renderers on random Unicode ids and texts.
"""

from __future__ import annotations

import dataclasses
import json
import re
import unicodedata
from itertools import pairwise
from pathlib import Path
from xml.etree import ElementTree

import pytest
from conftest import BASELINE, RUNS, SNAPSHOT, gate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from retrieval_gate.core.untrusted import capped, command_safe, visible
from retrieval_gate.decide.policy import GatedMeasure, GatePolicy
from retrieval_gate.gating.gate import run_gate
from retrieval_gate.report.markdown import MARKER, MAX_CHARS, report_markdown
from retrieval_gate.report.safe import NAME, TEXT
from retrieval_gate.report.text import report_text

PAYLOADS = [
    "\n::add-mask::secret", "x\r::warning title=forged::pwn", "y\r\n::notice::crlf",
    "y\u2028::error::forged", "z\u0085::stop-commands::abc", "::set-output name=verdict::pass",
    "  \u3000::debug::indented", "##[add-mask]hidden", "##[group]fake group", "a`b``c```d",
    "](javascript:alert(1))", "![x](https://evil.example/i.png)", "[link](http://evil.example)",
    "<img src=x onerror=alert(1)>", "<details><summary>boo</summary>", "</details><script>x",
    "@org/team and @octocat", "#1 org/repo#2 GH-3", "**bold** _em_ ~~s~~ *i*", "| pipe | cell |",
    "www.evil.com http://evil.com/x a@b.com <https://x.y>", "$x^2$ \\\\ \\| &amp; &lt;",
    "\x01\x07\x0b\x0c\x1b[31mred\x1c\x1f\x7f\x9b\u202etxt.exe", "PASS: no material regression",
    "- list\n# heading\n> quote\n---", "<!-- retrieval-gate report -->", "L" * 1000,
]
SLICES = ["::warning::t", "t\n::error::sl", "`tick`", "@org/team", "<img src=x onerror=1>",
          "**b**|c", "\u2028##[add-mask]s"]
SNAPSHOT_NAME = "snap`x``\n::error::nm ](javascript:alert(1)) @org/team #1 <b>b</b> ##[group]"
BASE_FILE = "base \n::error::fake `x` ##[group]g @team.json"
CAND_FILE = "cand \r::add-mask::p <img src=x> [l](javascript:x) #7 www.e.x.json"

# actions/runner: the command extensions' names plus stop-commands.
REGISTERED = {"stop-commands", "set-env", "set-output", "save-state", "add-mask", "add-path",
              "add-matcher", "remove-matcher", "debug", "warning", "error", "notice", "group",
              "endgroup", "echo"}
# .NET's Char.IsWhiteSpace, which String.TrimStart() trims.
DOTNET_SPACE = ("\t\n\v\f\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B)))
                + "\u2028\u2029\u202f\u205f\u3000")


# -- the runner's parser, as a test oracle ---------------------------------------------------

def _parse(line: str, registered: set[str]) -> tuple[str, str, str] | None:
    """(command, properties, data) when the runner would parse ``line`` as a command."""
    trimmed = line.lstrip(DOTNET_SPACE)
    if trimmed.startswith("::"):
        end = trimmed.find("::", 2)
        if end >= 0:
            info = trimmed[2:end]
            name, _, props = info.partition(" ")
            if name.lower() in registered:
                return name.lower(), props, trimmed[end + 2:]
    start = line.find("##[")
    if start >= 0:
        end = line.find("]", start)
        if end >= 0:
            name, _, props = line[start + 3:end].partition(" ")
            if name.lower() in registered:
                return name.lower(), props, line[end + 1:]
    return None


def runner_commands(output: str, honour_stop: bool = True) -> list[tuple[str, str, str]]:
    """The commands GitHub's runner would run for ``output`` (stdout or stderr)."""
    registered, token, run = set(REGISTERED), None, []
    for line in re.split(r"\r\n|\r|\n", output):
        command = _parse(line, registered)
        if command is None:
            continue
        if token is not None:
            if command[0] == token:
                registered.discard(token)
                token = None
            continue
        if command[0] == "stop-commands" and honour_stop:
            token = command[2].lower()
            registered.add(token)
            continue
        run.append(command)
    return run


def _own(command: tuple[str, str, str]) -> bool:
    """One of the gate's annotations: ::error/::warning with one of its titles."""
    name, props, _ = command
    return name in ("error", "warning") and re.fullmatch(
        r"title=retrieval(-gate|-gate%3A (invalid|not-comparable|error)| regression%3A "
        r"[A-Za-z]+@\d+| inconclusive%3A [A-Za-z]+@\d+)", props) is not None


def assert_no_foreign_command(output: str) -> None:
    for honour_stop in (True, False):
        commands = runner_commands(output, honour_stop)
        foreign = [c for c in commands if not _own(c) and c[0] != "stop-commands"]
        assert not foreign, foreign


def test_the_runner_oracle_sees_the_attack():
    """The oracle is not vacuous: raw payloads are commands to it; stop-commands pauses."""
    names = {c[0] for c in runner_commands("\n".join(PAYLOADS))}
    assert {"add-mask", "warning", "notice", "set-output", "debug", "group"} <= names
    assert runner_commands("::stop-commands::t1\n::add-mask::x\n::t1::\n::error::y\n") == [
        ("error", "", "y")]
    assert [c[0] for c in runner_commands("x ##[add-mask]y")] == ["add-mask"]


def test_command_safe_follows_the_runner_rules():
    for line in ["::error::x", " \t\u3000::error::x", "\u2028::add-mask::y", "a ##[group]b",
                 "##[##[add-mask]]", "###[debug]z"]:
        safe = command_safe(visible(line))
        assert _parse(safe, REGISTERED | {"x"}) is None and "##[" not in safe, safe
    assert command_safe("plain: line :: with ::colons") == "plain: line :: with ::colons"
    assert json.loads(command_safe(json.dumps("##[add-mask]s"))) == "##[add-mask]s"


# -- the hostile snapshot, through the command line ------------------------------------------

@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    """Snapshot, gate.toml and two runs in JSON formats (ids may hold anything): every query
    relevant only to 'rel'; the baseline ranks it first, the candidate second (every third
    query) or not at all."""
    folder = tmp_path_factory.mktemp("hostile")
    ids = [f"q{i}{p}" for i, p in enumerate(PAYLOADS)]
    (folder / "queries.jsonl").write_text("".join(
        json.dumps({"id": q, "text": f"text {PAYLOADS[-1 - i]} end",
                    "tags": [SLICES[i % len(SLICES)]]}) + "\n" for i, q in enumerate(ids)))
    (folder / "qrels.json").write_text(json.dumps({q: {"rel": 1} for q in ids}))
    junk = [f"j{k}" for k in range(10)]
    (folder / BASE_FILE).write_text(json.dumps({q: ["rel", *junk[:9]] for q in ids}))
    (folder / CAND_FILE).write_text(json.dumps(
        {q: ["j0", "rel"] if i % 3 == 0 else junk for i, q in enumerate(ids)}))
    code, _, err = gate("snapshot", "freeze", "--queries", folder / "queries.jsonl",
                        "--qrels", folder / "qrels.json", "--corpus-version", "c\n::error::v",
                        "--unit", "document", "--permissions-version", "p",
                        "--name", SNAPSHOT_NAME, "-m", "nDCG@10", "-m", "Hit@10",
                        "-o", folder / "snapshot.json")
    assert code == 0, err
    for run in (BASE_FILE, CAND_FILE):
        code, _, err = gate("run-manifest", "--snapshot", folder / "snapshot.json", "--run",
                            folder / run, "--system", "model=\n::add-mask::m ##[add-mask]n",
                            "--created", "2026-01-01T00:00:00Z", "--commit", "x")
        assert code == 0, err
    slices = ", ".join(json.dumps(s) for s in ["all", *SLICES])
    (folder / "gate.toml").write_text(
        f'snapshot = "snapshot.json"\nbaseline = {json.dumps(BASE_FILE)}\n'
        f'candidate = {json.dumps(CAND_FILE)}\nresamples = 1000\nslices = [{slices}]\n'
        '[[gate]]\nmeasure = "nDCG@10"\nmargin = 0.02\n')
    return folder


@pytest.fixture
def actions(tmp_path: Path) -> dict[str, str]:
    return {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
            "GITHUB_OUTPUT": str(tmp_path / "output"), "RUNNER_TEMP": str(tmp_path)}


def run_check(hostile: Path, actions: dict[str, str], *extra: str | Path
              ) -> tuple[int, str, str]:
    return gate("check", "--config", hostile / "gate.toml", "--github", *extra, env=actions)


@pytest.mark.parametrize("output_format", ["text", "json", "markdown"])
def test_stdout_and_stderr_run_no_command_from_the_inputs(hostile, actions, output_format):
    code, out, err = run_check(hostile, actions, "--output-format", output_format)
    assert code == 1, err
    assert_no_foreign_command(out)
    assert_no_foreign_command(err)
    own = runner_commands(out)
    assert own and all(_own(c) for c in own)
    assert any(c[0] == "error" for c in own)  # the regression's own annotation still runs
    lines = out.split("\n")
    token = lines[0].removeprefix("::stop-commands::")
    assert token.startswith("retrieval-gate-") and lines.count(f"::{token}::") == 1
    report = "\n".join(lines[1:lines.index(f"::{token}::")])
    assert report.startswith({"text": "REGRESSION", "json": "{", "markdown": MARKER}[
        output_format])
    if output_format == "json":
        document = json.loads(report)  # still the same JSON, values exact
        assert document["snapshot"]["name"] == SNAPSHOT_NAME
        assert document["candidate"]["system"]["model"] == "\n::add-mask::m ##[add-mask]n"


def test_each_run_pauses_commands_with_a_fresh_token(hostile, actions):
    tokens = {run_check(hostile, actions)[1].split("\n", 1)[0] for _ in range(2)}
    assert len(tokens) == 2


def test_text_report_keeps_one_line_per_line(hostile):
    code, out, _ = gate("check", "--config", hostile / "gate.toml", "--no-github")
    assert code == 1
    lines = out.split("\n")[:-1]
    assert out.splitlines() == lines  # no CR, U+2028, U+0085, VT, FF … breaks a line
    assert not any(unicodedata.category(c) in ("Cc", "Cs", "Zl", "Zp") for c in out
                   if c != "\n")
    assert not any(line.startswith("PASS") for line in lines)  # no forged verdict
    assert "q1x\\r::warning title=forged::pwn" in out and "\\u2028#\\u0023[add-mask]s" in out
    assert "\\x1b[31mred" in out and "\\u202etxt.exe" in out
    assert not any(_parse(line, REGISTERED) for line in lines)
    table = [line for line in lines if line.startswith(("measure ", "nDCG@10 ", "Hit@10 "))]
    assert len(table) == 1 + 1 + len(SLICES)  # header, all, one row per slice



def test_every_other_command_prints_no_command_under_actions(hostile, actions, tmp_path):
    """score, validate, snapshot freeze, run-manifest and baseline approve quote names, ids,
    paths and system values on standard output: under GitHub Actions none is a command, and no
    value breaks a line."""
    folder = hostile
    outputs = []
    for args in (
        ("score", folder / "qrels.json", folder / BASE_FILE),
        ("score", folder / "qrels.json", folder / BASE_FILE, "--output-format", "json"),
        ("validate", folder / "snapshot.json", folder / BASE_FILE, folder / CAND_FILE),
        ("snapshot", "freeze", "--queries", folder / "queries.jsonl", "--qrels",
         folder / "qrels.json", "--corpus-version", "c\n::error::v", "--unit", "document",
         "--permissions-version", "p", "--name", SNAPSHOT_NAME, "-o",
         folder / "again\n::error::x.json"),
        ("run-manifest", "--snapshot", folder / "snapshot.json", "--run", folder / BASE_FILE,
         "-o", tmp_path / "m\r::add-mask::z.json"),
        ("baseline", "approve", "--candidate", folder / CAND_FILE, "--snapshot",
         folder / "snapshot.json", "--to", tmp_path / "base\n::warning::w"),
    ):
        code, out, err = gate(*args, env=actions)
        assert code == 0, err
        assert_no_foreign_command(out)
        assert_no_foreign_command(err)
        outputs.append(out)
    assert "again\\n::error::x.json" in outputs[3]  # one line, the break shown
    for out in outputs:
        if not out.startswith("{"):
            assert not any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in out
                           if c != "\n")
    assert json.loads(outputs[1])["per_query"]  # JSON stays JSON

# -- Markdown --------------------------------------------------------------------------------

def renderer() -> MarkdownIt:
    """CommonMark + GFM tables, strikethrough and autolinks as GitHub makes them (no
    scheme-less 'example.com' links: GitHub's autolinker needs www. or a scheme)."""
    md = MarkdownIt("gfm-like", {"linkify": True, "html": True})
    md.linkify.set({"fuzzy_link": False})
    return md


OWN_HTML = re.compile(r"(<!-- retrieval-gate report -->|<details><summary>[^<>]*</summary>|"
                      r"</details>)\n")
GITHUB_LINKS = [
    re.compile(r"(?:^|[^A-Za-z0-9_])@[A-Za-z0-9]"),        # @user, @org/team
    re.compile(r"[\w.+-]@[\w-]+\.\w"),                       # e-mail
    re.compile(r"#\d|\bGH-\d", re.IGNORECASE),               # #1, org/repo#2, GH-3
    re.compile(r"\b(?:https?|ftp)://|\bwww\.", re.IGNORECASE),
]


OWN_STRONG = re.compile(r"regression|inconclusive|Next:|(Material regression|This test set|No "
                        r"material regression|The gate could not compare) .*")


def check_markdown(markdown: str) -> list[list[list[str]]]:
    """Render ``markdown`` and assert what the module docstring says; return every table's
    rows as lists of cell texts. The report's own markup: bold for its sentence and for
    decisions, code spans for the two paths, the snapshot's name and fingerprint in its
    sentence."""
    tokens = renderer().parse(markdown)
    tables, table, row, cell, linked_text = [], None, None, None, []
    for token in tokens:
        assert token.type != "html_inline"
        if token.type == "html_block":
            assert OWN_HTML.fullmatch(token.content), token.content
            linked_text.append(token.content)
        elif token.type == "table_open":
            table = []
        elif token.type == "table_close":
            tables.append(table)
        elif token.type == "tr_open":
            row = []
        elif token.type == "tr_close":
            table.append(row)
        elif token.type in ("th_open", "td_open"):
            cell = ""
        elif token.type in ("th_close", "td_close"):
            row.append(cell)
            cell = None
        elif token.type == "inline":
            strong, texts = None, [c.content for c in token.children if c.type == "text"]
            spans = [c for c in token.children if c.type == "code_inline"]
            assert not spans or (cell is None and len(spans) == 4 and
                                 any(" vs baseline " in t for t in texts) and
                                 any(" on snapshot " in t for t in texts)), spans
            for child in token.children:
                assert child.type not in ("link_open", "image", "html_inline", "em_open",
                                          "s_open", "softbreak", "hardbreak"), child
                if child.type == "strong_open":
                    assert strong is None
                    strong = ""
                elif child.type == "strong_close":
                    assert OWN_STRONG.fullmatch(strong), strong
                    strong = None
                elif child.type == "text":
                    linked_text.append(child.content)
                    strong = strong if strong is None else strong + child.content
                if cell is not None and child.type in ("text", "code_inline"):
                    cell += child.content
    for text in linked_text:
        for pattern in GITHUB_LINKS:
            assert not pattern.search(text), (pattern.pattern, text)
    # GFM drops extra cells and pads missing ones, so count the source's unescaped pipes.
    pipes = [len(re.findall(r"(?<!\\)\|", line)) if line.startswith("|") else None
             for line in markdown.split("\n")]
    for previous, count in pairwise(pipes):
        assert None in (previous, count) or previous == count, markdown
    return tables


@pytest.mark.parametrize("raw", ["**bold**", "_em_", "~~s~~", "`code`", "[l](http://e.x)",
                                 "![i](x.png)", "<img src=x>", "@octocat", "#12", "www.e.com",
                                 "a@b.com", "x | y", "a\nb"])
def test_the_markdown_oracle_sees_the_attack(raw):
    """check_markdown is not vacuous: each payload, unescaped in a cell, fails it."""
    with pytest.raises(AssertionError):
        check_markdown(f"| a |\n|---|\n| {raw} |\n")


def test_markdown_is_text_not_markup(hostile, actions, tmp_path):
    code, _, err = run_check(hostile, actions, "--markdown", tmp_path / "r.md")
    assert code == 1, err
    markdown = (tmp_path / "r.md").read_text(encoding="utf-8")
    assert markdown == Path(actions["GITHUB_STEP_SUMMARY"]).read_text(encoding="utf-8")
    assert markdown.startswith(MARKER + "\n### REGRESSION") and markdown.count(MARKER) == 1
    tables = check_markdown(markdown)
    comparisons, failing, drops, instead = tables
    assert instead[1:] and {row[0].replace("\u200b", "") for row in instead[1:]} <= {
        row[i].replace("\u200b", "") for row, i in [*((r, 1) for r in drops[1:]),
                                                   *((r, 0) for r in failing[1:])]}
    assert len(comparisons) == 1 + 1 + len(SLICES) and len(comparisons[0]) == 11
    shown = {row[1].replace("\u200b", "") for row in comparisons[1:]}
    assert shown == {visible(s) for s in ["all", *SLICES]}
    ids = [f"q{i}{p}" for i, p in enumerate(PAYLOADS)]
    expected = {capped(visible(q), NAME) for i, q in enumerate(ids) if i % 3}
    assert {row[0].replace("\u200b", "") for row in failing[1:]} == expected
    texts = {visible(capped(f"text {p} end", TEXT)).strip() for p in PAYLOADS}
    assert drops[1:] and all(row[5].replace("\u200b", "") in texts for row in drops[1:])
    spans = [t.content for t in renderer().parseInline(markdown.split("\n")[3])[0].children
             if t.type == "code_inline"]
    assert spans[:3] == [visible(str(hostile / CAND_FILE)), visible(str(hostile / BASE_FILE)),
                         visible(SNAPSHOT_NAME)]


def test_junit_is_well_formed(hostile, tmp_path):
    code, _, err = gate("check", "--config", hostile / "gate.toml", "--junit",
                        tmp_path / "j.xml")
    assert code == 1, err
    suites = ElementTree.parse(tmp_path / "j.xml").getroot()
    names = [case.get("name") for case in suites.iter("testcase")]
    assert f"nDCG@10 ({visible(SLICES[1])})" in names
    assert suites.find("testsuite").get("name") == f"retrieval-gate {visible(SNAPSHOT_NAME)}"


def test_refused_input_runs_no_command_and_escapes_its_summary(hostile, actions):
    missing = "missing\n::add-mask::x ##[add-mask]y `z` @org #1 <b>.trec"
    code, out, err = gate("check", "--config", hostile / "gate.toml", "--candidate",
                          hostile / missing, env=actions)
    assert code == 2
    assert_no_foreign_command(out)
    assert_no_foreign_command(err)
    assert [c[0] for c in runner_commands(out)] == ["error"]
    # The path's LF is shown escaped: one error, one line.
    assert err.count("\n") == 1 and err.startswith("error: ")
    assert "missing\\n::add-mask::x #\\u0023[add-mask]y" in err
    summary = Path(actions["GITHUB_STEP_SUMMARY"]).read_text(encoding="utf-8")
    assert summary.startswith(MARKER + "\n### INVALID")
    check_markdown(summary)


LINE_ENDS = {  # an option of each command, given a value that holds a line end
    "check --gate": ("check", "--gate", "Recall@10:a\nb=0.0x2"),
    "check --candidate": ("check", "--candidate", "runs/a\r\n::error::b.trec"),
    "score -m": ("score", "-m", "nDCG@10\nx", "q.trec", "q.trec"),
    "run-manifest --system": ("run-manifest", "--snapshot", "examples/cranfield/snapshot.json",
                              "--run", "q.trec", "--system", "a\nb"),
    "init --candidate": ("init", "--queries", "q.jsonl", "--qrels", "q.trec", "--candidate",
                         "runs/a\nb.trec"),
}


@pytest.mark.parametrize("case", LINE_ENDS)
def test_a_line_end_in_an_option_is_one_escaped_error_line(repo, actions, case):
    """However an option's value reaches the message, its line end is an escape: one line on
    standard error, and under GitHub Actions one annotation and one error in the reports."""
    (repo / "q.trec").write_text("q 0 d 1\n")
    args = LINE_ENDS[case]
    code, out, err = gate(*args, env={**actions, "GITHUB_ACTIONS": "false"})
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: "), err
    assert "\\n" in err
    if args[0] != "check":
        return
    code, out, github_err = gate(*args, "--json", "report.json", env=actions)
    assert code == 2 and github_err == err
    assert [c[0] for c in runner_commands(out)] == ["error"]
    assert_no_foreign_command(out)
    assert len(json.loads((repo / "report.json").read_text())["errors"]) == 1
    summary = Path(actions["GITHUB_STEP_SUMMARY"]).read_text(encoding="utf-8")
    assert sum(line.startswith("- ") for line in summary.splitlines()) == 1


def test_a_huge_report_is_cut_to_fit_a_comment(tmp_path):
    report = _report()
    long = dataclasses.replace(report, warnings=tuple(f"w{i} " + "x" * 390
                                                      for i in range(400)))
    markdown = report_markdown(long)
    assert len(markdown) <= MAX_CHARS and markdown.rstrip().endswith("has everything.")
    assert markdown.count("<details>") == markdown.count("</details>")
    check_markdown(markdown)


# -- property: random Unicode in ids and texts -----------------------------------------------

_BASE: list = []


def _report():
    """A real regression report (the titles-only Cranfield run), built once."""
    if not _BASE:
        _BASE.append(run_gate(SNAPSHOT, BASELINE, RUNS / "bm25-titles.trec",
                           GatePolicy(gates=(GatedMeasure("Recall@10", 0.02),),
                                      resamples=200)))
    return _BASE[0]


hostile_text = st.lists(st.one_of(st.text(max_size=12), st.sampled_from(PAYLOADS[:-1]),
                                  st.sampled_from(["::", "##[", "\r", "\u2028", "\x85", "\x00",
                                                   "\ud800", "\u202e", "`", "@a", "#1", "|",
                                                   "\\", "www.", "//", "<", "&", " "])),
                        max_size=8).map("".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(query=hostile_text, text=hostile_text, slice_name=hostile_text.filter(bool))
def test_renderers_never_break_a_line_or_a_table(query, text, slice_name):
    report = _report()
    change = dataclasses.replace(report.newly_failing[0], query=query, text=text)
    drop = dataclasses.replace(report.top_regressions[0], query=query, text=text)
    comparison = dataclasses.replace(report.comparisons[0], slice=slice_name)
    report = dataclasses.replace(report, newly_failing=(change, *report.newly_failing[1:]),
                                 top_regressions=(drop, *report.top_regressions[1:]),
                                 comparisons=(comparison,))

    out = report_text(report)
    lines = out.split("\n")[:-1]
    assert out.splitlines() == lines
    assert not any(_parse(line, REGISTERED) for line in lines)
    assert not any(line.lstrip(DOTNET_SPACE).startswith("::") or "##[" in line
                   for line in lines)
    assert command_safe(f"  {visible(query)}  {visible(text)}".rstrip()) in lines

    comparisons, failing, drops, *instead = check_markdown(report_markdown(report))
    assert all(len(row) == 3 for table in instead for row in table)
    assert comparisons[1][1].replace("\u200b", "") == visible(capped(slice_name, NAME)).strip()
    assert failing[1][0].replace("\u200b", "") == visible(capped(query, NAME)).strip()
    assert failing[1][1].replace("\u200b", "") == visible(capped(text, TEXT)).strip()
    assert drops[1][5].replace("\u200b", "") == visible(capped(text, TEXT)).strip()


# -- the pull-request comment ----------------------------------------------------------------

def _comment_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("comment", Path(__file__).parents[1] /
                                                  "action" / "comment.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("run_id, linked", [("4242", True), ("1)](javascript:alert(1)", False)])
def test_the_comment_adds_only_a_checked_run_link(hostile, actions, tmp_path, monkeypatch,
                                                   run_id, linked):
    run_check(hostile, actions, "--markdown", tmp_path / "r.md")
    monkeypatch.setenv("GITHUB_SERVER_URL", "https://github.com")
    monkeypatch.setenv("GITHUB_REPOSITORY", "octo-org/retriever")
    monkeypatch.setenv("GITHUB_RUN_ID", run_id)
    body = _comment_module().body(str(tmp_path / "r.md"))
    report = (tmp_path / "r.md").read_text(encoding="utf-8").rstrip("\n")
    assert body.startswith(report)
    footer = body[len(report):]
    links = [t for t in renderer().parse(body) if t.type == "inline"
             for t in t.children if t.type == "link_open"]
    if linked:
        assert footer == "\n\n<sub>[workflow run](https://github.com/octo-org/retriever/actions/" \
                         "runs/4242)</sub>\n"
        assert [t.attrs["href"] for t in links] == [
            "https://github.com/octo-org/retriever/actions/runs/4242"]
    else:
        assert footer == "\n" and not links
        check_markdown(body)
