"""Did-you-mean: the known name closest to a mistyped one, for the one-line errors that
refuse an agent name, a rule set or a config key."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest(word: str, known: Iterable[str]) -> str | None:
    """The name of ``known`` that ``word`` most likely meant (letter case aside), or ``None``
    when none is close: ``closest("optimall", ["greedy", "optimal"]) == "optimal"``."""
    if not isinstance(word, str) or not word:
        return None
    by_folded: dict[str, str] = {}
    for name in known:
        if isinstance(name, str):
            by_folded.setdefault(name.casefold(), name)
    found = difflib.get_close_matches(word.casefold(), list(by_folded), n=1, cutoff=0.75)
    return by_folded[found[0]] if found else None


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """``"; did you mean 'optimal'?"`` to put after an error that refuses ``word``, or ``""``."""
    name = closest(word, known)
    return "" if name is None or name == word else f"; did you mean {name!r}?"


def refusal(head: str, word: str, known: Iterable[str], listed: str) -> str:
    """The one line that refuses ``word``: ``head`` (``"unknown agent 'optimall'"``), then the
    name it likely meant with ``listed`` (the known names, in words) in brackets after it, or,
    when none is close, ``listed`` after a semicolon."""
    hint = did_you_mean(word, known)
    return f"{head}{hint} ({listed})" if hint else f"{head}; {listed}"
