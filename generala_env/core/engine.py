"""The rules of a turn, once: small functions of one game's numbers, with no framework imports.

Every rule fact the drivers share has one home here: which actions are legal
(:func:`legal`), what a hold keeps (:func:`held`) and how the thrown dice land
(:func:`landed`), what a write scores (:func:`write_points`, :func:`blocked_line`) and
what follows it (:func:`after_write`), when a served generala wins (:func:`served_pending`),
and who won a finished game (:func:`is_winner`, :func:`outcome_points`).

:mod:`generala_env.compiled.batched` compiles these same function objects with numba
(``inline="always"``) into its drivers, with the rule set's :class:`Tables` as NumPy arrays:

* loops over many games, whose state is a :class:`GameState` of arrays, game first (the
  batched env);
* calls for one game (a step, a decision, a throw, a new game, a look), the same bodies at
  N = 1: :class:`generala_env.core.game.Game` holds one game's :class:`GameState` and hands each
  change to one of them.

Without numba the same functions run as plain Python. A game also asks a few of them in
Python with the tables as lists (``dice_thrown`` before a throw it makes or is given itself,
``sheets_full`` when a state is set or dice given, ``is_winner`` for its winners), and solvers
and baselines read the rules' tables (:func:`tables`).

So the functions take numbers and tables only (no state object, no array views), index the
tables flat (``t.hold_keep[roll * NUM_MASKS + mask]``, the same for a list and an array),
and may call one another (the batched module compiles them together).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np

from generala_env.core.dice import (
    ALL_HELD,
    DICE,
    EMPTY_KEEP,
    FIVE_ALIKE,
    HOLD_KEEP,
    KEEP_CONTAINS,
    KEEP_COUNTS,
    KEEP_SIZE,
    KEY_WEIGHTS,
    NUM_KEEPS,
    NUM_MASKS,
    NUM_ROLLS,
    ROLL_OF_KEY,
)
from generala_env.core.rules import RuleSet
from generala_env.core.scoring import points_table

OPEN = -1  # marker of an open line on a sheet
ROLLS_PER_TURN = 3
FIRST_ROLL = ROLLS_PER_TURN - 1  # rolls_left right after a turn's first roll


class Tables(NamedTuple):
    """A rule set's tables for a number of players, flat: lists for one game, arrays for the loops."""

    hold_keep: Any  # [roll * NUM_MASKS + mask]: the keep a hold mask makes of a roll
    keep_size: Any  # [keep]: dice in a keep
    keep_key: Any  # [keep]: base-6 key of a keep's face counts (a die showing face f adds 6 ** (f - 1))
    roll_of_key: Any  # [key]: the roll of five dice with that key
    keep_contains: Any  # [keep * NUM_KEEPS + locked]: the keep holds every die of locked (bool, or 0 and 1)
    five_alike: Any  # [roll] (bool, or 0 and 1)
    points: Any  # [(line * NUM_ROLLS + roll) * 2 + served]: points_table (double generala as if generala scored)
    num_players: int
    num_lines: int
    generala_line: int  # -1 where the sheet lacks the line
    double_line: int  # -1 where the sheet lacks the line
    served_win: bool  # a served generala wins (RuleSet.served_generala_wins)
    locked_holds: bool


class GameState(NamedTuple):
    """The state of N games: one array per field, game first. The numbers are the rows of one
    int64 array, ``numbers`` ``(len(NUMBERS), N)`` (:func:`new_state`); the sheets are
    ``(N, players, lines)`` int32. A single game (:class:`~generala_env.core.game.Game`) is N = 1;
    the vector env holds N games; the JAX env's state has the same fields by name."""

    roll: np.ndarray  # index into ROLLS of the dice (sorted)
    rolls_left: np.ndarray  # 2 after a turn's first roll, 0 after its third
    locked: np.ndarray  # keep index of the dice that may not go back under locked_holds
    player: np.ndarray  # whose move
    writes: np.ndarray  # lines filled, all players together
    over: np.ndarray  # 1 once the game is over
    winner: np.ndarray  # the served generala winner's seat, -1: none
    throw_keep: np.ndarray  # after a decision (the dice model): the keep staying on the table while the rest are in the cup; -1: none
    throw_turn: np.ndarray  # 1 if that throw is the next player's first roll
    sheets: np.ndarray  # (N, players, lines), OPEN for an open line


