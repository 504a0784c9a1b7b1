"""The names the package exports are its API: :func:`exported` gives each the package's own
module name, so that it prints, pickles and is documented as ``retrieval_gate.NAME`` — not
under the internal module that defines it today, which may move."""

from __future__ import annotations

from typing import TypeVar

PACKAGE = "retrieval_gate"
T = TypeVar("T")


def exported(obj: T) -> T:
    """``obj`` (a class or function ``retrieval_gate`` exports), named as the package's own:
    its ``__module__`` is :data:`PACKAGE` (``retrieval_gate.NAME`` resolves to it)."""
    obj.__module__ = PACKAGE
    return obj
