"""One lookup for every registry: criteria kinds, selection rules, metrics, retrievers, ..."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import TypeVar

from memlab.core.errors import UnknownNameError

T = TypeVar("T")


def unknown_message(what: str, names: Iterable[str], available: Iterable[str]) -> str:
    """``unknown <what> 'x'; available: a, b, c`` (several names: ``unknown <what>(s) 'x', 'y'``)."""
    names = list(names)
    shown = ", ".join(repr(n) for n in names)
    plural = "(s)" if len(names) > 1 else ""
    return f"unknown {what}{plural} {shown}; available: {', '.join(available)}"


def lookup(registry: Mapping[str, T], name: str, what: str) -> T:
    """``registry[name]``, or an ``UnknownNameError`` that lists every name the registry holds."""
    try:
        return registry[name]
    except (KeyError, TypeError):
        raise UnknownNameError(unknown_message(what, [name], registry)) from None


def check_names(registry: Collection[str], names: Iterable[str], what: str) -> tuple[str, ...]:
    """``names`` as a tuple, if every one is in ``registry`` (a registry, or a tuple of names); else
    one error naming all unknown ones."""
    names = tuple(names)
    unknown = [n for n in names if n not in registry]
    if unknown:
        raise UnknownNameError(unknown_message(what, unknown, registry))
    return names
