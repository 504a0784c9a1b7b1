"""``gate run``'s check of what a target returns: the common path (one loop for the common
shapes) and the precise path (hit by hit, naming the problem) agree on every ranking — the
same items where the common path takes it, and the common path never takes a ranking the
precise path refuses."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retrieval_gate.core.errors import InputError
from retrieval_gate.runner.hits import HitRules, _common, _precise, rankings_of

DOCS = {f"d{i}": 40 for i in range(8)}
# a chunk table: d0#0 ... and, as chunks of themselves, d0 ...
TABLE = {**{f"{d}#0": (d, 0, 5, -1) for d in DOCS}, **{d: (d, 3, 9, 7) for d in DOCS}}
RULES = [HitRules("document", DOCS, None, None, "t:f"),
         HitRules("document", None, None, None, "t:f"),
         HitRules("chunk", None, TABLE, "the snapshot's chunk table", "t:f"),
         HitRules("span", DOCS, None, None, "t:f"),
         HitRules("document", DOCS, TABLE, "the chunk table c.jsonl", "t:f"),
         HitRules("span", DOCS, TABLE, "the chunk table c.jsonl", "t:f")]

ids = st.sampled_from([*DOCS, "d0#0", "nope", "", "a\x00b", "x" * 300, "é" * 300])
numbers = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10, 10),
                    st.just(10 ** 400), st.booleans(), st.none(), st.just("1.0"),
                    st.floats(-1e6, 1e6).map(np.float32), st.integers(-5, 5).map(np.int64))
hits = st.one_of(
    st.tuples(ids, numbers), st.lists(st.one_of(ids, numbers), min_size=1, max_size=3), ids,
    st.fixed_dictionaries({"id": ids}, optional={"score": numbers, "tokens": st.one_of(
        st.integers(-2, 50), st.none(), st.booleans()), "text": st.just("t"),
        "doc_id": st.one_of(st.none(), ids), "start": st.integers(0, 5),
        "end": st.integers(3, 9)}),
    st.integers())


def precise(ranking: Any, rules: HitRules) -> list[list[Any]] | InputError:
    try:
        return _precise(ranking, "q1", rules, None)
    except InputError as exc:
        return exc


@settings(max_examples=3000, deadline=None)
@given(st.lists(hits, max_size=6), st.sampled_from(RULES), st.booleans())
def test_the_common_path_gives_what_the_precise_path_gives(
        ranking: list[Any], rules: HitRules, sorted_: bool) -> None:
    if sorted_:  # scores that do not increase, so that most rankings are valid
        ranking = [(f"d{i}", 10.0 - i) for i in range(len(ranking))]
    common = _common(ranking, rules)
    if common is not None:
        assert common == precise(ranking, rules)


@pytest.mark.parametrize("ranking", [
    [("d1", 2.0), ("d2", 1.0)], [("d1", 2), ("d2", np.float32(0.5))], ["d1", "d3"],
    [["d1", 1.0]], [{"id": "d1", "score": 3, "tokens": 7, "text": "x"}, {"id": "d2", "score": 1.5}],
    [{"id": "d1"}, {"id": "d2", "tokens": 0}], [], [("d1", 1.0), ("d2", 1.0)],
])
def test_common_shapes_take_the_common_path(ranking: list[Any]) -> None:
    rules = RULES[0]
    assert _common(ranking, rules) is not None
    assert rankings_of(ranking, "q1", rules) == [[None, precise(ranking, rules)]]


@pytest.mark.parametrize(("ranking", "said"), [
    ([("d1", math.inf), ("d2", 1.0)], "hit 1 has score inf"),
    ([("d1", 1.0), ("d2", -math.inf)], "hit 2 has score -inf"),
    ([("d1", 1.0), ("d2", math.nan)], "hit 2 has score nan"),
    ([("d1", 1.0), ("d2", True)], "hit 2's score is not a number"),
    ([("d1", 10 ** 400)], "hit 1's score is beyond a float64's range"),
    ([("d1\x00", 1.0)], "hit 1's id is not a non-empty string"),
    ([("d1", 1.0), ("d1", 0.5)], "id 'd1' twice"),
    ([("d1", 1.0), "d2"], "hit 2 has no score and hit 1 has"),
    ([{"id": "d1", "tokens": -1}], "hit 1's tokens is not a whole number ≥ 0"),
    ([("nope", 1.0)], "hit 1 names document 'nope', which is not in the snapshot's corpus"),
])
def test_a_problem_leaves_the_common_path_and_is_named(ranking: list[Any], said: str) -> None:
    assert _common(ranking, RULES[0]) is None
    with pytest.raises(InputError, match="query 'q1' returned .*") as raised:
        rankings_of(ranking, "q1", RULES[0])
    assert said in raised.value.problem
