"""The output formats of a gate report, by name: what ``gate check --output-format NAME`` prints,
what ``gate check --NAME FILE`` writes, and the report files of the pytest plugin, all looked up
here. A format is one module of this package with its renderer (a report → text) and, when it
is written to a file, its error form (the file of a gate that could not decide), and one line
of :data:`RENDERERS`.

Naming the formats imports no renderer: a renderer's module is imported when it first renders,
so that ``gate --help`` stays instant."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from retrieval_gate.core.exported import exported

if TYPE_CHECKING:
    from retrieval_gate.gating.outcome import Report

__all__ = ["FILES", "RENDERERS", "STDOUT", "Renderer", "renderer"]


@dataclass(frozen=True)
class Renderer:
    """One output format.

    - ``name``: its name on the command line (``--output-format NAME``, ``--NAME FILE``);
    - ``suffix``: the ending of its files' names;
    - ``renders``: ``MODULE:FUNCTION`` of this package, the function from a report to the text;
    - ``stdout``: whether it can be printed on standard output;
    - ``file_help``: the help of ``gate check --NAME FILE``; None when it is not written to a
      file;
    - ``fails``: ``MODULE:FUNCTION`` of its error form, from the message and the exit code of
      a gate that could not decide to the text (every format written to a file has one).
    """

    name: str
    suffix: str
    renders: str
    stdout: bool
    file_help: str | None = None
    fails: str | None = None

    def render(self, report: Report) -> str:
        """The report in this format."""
        return cast(Callable[["Report"], str], _function(self.renders))(report)

    def failure(self, message: str, exit_code: int) -> str:
        """The file of a gate that could not decide, in this format."""
        if self.fails is None:
            raise ValueError(f"the {self.name} format has no error form")
        return cast(Callable[[str, int], str], _function(self.fails))(message, exit_code)


def _function(where: str) -> object:
    module, _, name = where.partition(":")
    return getattr(importlib.import_module(f"retrieval_gate.report.{module}"), name)


RENDERERS = (
    Renderer("text", ".txt", "text:report_text", stdout=True),
    Renderer("json", ".json", "json:report_json", stdout=True,
             file_help="Also write the JSON report here (atomically).",
             fails="json:failure_json"),
    Renderer("markdown", ".md", "markdown:report_markdown", stdout=True,
             file_help="Also write the Markdown report here (atomically).",
             fails="markdown:failure_markdown"),
    Renderer("junit", ".xml", "junit:report_junit", stdout=False,
             file_help="Also write JUnit XML here, one test case per comparison.",
             fails="junit:failure_junit"),
    Renderer("html", ".html", "html:report_html", stdout=False,
             file_help="Also write the HTML report here: one self-contained page with plots.",
             fails="html:failure_html"),
)

STDOUT = tuple(r.name for r in RENDERERS if r.stdout)  # --output-format's choices
FILES = tuple(r for r in RENDERERS if r.file_help is not None)  # one --NAME FILE option each


@exported
def renderer(name: str) -> Renderer:
    """The format called ``name``; ValueError for no such format."""
    for found in RENDERERS:
        if found.name == name:
            return found
    raise ValueError(f"no output format {name!r}: one of {', '.join(r.name for r in RENDERERS)}")
