"""Untrusted text made safe to print. Every string read from an input file or given as an
option — query ids and texts, item ids, snapshot names, paths, slice names, tags, and the
warnings and error messages that quote them — may hold anything.

- :func:`visible`: one run of visible characters on one line. Control characters (C0, DEL,
  C1), the line and paragraph separators U+2028 and U+2029, the bidirectional controls (which
  reorder what a reader sees), the invisible U+200B, U+2060 and U+FEFF, lone surrogates and
  the noncharacters U+FFFE and U+FFFF are written as Python-style escapes: ``\\n``, ``\\r``,
  ``\\t``, ``\\x1b``, ``\\u2028``. A backslash is kept as it is, so a Windows path stays
  readable; the JSON report holds every value exactly.
- :func:`one_line`: only the characters that end a line (those ``str.splitlines`` splits at:
  LF, CR, VT, FF, FS, GS, RS, NEL, U+2028, U+2029) written as those escapes, so that a message
  quoting a value stays one line wherever it is split.
- :func:`command_safe`: a line GitHub's runner cannot take for a workflow command (see there).
- :func:`capped`: at most ``limit`` characters, the cut marked with a visible "…".

Standard library only: the command line imports it to print errors.
"""

from __future__ import annotations

import re

__all__ = ["capped", "command_safe", "one_line", "visible"]


def _escapes() -> dict[int, str]:
    named = {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}
    codes = [*range(0x20), *range(0x7F, 0xA0), 0x061C, 0x200B, 0x200E, 0x200F,
             0x2028, 0x2029, *range(0x202A, 0x202F), 0x2060, *range(0x2066, 0x206A),
             *range(0xD800, 0xE000), 0xFEFF, 0xFFFE, 0xFFFF]
    return {c: named.get(c) or (f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}") for c in codes}


_ESCAPES = _escapes()


def visible(text: str) -> str:
    """``text`` with every character that could break a line, hide itself or reorder the
    display written as an escape (see the module docstring). Idempotent."""
    return text.translate(_ESCAPES)


_LINE_ENDS = {c: _ESCAPES[c] for c in (0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x85, 0x2028,
                                       0x2029)}


def one_line(text: str) -> str:
    """``text`` with every line end written as its escape (see the module docstring);
    idempotent, and the identity on text without one."""
    return text.translate(_LINE_ENDS)


def capped(text: str, limit: int) -> str:
    """``text`` if it has at most ``limit`` characters, else its first ``limit - 1`` and "…"."""
    return text if len(text) <= limit else text[:limit - 1] + "…"


# The runner (actions/runner: ActionCommandManager.TryProcessCommand, ActionCommand.TryParseV2
# and TryParse) reads standard output *and* standard error line by line, a line ending at LF,
# CR or CRLF, and takes a line for a workflow command when, with its leading white space
# trimmed (.NET's Char.IsWhiteSpace), it starts with "::", or when it holds "##[" anywhere
# (the older form, still parsed). Python's \s covers .NET's white space; U+180E (white space
# in older .NET), U+200B and U+FEFF are counted too, to be safe.
_COMMAND_START = re.compile(r"[\s\u180e\u200b\ufeff]*::")


def command_safe(line: str) -> str:
    """``line`` (without LF or CR: pass untrusted parts through :func:`visible` first) such
    that GitHub's runner cannot take it for a workflow command: every ``##[`` becomes
    ``#\\u0023[`` and a leading ``::`` (after any white space) becomes ``\\u003a:``. Both are
    visible escapes in text and valid escapes inside a JSON string, so JSON stays the same
    JSON. Lines that are not commands are returned unchanged."""
    line = line.replace("##[", "#\\u0023[")
    start = _COMMAND_START.match(line)
    if start:
        colon = start.end() - 2
        line = f"{line[:colon]}\\u003a{line[colon + 1:]}"
    return line
