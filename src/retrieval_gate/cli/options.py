"""Option values the commands share: text that must be UTF-8, ``KEY=VALUE`` pairs, and the
scoring policy's options."""

from __future__ import annotations

from typing import overload

import click


@overload
def utf8(option: str, text: str, what: str = "it") -> str: ...
@overload
def utf8(option: str, text: None, what: str = "it") -> None: ...


def utf8(option: str, text: str | None, what: str = "it") -> str | None:
    """``text`` if it is UTF-8 text (None, an option not given, stays None); InputError
    otherwise (bytes that are not UTF-8 reach Python as lone surrogates: shown as \\xNN; a
    surrogate no byte stands for as \\udXXX)."""
    from retrieval_gate.core.errors import InputError

    if text is None:
        return None
    try:
        shown = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        shown = text.encode("utf-8", "backslashreplace").decode("utf-8")
    if shown != text:
        raise InputError(option, f"'{shown}' is not UTF-8 text", f"give {what} as UTF-8 text")
    return text


def key_values(option: str, pairs: tuple[str, ...], typed: bool = True) -> dict[str, object]:
    """``KEY=VALUE`` pairs → a dict; VALUE is a JSON number, true, false or null when it reads as
    one (and ``typed``), else the string as given. Untyped, a key given twice is an error."""
    from retrieval_gate.core.errors import InputError

    result: dict[str, object] = {}
    for pair in pairs:
        key, sep, value = utf8(option, pair, "keys and values").partition("=")
        if not sep or not key:
            raise InputError(option, f"'{pair}' is not KEY=VALUE", f"write {option} size=512")
        if not typed and key in result:
            raise InputError(option, f"{key} is given twice", f"give {option} {key}=... once")
        result[key] = _typed(value) if typed else value
    return result


def _typed(value: str) -> object:
    """A JSON number, true, false or null as its value; any other text as given."""
    import json

    try:
        parsed = json.loads(value)
    except ValueError:
        return value
    return parsed if isinstance(parsed, (int, float, bool)) or parsed is None else value


def policy_options(command):
    """The ``--threshold`` option and one option per scoring policy (model.POLICY_HELP)."""
    from retrieval_gate.scoring.rules import POLICY_HELP, POLICY_NAMES, policy_choices

    for name in reversed(POLICY_NAMES):
        choices = policy_choices(name)
        command = click.option(f"--{name}", type=click.Choice(choices), default=choices[0],
                               show_default=True, help=POLICY_HELP[name])(command)
    return click.option("--threshold", type=int, default=1, show_default=True,
                        help="Relevant = grade ≥ N, for binary measures (never nDCG gains).")(
        command)