NUMBERS = GameState._fields[:-1]  # the fields that are rows of one int64 array
ROLL, ROLLS_LEFT, LOCKED, PLAYER, WRITES, OVER, WINNER, THROW_KEEP, THROW_TURN = range(len(NUMBERS))


def state_of(numbers: np.ndarray, sheets: np.ndarray) -> GameState:
    """The :class:`GameState` whose numbers are the rows of ``numbers`` (views: writes to the
    state are writes to ``numbers``)."""
    return GameState(*numbers, sheets)  # type: ignore[call-arg]  # one row per field but the last


def numbers_of(state: GameState) -> np.ndarray:
    """The int64 array whose rows are ``state``'s numbers (what the compiled calls take)."""
    numbers = state.roll.base
    if not isinstance(numbers, np.ndarray) or numbers.shape != (len(NUMBERS), len(state.roll)) or numbers[ROLLS_LEFT].base is not state.roll.base:
        raise ValueError("a GameState's numbers must be the rows of one array (made by new_state or state_of)")
    return numbers


def new_state(num_games: int, num_players: int, num_lines: int) -> GameState:
    """N games not started: over, empty sheets, nothing locked or in the cup."""
    numbers = np.zeros((len(NUMBERS), num_games), dtype=np.int64)
    numbers[LOCKED] = EMPTY_KEEP
    numbers[OVER] = 1
    numbers[WINNER] = -1
    numbers[THROW_KEEP] = -1
    return state_of(numbers, np.full((num_games, num_players, num_lines), OPEN, dtype=np.int32))


# what one game's compiled calls answer besides its state (Game reads them; a new call overwrites them)
# the status: made; an illegal action; too few faces in the cup; faces given that are not 1 to 6
# (or a cup's position outside its faces): but for DONE nothing changed
DONE, ILLEGAL, SHORT, BAD_FACES = 0, 1, 2, 3
POINTS, WON, MOVER, SERVED, PENDING, TOTALS = range(
    6
)  # facts: [points written, won by a served generala, seat that moved, moved after the turn's first roll, a served generala pending, every seat's total, then every seat's lines filled]


def facts_size(num_players: int) -> int:
    """The length of one game's facts (:data:`TOTALS` onwards: a total and lines filled per seat)."""
    return TOTALS + 2 * num_players


@lru_cache(maxsize=64)
def tables(rules: RuleSet, num_players: int, lists: bool = False) -> Tables:
    """The :class:`Tables` of a rule set and player count; Python lists with ``lists=True``."""
    arrays = [
        HOLD_KEEP.astype(np.int32).ravel(),  # int32: a keep times NUM_KEEPS must not overflow in NumPy
        KEEP_SIZE.astype(np.int8),
        (KEEP_COUNTS.astype(np.int64) @ KEY_WEIGHTS).astype(np.int32),
        ROLL_OF_KEY.astype(np.int16),
        KEEP_CONTAINS.ravel(),
        FIVE_ALIKE.copy(),
        points_table(rules).ravel(),
    ]
    hold_keep, keep_size, keep_key, roll_of_key, keep_contains, five_alike, points = [a.tolist() for a in arrays] if lists else arrays
    return Tables(
        hold_keep=hold_keep,
        keep_size=keep_size,
        keep_key=keep_key,
        roll_of_key=roll_of_key,
        keep_contains=keep_contains,
        five_alike=five_alike,
        points=points,
        num_players=int(num_players),
        num_lines=rules.num_lines,
        generala_line=rules.generala_line,
        double_line=rules.double_generala_line,
        served_win=rules.served_generala_wins(num_players),
        locked_holds=bool(rules.locked_holds),
    )


# -- the rules ----------------------------------------------------------------------------
def served_pending(t: Tables, rolls_left: int, roll: int, generala_value: int) -> bool:
    """A served generala wins now: five alike on the turn's first roll, the mover's generala
    line (``generala_value``) open, in a game where that wins. The mover may then only
    write it on the generala line, which ends the game."""
    return t.served_win and rolls_left == FIRST_ROLL and t.five_alike[roll] != 0 and generala_value == OPEN


def blocked_line(double_line: int, generala_value: int) -> int:
    """The line on which a write scores 0 whatever the dice, or -1 for none: the double
    generala line (``double_line``, -1 if the sheet has none) while the generala line holds no
    points. The home of "a double generala needs a scored generala" for everything that
    reads :func:`~generala_env.core.scoring.points_table` (:func:`~generala_env.core.scoring.blocked_line`
    says it for a :class:`~generala_env.core.rules.RuleSet`)."""
    return double_line if double_line >= 0 and not generala_value > 0 else -1


