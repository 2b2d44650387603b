"""Every option of the ``generala`` subcommands says its default in its help."""

from __future__ import annotations

import argparse
import importlib

import pytest

from generala_training import cli
from generala_training.options import states_a_default


class _Parsed(Exception):
    def __init__(self, parser: argparse.ArgumentParser):
        self.parser = parser


def parser_of(module: str, argv: list[str]) -> argparse.ArgumentParser:
    """The parser ``module.main(argv)`` reads its arguments with, caught before it parses them."""

    def caught(self, *args, **kwargs):
        raise _Parsed(self)

    mp = pytest.MonkeyPatch()
    for name in ("parse_args", "parse_known_args", "parse_intermixed_args"):
        mp.setattr(argparse.ArgumentParser, name, caught)
    try:
        importlib.import_module(module).main(argv)
    except _Parsed as e:
        return e.parser
    finally:
        mp.undo()
    raise AssertionError(f"{module}.main({argv}) read no arguments")


def parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    """(``generala SUBCOMMAND``, its parser) for every subcommand, the benchmark's own two included."""
    top = cli.build_parser()
    out = []
    for action in top._actions:
        if isinstance(action, argparse._SubParsersAction):
            out += [(f"generala {name}", p) for name, p in action.choices.items() if name not in cli.PROGRAMS]
    for name, (module, _, _) in cli.PROGRAMS.items():
        out.append((f"generala {name}", parser_of(module, [])))
    out += [(f"generala benchmark {sub}", parser_of("generala_training.benchmark", [sub])) for sub in ("score", "report")]
    return out


def shown(value) -> list[str]:
    """The ways a help may write ``value``: ``str``, and ``%g`` for a number (2.0 as 2)."""
    return [str(value)] + ([f"{value:g}"] if isinstance(value, float) else [])


PARSERS = parsers()


def test_every_subcommand_is_walked():
    names = [name for name, _ in PARSERS]
    assert names == [
        "generala rules",
        "generala play-random",
        "generala agents",
        "generala solve",
        *(f"generala {name}" for name in cli.PROGRAMS),
        "generala benchmark score",
        "generala benchmark report",
    ]


@pytest.mark.parametrize(
    "name, parser",
    [pytest.param(name, parser, id=name) for name, parser in PARSERS],
)
def test_each_option_with_a_default_says_it(name, parser):
    silent = []
    for action in parser._actions:
        if not states_a_default(action):
            continue
        text = parser._get_formatter()._expand_help(action) if action.help else ""
        if not any(s in text for s in shown(action.default)):
            silent.append(f"{action.option_strings[-1]} (default {action.default!r}): {text!r}")
    assert not silent, f"{name}: " + "; ".join(silent)


def test_the_help_shows_the_default_as_the_user_reads_it(capsys):
    with pytest.raises(SystemExit):
        cli.main(["solve", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--rules RULES a preset name (generala rules lists them) or a rules YAML file (default: classic)" in out
    assert "refuse a solve needing more than this many GiB (default: 2)" in out
