"""A fast validity check of a document against one of the shipped JSON Schemas, so that a valid
manifest or config is accepted without importing jsonschema (some 40 ms of a command's start).

It is conservative: :func:`conforms` answers True only when jsonschema's
``Draft202012Validator`` (without a format checker, as :mod:`~retrieval_gate.formats.schema`
builds it) finds no error; False means *not sure*, and the caller asks jsonschema, which also
words the errors. Inside, every keyword answers valid (True), invalid (False) or not sure
(None), and the answers combine as jsonschema combines them: a schema is invalid when any of
its keywords is, valid when all are, else not sure; ``not``, ``anyOf``, ``oneOf`` and
``if``/``then``/``else`` use their subschemas' answers only where they are certain.

The keywords implemented, with jsonschema's semantics: ``type`` (``integer`` takes an
integral float such as 1.0; a bool is neither number nor integer), ``enum`` and ``const`` (on
strings, numbers, booleans and null: 1 equals 1.0, True equals neither 1 nor 1.0), ``properties``,
``required``, ``additionalProperties``, ``dependentRequired``, ``propertyNames``, ``items`` (one
schema for every item), ``minItems``, ``maxItems``, ``uniqueItems`` (on items that are all
strings or all integers), ``minLength``, ``maxLength`` (in code points), ``pattern``
(:func:`re.search`), ``minimum``, ``maximum``, ``exclusiveMinimum``, ``exclusiveMaximum``,
``$ref`` (a JSON pointer into the root schema, ``#/$defs/NAME``), ``allOf``, ``anyOf``,
``oneOf``, ``not``, ``if``/``then``/``else``, and the annotations (``title``, ``description``,
``default``, ``examples``, ``$comment``, ``deprecated``, ``readOnly``, ``writeOnly``,
``format``; ``$schema`` naming draft 2020-12 and ``$id`` at the root only; ``$defs``). Any
other keyword, a value of a Python type JSON does not produce (a tuple, a date, NaN or an
infinity), or a keyword whose value is not what the keyword takes makes the answer *not sure*.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

__all__ = ["IMPLEMENTED", "conforms", "verdict"]

DRAFT = "https://json-schema.org/draft/2020-12/schema"
_MAX_DEPTH = 100  # nested schemas deeper than this: not sure
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$comment",
                          "deprecated", "readOnly", "writeOnly", "format", "$defs"})

Answer = bool | None  # valid, invalid, not sure


def conforms(document: Any, schema: Any) -> bool:
    """True when ``document`` is certainly valid against ``schema`` (the root of a shipped
    schema); False when it is not, or when this check cannot tell."""
    return verdict(document, schema) is True


def verdict(document: Any, schema: Any) -> Answer:
    """True (valid), False (invalid) or None (not sure) for ``document`` against ``schema``."""
    return _Check(schema).answer(document, schema, 0)


def _kind(value: Any) -> str | None:
    """The JSON kind of a value as JSON parsers produce it (``integer`` for an int, ``number``
    for a finite float); None for anything else."""
    kind = type(value)
    if kind is str:
        return "string"
    if kind is dict:
        return "object"
    if kind is list:
        return "array"
    if kind is bool:
        return "boolean"
    if kind is int:
        return "integer"
    if value is None:
        return "null"
    if kind is float and math.isfinite(value):
        return "number"
    return None


def _is_number(value: Any) -> bool:
    """A bound or length of a schema keyword: an int or a finite float, not a bool."""
    return _kind(value) in ("integer", "number")


class _Check:
    """The answers for one root schema (``$ref`` points into it)."""

    def __init__(self, root: Any) -> None:
        self.root = root

    def answer(self, value: Any, schema: Any, depth: int) -> Answer:
        if schema is True:
            return True
        if schema is False:
            return False
        if type(schema) is not dict or depth > _MAX_DEPTH:
            return None
        result: Answer = True
        for keyword, expected in schema.items():
            check = _KEYWORDS.get(keyword)
            if check is not None:
                found = check(self, value, expected, schema, depth + 1)
            elif keyword in _ANNOTATIONS:
                continue
            elif keyword == "$schema" and schema is self.root:
                found = True if expected == DRAFT else None
            elif keyword == "$id" and schema is self.root:
                continue
            else:
                return None  # a keyword this check does not know
            if found is False:
                return False
            if found is None:
                result = None
        return result

    def every(self, pairs: list[tuple[Any, Any]], depth: int) -> Answer:
        """All of (value, schema) valid: False at the first invalid, None if any unsure."""
        result: Answer = True
        for value, schema in pairs:
            found = self.answer(value, schema, depth)
            if found is False:
                return False
            if found is None:
                result = None
        return result


Keyword = Callable[[_Check, Any, Any, dict[str, Any], int], Answer]


def _type(check: _Check, value: Any, expected: Any, schema: dict[str, Any], depth: int) -> Answer:
    kind = _kind(value)
    names = [expected] if type(expected) is str else expected
    if kind is None or type(names) is not list or \
            not all(type(name) is str and name in _TYPES for name in names):
        return None
    return any(_is(kind, value, name) for name in names)


_TYPES = frozenset({"null", "boolean", "integer", "number", "string", "array", "object"})


def _is(kind: str, value: Any, name: str) -> bool:
    if name == "number":
        return kind in ("integer", "number")
    if name == "integer":
        return kind == "integer" or (kind == "number" and value.is_integer())
    return kind == name


def _equal_to_any(value: Any, choices: Any) -> Answer:
    """Whether ``value`` equals one of ``choices`` as jsonschema's ``equal`` has it, for a
    string, number, boolean or null; None for an array or object (or a value of no JSON
    kind)."""
    kind = _kind(value)
    if kind is None or kind in ("array", "object") or type(choices) is not list:
        return None
    if kind in ("integer", "number"):  # 1 == 1.0; never a bool
        return any(_kind(c) in ("integer", "number") and c == value for c in choices)
    return any(type(c) is type(value) and c == value for c in choices)


def _enum(check: _Check, value: Any, expected: Any, schema: dict[str, Any], depth: int) -> Answer:
    return _equal_to_any(value, expected)


def _const(check: _Check, value: Any, expected: Any, schema: dict[str, Any],
           depth: int) -> Answer:
    return _equal_to_any(value, [expected])


def _on(kind: str) -> Callable[[Keyword], Keyword]:
    """A keyword that applies to values of one kind: valid for a value of any other JSON kind,
    not sure for a value of none."""
    def wrap(keyword: Keyword) -> Keyword:
        def check(checker: _Check, value: Any, expected: Any, schema: dict[str, Any],
                  depth: int) -> Answer:
            found = _kind(value)
            if found is None:
                return None
            if found != kind and not (kind == "number" and found == "integer"):
                return True
            return keyword(checker, value, expected, schema, depth)
        return check
    return wrap


@_on("object")
def _properties(check: _Check, value: dict[Any, Any], expected: Any, schema: dict[str, Any],
                depth: int) -> Answer:
    if type(expected) is not dict:
        return None
    return check.every([(value[name], sub) for name, sub in expected.items() if name in value],
                       depth)


@_on("object")
def _required(check: _Check, value: dict[Any, Any], expected: Any, schema: dict[str, Any],
              depth: int) -> Answer:
    if type(expected) is not list or not all(type(name) is str for name in expected):
        return None
    return all(name in value for name in expected)


@_on("object")
def _additional(check: _Check, value: dict[Any, Any], expected: Any, schema: dict[str, Any],
                depth: int) -> Answer:
    known = schema.get("properties", {})
    if "patternProperties" in schema or type(known) is not dict:
        return None
    extras = [name for name in value if name not in known]
    if expected is True or expected is False:
        return expected or not extras
    return check.every([(value[name], expected) for name in extras], depth)


@_on("object")
def _dependent(check: _Check, value: dict[Any, Any], expected: Any, schema: dict[str, Any],
               depth: int) -> Answer:
    if type(expected) is not dict or not all(
            type(needed) is list and all(type(name) is str for name in needed)
            for needed in expected.values()):
        return None
    return all(name in value for key, needed in expected.items() if key in value
               for name in needed)


@_on("object")
def _property_names(check: _Check, value: dict[Any, Any], expected: Any,
                    schema: dict[str, Any], depth: int) -> Answer:
    return check.every([(name, expected) for name in value], depth)


@_on("array")
def _items(check: _Check, value: list[Any], expected: Any, schema: dict[str, Any],
           depth: int) -> Answer:
    if "prefixItems" in schema or type(expected) is list:
        return None
    return check.every([(item, expected) for item in value], depth)


def _length(compare: Callable[[int, Any], bool], kind: str) -> Keyword:
    @_on(kind)
    def check(checker: _Check, value: Any, expected: Any, schema: dict[str, Any],
              depth: int) -> Answer:
        return compare(len(value), expected) if _is_number(expected) else None
    return check


@_on("array")
def _unique(check: _Check, value: list[Any], expected: Any, schema: dict[str, Any],
            depth: int) -> Answer:
    if expected is False:
        return True
    if expected is not True:
        return None
    kinds = {_kind(item) for item in value}
    if not value or kinds in ({"string"}, {"integer"}):
        return len(set(value)) == len(value)
    return None


@_on("string")
def _pattern(check: _Check, value: str, expected: Any, schema: dict[str, Any],
             depth: int) -> Answer:
    return re.search(expected, value) is not None if type(expected) is str else None


def _bound(compare: Callable[[Any, Any], bool]) -> Keyword:
    @_on("number")
    def check(checker: _Check, value: Any, expected: Any, schema: dict[str, Any],
              depth: int) -> Answer:
        return compare(value, expected) if _is_number(expected) else None
    return check


def _ref(check: _Check, value: Any, expected: Any, schema: dict[str, Any], depth: int) -> Answer:
    """A JSON pointer into the root schema: ``#`` or ``#/$defs/NAME`` (``~0``, ``~1`` escapes;
    no percent-encoding)."""
    if type(expected) is not str or "%" in expected or not (expected == "#"
                                                            or expected.startswith("#/")):
        return None
    target = check.root
    for token in expected[2:].split("/") if expected != "#" else []:
        token = token.replace("~1", "/").replace("~0", "~")
        if type(target) is not dict or token not in target:
            return None
        target = target[token]
    return check.answer(value, target, depth)


def _all_of(check: _Check, value: Any, expected: Any, schema: dict[str, Any],
            depth: int) -> Answer:
    if type(expected) is not list or not expected:
        return None
    return check.every([(value, sub) for sub in expected], depth)


def _any_of(check: _Check, value: Any, expected: Any, schema: dict[str, Any],
            depth: int) -> Answer:
    if type(expected) is not list or not expected:
        return None
    found = [check.answer(value, sub, depth) for sub in expected]
    return True if True in found else (None if None in found else False)


def _one_of(check: _Check, value: Any, expected: Any, schema: dict[str, Any],
            depth: int) -> Answer:
    if type(expected) is not list or not expected:
        return None
    found = [check.answer(value, sub, depth) for sub in expected]
    valid = found.count(True)
    if valid > 1:
        return False
    return None if None in found else valid == 1


def _not(check: _Check, value: Any, expected: Any, schema: dict[str, Any], depth: int) -> Answer:
    found = check.answer(value, expected, depth)
    return None if found is None else not found


def _if(check: _Check, value: Any, expected: Any, schema: dict[str, Any], depth: int) -> Answer:
    found = check.answer(value, expected, depth)
    if found is None:
        return None
    branch = "then" if found else "else"
    return check.answer(value, schema[branch], depth) if branch in schema else True


def _branch(check: _Check, value: Any, expected: Any, schema: dict[str, Any],
            depth: int) -> Answer:
    """``then`` and ``else``: applied by ``if`` (without one, ignored)."""
    return True


_KEYWORDS: dict[str, Keyword] = {
    "type": _type, "enum": _enum, "const": _const,
    "properties": _properties, "required": _required, "additionalProperties": _additional,
    "dependentRequired": _dependent, "propertyNames": _property_names,
    "items": _items, "uniqueItems": _unique,
    "minItems": _length(lambda n, bound: n >= bound, "array"),
    "maxItems": _length(lambda n, bound: n <= bound, "array"),
    "minLength": _length(lambda n, bound: n >= bound, "string"),
    "maxLength": _length(lambda n, bound: n <= bound, "string"),
    "pattern": _pattern,
    "minimum": _bound(lambda v, bound: not v < bound),
    "maximum": _bound(lambda v, bound: not v > bound),
    "exclusiveMinimum": _bound(lambda v, bound: not v <= bound),
    "exclusiveMaximum": _bound(lambda v, bound: not v >= bound),
    "$ref": _ref, "allOf": _all_of, "anyOf": _any_of, "oneOf": _one_of, "not": _not,
    "if": _if, "then": _branch, "else": _branch,
}

IMPLEMENTED = frozenset(_KEYWORDS) | _ANNOTATIONS | {"$schema", "$id"}  # what the check reads
