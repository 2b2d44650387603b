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


def parser(prog: str, description: str | None = None, **kwargs) -> argparse.ArgumentParser:
    """An argument parser for a ``generala`` program: options are spelled out in full, never
    taken from a prefix (``--seed`` is not ``--seeds``)."""
    return argparse.ArgumentParser(prog=prog, description=description, allow_abbrev=False, **kwargs)


def claim_out(out, program: str, command: str, files: tuple[str, ...], force: bool = False) -> None:
    """Check that ``program`` may write ``files`` into the folder ``out``, before any work.

    A folder that holds none of them is free. One whose ``results.json`` a ``program`` wrote
    is this program's: the same command replaces it; a different one only with ``force``.
    Anything else there under those names (another program's results, a file of the user's,
    a symbolic link) is refused whatever ``force`` says: a ``ValueError`` names the path and
    the way out.
    """
    import json
    from pathlib import Path

    out = Path(out)
    present = [f for f in files if (out / f).exists() or (out / f).is_symlink()]
    if not present:
        return
    links = [f for f in present if (out / f).is_symlink()]
    if links:
        raise ValueError(f"--out {out}: {out / links[0]} is a symbolic link; {program} writes no file through a link it did not make: choose another --out")
    try:
        held = json.loads((out / "results.json").read_text())
        held_command = held.get("command") if isinstance(held, dict) else None
    except (OSError, ValueError):
        held_command = None
    if not isinstance(held_command, str) or not (held_command == program or held_command.startswith(program + " ")):
        raise ValueError(f"--out {out} holds {', '.join(present)} that {program} did not write: choose another --out")
    if held_command != command and not force:
        raise ValueError(f"--out {out} holds the results of `{held_command}`, a different command: choose another --out, or --force to replace them")
