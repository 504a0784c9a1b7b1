"""The documentation site: ``mkdocs build --strict`` passes (every link and anchor checked), and
the reference it generates from the code names every command, configuration key, measure
family and exit code. The build needs the ``docs`` extra (``pip install -e '.[docs]'``; CI's
docs job); without it those tests are skipped. The README's exit-code table is checked against
``EXIT_CODES`` in any case."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from retrieval_gate.cli import cli
from retrieval_gate.core.errors import EXIT_CODES
from retrieval_gate.scoring.measures import FAMILIES

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "src" / "retrieval_gate" / "schemas"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("mkdocs", reason="the docs extra is not installed (pip install -e '.[docs]')")
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
         str(ROOT / "mkdocs.yml"), "--site-dir", str(out)],
        capture_output=True, text=True, check=False, cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    return out


def text_of(site: Path, page: str) -> str:
    """The visible text of a built page (tags dropped, entities decoded)."""
    raw = (site / page / "index.html").read_text(encoding="utf-8")
    return html.unescape(re.sub(r"<[^>]+>", "", raw))


def commands(group: click.Group, prefix: str = "gate") -> Iterator[str]:
    for name, command in group.commands.items():
        yield f"{prefix} {name}"
        if isinstance(command, click.Group):
            yield from commands(command, f"{prefix} {name}")


def keys(node: Any) -> Iterator[str]:
    """Every property name anywhere in a schema."""
    if isinstance(node, dict):
        for key, sub in (node.get("properties") or {}).items():
            yield key
            yield from keys(sub)
        for key, sub in node.items():
            if key != "properties":
                yield from keys(sub)
    elif isinstance(node, list):
        for sub in node:
            yield from keys(sub)


def test_every_command_and_its_options_are_in_the_cli_reference(site):
    page = text_of(site, "reference/cli")
    for name in commands(cli):
        assert name in page, name
    assert "--fail-on" in page and "--snapshot" in page
    assert "Sentinel" not in page  # click's "no default" marker is not a default


def test_every_configuration_key_is_in_the_reference(site):
    page = text_of(site, "reference/config")
    schema = json.loads((SCHEMAS / "config.schema.json").read_text(encoding="utf-8"))
    for key in set(keys(schema)):
        assert re.search(rf"(^|[.\]]){re.escape(key)}($|\s)", page, re.MULTILINE), key


def test_every_measure_family_is_in_the_reference_with_its_trec_eval_name(site):
    page = text_of(site, "reference/measures")
    for family in FAMILIES:
        assert family.name in page and family.definition.replace("`", "") in page, family.name
        for name in filter(None, family.trec_eval):
            assert name.format(k="k") in page, name


def test_every_exit_code_is_in_the_reference(site):
    page = text_of(site, "reference/exit-codes")
    for code, meaning in EXIT_CODES:
        assert f"{code}\n{meaning.replace('`', '')}" in page, code


def test_the_readme_exit_code_table_is_exit_codes():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = "| code | meaning |\n|---|---|\n" + "\n".join(f"| {c} | {m} |" for c, m in EXIT_CODES)
    assert table in readme


def all_commands(group: click.Group = cli, path: tuple[str, ...] = ()
                 ) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    for name, command in group.commands.items():
        yield (*path, name), command
        if isinstance(command, click.Group):
            yield from all_commands(command, (*path, name))


def test_every_command_s_summary_is_a_whole_sentence():
    """The first line of a command's help is what the CLI reference lists and what ``--help``
    shows beside its name: a whole sentence of at most 55 characters, then a blank line, so
    that neither cuts it (at 80 columns click keeps 62)."""
    for path, command in all_commands():
        lines = (command.help or "").strip().splitlines()
        assert lines and lines[0].endswith(".") and len(lines[0]) <= 55, (path, lines[:1])
        assert len(lines) == 1 or lines[1] == "", (path, lines[:2])
    runner = CliRunner()
    for path, command in [((), cli), *((p, c) for p, c in all_commands()
                                        if isinstance(c, click.Group))]:
        shown = runner.invoke(cli, [*path, "--help"], terminal_width=80).output
        listed = shown[shown.index("Commands:"):]
        assert "..." not in listed, (path, listed)


def test_the_screenshots_show_the_current_reports(tmp_path):
    """docs/screenshots.py --check makes again each page the documentation's pictures were
    taken of and compares it with the one recorded: a report that changed since fails here,
    naming the pictures to take again (``python docs/screenshots.py``)."""
    script = [sys.executable, str(ROOT / "docs" / "screenshots.py"), "--check"]
    done = subprocess.run(script, cwd=ROOT, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "the screenshots show the current reports (3 checked)\n"
    record = json.loads((ROOT / "docs" / "images" / "screenshots.json").read_text())
    record["report.png"]["page_sha256"] = "0" * 64  # as if the report had changed since
    (tmp_path / "screenshots.json").write_text(json.dumps(record))
    done = subprocess.run([*script, "--out", str(tmp_path)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 1 and done.stderr.startswith(
        "stale screenshots: report.png — the report changed since they were taken"), done.stderr
