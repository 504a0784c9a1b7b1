"""Text from the inputs — paths, names, slices, query ids and texts, warnings — as each output
format shows it: as text, never as markup, cut to a length per kind of value. The plain-text
report and JUnit make every such string :func:`~retrieval_gate.core.untrusted.visible` (the
plain-text report uncut); Markdown and HTML use the functions here.

Markdown, as GitHub renders it, including what it adds afterwards (@-mentions, #-references,
bare links):

- in table cells and list items (:func:`markdown`): cut with "…"; made
  :func:`~retrieval_gate.core.untrusted.visible` (a CR, LF or U+2028 cannot end the cell or
  the line); ``&``, ``<``, ``>`` and ``"`` as HTML entities (no raw HTML); every other ASCII
  character that can start Markdown, ``\\ ` * _ [ ] ( ) ! # + - . | ~ $ =``,
  backslash-escaped (no link, image, emphasis, code, heading, list, math or extra table cell);
  and a zero-width space (U+200B) after ``@`` (mentions, e-mail links; not in ``Recall@10``),
  after ``#`` (issue references), between the slashes of ``//`` and after ``www`` before a dot
  (bare links), and in ``GH-`` references;
- in code spans (:func:`markdown_code`, never inside a table): the fence is one backtick longer
  than the longest run of backticks in the value, so nothing in it can close the span;
- in HTML (``<summary>``, :func:`markdown_html`): HTML-escaped, with the same zero-width spaces.

HTML (:func:`html`): cut, made visible, HTML-escaped (also in attribute values), and with
``::`` and ``##[`` written as character references, so that no line of the file is a GitHub
workflow command when a job prints it.
"""

from __future__ import annotations

import re
from functools import cache

from retrieval_gate.core.untrusted import capped, visible

__all__ = ["LINE", "NAME", "PATH", "TEXT", "html", "markdown", "markdown_code",
           "markdown_html"]

# Characters of one value shown: names and ids, paths, query texts, sentences.
NAME, PATH, TEXT, LINE = 80, 160, 200, 400

_ZERO_WIDTH = "\u200b"
_MARKUP = str.maketrans({**{c: f"\\{c}" for c in "\\`*_[]()!#+-.|~$="},
                         "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"})


@cache
def _references() -> re.Pattern[str]:
    """Where GitHub would link (compiled on first use: the text report needs none of it)."""
    return re.compile(  # first a mention or an e-mail address (not the k of Recall@k)
        r"@(?!(?<=[A-Za-z0-9_]@)\d+(?![\w.-]))|#|/(?=/)|(?i:www)(?=\.)|(?i:\bgh)(?=-\d)")


def _unlinked(text: str, limit: int) -> str:
    """``text`` capped, made visible, and with a zero-width space wherever GitHub would link."""
    return _references().sub(lambda m: m.group(0) + _ZERO_WIDTH, visible(capped(text, limit)))


def markdown(text: str, limit: int = LINE) -> str:
    """``text`` as Markdown that renders as exactly that text, in a table cell or anywhere else
    (see the module docstring); at most ``limit`` characters of it."""
    return _unlinked(text, limit).translate(_MARKUP)


def markdown_code(text: str, limit: int = PATH) -> str:
    """``text`` as an inline code span that it cannot close (not for table cells)."""
    text = visible(capped(text, limit))
    fence = "`" * (max(map(len, re.findall("`+", text)), default=0) + 1)
    return f"{fence} {text} {fence}"


def markdown_html(text: str, limit: int = LINE) -> str:
    """``text`` as the text of an HTML element in a Markdown document (``<summary>``)."""
    import html as _html  # on first use (it imports html.entities): HTML in Markdown, HTML

    return _html.escape(_unlinked(text, limit))


def html(value: str, limit: int = LINE) -> str:
    """``value`` as HTML text or a quoted attribute value that shows exactly it: at most
    ``limit`` characters, made visible, HTML-escaped, and never a workflow command in a log."""
    import html as _html

    text = _html.escape(visible(capped(value, limit)), quote=True)
    return text.replace("::", ":&#58;").replace("##[", "#&#35;[")
