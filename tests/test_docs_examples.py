"""The documentation's examples, run: every marked shell block of ``docs/**/*.md`` and
``README.md`` is executed and its output checked.

The convention of a marked block:

* A fenced block whose info string is ``console``. Its lines that start with ``$ `` are
  commands; a command ending in ``\\`` continues on the next line. The other lines are the
  output expected from the command above them.
* Each command runs from the repository root (a ``$ cd DIR`` line changes the folder for the
  rest of its block; a block that changes it changes it back, so that a reader who pastes the
  page into one shell stays where the next block starts). ``$TMP`` stands for a fresh empty
  folder per document, shared by its blocks in document order, in commands and in expected
  lines alike: a command that writes files writes them there, never into the repository. A
  page sets it before its first use, ``$ export TMP=$(mktemp -d)``, as a reader in a fresh
  shell must; here that line stands for the folder the test gives.
* The exit code expected is 0, or the one a trailing ``# exit N`` comment states
  (``$ gate check ...  # exit 1``).
* Every expected line must appear in the command's output (standard output and standard
  error together), in order, other lines allowed in between; trailing white space is
  ignored. A line ``...`` only marks skipped output; ``...`` inside a line matches any text.

``gate ...`` commands without shell syntax run in-process through click's ``CliRunner``
(fast); every other command runs in ``bash`` with this interpreter's scripts folder on PATH.
Identical commands run from the repository root that do not use ``$TMP`` run once per
session (per worker) and share their result.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from retrieval_gate.cli import cli

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^```console[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
EXIT = re.compile(r"\s+#\s*exit\s+(\d+)\s*$")
SHELL_SYNTAX = re.compile(r"[|;&<>`]|\$\(")


@dataclass
class Command:
    """One ``$`` line of a block: the command, its expected exit code and output lines."""

    text: str
    exit_code: int
    expected: list[str]


def _documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _parse(body: str) -> list[Command]:
    """The commands of a block body; continuation lines are joined with one space."""
    commands: list[Command] = []
    lines = iter(body.splitlines())
    for line in lines:
        if line.startswith("$ "):
            text = line[2:]
            while text.endswith("\\"):
                text = text[:-1].rstrip() + " " + next(lines).strip()
            match = EXIT.search(text)
            code = int(match.group(1)) if match else 0
            commands.append(Command(EXIT.sub("", text).strip(), code, []))
        elif commands:
            commands[-1].expected.append(line.rstrip())
        elif line.strip():
            raise AssertionError(f"output before any command: {line!r}")
    return commands


@dataclass
class Block:
    """A marked block: where it is (``FILE:LINE``) and its commands."""

    where: str
    commands: list[Command]


def _pages() -> list[tuple[str, list[Block]]]:
    """One test per document holding marked blocks, its blocks in document order."""
    params: list[tuple[str, list[Block]]] = []
    for path in _documents():
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        name = str(path.relative_to(ROOT))
        blocks = []
        for match in FENCE.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            blocks.append(Block(f"{name}:{line}", _parse(match.group(1))))
        if blocks:
            params.append((name, blocks))
    return params


_SHARED: dict[str, tuple[int, str]] = {}


def _run(command: str, cwd: Path) -> tuple[int, str]:
    """Exit code and output (standard output and error together) of one command."""
    if command.startswith("gate ") and not SHELL_SYNTAX.search(command):
        previous = Path.cwd()
        os.chdir(cwd)
        try:
            result = CliRunner().invoke(cli, shlex.split(command)[1:])
        finally:
            os.chdir(previous)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result.exit_code, result.output
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, encoding="utf-8", timeout=120, check=False,
    )
    return done.returncode, done.stdout


def _matches(expected: str, actual: str) -> bool:
    if "..." not in expected:
        return expected == actual
    pattern = ".*".join(re.escape(part) for part in expected.split("..."))
    return re.fullmatch(pattern, actual) is not None


def _check_output(command: str, expected: list[str], output: str) -> None:
    """Every expected line appears in the output, in order."""
    actual = [line.rstrip() for line in output.splitlines()]
    position = 0
    for line in expected:
        if not line.strip() or line.strip() == "...":
            continue
        while position < len(actual) and not _matches(line, actual[position]):
            position += 1
        assert position < len(actual), (
            f"{command}\nexpected line not found (in order):\n  {line}\noutput:\n{output}"
        )
        position += 1


_PAGES = _pages()


def test_the_documents_hold_marked_blocks() -> None:
    assert _PAGES, "no ```console block in docs/ or README.md"


SET_TMP = "export TMP=$(mktemp -d)"


@pytest.mark.parametrize(
    "blocks", [blocks for _, blocks in _PAGES], ids=[name for name, _ in _PAGES]
)
def test_documented_commands(blocks: list[Block], tmp_path: Path) -> None:
    for block in blocks:
        cwd = ROOT
        for command in block.commands:
            if command.text == SET_TMP:
                continue  # $TMP is the test's own folder
            text = command.text.replace("$TMP", str(tmp_path))
            if text.startswith("cd "):
                cwd = (cwd / shlex.split(text)[1]).resolve()
                continue
            if cwd == ROOT and "$TMP" not in command.text:
                if text not in _SHARED:
                    _SHARED[text] = _run(text, cwd)
                code, output = _SHARED[text]
            else:
                code, output = _run(text, cwd)
            assert code == command.exit_code, (
                f"{block.where}: $ {text}\nexit {code}, expected {command.exit_code}\n"
                f"output:\n{output}"
            )
            expected = [line.replace("$TMP", str(tmp_path)) for line in command.expected]
            _check_output(f"{block.where}: $ {text}", expected, output)


@pytest.mark.parametrize(
    "blocks", [blocks for _, blocks in _PAGES], ids=[name for name, _ in _PAGES]
)
def test_a_page_runs_as_written_in_one_fresh_shell(blocks: list[Block]) -> None:
    """A reader pastes a page's blocks into one new shell: ``$TMP`` is set before its first
    use, and every block ends in the folder it started from (the repository root)."""
    commands = [c.text for block in blocks for c in block.commands]
    uses = [i for i, text in enumerate(commands) if "$TMP" in text and text != SET_TMP]
    if uses:
        assert SET_TMP in commands[:uses[0]], f"{blocks[0].where}: $TMP used before it is set"
    for block in blocks:
        cwd = ROOT
        for command in block.commands:
            if command.text.startswith("cd ") and "$TMP" not in command.text:
                cwd = (cwd / shlex.split(command.text)[1]).resolve()
            elif command.text.startswith("cd "):
                cwd = Path("/tmp-folder")  # somewhere under $TMP: must be left again
        assert cwd == ROOT or block is blocks[-1], f"{block.where}: ends in {cwd}"

