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
    """(problem, fix) in plain language for one jsonschema error."""
    kind, value, expected = error.validator, error.instance, error.validator_value
    description = error.schema.get("description", "")
    if kind == "required":
        missing = next((k for k in expected if k not in value), expected[0])
        return f"'{missing}' is missing", f"add '{missing}'" + _about(error, missing)
    if kind == "additionalProperties":
        known = sorted(error.schema.get("properties", {}))
        extra = sorted(k for k in value if k not in known)
        return (f"unknown field{'s' if len(extra) > 1 else ''} {', '.join(map(repr, extra))}",
                f"remove it or correct its spelling (known: {', '.join(known)})")
    if kind == "dependentRequired":
        present = next(k for k in expected if k in value)
        needed = [k for k in expected[present] if k not in value]
        return (f"'{present}' is given without {', '.join(map(repr, needed))}",
                "give both, or neither")
    if kind == "type":
        kinds = expected if isinstance(expected, list) else [expected]
        wanted = " or ".join(k if k == "null" else ("an " if k[0] in "aeiou" else "a ") + k
                             for k in kinds)
        return f"{json.dumps(value)[:60]} is not {wanted}", f"write {wanted}" + _said(description)
    if kind in ("enum", "const"):
        wanted = ", ".join(json.dumps(v) for v in (expected if kind == "enum" else [expected]))
        return f"{json.dumps(value)[:60]} is not one of {wanted}", f"write one of {wanted}"
    if kind == "pattern":
        return (f"{json.dumps(value)[:80]} does not have the expected form",
                f"write {_lowered(description)}" if description
                else f"match the pattern {expected}")
    if kind in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        words = {"minimum": "at least", "maximum": "at most", "exclusiveMinimum": "more than",
                 "exclusiveMaximum": "less than"}[kind]
        return f"{value} is out of range", f"use a value {words} {expected}"
    if kind in ("minLength", "minItems"):
        return "is empty", "give a value" + _said(description)
    if kind == "uniqueItems":
        return "lists the same value twice", "list each value once"
    return error.message, description or "see the schema (gate schema NAME)"


def _lowered(description: str) -> str:
    """A schema description as part of a sentence: first letter lower-case, no final period."""
    return (description[:1].lower() + description[1:]).rstrip(".")


def _said(description: str) -> str:
    return f" ({_lowered(description)})" if description else ""


def _about(error: Any, key: str) -> str:
    described = error.schema.get("properties", {}).get(key, {}).get("description")
    return f": {_lowered(described)}" if described else ""
