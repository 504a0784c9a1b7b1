"""Token counts of the hits a target returns: the target's own, or counted by the pipeline's
tokenizer — never made up.

**The tokenizer** (``gate run --tokenizer module:function``, or the function itself from the
library) is the pipeline's own: the one its generator counts the context with, as a context
budget means nothing in another tokenizer's tokens. The gate ships none. It is called with a
hit's text and returns its tokens — a sequence (its length is the count: a list of token ids,
a tokenizer's encoding) or the count itself, a whole number ≥ 0. A string or a mapping is not
a count (a string's length is characters; a mapping's is its keys). For chained stages it is
called between the stages, in the calls' threads: with ``--concurrency``, from several at once,
as the stages are.

**Which count an item gets**, hit by hit, once its ranking is checked:

- the hit carries ``text`` and a tokenizer is named: the tokenizer's count of that text. A
  hit that also reports ``tokens`` must agree with it — a count that differs means the
  pipeline packs with another tokenizer than the one named, and is refused (naming the query,
  the hit and both counts), never settled silently;
- otherwise, the ``tokens`` the hit reports, or none.

No hit gets 0 for want of a count: an item without one is written without ``tokens``. Hits of
the other kinds (``(id, score)`` pairs, ids) carry no text. With a tokenizer, a ``text`` that
is not a string is refused; without one, ``text`` is not read. The run manifest names the
tokenizer (``provenance.runner.tokenizer``) when it counted at least one hit (a query's
journal record says ``"counted": true`` when it counted one of its hits); without one, every
count in the run is the target's. A tokenizer that counted no hit — none carried text — is
not named, and ``gate run`` says so.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from retrieval_gate.core.errors import InputError
from retrieval_gate.core.untrusted import capped
from retrieval_gate.runner.hits import Item, shown
from retrieval_gate.runner.target import first_line, imported, name_of, returns_coroutine

OPTION = "--tokenizer"


@dataclass(frozen=True)
class Tokenizer:
    """The pipeline's tokenizer: its ``identity`` (``module:function``: what the journal binds
    and the manifest records) and the ``function`` (text → tokens or their count)."""

    identity: str
    function: Callable[[str], Any]

    def count(self, text: str, qid: str, where: str) -> int:
        """The tokens of ``text`` (of ``where``, hit N [of stage S], of query ``qid``);
        InputError naming ``--tokenizer`` when the function fails or returns no count."""
        try:
            value = self.function(text)
        except Exception as exc:  # noqa: BLE001 — the user's tokenizer failed: said, not retried
            raise InputError(OPTION, f"{capped(self.identity, 200)} failed on the text of "
                             f"{where} of query {shown(qid)}: {first_line(exc)}",
                             "fix the tokenizer, or leave out --tokenizer to keep the counts "
                             "the retriever reports") from None
        if isinstance(value, numbers.Integral) and not isinstance(value, bool) and int(value) >= 0:
            return int(value)
        if not isinstance(value, (str, bytes, Mapping, numbers.Number)) and hasattr(
                value, "__len__"):
            return len(value)
        raise InputError(OPTION, f"{capped(self.identity, 200)} returned {shown(value)} for "
                         f"the text of {where} of query {shown(qid)}: neither tokens nor "
                         "their count", "name a function that returns a text's tokens (a "
                         "list) or their number")


def load_tokenizer(tokenizer: str | Callable[[str], Any]) -> Tokenizer:
    """The tokenizer named ``module:function`` (imported as a retriever is), or the function
    itself; InputError naming ``--tokenizer`` for one that cannot be loaded, is not callable
    or is ``async def``."""
    if isinstance(tokenizer, str):
        function, identity = imported(tokenizer, OPTION), tokenizer
    else:
        function, identity = tokenizer, name_of(tokenizer)
    if not callable(function) or returns_coroutine(function):
        kind = "an async def function" if callable(function) else (
            f"a {type(function).__name__}")
        raise InputError(OPTION, f"{capped(identity, 200)} is {kind}, not a function that "
                         "counts a text's tokens", "name the pipeline's tokenizer function "
                         "(module:function; a plain def): text → tokens")
    return Tokenizer(identity, function)


def count_tokens(hits: Sequence[Any], items: list[Item], tokenizer: Tokenizer, qid: str,
                 stage: str | None, source: str) -> int:
    """Give each checked item (``items``, one per hit of ``hits``, in order) the count of its
    hit's ``text`` (see the module docstring), and return how many were counted; InputError
    naming the query when a text is not a string or a reported count disagrees."""
    counted = 0
    for rank, (hit, item) in enumerate(zip(hits, items), 1):
        if not isinstance(hit, Mapping) or hit.get("text") is None:
            continue
        where = f"hit {rank}" if stage is None else f"hit {rank} of stage '{stage}'"
        text = hit["text"]
        if not isinstance(text, str):
            raise InputError(source, f"query {shown(qid)} returned {where} with text "
                             f"{shown(text)}, not a string", "give each hit's text as a "
                             "string, or none")
        count = tokenizer.count(text, qid, where)
        if item[5] is not None and item[5] != count:
            raise InputError(source, f"query {shown(qid)} returned {where} with tokens "
                             f"{item[5]}, and {capped(tokenizer.identity, 100)} counts "
                             f"{count} in its text", "name the tokenizer the pipeline counts "
                             "with (--tokenizer), or leave out --tokenizer to keep the "
                             "reported counts")
        item[5] = count
        counted += 1
    return counted


def text_of(hit: Any) -> str | None:
    """A hit's ``text`` when it carries one as a string (else None)."""
    text = hit.get("text") if isinstance(hit, Mapping) else None
    return text if isinstance(text, str) else None

