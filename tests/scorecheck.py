"""What the tests of the evaluation tools' score readers share: the pydoc example's questions
and the check of a refusal."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from conftest import ROOT

from retrieval_gate.core.errors import InputError

QUESTIONS = {(q := json.loads(line))["id"]: q["text"]
             for line in (ROOT / "examples" / "pydoc" / "queries.jsonl").read_text().splitlines()}
"""The text of each query of examples/pydoc/queries.jsonl, by id."""


def refused(read: Callable[[bytes, str], object], data: bytes, source: str, *parts: str,
            where: object = None) -> InputError:
    """The InputError ``read(data, source)`` raises: one line starting with ``source``, holding
    each of ``parts``, at ``where`` when given, exit code 2."""
    with pytest.raises(InputError) as caught:
        read(data, source)
    message = str(caught.value)
    assert message.startswith(source) and "\n" not in message
    for part in parts:
        assert part in message
    if where is not None:
        assert caught.value.where == where
    assert caught.value.exit_code == 2
    return caught.value
