"""``generala play``: Generala in the terminal, people and agents at one table.

    generala play --opponents greedy,optimal --rules classic
    generala play --seats human,ppo-classic-2p,human --seed 7

Moves are typed as people say them: ``keep 4 4 4``, ``hold 6 6``, ``reroll 1 2``,
``roll all``, ``write fours``, ``fours``, ``score full house``, ``cross out ones``;
``help`` lists the legal moves, ``hint`` shows what the optimal player would do,
``sheet`` shows the sheets again, ``quit`` ends the game. A move the game does not
accept is explained and asked again; nothing typed ends the game but ``quit`` or the
end of input.

The command is here; the game at the table is :mod:`generala_play.table`, reading and describing
moves :mod:`generala_play.moves`, hints and help :mod:`generala_play.hints`. The names this module
had before they moved are still importable from it.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from generala_env.core.game import MAX_PLAYERS
from generala_env.core.rules import load_rules, preset_names
from generala_training.options import HelpFormatter, seed_int

from .moves import (
    COMMANDS,
    CROSS_VERBS,
    FACE_WORDS,
    FILLERS,
    KEEP_VERBS,
    LINE_ALIASES,
    LINE_TABLE,
    ROLL_VERBS,
    WRITE_VERBS,
    Move,
    MoveError,
    describe,
    parse_move,
    points_if_written,
)
from .table import HUMAN, NO, YES, Style, Table, isatty


# -- the command -------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    from generala_agents.specs import HELP, TRUST_ZIP_HELP

    p = argparse.ArgumentParser(
        allow_abbrev=False,
        prog="generala play",
        formatter_class=HelpFormatter,
        description="Play Generala in the terminal against agents (or friends at the same keyboard).",
        epilog="In the game: keep 4 4 4 · reroll 1 2 · roll all · write fours · cross out ones · help · hint · quit",
    )
    who = p.add_mutually_exclusive_group()
    who.add_argument(
        "--opponents",
        help="comma-separated agents playing after you, e.g. greedy,optimal (default: greedy; 'none' to play alone); each is " + HELP,
    )
    who.add_argument("--seats", help="every seat in play order, 'human' for a person, e.g. human,greedy,human")
    p.add_argument("--rules", default="classic", help=f"rule set: {', '.join(preset_names())}, or a YAML file (default classic)")
    p.add_argument("--seed", type=seed_int, default=None, help="seed for the dice and the agents (default: a fresh one, printed)")
    p.add_argument("--trust-zip", action="store_true", help=TRUST_ZIP_HELP)
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto", help="ANSI colour (auto: when stdout is a terminal and NO_COLOR is unset)")
    return p


def _seats(args) -> list[str]:
    if args.seats is not None:
        seats = [s.strip() for s in args.seats.split(",") if s.strip()]
    elif args.opponents is None:
        seats = [HUMAN, "greedy"]
    elif args.opponents.strip().lower() in ("", "none"):
        seats = [HUMAN]
    else:
        seats = [HUMAN] + [s.strip() for s in args.opponents.split(",") if s.strip()]
    return [HUMAN if s.lower() in (HUMAN, "you", "me", "person") else s for s in seats]


def main(argv=None) -> int:
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    err = sys.stderr
    seats = _seats(args)
    if not 1 <= len(seats) <= MAX_PLAYERS:
        print(f"generala play: error: a game has 1 to {MAX_PLAYERS} seats, got {len(seats)}", file=err)
        return 2
    try:
        rules = load_rules(args.rules)
    except ValueError as e:
        print(f"generala play: error: {e}", file=err)
        return 2
    seed = args.seed if args.seed is not None else int(np.random.SeedSequence().generate_state(1)[0] % 1_000_000)
    out = sys.stdout
    color = isatty(out) and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb" if args.color == "auto" else args.color == "always"
    encoding = (getattr(out, "encoding", None) or "").lower().replace("-", "")
    table = Table(rules, seats, seed, color=color, unicode=encoding.startswith("utf"))
    try:
        table.trust_zip = args.trust_zip
        table.load_agents()
    except ValueError as e:
        print(f"generala play: error: {e}", file=err)
        return 2
    table.say(f"Generala, {rules.name} rules ({rules.num_lines} lines), seed {seed}. Seats: " + ", ".join(table.who(s) for s in range(table.n)))
    if HUMAN in seats:
        table.say("Type moves as you would say them: keep 4 4 4 · reroll 1 2 · roll all · write fours · cross out ones.")
        table.say("'help' lists your moves, 'hint' asks the optimal player, 'sheet' shows the sheets, 'quit' ends.")
    return table.play()


__all__ = [
    "COMMANDS",
    "CROSS_VERBS",
    "FACE_WORDS",
    "FILLERS",
    "HUMAN",
    "KEEP_VERBS",
    "LINE_ALIASES",
    "LINE_TABLE",
    "NO",
    "ROLL_VERBS",
    "WRITE_VERBS",
    "YES",
    "Move",
    "MoveError",
    "Style",
    "Table",
    "build_parser",
    "describe",
    "main",
    "parse_move",
    "points_if_written",
]


if __name__ == "__main__":
    sys.exit(main())
