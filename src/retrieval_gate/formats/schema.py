"""The JSON Schemas (2020-12) of retrieval-gate's documents, shipped inside the package, and
validation that reports every problem at once in plain language. A document
:mod:`~retrieval_gate.formats.schema_check` finds valid is accepted without importing
jsonschema; any other is validated by jsonschema, whose errors are worded here.

Names: ``snapshot``, ``run-manifest``, ``config`` and ``report``; each schema is the package file
``schemas/<name>.schema.json`` (the repository's top-level ``schemas/`` links to that folder).
"""

from __future__ import annotations

import json
import pkgutil
from collections.abc import Callable
from functools import cache
from typing import Any

from retrieval_gate.core.errors import InputError, ManyErrors
from retrieval_gate.formats.schema_check import conforms

SCHEMA_NAMES = ("snapshot", "run-manifest", "config", "report")


def schema_text(name: str) -> str:
    """The schema's JSON text as shipped; InputError for an unknown name."""
    if name not in SCHEMA_NAMES:
        raise InputError("gate schema", f"no schema named '{name}'",
                         f"use one of {', '.join(SCHEMA_NAMES)}")
    data = pkgutil.get_data("retrieval_gate", f"schemas/{name}.schema.json")  # folder or zip
    assert data is not None  # the package has a loader that reads its files
    return data.decode("utf-8")


@cache
def schema(name: str) -> dict[str, Any]:
    return json.loads(schema_text(name))


def problems(document: Any, name: str, source: str) -> list[InputError]:
    """Every way ``document`` breaks schema ``name``, as errors naming the JSON path of the
    offending value and a fix, in document order; empty when it is valid."""
    if conforms(document, schema(name)):
        return []
    from jsonschema import Draft202012Validator

    from retrieval_gate.formats.jsonfmt import path

    validator = Draft202012Validator(schema(name))
    found = sorted(validator.iter_errors(document),
                   key=lambda e: ([str(p) for p in e.absolute_path], e.validator))
    return [InputError(source, *_explain(error), path(*error.absolute_path)) for error in found]


def validate(document: Any, name: str, source: str) -> None:
    """Raise :class:`ManyErrors` listing every schema problem of ``document``."""
    found = problems(document, name, source)
    if found:
        raise ManyErrors(found)


def _explain(error: Any) -> tuple[str, str]:
    """(problem, fix) in plain language for one jsonschema error: by its validator (the
    keyword that failed, :data:`_BY_KIND`), else jsonschema's own message and the schema's
    description."""
    explain = _BY_KIND.get(error.validator)
    if explain is not None:
        return explain(error, error.instance, error.validator_value,
                       error.schema.get("description", ""))
    return error.message, error.schema.get("description", "") or \
        "see the schema (gate schema NAME)"


Explained = tuple[str, str]


def _required(error: Any, value: Any, expected: Any, description: str) -> Explained:
    missing = next((k for k in expected if k not in value), expected[0])
    return f"'{missing}' is missing", f"add '{missing}'" + _about(error, missing)


def _additional(error: Any, value: Any, expected: Any, description: str) -> Explained:
    known = sorted(error.schema.get("properties", {}))
    extra = sorted(k for k in value if k not in known)
    return (f"unknown field{'s' if len(extra) > 1 else ''} {', '.join(map(repr, extra))}",
            f"remove it or correct its spelling (known: {', '.join(known)})")


def _dependent(error: Any, value: Any, expected: Any, description: str) -> Explained:
    present = next(k for k in expected if k in value)
    needed = [k for k in expected[present] if k not in value]
    return f"'{present}' is given without {', '.join(map(repr, needed))}", "give both, or neither"


def _type(error: Any, value: Any, expected: Any, description: str) -> Explained:
    kinds = expected if isinstance(expected, list) else [expected]
    wanted = " or ".join(k if k == "null" else ("an " if k[0] in "aeiou" else "a ") + k
                         for k in kinds)
    return f"{json.dumps(value)[:60]} is not {wanted}", f"write {wanted}" + _said(description)


def _one_of(error: Any, value: Any, expected: Any, description: str) -> Explained:
    wanted = ", ".join(json.dumps(v) for v in (expected if error.validator == "enum"
                                               else [expected]))
    return f"{json.dumps(value)[:60]} is not one of {wanted}", f"write one of {wanted}"


def _pattern(error: Any, value: Any, expected: Any, description: str) -> Explained:
    return (f"{json.dumps(value)[:80]} does not have the expected form",
            f"write {_lowered(description)}" if description else f"match the pattern {expected}")


_BOUNDS = {"minimum": "at least", "maximum": "at most", "exclusiveMinimum": "more than",
           "exclusiveMaximum": "less than"}


def _bound(error: Any, value: Any, expected: Any, description: str) -> Explained:
    return f"{value} is out of range", f"use a value {_BOUNDS[error.validator]} {expected}"


def _empty(error: Any, value: Any, expected: Any, description: str) -> Explained:
    return "is empty", "give a value" + _said(description)


def _twice(error: Any, value: Any, expected: Any, description: str) -> Explained:
    return "lists the same value twice", "list each value once"


_BY_KIND: dict[str, Callable[[Any, Any, Any, str], Explained]] = {
    "required": _required, "additionalProperties": _additional,
    "dependentRequired": _dependent, "type": _type, "enum": _one_of, "const": _one_of,
    "pattern": _pattern, **dict.fromkeys(_BOUNDS, _bound), "minLength": _empty,
    "minItems": _empty, "uniqueItems": _twice}


def _lowered(description: str) -> str:
    """A schema description as part of a sentence: first letter lower-case, no final period."""
    return (description[:1].lower() + description[1:]).rstrip(".")


def _said(description: str) -> str:
    return f" ({_lowered(description)})" if description else ""


def _about(error: Any, key: str) -> str:
    described = error.schema.get("properties", {}).get(key, {}).get("description")
    return f": {_lowered(described)}" if described else ""
