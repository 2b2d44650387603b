"""Points of every line for literal dice, under every straight setting and served or not."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers import faces

from generala_env import OPEN, line_points, load_rules, points_table
from generala_env.core.dice import (
    FULL_ROLL_PROB,
    HOLD_KEEP,
    KEEP_COUNTS,
    KEEP_ROLL_PROB,
    NUM_KEEPS,
    NUM_ROLLS,
    ROLLS,
    keep_index,
    roll_index,
)
from generala_env.core.scoring import is_straight, line_max

# Every line a sheet can hold, in one rule set, so each row below is checked on each line.
ALL_LINES = [
    "ones",
    "twos",
    "threes",
    "fours",
    "fives",
    "sixes",
    "three_of_a_kind",
    "full_house",
    "four_of_a_kind",
    "generala",
    "double_generala",
    "straight",
]
SETTINGS = ("straight_wraps", "straight_one_as_two", "straight_gap")

# dice, then points not served (classic values) on:
#   ones twos threes fours fives sixes | three_of_a_kind full_house four_of_a_kind generala double_generala
# then is it a straight under: (plain, straight_wraps, straight_one_as_two, straight_gap)
# (double_generala as written after a scored generala; three_of_a_kind = the three matching dice)
TABLE = [
    # the sources' worked examples
    ("44426", 0, 2, 0, 12, 0, 6, 12, 0, 0, 0, 0, (0, 0, 0, 0)),  # 000: fours 12, twos 2, sixes 6, no straight
    ("55533", 0, 0, 6, 0, 15, 0, 15, 30, 0, 0, 0, (0, 0, 0, 0)),  # 000: full house
    ("44422", 0, 4, 0, 12, 0, 0, 12, 30, 0, 0, 0, (0, 0, 0, 0)),  # 001: full house
    ("22226", 0, 8, 0, 0, 0, 6, 6, 0, 40, 0, 0, (0, 0, 0, 0)),  # 000: four of a kind
    ("66663", 0, 0, 3, 0, 0, 24, 18, 0, 40, 0, 0, (0, 0, 0, 0)),  # 001: four sixes are 24 on sixes
    ("33333", 0, 0, 15, 0, 0, 0, 9, 0, 40, 50, 100, (0, 0, 0, 0)),  # threes 15, poker 40, generala 50; no full house
    ("12345", 1, 2, 3, 4, 5, 0, 0, 0, 0, 0, 0, (1, 1, 1, 1)),
    ("23456", 0, 2, 3, 4, 5, 6, 0, 0, 0, 0, 0, (1, 1, 1, 1)),
    ("34561", 1, 0, 3, 4, 5, 6, 0, 0, 0, 0, 0, (0, 1, 1, 1)),  # 3-4-5-6-1: wraps; also a 1 for the 2
    ("13456", 1, 0, 3, 4, 5, 6, 0, 0, 0, 0, 0, (0, 1, 1, 1)),  # the same dice in order
    ("12456", 1, 2, 0, 4, 5, 6, 0, 0, 0, 0, 0, (0, 0, 0, 1)),  # one number missing: gap only
    ("12346", 1, 2, 3, 4, 0, 6, 0, 0, 0, 0, 0, (0, 0, 0, 1)),
    ("12356", 1, 2, 3, 0, 5, 6, 0, 0, 0, 0, 0, (0, 0, 0, 1)),
    ("11345", 2, 0, 3, 4, 5, 0, 0, 0, 0, 0, 0, (0, 0, 1, 0)),  # 1-1-3-4-5: a 1 for the 2 only
    # near misses
    ("11234", 2, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, (0, 0, 0, 0)),  # has its 2: a pair of ones is no straight
    ("13455", 1, 0, 3, 4, 10, 0, 0, 0, 0, 0, 0, (0, 0, 0, 0)),
    ("11456", 2, 0, 0, 4, 5, 6, 0, 0, 0, 0, 0, (0, 0, 0, 0)),
    ("23455", 0, 2, 3, 4, 10, 0, 0, 0, 0, 0, 0, (0, 0, 0, 0)),
    ("12234", 1, 4, 3, 4, 0, 0, 0, 0, 0, 0, 0, (0, 0, 0, 0)),
    # kinds
    ("11122", 3, 4, 0, 0, 0, 0, 3, 30, 0, 0, 0, (0, 0, 0, 0)),
    ("66611", 2, 0, 0, 0, 0, 18, 18, 30, 0, 0, 0, (0, 0, 0, 0)),
    ("55552", 0, 2, 0, 0, 20, 0, 15, 0, 40, 0, 0, (0, 0, 0, 0)),
    ("66634", 0, 0, 3, 4, 0, 18, 18, 0, 0, 0, 0, (0, 0, 0, 0)),  # three of a kind: 18, not the 27 of all dice
    ("11111", 5, 0, 0, 0, 0, 0, 3, 0, 40, 50, 100, (0, 0, 0, 0)),
    ("66666", 0, 0, 0, 0, 0, 30, 18, 0, 40, 50, 100, (0, 0, 0, 0)),
    ("22334", 0, 4, 6, 4, 0, 0, 0, 0, 0, 0, 0, (0, 0, 0, 0)),  # two pairs: nothing
]

COMBOS = [c for n in range(4) for c in itertools.combinations(SETTINGS, n)]  # all 8 straight settings


def _rules(on=(), **extra):
    spec = {"lines": ALL_LINES, **{k: k in on for k in SETTINGS}, **extra}
    return load_rules(spec)


def _expected(row, on, served, rules):
    dice, *pts, straight_under = row
    exp = dict(zip(ALL_LINES[:11], pts, strict=True))
    which = (True, *(s in on for s in SETTINGS))
    is_st = any(q and s for q, s in zip(which, straight_under, strict=True))
    exp["straight"] = 20 if is_st else 0
    if served:
        for line in ("straight", "full_house", "four_of_a_kind"):
            if exp[line]:
                exp[line] += rules.served_bonus
    return exp


@pytest.mark.parametrize("on", COMBOS, ids=["+".join(c) or "plain" for c in COMBOS])
@pytest.mark.parametrize("served", [False, True], ids=["rolled", "served"])
def test_table_every_line_every_straight_setting(on, served):
    rules = _rules(on)
    table = points_table(rules)
    for row in TABLE:
        exp = _expected(row, on, served, rules)
        got = {line: line_points(line, faces(row[0]), rules, served=served) for line in ALL_LINES}
        assert got == exp, row[0]
        # the precomputed table says the same, whatever order the dice come in
        r = roll_index(faces(row[0])[::-1])
        assert {line: int(table[l, r, int(served)]) for l, line in enumerate(rules.lines)} == exp, row[0]


# -- the worked examples, one by one, in classic ----------------------------------------
CLASSIC = load_rules("classic")


@pytest.mark.parametrize(
    "dice,line,served,points",
    [
        ("44426", "fours", False, 12),
        ("44426", "twos", False, 2),
        ("44426", "sixes", False, 6),
        ("44426", "straight", False, 0),
        ("55533", "full_house", False, 30),
        ("55533", "full_house", True, 35),
        ("44422", "full_house", True, 35),
        ("33333", "threes", False, 15),
        ("33333", "four_of_a_kind", False, 40),
        ("33333", "generala", False, 50),
        ("33333", "generala", True, 50),  # served generala under "win": the line still says 50
        ("33333", "full_house", True, 0),
        ("23456", "straight", True, 25),
        ("12345", "straight", False, 20),
        ("22226", "four_of_a_kind", True, 45),
        ("44444", "four_of_a_kind", True, 45),
        ("66663", "sixes", True, 24),  # served changes nothing on a number line
        ("13456", "straight", True, 0),
        ("12456", "straight", False, 0),
    ],
)
def test_worked_examples_classic(dice, line, served, points):
    assert line_points(line, faces(dice), CLASSIC, served=served) == points


def test_sixty_values_and_served_bonus_ten():
    r = load_rules("sixty")
    assert line_points("generala", faces("55555"), r) == 60
    assert line_points("double_generala", faces("55555"), r) == 120
    assert line_points("straight", faces("23456"), r, served=True) == 30
    assert line_points("full_house", faces("55533"), r, served=True) == 40
    assert line_points("four_of_a_kind", faces("22226"), r, served=True) == 50


def test_no_served_rolls_when_bonus_is_zero():
    r = load_rules({"served_bonus": 0})
    assert line_points("straight", faces("23456"), r, served=True) == 20
    assert line_points("full_house", faces("55533"), r, served=True) == 30


def test_double_generala_only_after_a_scored_generala():
    r = load_rules("double")
    assert line_points("double_generala", faces("44444"), r, generala_scored=True) == 100
    assert line_points("double_generala", faces("44444"), r, generala_scored=False) == 0
    assert line_points("double_generala", faces("44443"), r, generala_scored=True) == 0
    assert line_points("double_generala", faces("44444"), r, served=True) == 100  # no served bonus on it


def test_served_generala_for_points():
    r = load_rules({"base": "double", "served_generala": "points", "served_generala_points": 100})
    assert line_points("generala", faces("22222"), r, served=True) == 100
    assert line_points("generala", faces("22222"), r, served=False) == 50
    assert line_points("generala", faces("22223"), r, served=True) == 0
    assert line_points("four_of_a_kind", faces("22222"), r, served=True) == 45
    t = points_table(r)
    g = r.line_index("generala")
    assert t[g, roll_index(faces("22222")), 1] == 100 and t[g, roll_index(faces("22222")), 0] == 50


def test_is_straight_ignores_dice_order():
    for on in COMBOS:
        r = _rules(on)
        for row in TABLE:
            f = faces(row[0])
            assert is_straight(f, r) == is_straight(f[::-1], r) == is_straight(sorted(f), r)


# -- known counts over all 252 rolls --------------------------------------------------
def _count(rules, line, served=0, weight=None):
    col = points_table(rules)[rules.line_index(line), :, served] > 0
    return col.sum() if weight is None else float(weight[col].sum())


def test_how_many_rolls_qualify():
    plain = _rules()
    assert _count(plain, "full_house") == 6 * 5
    assert _count(plain, "four_of_a_kind") == 6 * 5 + 6
    assert _count(plain, "generala") == 6
    assert _count(plain, "three_of_a_kind") == 6 * 15 + 6 * 5 + 6
    assert _count(plain, "straight") == 2
    assert _count(_rules(["straight_wraps"]), "straight") == 3
    assert _count(_rules(["straight_one_as_two"]), "straight") == 4  # + 1-3-4-5-6 and 1-1-3-4-5
    assert _count(_rules(["straight_gap"]), "straight") == 6  # any five different faces


def test_first_roll_probabilities():
    plain = _rules()
    p = FULL_ROLL_PROB
    assert p.sum() == pytest.approx(1.0)
    assert _count(plain, "generala", weight=p) == pytest.approx(6 / 7776)
    assert _count(plain, "full_house", weight=p) == pytest.approx(300 / 7776)
    assert _count(plain, "four_of_a_kind", weight=p) == pytest.approx(156 / 7776)
    assert _count(plain, "straight", weight=p) == pytest.approx(240 / 7776)
    assert _count(_rules(["straight_gap"]), "straight", weight=p) == pytest.approx(720 / 7776)


def _points_by_the_rules(line: str, dice: tuple, rules, served: bool) -> int:
    """The rules' text as a scorer of its own (``../shared/rules/``), written apart from
    ``generala_env.core.scoring``: counts of faces and the sorted dice, with the rule set's values."""
    counts = sorted(dice.count(f) for f in set(dice))
    values = dict(rules.values)
    bonus = rules.served_bonus if served else 0
    if line in ALL_LINES[:6]:
        face = ALL_LINES.index(line) + 1
        return face * dice.count(face)
    if line == "three_of_a_kind":
        return next((3 * f for f in set(dice) if dice.count(f) >= 3), 0)
    if line == "full_house":
        return values["full_house"] + bonus if counts == [2, 3] else 0
    if line == "four_of_a_kind":
        return values["four_of_a_kind"] + bonus if counts[-1] >= 4 else 0
    if line in ("generala", "double_generala"):
        if counts != [5]:
            return 0
        if line == "generala" and served and rules.served_generala == "points":
            return rules.served_generala_points
        return values[line]
    assert line == "straight"
    runs = ({1, 2, 3, 4, 5}, {2, 3, 4, 5, 6})
    faces = sorted(dice)
    straight = set(faces) in runs
    straight |= rules.straight_wraps and set(faces) == {3, 4, 5, 6, 1}  # the 1 after the 6
    if rules.straight_one_as_two and 1 in faces and 2 not in faces:  # one 1 stands for the missing 2
        as_two = faces.copy()
        as_two[as_two.index(1)] = 2
        straight |= set(as_two) in runs and len(set(as_two)) == 5
    straight |= rules.straight_gap and len(set(faces)) == 5
    return values["straight"] + bonus if straight else 0


