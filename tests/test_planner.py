"""The planner API of the engine: the rule facts the solvers, td-search and the baselines read,
checked on literal dice and points (the rules' numbers: ../shared/rules/)."""

from __future__ import annotations

import numpy as np

from generala_env import OPEN, load_rules
from generala_env.core.dice import NUM_KEEPS, NUM_MASKS, NUM_ROLLS, keep_index, roll_index
from generala_env.planning import planner


def test_served_is_the_turns_first_roll():
    assert planner.served(2) and not planner.served(1) and not planner.served(0)
    assert planner.served(np.array([2, 1, 0, 2])).tolist() == [True, False, False, True]


def test_points_now_on_literal_dice_served_and_not():
    classic = load_rules("classic")
    sheet = np.full(classic.num_lines, OPEN)
    full = roll_index([3, 3, 5, 5, 5])
    now = dict(zip(classic.lines, planner.points_now(classic, sheet, full, 2).tolist(), strict=True))
    assert (now["threes"], now["fives"], now["full_house"], now["four_of_a_kind"], now["generala"]) == (6, 15, 35, 0, 0)  # served: 30 + 5
    later = dict(zip(classic.lines, planner.points_now(classic, sheet, full, 1).tolist(), strict=True))
    assert later["full_house"] == 30


def test_the_double_generala_line_scores_only_after_a_scored_generala_for_each_sheet():
    double = load_rules("double")
    gen, dbl = double.lines.index("generala"), double.lines.index("double_generala")
    sheets = np.full((3, double.num_lines), OPEN)
    sheets[1, gen] = 50  # scored
    sheets[2, gen] = 0  # crossed out
    five = roll_index([6] * 5)
    pts = planner.points_now(double, sheets, five, 1)
    assert pts.shape == (3, double.num_lines)
    assert pts[:, dbl].tolist() == [0, 100, 0] and pts[:, gen].tolist() == [50, 50, 50]
    assert planner.write_points(double, [False, True])[:, dbl, five, 0].tolist() == [0, 100]


def test_turn_action_values_reads_writes_and_the_keep_each_hold_makes():
    L = 10
    write = np.arange(L * NUM_ROLLS * 2, dtype=float).reshape(L, NUM_ROLLS, 2)
    K1, K2 = np.arange(NUM_KEEPS) + 1000.0, np.arange(NUM_KEEPS) + 2000.0
    roll = roll_index([1, 2, 3, 4, 5])
    first = planner.turn_action_values(write, K1, K2, roll, 2)
    assert first[NUM_MASKS + 4] == write[4, roll, 1]  # served
    assert first[0b00001] == K1[keep_index([1])] and first[0b10100] == K1[keep_index([3, 5])]
    assert first[0] == K1[keep_index([])] and first[NUM_MASKS - 1] == -np.inf  # all five held: not a hold
    second = planner.turn_action_values(write, K1, K2, roll, 1)
    assert second[0b00011] == K2[keep_index([1, 2])] and second[NUM_MASKS + 4] == write[4, roll, 0]
    last = planner.turn_action_values(write, K1, K2, roll, 0, worst=-7.0)
    assert (last[:NUM_MASKS] == -7.0).all() and last[NUM_MASKS] == write[0, roll, 0]


def test_a_sheet_is_indexed_by_its_filled_lines_and_the_scored_generala_where_a_double_line_exists():
    classic, double = load_rules("classic"), load_rules("double")
    sheet = np.full(double.num_lines, OPEN)
    assert planner.sheet_id(double, sheet) == 0
    sheet[0], sheet[2] = 3, 0  # ones and threes written: lines 0 and 2
    assert planner.sheet_id(double, sheet) == 2 * 0b101
    sheet[9] = 50  # the generala line, scored: the flag
    assert planner.sheet_id(double, sheet) == 2 * (0b101 + 2**9) + 1
    sheet[9] = 0  # crossed out: no flag
    assert planner.sheet_id(double, sheet) == 2 * (0b101 + 2**9)
    one = np.full(classic.num_lines, OPEN)
    one[9] = 50  # no double generala line in classic: a scored generala changes nothing to come
    assert planner.sheet_id(classic, one) == 2 * 2**9
    assert planner.sheet_index(double, np.array([1, 3]), np.array([True, False])).tolist() == [3, 6]