def held(t: Tables, roll: int, mask: int) -> int:
    """The keep that hold ``mask`` makes of ``roll`` (bit ``i`` holds die ``i`` of the sorted roll)."""
    return t.hold_keep[roll * NUM_MASKS + mask]


def dice_thrown(t: Tables, roll: int, action: int) -> int:
    """How many dice an action throws: the dice not held, or five for a write (the next
    player's first roll, thrown even when the game ends)."""
    return DICE - t.keep_size[held(t, roll, action)] if action < NUM_MASKS else DICE


def landed(t: Tables, keep: int, thrown_key: int) -> int:
    """The roll made by ``keep`` and thrown dice whose face keys sum to ``thrown_key``."""
    return t.roll_of_key[t.keep_key[keep] + thrown_key]


def start_turn(t: Tables, thrown_key: int) -> tuple[int, int, int]:
    """``(roll, rolls_left, locked)`` of a turn's first roll: five dice thrown, whose face keys
    sum to ``thrown_key``, two rolls left, nothing locked."""
    return landed(t, EMPTY_KEEP, thrown_key), FIRST_ROLL, EMPTY_KEEP


def hold_legal(t: Tables, rolls_left: int, roll: int, locked: int, mask: int) -> bool:
    """A hold mask is legal while rolls are left, except holding all five; under
    ``locked_holds`` it may not put back a die kept earlier in the turn (``locked``)."""
    if rolls_left == 0 or mask == ALL_HELD:
        return False
    return not t.locked_holds or t.keep_contains[held(t, roll, mask) * NUM_KEEPS + locked] != 0


def legal(t: Tables, over: bool, pending: bool, rolls_left: int, roll: int, locked: int, action: int, line_open: bool) -> bool:
    """Whether ``action`` is legal: nothing once the game is over; only the generala line
    while a served generala is pending (:func:`served_pending`); a hold by :func:`hold_legal`;
    a write iff its line is open (``line_open``, read only for a write)."""
    if over:
        return False
    if pending:
        return action == NUM_MASKS + t.generala_line
    if action < NUM_MASKS:
        return hold_legal(t, rolls_left, roll, locked, action)
    return line_open


def write_points(t: Tables, line: int, roll: int, rolls_left: int, generala_value: int) -> int:
    """Points written on ``line`` for ``roll`` (served: right after the turn's first roll),
    the mover's generala line holding ``generala_value``."""
    if line == t.double_line and line == blocked_line(t.double_line, generala_value):  # it names that line or none
        return 0
    return t.points[(line * NUM_ROLLS + roll) * 2 + (1 if rolls_left == FIRST_ROLL else 0)]


def sheets_full(t: Tables, writes: int) -> bool:
    """Whether ``writes`` lines filled, all players together, fill every sheet (the game is over)."""
    return writes == t.num_players * t.num_lines


def after_write(t: Tables, won: bool, writes: int, player: int) -> tuple[bool, int]:
    """``(over, player to move)`` after ``player`` wrote a line, ``writes`` lines filled in all
    (that one included), ``won`` by a served generala: the game ends on a served generala
    win or when every sheet is full; else the turn passes to the next seat."""
    if won or sheets_full(t, writes):
        return True, player
    return False, (player + 1) % t.num_players


def is_winner(served_winner: int, seat: int, total: int, best: int) -> bool:
    """Whether ``seat`` won a finished game: the served generala winner if there is one
    (``served_winner >= 0``), else every seat with the best total."""
    return seat == served_winner if served_winner >= 0 else total == best


def outcome_points(won: bool, num_winners: int) -> float:
    """A seat's result as points: 1 for a sole win, ``1/k`` for a win shared by ``k`` players,
    0 for a loss. Every finished game hands out exactly one point, so the fair share of a table
    of ``n`` is ``1/n``; at two players a shared win counts half."""
    if not won:
        return 0.0
    return 1.0 / num_winners


# what generala_env.compiled.batched compiles (the functions above, which call only one another)
RULES = (
    served_pending,
    blocked_line,
    held,
    dice_thrown,
    landed,
    start_turn,
    hold_legal,
    legal,
    write_points,
    sheets_full,
    after_write,
    is_winner,
    outcome_points,
)