@pytest.mark.parametrize(
    "rules",
    [load_rules("sixty"), _rules(["straight_wraps", "straight_one_as_two"]), _rules(["straight_gap"], served_generala="points", served_generala_points=80)],
    ids=["sixty", "wraps+one_as_two", "gap+served_points"],
)
def test_the_table_scores_every_throw_as_the_rules_say(rules):
    """Every ordered throw of five dice (7776), on every line, rolled and served."""
    t = points_table(rules)
    assert t.shape == (rules.num_lines, 252, 2) and not t.flags.writeable
    for dice in itertools.product(range(1, 7), repeat=5):
        r = roll_index(list(dice))
        for s in (0, 1):
            got = [int(t[l, r, s]) for l in range(rules.num_lines)]
            assert got == [_points_by_the_rules(line, dice, rules, bool(s)) for line in rules.lines], (dice, s)


def test_line_max():
    r = load_rules("double")
    assert list(line_max(r)) == [5, 10, 15, 20, 25, 30, 25, 35, 45, 50, 100]


# -- the finite world of dice ---------------------------------------------------------
def test_rolls_and_keeps():
    assert NUM_ROLLS == 252 and NUM_KEEPS == 462
    assert all(list(r) == sorted(r) for r in ROLLS)
    assert len({tuple(r) for r in ROLLS}) == 252
    np.testing.assert_allclose(KEEP_ROLL_PROB.sum(axis=1), 1.0)
    r = roll_index(faces("12256"))
    assert list(KEEP_COUNTS[HOLD_KEEP[r, 0b00110]]) == [0, 2, 0, 0, 0, 0]  # bits 1, 2 hold the two 2s
    assert HOLD_KEEP[r, 0b00110] == keep_index([2, 2])
    assert HOLD_KEEP[r, 0] == keep_index([])
    # holding 2-2-5-6 and rerolling one die: each face 1/6
    k = keep_index([2, 2, 5, 6])
    assert KEEP_ROLL_PROB[k, roll_index(faces("22256"))] == pytest.approx(1 / 6)
    assert KEEP_ROLL_PROB[k, roll_index(faces("12345"))] == 0
    with pytest.raises(ValueError):
        roll_index([1, 2, 3, 4])
    with pytest.raises(ValueError):
        roll_index([0, 2, 3, 4, 5])


