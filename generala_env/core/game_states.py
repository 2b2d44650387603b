"""States a game is put in from outside, checked here, once: the numbers and sheets
:meth:`Game.set_state <generala_env.core.game.Game.set_state>`, the attributes' setters and
unpickling hand to a game, so that the compiled calls never see a state out of range; and the
sheets of an exploring start (:func:`prefilled_sheets`)."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from generala_env.core.checks import is_whole
from generala_env.core.dice import DICE, ROLLS, checked_faces, roll_index
from generala_env.core.engine import FIRST_ROLL, OPEN, ROLLS_PER_TURN, sheets_full
from generala_env.core.rules import RuleSet
from generala_env.core.scoring import blocked_line, generala_scored, points_table

if TYPE_CHECKING:
    from generala_env.core.game import Game


@lru_cache(maxsize=64)
def _line_values(rules: RuleSet) -> tuple[frozenset, ...]:
    """The points each line can hold (0, crossed out, included)."""
    return tuple(frozenset(np.unique(t).tolist()) | {0} for t in points_table(rules))


@lru_cache(maxsize=64)
def _allowed_points(rules: RuleSet) -> np.ndarray:
    """``[line, v]``: whether line ``line`` can hold ``v`` points (:func:`_line_values` as a table)."""
    values = _line_values(rules)
    allowed = np.zeros((len(values), max(max(v) for v in values) + 1), dtype=bool)
    for l, vs in enumerate(values):
        allowed[l, sorted(vs)] = True
    return allowed


def off_sheet(rules: RuleSet, sheets) -> tuple[int, int, int] | None:
    """The first ``(seat, line, value)`` of ``sheets`` that is neither :data:`OPEN` nor points
    the line can hold, or ``None``."""
    a = np.asarray(sheets)
    allowed = _allowed_points(rules)
    lines = np.broadcast_to(np.arange(a.shape[-1]), a.shape)
    inside = (a >= 0) & (a < allowed.shape[1])
    ok = (a == OPEN) | (inside & allowed[lines, np.where(inside, a, 0)])
    if ok.all():
        return None
    p, l = (int(i) for i in np.argwhere(~ok)[0])
    return p, l, int(a[p, l])


def prefilled_sheets(rules: RuleSet, num_players: int, rng) -> np.ndarray:
    """Legal sheets of a game some turns in, for exploring starts: ``(num_players, L)``.

    Every player has the same number ``k`` of lines filled, drawn uniformly from 1 to
    ``L - 1`` (so player 0 is to move and the game is not over); which lines is drawn per
    player. A filled line holds the points of one fresh roll of five dice on it, 0 (crossed
    out) when the roll does not qualify or the line is blocked (:func:`~generala_env.core.scoring.blocked_line`).
    All draws come from ``rng`` (a numpy ``Generator``), in a fixed order.
    """
    L = rules.num_lines
    table = points_table(rules)  # (L, 252, 2)
    sheets = np.full((num_players, L), OPEN, dtype=np.int64)
    k = int(rng.integers(1, L))
    for p in range(num_players):
        lines = np.sort(rng.permutation(L)[:k])  # generala is written before double generala
        faces = rng.integers(1, 7, size=(k, 5))
        for line, face in zip(lines, faces, strict=True):
            r = roll_index(np.sort(face))
            pts = int(table[line, r, 0])
            if line == blocked_line(rules, generala_scored(rules, sheets[p])):
                pts = 0
            sheets[p, line] = pts
    return sheets


def whole_number(name: str, v) -> int:
    if not is_whole(v):
        raise TypeError(f"{name} must be a whole number, got {v!r}")
    return int(v)


def checked_sheets(rules: RuleSet, num_players: int, sheets) -> np.ndarray:
    """``sheets`` as a game's int32 array, once each value is :data:`OPEN` or points its line
    can hold; else ``ValueError`` (``TypeError`` for values that are not whole numbers)."""
    arr = np.asarray(sheets)
    P, L = num_players, rules.num_lines
    if arr.shape != (P, L):
        raise ValueError(f"sheets must have shape ({P}, {L}) (players, lines), got {arr.shape}")
    if arr.dtype.kind not in "iu":
        if arr.dtype.kind == "f" and np.isfinite(arr).all() and (arr == np.round(arr)).all():
            arr = arr.astype(np.int64)
        else:
            raise TypeError(f"sheets must hold whole numbers ({OPEN} for an open line), got dtype {arr.dtype}")
    bad = off_sheet(rules, arr)
    if bad is not None:
        p, l, value = bad
        raise ValueError(
            f"sheets[{p}, {l}] ({rules.lines[l]}) must be {OPEN} (open) or points the line can hold "
            f"({', '.join(map(str, sorted(_line_values(rules)[l])))}), got {value}"
        )
    return arr.astype(np.int32)


# long: every check of a state, each with its own message, before anything changes
def checked_state(game: Game, sheets, dice, rolls_left, player, locked, served_generala_winner) -> tuple:
    """:meth:`Game.set_state <generala_env.core.game.Game.set_state>`'s values checked against
    ``game``'s rules and players (an omitted one keeps the game's): ``(sheets, faces,
    rolls_left, seat, locked faces, served generala winner or None, full)``; ``ValueError``
    (``TypeError`` for a value of the wrong kind) naming the first that is not right."""
    P = game.num_players
    # nothing is changed here: an error leaves the game as it was
    new_sheets = game.sheets.copy() if sheets is None else checked_sheets(game.rules, P, sheets)
    for p in range(P):
        blocked = blocked_line(game.rules, generala_scored(game.rules, new_sheets[p]))
        if blocked >= 0 and new_sheets[p, blocked] > 0:
            raise ValueError(
                f"sheets: seat {p}'s {game.rules.lines[blocked]} holds points but its generala line does not; a double generala needs a scored generala line"
            )
    faces = ROLLS[game.roll].tolist() if dice is None else checked_faces("dice", dice, DICE)
    rl = game.rolls_left if rolls_left is None else whole_number("rolls_left", rolls_left)
    if not 0 <= rl < ROLLS_PER_TURN:
        raise ValueError(f"rolls_left must be 0, 1 or 2, got {rl}")
    winner = served_generala_winner
    if winner is not None:
        winner = whole_number("served_generala_winner", winner)
        if not game._r.t.served_win:
            raise ValueError(
                "served_generala_winner needs served_generala: win, two or more players and a generala line; "
                f"this game has served_generala: {game.rules.served_generala} and {P} player(s)"
            )
        if not 0 <= winner < P:
            raise ValueError(f"served_generala_winner must be None or a seat from 0 to {P - 1}, got {winner}")
        if not new_sheets[winner, game._r.t.generala_line] > 0:
            raise ValueError(f"served_generala_winner {winner} must have points on its generala line")
    if player is None:
        seat = winner if winner is not None else game.player
    else:
        seat = whole_number("player", player)
        if not 0 <= seat < P:
            raise ValueError(f"player must be a seat from 0 to {P - 1}, got {seat}")
        if winner is not None and seat != winner:
            raise ValueError(f"player must be the served generala winner ({winner}), got {seat}")
    kept = checked_faces("locked", locked)
    if kept:
        if rl == FIRST_ROLL:
            raise ValueError(f"locked must be empty right after the turn's first roll (rolls_left=2), got {kept}")
        if len(kept) > DICE - 1:
            raise ValueError(f"locked holds at most 4 dice (a hold rerolls at least one), got {kept}")
        rest = list(faces)
        for f in kept:
            if f not in rest:
                raise ValueError(f"locked faces {kept} are not among the dice {sorted(faces)}")
            rest.remove(f)
    filled = (new_sheets != OPEN).sum(axis=1).tolist()
    full = sheets_full(game._r.t, sum(filled))
    if not full:
        # a line a turn in seat order: seats before the one who moves (or, after a
        # served generala, up to its winner, who wrote it) have one line more
        mover, last = (seat, seat - 1) if winner is None else (winner + 1, winner)
        n = filled[last] - 1 if last >= 0 else filled[0]
        want = [n + 1 if s < mover else n for s in range(P)]
        if filled != want or n < 0:
            raise ValueError(
                f"sheets: players fill one line a turn in seat order, so with seat {seat} to move the seats before it "
                f"have filled one line more than the others; filled lines per seat: {filled}"
            )
    return new_sheets, faces, rl, seat, kept, winner, full
