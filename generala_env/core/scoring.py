"""Points of each line for a roll, as small pure functions and a precomputed table."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from generala_env.core.dice import NUM_ROLLS, roll_index
from generala_env.core.rules import NUMBER_LINES, RuleSet


def _counts(faces) -> list[int]:
    c = [0] * 6
    for f in faces:
        c[int(f) - 1] += 1
    return c


def is_straight(faces, rules: RuleSet) -> bool:
    """Whether five faces make a straight under the rule set's straight settings."""
    c = _counts(faces)
    present = {f for f in range(1, 7) if c[f - 1]}
    if len(present) == 5 and rules.straight_gap:
        return True
    runs = [{1, 2, 3, 4, 5}, {2, 3, 4, 5, 6}]
    if rules.straight_wraps:
        runs.append({3, 4, 5, 6, 1})
    if present in runs:
        return True
    if rules.straight_one_as_two and c[1] == 0 and c[0] >= 1:
        # a 1 stands in for the missing 2: 1-3-4-5-6 and 1-1-3-4-5
        c2 = list(c)
        c2[0] -= 1
        c2[1] += 1
        if max(c2) == 1 and {f for f in range(1, 7) if c2[f - 1]} in runs:
            return True
    return False


def is_full_house(faces) -> bool:
    """Exactly three of one face and two of another (five alike is not a full house)."""
    return sorted(x for x in _counts(faces) if x) == [2, 3]


def is_four_of_a_kind(faces) -> bool:
    return max(_counts(faces)) >= 4


def is_generala(faces) -> bool:
    return max(_counts(faces)) == 5


# the lines that take the served bonus when they are written right after the first roll
SERVED_BONUS_LINES = ("straight", "full_house", "four_of_a_kind")


def served_bonus(rules: RuleSet, line: str, served: bool) -> int:
    """The bonus a write on ``line`` right after the turn's first roll adds (``served``), when
    the dice qualify for the line (:func:`line_points` includes it)."""
    return rules.served_bonus if served and line in SERVED_BONUS_LINES else 0


def line_points(line: str, faces, rules: RuleSet, served: bool = False, generala_scored: bool = True) -> int:
    """Points written on ``line`` for five ``faces``.

    ``served``: the dice are written right after the turn's first roll.
    ``generala_scored``: the generala line already holds points (needed by double_generala).
    Dice that do not qualify score 0 (crossing the line out).
    """
    c = _counts(faces)
    if line in NUMBER_LINES:
        face = NUMBER_LINES.index(line) + 1
        return face * c[face - 1]
    if line == "three_of_a_kind":
        for face in range(1, 7):
            if c[face - 1] >= 3:
                return 3 * face
        return 0
    bonus = served_bonus(rules, line, served)
    if line == "straight":
        return rules.value("straight") + bonus if is_straight(faces, rules) else 0
    if line == "full_house":
        return rules.value("full_house") + bonus if is_full_house(faces) else 0
    if line == "four_of_a_kind":
        return rules.value("four_of_a_kind") + bonus if is_four_of_a_kind(faces) else 0
    if line == "generala":
        if not is_generala(faces):
            return 0
        if served and rules.served_generala == "points" and rules.served_generala_points is not None:
            return int(rules.served_generala_points)
        return rules.value("generala")
    if line == "double_generala":
        return rules.value("double_generala") if is_generala(faces) and generala_scored else 0
    raise ValueError(f"unknown line {line!r}")


def sheet_totals(sheets) -> np.ndarray:
    """The total of each sheet (over the last axis: a sheet's lines): the points written, an
    open line (-1) counting none. The one sum of a sheet."""
    a = np.asarray(sheets)
    return np.where(a < 0, 0, a).sum(axis=-1)


def generala_scored(rules: RuleSet, sheet):
    """Whether a sheet holds points on its generala line (what a double generala needs).

    ``sheet``: one seat's line values (:data:`~generala_env.core.game.OPEN` for an open line),
    or any array with the lines on its last axis, which gives an array of answers.
    ``False`` when the sheet has no generala line.
    """
    g = rules.generala_line
    if g < 0:
        return False
    sheet = np.asarray(sheet)
    return sheet[g] > 0 if sheet.ndim == 1 else sheet[..., g] > 0  # a 0-d comparison is slow


def blocked_line(rules: RuleSet, generala_scored: bool) -> int:
    """The line on which a write scores 0 whatever the dice, or -1 for none: the double
    generala line while the generala line holds no points.

    The rule's home is :func:`generala_env.core.engine.blocked_line` (what the game and the
    compiled loops run, on the rules' numbers); this says the same for a rule set and a flag
    (with :func:`generala_scored`), for what reads :func:`points_table` outside a game (which
    gives double generala as if the generala line held points): the agents, the solver and
    exploring starts. :func:`line_points` takes the same flag. This module cannot call the
    engine (the engine reads its tables): ``tests/test_scoring.py`` holds the two together.
    """
    return -1 if generala_scored else rules.double_generala_line


@lru_cache(maxsize=64)
def points_table(rules: RuleSet) -> np.ndarray:
    """``table[line, roll, served]``: points for every line, roll and served-ness.

    Double generala is given as if the generala line holds points (:func:`blocked_line`
    says when it does not). Read-only int32 array of shape ``(L, 252, 2)``.
    """
    from generala_env.core.dice import ROLLS

    table = np.zeros((rules.num_lines, NUM_ROLLS, 2), dtype=np.int32)
    for l, line in enumerate(rules.lines):
        for r, faces in enumerate(ROLLS):
            for s in (0, 1):
                table[l, r, s] = line_points(line, faces, rules, served=bool(s))
    table.setflags(write=False)
    return table


def line_max(rules: RuleSet) -> np.ndarray:
    """The most points each line can hold (used to scale observations)."""
    return np.maximum(points_table(rules).max(axis=(1, 2)), 1).astype(np.float32)


__all__ = [
    "is_straight",
    "is_full_house",
    "is_four_of_a_kind",
    "is_generala",
    "line_points",
    "generala_scored",
    "blocked_line",
    "points_table",
    "line_max",
    "roll_index",
]
