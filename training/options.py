"""Argument types and checks shared by the ``generala`` programs."""

from __future__ import annotations

import argparse

from generala_env.extras import how_to_install


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
            raise MissingExtra(f"{what} needs {module}, which is not installed; {how_to_install(extra)} ({e})") from None


RULES_HELP = "a preset name (generala rules lists them) or a rules YAML file"


def states_a_default(action: argparse.Action) -> bool:
    """Whether an option's help must say its default: a default that is something (not
    ``None``, ``False`` or an empty list: an option left out then does nothing)."""
    d = action.default
    return bool(action.option_strings) and not (d is None or d is False or d is argparse.SUPPRESS or (isinstance(d, (list, tuple)) and not d))


class HelpFormatter(argparse.HelpFormatter):
    """Every ``generala`` program's help: an option's help ends with ``(default: VALUE)``
    where it has a default (:func:`states_a_default`) and does not say it in its own words."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help
        if text is None or "%(default)" in text or "default" in text.lower() or not states_a_default(action):
            return text
        return f"{text} (default: %(default)s)"


def parser(prog: str, description: str | None = None, **kwargs) -> argparse.ArgumentParser:
    """An argument parser for a ``generala`` program: options are spelled out in full, never
    taken from a prefix (``--seed`` is not ``--seeds``), and each one's help says its default."""
    return argparse.ArgumentParser(prog=prog, description=description, allow_abbrev=False, formatter_class=HelpFormatter, **kwargs)


def claim_out(out, program: str, command: str, files, force: bool = False, adopt: bool = False) -> None:
    """Check that ``program`` may write ``files`` into the folder ``out``, before any work
    (the program then writes them through :class:`~generala_env.files.OutputFolder`).

    Every name must be free or a file the project wrote there and nobody changed since (the
    folder's record of outputs): a symbolic link, a file of the user's (their own
    ``scores.png``) or one changed since is refused, ``force`` or not (a folder with no record
    yet, from an older version or a program that keeps none, has only its links and other
    non-regular files refused; with ``adopt``, for a program that writes through
    ``OutputFolder``, the files the command rule lets it replace are recorded as its own). On
    top of that, a
    folder whose ``results.json`` another command wrote is that command's: the same command
    replaces its files; a different command of ``program`` only with ``force``; another
    program never. A ``ValueError`` names the path and the way out. An ``out`` that is not a
    folder yet is left for the program to make (and to refuse, if it is a file).
    """
    import stat
    from pathlib import Path

    from generala_env.files import MANIFEST, FileProblem, OutputFolder, check_target, lstat_or_none, read_json

    out = Path(out)
    try:
        st = lstat_or_none(out)
    except FileProblem:  # a path under a file: the program's own check of --out names it
        return
    if st is not None and stat.S_ISLNK(st.st_mode):
        raise ValueError(f"--out {out} is a symbolic link: {program} writes its outputs only into a real folder; choose another --out")
    if st is None or not stat.S_ISDIR(st.st_mode):
        return
    files = tuple(files)
    try:
        if lstat_or_none(out / MANIFEST) is not None:
            OutputFolder(out, program, create=False).claim(files)
        else:  # no record of outputs yet (an older version's results): links and the like are refused, the rest is the command rule's
            for name in files:
                check_target(out / name)
    except FileProblem as e:
        raise ValueError(f"--out {out}: {e}") from None
    present = [f for f in files if lstat_or_none(out / f) is not None]
    if not present:
        return
    try:
        held = read_json(out / "results.json", 16 << 20, "results file") if "results.json" in present else None
    except FileProblem:
        held = None
    held_command = held.get("command") if isinstance(held, dict) else None
    if not isinstance(held_command, str) or not (held_command == program or held_command.startswith(program + " ")):
        raise ValueError(f"--out {out} holds {', '.join(present)} that {program} did not write: choose another --out")
    if held_command != command and not force:
        raise ValueError(f"--out {out} holds the results of `{held_command}`, a different command: choose another --out, or --force to replace them")
    if adopt and lstat_or_none(out / MANIFEST) is None:
        folder = OutputFolder(out, program, create=False)
        for name in present:
            folder.adopt(name)
