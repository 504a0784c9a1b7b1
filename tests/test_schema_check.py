"""The fast schema check against jsonschema itself: it implements every keyword the shipped
schemas use, finds the shipped manifests, configs and reports valid (so that a check imports
no jsonschema: tests/test_check.py), and never answers where jsonschema answers otherwise — on
the exact semantics of types, equality, patterns and bounds, and on mutated valid documents
(differential fuzzing: 150 per schema; ``GATE_FUZZ_EXAMPLES`` sets how many, as for
tests/test_fuzz.py)."""

from __future__ import annotations

import copy
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import BASELINE, CRANFIELD, ROOT, RUNS, SNAPSHOT, gate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from retrieval_gate.formats.schema import SCHEMA_NAMES, schema
from retrieval_gate.formats.schema_check import IMPLEMENTED, conforms, verdict

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

EXAMPLES = int(os.environ.get("GATE_FUZZ_EXAMPLES", "150"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None,
                derandomize="GATE_FUZZ_EXAMPLES" not in os.environ,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SUBSCHEMAS = ("not", "if", "then", "else", "items", "propertyNames", "additionalProperties")
SCHEMA_LISTS = ("allOf", "anyOf", "oneOf")
SCHEMA_MAPS = ("properties", "$defs")


def keywords(node: Any) -> set[str]:
    """Every keyword of a schema and of the schemas inside it."""
    if not isinstance(node, dict):
        return set()
    found = set(node)
    for key in SUBSCHEMAS:
        found |= keywords(node.get(key))
    for key in SCHEMA_LISTS:
        for sub in node.get(key, []):
            found |= keywords(sub)
    for key in SCHEMA_MAPS:
        for sub in node.get(key, {}).values():
            found |= keywords(sub)
    return found


def jsonschema_valid(document: Any, name: str) -> bool:
    return Draft202012Validator(schema(name)).is_valid(document)


@pytest.fixture(scope="module")
def seeds(tmp_path_factory) -> dict[str, list[Any]]:
    """Valid documents of every schema: the shipped snapshots, run manifests and configs, and
    the reports of checks of the examples (a pass, a regression, leaks, the error form)."""
    out = tmp_path_factory.mktemp("reports")
    examples = ROOT / "examples"
    reports = []
    for i, args in enumerate([
            ("--no-config", "--snapshot", SNAPSHOT, "--baseline", BASELINE, "--candidate",
             RUNS / "hybrid.trec"),
            ("--no-config", "--snapshot", SNAPSHOT, "--baseline", BASELINE, "--candidate",
             RUNS / "dense.trec"),
            ("--config", examples / "policies" / "gate.toml", "--candidate",
             examples / "policies" / "runs" / "leaky-filter.jsonl"),
            ("--config", examples / "pydoc" / "pipeline.toml"),
            ("--config", examples / "pydoc" / "answers.toml"),
            ("--no-config", "--snapshot", out / "missing.json", "--baseline", BASELINE,
             "--candidate", RUNS / "hybrid.trec")]):
        code, _, err = gate("check", *args, "--json", out / f"{i}.json")
        assert code in (0, 1, 2), err
        reports.append(json.loads((out / f"{i}.json").read_text()))
    found: dict[str, list[Any]] = {
        "snapshot": [json.loads(p.read_text()) for p in ROOT.glob("examples/*/*snapshot.json")],
        "run-manifest": [json.loads(p.read_text()) for folder in ("examples", "baselines")
                         for p in ROOT.glob(f"{folder}/**/*.manifest.json")],
        "config": [tomllib.loads(p.read_text()) for p in ROOT.glob("examples/*/*.toml")],
        "report": reports,
    }
    assert all(len(documents) >= 4 for documents in found.values())
    return found


def test_every_keyword_of_the_shipped_schemas_is_implemented():
    for name in SCHEMA_NAMES:
        assert keywords(schema(name)) - IMPLEMENTED == set(), name


def test_the_shipped_documents_are_valid_without_jsonschema(seeds):
    for name, documents in seeds.items():
        for document in documents:
            assert conforms(document, schema(name)), (name, document)


# -- semantics, keyword by keyword ------------------------------------------------------------

CASES = [  # (schema, document): the fast check must agree with jsonschema, or not answer
    ({"type": "integer"}, 1.0), ({"type": "integer"}, 1.5), ({"type": "integer"}, True),
    ({"type": "number"}, False), ({"type": "number"}, 2**70), ({"type": ["string", "null"]}, None),
    ({"type": "array"}, (1, 2)), ({"type": "object"}, {1: "a"}), ({"type": "number"}, float("nan")),
    ({"enum": [1]}, True), ({"enum": [1]}, 1.0), ({"enum": [True]}, 1), ({"enum": [0]}, False),
    ({"enum": ["a", None]}, None), ({"enum": [[1]]}, [1]), ({"const": 0}, -0.0),
    ({"const": "a"}, "a"), ({"const": "a"}, "A"),
    ({"uniqueItems": True}, [1, True]), ({"uniqueItems": True}, [1, 1.0]),
    ({"uniqueItems": True}, ["a", "a"]), ({"uniqueItems": True}, [0, False]),
    ({"uniqueItems": True}, []), ({"uniqueItems": False}, [1, 1]),
    ({"pattern": "^a"}, "ba"), ({"pattern": "a"}, "ba"), ({"pattern": "^a$"}, "a\n"),
    ({"pattern": "x"}, 5), ({"minLength": 2}, "\U0001F600"), ({"maxLength": 1}, "\U0001F600"),
    ({"minimum": 0}, -0.0), ({"exclusiveMinimum": 0}, 0), ({"maximum": 1}, 1.0000000000000002),
    ({"exclusiveMaximum": 2**53}, 2**53 + 1), ({"minimum": 1}, True), ({"minimum": 1}, "0"),
    ({"format": "date"}, "not a date"), ({"format": "email"}, 5),
    ({"required": ["a"]}, {"a": None}), ({"required": ["a"]}, []),
    ({"additionalProperties": False, "properties": {"a": {}}}, {"a": 1, "b": 2}),
    ({"additionalProperties": False, "patternProperties": {"^b": {}}}, {"b": 2}),
    ({"additionalProperties": {"type": "integer"}}, {"x": 1.0}),
    ({"dependentRequired": {"a": ["b"]}}, {"a": 1}), ({"dependentRequired": {"a": ["b"]}}, {"b": 1}),
    ({"propertyNames": {"pattern": "^[a-z]+$"}}, {"ab": 1, "c1": 2}),
    ({"items": {"type": "string"}}, ["a", 1]), ({"items": False}, []),
    ({"prefixItems": [{"type": "integer"}], "items": {"type": "string"}}, [1, "a"]),
    ({"minItems": 1}, []), ({"maxItems": 1}, [1, 2]), ({"minItems": 1}, "abc"),
    ({"not": {"required": ["a"]}}, {"a": 1}), ({"not": {"required": ["a"]}}, {}),
    ({"anyOf": [{"type": "string"}, {"minimum": 3}]}, 2),
    ({"oneOf": [{"type": "integer"}, {"type": "number"}]}, 1),
    ({"oneOf": [{"type": "integer"}, {"type": "string"}]}, 1),
    ({"oneOf": [{"type": "integer"}, {"foo": 1}]}, 1),
    ({"if": {"required": ["a"]}, "then": {"required": ["b"]}, "else": {"required": ["c"]}},
     {"a": 1}),
    ({"if": {"required": ["a"]}, "then": {"required": ["b"]}, "else": {"required": ["c"]}},
     {"c": 1}),
    ({"then": {"required": ["b"]}}, {}), ({"$defs": {"x": {"type": "string"}},
                                          "$ref": "#/$defs/x"}, 5),
    ({"$defs": {"x": {"type": "string"}}, "$ref": "#/$defs/x", "minLength": 2}, "a"),
    ({"$ref": "#/$defs/missing"}, 1), ({"unknownKeyword": 1}, 1), ({"minProperties": 1}, {}),
    ({"properties": {"a": {"$id": "urn:x", "type": "string"}}}, {"a": 1}),
]


@pytest.mark.parametrize(("subschema", "document"), CASES)
def test_agrees_with_jsonschema_or_does_not_answer(subschema, document):
    root = {"$schema": "https://json-schema.org/draft/2020-12/schema", **subschema}
    found = verdict(document, root)
    if found is not None:
        assert found == Draft202012Validator(root).is_valid(document), (subschema, document)


def test_answers_where_it_should():
    """The cases it must decide itself: the common ones are not left to jsonschema."""
    for schema_, document, expected in [
            ({"type": "integer"}, 1.0, True), ({"type": "integer"}, True, False),
            ({"enum": [1]}, True, False), ({"uniqueItems": True}, ["a", "a"], False),
            ({"pattern": "a"}, "ba", True), ({"format": "date"}, "not a date", True),
            ({"not": {"required": ["a"]}}, {"a": 1}, False),
            ({"unknownKeyword": 1}, 1, None), ({"type": "array"}, (1, 2), None),
            ({"type": "number"}, float("inf"), None), ({"uniqueItems": True}, [1, True], None)]:
        assert verdict(document, schema_) is expected, (schema_, document)


# -- differential fuzzing on mutated valid documents -------------------------------------------

POOL = [None, True, False, 0, 1, -1, 2, 1.0, 0.5, -0.0, 1e300, 2**64, -(2**63), "", "a", " ",
        "x" * 65, "0" * 64, "sha256:" + "0" * 64, "sha256:" + "A" * 64, "nDCG@10", "P@5",
        "Recall@10 [candidates]", "score:judge", "2024-01-01T00:00:00Z", "2024-01-01",
        "document", "span", "chunk", "regression", "pass", "inconclusive", "invalid",
        "not-comparable", "error", "fail", "warn", "none", "../x", "/abs", "a/b.json", [], {},
        [1, 1], ["a", "a"], ["a", "b"], [1, True], [1.0, 1], {"a": 1}, {"path": "x"},
        float("nan"), float("inf"), (1, 2)]


def paths(node: Any, here: tuple = ()) -> list[tuple]:
    """Every place in a document: a key of an object, an index of an array."""
    found = [here]
    if isinstance(node, dict):
        for key, value in node.items():
            found += paths(value, (*here, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += paths(value, (*here, i))
    return found


def schema_words(node: Any, names: set[str], values: list[Any]) -> None:
    """Every property name, and every enum or const value, of a schema: mutations that keep a
    document close to valid, so that many mutants are valid in other ways."""
    if isinstance(node, dict):
        names.update(node.get("properties", {}))
        values.extend(node.get("enum", []))
        values.extend([node["const"]] if "const" in node else [])
        for value in node.values():
            schema_words(value, names, values)
    elif isinstance(node, list):
        for value in node:
            schema_words(value, names, values)


ANYTHING = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
                        lambda inner: st.lists(inner, max_size=3)
                        | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                        max_leaves=6)


def mutate(data: st.DataObject, document: Any, name: str) -> Any:
    """The document after one to three edits at random places: a value replaced (by a value of
    the pool, an enum or const value of the schema, another value of the document, or arbitrary
    JSON), a key or item deleted, a key added (a property name of the schema, or any text),
    an item duplicated."""
    out = copy.deepcopy(document)
    names: set[str] = set()
    values: list[Any] = []
    schema_words(schema(name), names, values)
    for _ in range(data.draw(st.integers(1, 3), label="edits")):
        places = paths(out)
        place = data.draw(st.sampled_from(places), label="place")
        target = _at(out, place)
        own = [v for p in places for v in [_at(out, p)] if not isinstance(v, (dict, list))]
        replacement = st.one_of(st.sampled_from(POOL), st.sampled_from(values),
                                st.sampled_from(own or POOL), ANYTHING)
        kind = data.draw(st.sampled_from(["replace", "replace", "delete", "add", "duplicate"]),
                         label="kind")
        if kind == "delete" and place:
            del _at(out, place[:-1])[place[-1]]
        elif kind == "add" and isinstance(target, dict):
            key = data.draw(st.sampled_from(sorted(names)) | st.text(max_size=8), label="key")
            target[key] = copy.deepcopy(data.draw(replacement, label="value"))
        elif kind == "duplicate" and isinstance(target, list) and target:
            target.append(copy.deepcopy(data.draw(st.sampled_from(target), label="item")))
        else:
            out = _put(out, place, copy.deepcopy(data.draw(replacement, label="value")))
    return out


def _at(node: Any, place: tuple) -> Any:
    for step in place:
        node = node[step]
    return node


def _put(document: Any, place: tuple, value: Any) -> Any:
    if not place:
        return value
    _at(document, place[:-1])[place[-1]] = value
    return document


@pytest.mark.parametrize("name", SCHEMA_NAMES)
@FUZZ
@given(data=st.data())
def test_mutated_documents_never_disagree_with_jsonschema(seeds, name, data):
    document = mutate(data, data.draw(st.sampled_from(seeds[name]), label="seed"), name)
    found = verdict(document, schema(name))
    if found is not None:
        assert found == jsonschema_valid(document, name)


def test_the_fuzzing_reaches_both_answers(seeds):
    """Not vacuous: mutants the fast check accepts and refuses itself are both common."""
    answers = {True: 0, False: 0, None: 0}

    @settings(max_examples=150, derandomize=True, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(data=st.data())
    def count(data):
        name = data.draw(st.sampled_from(SCHEMA_NAMES))
        document = mutate(data, data.draw(st.sampled_from(seeds[name])), name)
        answers[verdict(document, schema(name))] += 1

    count()
    assert answers[True] >= 5 and answers[False] >= 5, answers


def test_a_broken_manifest_is_still_worded_by_jsonschema(tmp_path: Path):
    broken = json.loads(SNAPSHOT.read_text()) | {"name": 5}
    (tmp_path / "snapshot.json").write_text(json.dumps(broken))
    for name in ("queries.jsonl", "qrels.tsv", "corpus.jsonl"):
        (tmp_path / name).write_bytes((CRANFIELD / name).read_bytes())
    code, _, err = gate("check", "--snapshot", tmp_path / "snapshot.json", "--baseline", BASELINE,
                        "--candidate", RUNS / "hybrid.trec", "--no-config")
    assert code == 2 and '$["name"]: 5 is not a string' in err
