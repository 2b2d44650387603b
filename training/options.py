"""Argument types and checks shared by the ``generala`` programs."""

from __future__ import annotations

import argparse


def _whole(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1 (``--games``, ``--workers``)."""
    n = _whole(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def positive_float(text: str) -> float:
    """An argparse type: a finite number above 0 (``--max-memory``)."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (x > 0 and x != float("inf")):
        raise argparse.ArgumentTypeError(f"must be a finite number above 0, got {text}")
    return x


def seed_int(text: str) -> int:
    """An argparse type: a seed, a whole number of 0 or more (numpy takes no negative seeds)."""
    n = _whole(text)
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {n}")
    return n


class MissingExtra(ImportError):
    """A program needs packages of an optional extra that are not installed."""


def require_extra(extra: str, modules: tuple[str, ...], what: str) -> None:
    """Import ``modules``; if one is missing, a :class:`MissingExtra` that names the extra.

    ``what`` says what needs them, e.g. ``"generala evaluate's plot"``.
    """
    for module in modules:
        try:
            __import__(module)
        except ImportError as e:
            raise MissingExtra(f"{what} needs {module}, which is not installed: pip install 'generala-rl[{extra}]' ({e})") from None