# what the generala line holds (open, crossed out, scored) -> the line blocked: double generala
# (line 10 of double and sixty) while the generala line holds no points; nothing in classic
BLOCKED = {
    "classic": {OPEN: -1, 0: -1, 50: -1, 80: -1},
    "double": {OPEN: 10, 0: 10, 50: -1, 80: -1},
    "sixty": {OPEN: 10, 0: 10, 50: -1, 80: -1},
}


@pytest.mark.parametrize("spec", ["classic", "double", "sixty"])
def test_blocked_line_in_python_and_in_the_numba_loops_is_double_generala_until_a_generala_scores(spec):
    """``scoring.blocked_line`` for a rule set, ``engine.blocked_line`` for the rules' numbers
    (run as plain Python by the game and compiled in the batched loops), on a literal table."""
    from generala_env.compiled import batched
    from generala_env.core import engine
    from generala_env.core.scoring import blocked_line, generala_scored

    rules = load_rules(spec)
    for held, expected in BLOCKED[spec].items():
        sheet = np.full(rules.num_lines, OPEN)
        sheet[9] = held  # the generala line of every preset
        assert blocked_line(rules, bool(generala_scored(rules, sheet))) == expected
        assert batched.blocked_line(rules.double_generala_line, sheet[9]) == expected
        assert engine.blocked_line(rules.double_generala_line, int(sheet[9])) == expected
    assert bool(generala_scored(rules, sheet))  # 80 held: scored
    no_generala = load_rules({"lines": ["ones", "three_of_a_kind"]})
    assert not generala_scored(no_generala, np.array([3, 15])) and blocked_line(no_generala, False) == -1


def test_a_sheets_total_counts_its_written_points_and_no_open_line():
    from generala_env.core.scoring import sheet_totals

    assert sheet_totals([[3, -1, 25, 0], [-1, -1, -1, -1]]).tolist() == [28, 0]
    assert sheet_totals(np.array([[[1, 2], [-1, 50]]])).tolist() == [[3, 50]]
