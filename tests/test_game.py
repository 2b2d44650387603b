"""Scripted turns and games with the dice given, and the legal-action mask against the game."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import QUICK, LoadedDice, ScriptedDice, faces, hold, write
from hypothesis import given
from hypothesis import strategies as st

from generala_env import OPEN, Game, IllegalActionError
from generala_env.core.dice import HOLD_KEEP, KEEP_COUNTS, KEEP_SIZE, NUM_MASKS, DiceCup, keep_index

ALL_HELD = 31


def new_game(rules="classic", players=1, first="12346"):
    """A game whose first roll is ``first``."""
    g = Game(rules, players)
    g.reset(ScriptedDice(first))
    return g


def sheet(g, player=0):
    """A player's sheet as ``{line: points}`` for the filled lines."""
    return {line: int(v) for line, v in zip(g.rules.lines, g.sheets[player], strict=True) if v != OPEN}


def state(g):
    return (g.sheets.copy().tolist(), g.roll, g.rolls_left, g.player, g.locked, g.over, g.writes, g.served_generala_winner)


# -- one turn -------------------------------------------------------------------------
def test_a_turn_starts_with_all_five_dice_rolled():
    g = new_game(first="62514")
    assert list(g.dice) == [1, 2, 4, 5, 6]  # sorted: the order the hold bits refer to
    assert g.rolls_left == 2 and g.first_roll and g.player == 0 and g.turn == 0 and not g.over
    assert g.locked == keep_index([])
    assert (g.sheets == OPEN).all()


def test_served_full_house_earns_the_bonus():
    g = new_game(first="53535")
    out = g.apply(write(g, "full_house"), faces("11111"))
    assert (out.points, out.served, out.bonus, out.wrote) == (35, True, 5, True)
    assert sheet(g) == {"full_house": 35}
    # next turn (one player): the faces passed with the write are the new first roll
    assert list(g.dice) == [1, 1, 1, 1, 1] and g.rolls_left == 2 and g.turn == 1


def test_full_house_made_with_a_reroll_is_not_served():
    g = new_game(first="55531")
    out = g.apply(hold(g, "5553"), [3])
    assert out.points == 0 and not out.wrote
    assert list(g.dice) == [3, 3, 5, 5, 5] and g.rolls_left == 1 and not g.first_roll
    assert g.locked == keep_index([3, 5, 5, 5])
    out = g.apply(write(g, "full_house"), faces("12345"))
    assert (out.points, out.served, out.bonus) == (30, False, 0)
    assert sheet(g) == {"full_house": 30}


@pytest.mark.parametrize(
    "rules,first,line,points",
    [
        ("classic", "23456", "straight", 25),
        ("classic", "62222", "four_of_a_kind", 45),
        ("classic", "44444", "four_of_a_kind", 45),
        ("sixty", "23456", "straight", 30),
        ("sixty", "44422", "full_house", 40),
        ("classic", "44426", "fours", 12),  # number lines: no bonus
        ("classic", "12456", "straight", 0),  # crossed out: no bonus either
    ],
)
def test_served_lines(rules, first, line, points):
    g = new_game(rules, first=first)
    out = g.apply(write(g, line), faces("12345"))
    assert out.points == points and sheet(g) == {line: points}
    assert out.bonus == (g.rules.served_bonus if line in ("straight", "full_house", "four_of_a_kind") and points else 0)


def test_three_rolls_then_the_player_must_write():
    g = new_game(first="12346")
    g.apply(0, faces("12356"))  # reroll all five
    assert list(g.dice) == [1, 2, 3, 5, 6] and g.rolls_left == 1
    g.apply(hold(g, "1235"), [4])
    assert list(g.dice) == [1, 2, 3, 4, 5] and g.rolls_left == 0
    for m in range(NUM_MASKS):
        assert not g.legal_mask()[m]
        with pytest.raises(IllegalActionError, match="no rolls left" if m != ALL_HELD else "holding all five"):
            g.apply(m, [])
    assert g.legal_actions() == [write(g, line) for line in g.rules.lines]
    out = g.apply(write(g, "straight"), faces("66666"))
    assert (out.points, out.served) == (20, False)


def test_keeping_all_five_is_never_a_reroll():
    g = new_game(first="12346")
    assert not g.legal_mask()[ALL_HELD]
    assert "holding all five dice is not a reroll" in g.why_illegal(ALL_HELD)
    with pytest.raises(IllegalActionError):
        g.apply(ALL_HELD, [])
    g.apply(hold(g, "1234"), [5])
    assert not g.legal_mask()[ALL_HELD]


def test_crossing_out_closes_the_line():
    g = new_game(first="12346")
    out = g.apply(write(g, "generala"), faces("33333"))
    assert out.points == 0 and out.wrote
    assert sheet(g) == {"generala": 0}
    assert not g.legal_mask()[write(g, "generala")]
    assert g.why_illegal(write(g, "generala")) == "line 'generala' is already filled"
    with pytest.raises(IllegalActionError, match="already filled"):
        g.apply(write(g, "generala"), faces("12345"))
    # five alike next turn (1 player): any other line takes it; the crossed-out generala stays 0
    out = g.apply(write(g, "threes"), faces("12345"))
    assert out.points == 15 and sheet(g) == {"generala": 0, "threes": 15}
    assert list(g.totals()) == [15]


def test_hold_with_the_wrong_number_of_faces_changes_nothing():
    g = new_game(first="12346")
    before = state(g)
    with pytest.raises(ValueError, match="rerolls 1 dice"):
        g.apply(hold(g, "1234"), [5, 5])
    assert state(g) == before


def test_bad_faces_change_nothing():
    g = new_game(players=2, first="12346")
    before = state(g)
    for action, bad in [
        (hold(g, "1234"), [0]),  # no face 0 (it must not count as a six)
        (hold(g, "1234"), [7]),
        (write(g, "ones"), [1, 2, 3]),  # the next player's first roll needs five dice
        (write(g, "ones"), [1, 2, 3, 4, 9]),
    ]:
        with pytest.raises(ValueError):
            g.apply(action, bad)
        assert state(g) == before, (action, bad)


def test_the_last_write_needs_no_dice():
    g = new_game({"lines": ["ones", "sixes"]}, players=1, first="12346")
    g.apply(write(g, "ones"), faces("66666"))
    out = g.apply(write(g, "sixes"), [])
    assert out.points == 30 and g.over and list(g.totals()) == [31]


def test_bad_actions_are_named():
    g = new_game(first="12346")
    assert "out of range" in g.why_illegal(42)
    assert "out of range" in g.why_illegal(-1)
    assert "integer" in g.why_illegal(3.0)
    assert "integer" in g.why_illegal(True)
    assert "integer" in g.why_illegal("32")
    assert g.why_illegal(np.int64(32)) is None
    with pytest.raises(IllegalActionError):
        g.apply(42, [])


def test_player_count_is_checked():
    for n in (0, 7, True, 2.0):
        with pytest.raises(ValueError, match="num_players"):
            Game("classic", n)


# -- locked holds ---------------------------------------------------------------------
def test_locked_holds():
    g = new_game({"locked_holds": True}, first="12256")
    g.apply(hold(g, "22"), faces("234"))
    assert list(g.dice) == [2, 2, 2, 3, 4] and g.rolls_left == 1
    assert list(KEEP_COUNTS[g.locked]) == [0, 2, 0, 0, 0, 0]
    legal = g.legal_mask()
    # the kept 2-2 may be held at any two of the three 2s: equal faces are the same die to the rules
    for m in (0b00011, 0b00110, 0b00101, 0b00111, 0b01011, 0b10011, 0b11011, 0b01111):
        assert legal[m], bin(m)
    # a mask holding fewer than two 2s puts a kept die back in the cup
    for m in (0, 0b00001, 0b00010, 0b00100, 0b11000, 0b11001):
        assert not legal[m], bin(m)
        assert "locked_holds" in g.why_illegal(m)
        with pytest.raises(IllegalActionError):
            g.apply(m, faces("11111")[: 5 - bin(m).count("1")])
    assert not legal[ALL_HELD]
    assert legal[NUM_MASKS:].all()
    g.apply(0b00110, faces("222"))  # the two 2s at positions 1-2 this time
    assert list(g.dice) == [2, 2, 2, 2, 2] and g.rolls_left == 0
    # a new turn unlocks everything
    g.apply(write(g, "generala"), faces("13456"))
    assert g.locked == keep_index([]) and g.legal_mask()[:ALL_HELD].all()


def test_locked_holds_grow_with_each_hold():
    g = new_game({"locked_holds": True}, first="11236")
    g.apply(hold(g, "6"), faces("6612"))
    assert list(g.dice) == [1, 2, 6, 6, 6]
    assert list(KEEP_COUNTS[g.locked]) == [0, 0, 0, 0, 0, 1]
    g.apply(hold(g, "666"), faces("66"))
    assert list(KEEP_COUNTS[g.locked]) == [0, 0, 0, 0, 0, 3]


def test_without_locked_holds_a_kept_die_may_go_back():
    g = new_game(first="12256")
    g.apply(hold(g, "22"), faces("234"))
    assert g.legal_mask()[:ALL_HELD].all()
    g.apply(0, faces("66666"))
    assert list(g.dice) == [6, 6, 6, 6, 6]


# -- served generala ------------------------------------------------------------------
def test_served_generala_wins_at_once_with_two_players():
    g = new_game(players=2, first="33333")
    assert g.served_generala_pending()
    assert g.legal_actions() == [write(g, "generala")]  # the forced claim
    for a in [0, 5, write(g, "threes"), write(g, "four_of_a_kind")]:
        assert "served generala" in g.why_illegal(a)
    out = g.apply(write(g, "generala"), [])
    assert out.served_generala_win and out.points == 50
    assert g.over and g.served_generala_winner == 0 and g.winners() == (0,)
    assert sheet(g, 0) == {"generala": 50} and sheet(g, 1) == {}
    assert not g.legal_mask().any() and g.why_illegal(0) == "the game is over"


def test_served_generala_wins_for_a_player_who_is_behind():
    g = new_game(players=3, first="66663")
    g.apply(write(g, "four_of_a_kind"), faces("12345"))  # seat 0: 45
    g.apply(write(g, "straight"), faces("55555"))  # seat 1: 25; seat 2 is served five fives
    assert g.player == 2 and g.served_generala_pending()
    g.apply(write(g, "generala"), [])
    assert g.over and g.winners() == (2,) and list(g.totals()) == [45, 25, 50]
    g2 = new_game(players=2, first="66663")
    g2.apply(write(g2, "four_of_a_kind"), faces("11111"))
    g2.apply(write(g2, "generala"), [])
    assert g2.winners() == (1,) and list(g2.totals()) == [45, 50]  # a lower total still wins


def test_served_generala_is_an_ordinary_roll_with_one_player():
    g = new_game(players=1, first="33333")
    assert not g.served_generala_pending()
    assert g.legal_mask()[:ALL_HELD].all() and g.legal_mask()[NUM_MASKS:].all()
    out = g.apply(write(g, "threes"), faces("44444"))
    assert (out.points, out.served_generala_win, g.over) == (15, False, False)
    out = g.apply(write(g, "generala"), faces("12345"))
    assert (out.points, out.served_generala_win, g.over) == (50, False, False)
    assert g.turn == 2


def test_generala_after_a_reroll_does_not_win_at_once():
    g = new_game(players=2, first="33331")
    g.apply(hold(g, "3333"), [3])
    assert list(g.dice) == [3, 3, 3, 3, 3] and not g.served_generala_pending()
    out = g.apply(write(g, "generala"), faces("12345"))
    assert out.points == 50 and not g.over and g.player == 1


def test_crossed_out_generala_blocks_the_instant_win_and_the_double():
    g = new_game("double", players=2, first="12346")
    g.apply(write(g, "generala"), faces("12346"))  # seat 0 crosses out generala
    g.apply(write(g, "ones"), faces("44444"))  # seat 1; seat 0 is served five fours
    assert g.player == 0 and list(g.dice) == [4] * 5 and g.first_roll
    assert not g.served_generala_pending()
    legal = g.legal_mask()
    assert legal[:ALL_HELD].all() and not legal[write(g, "generala")]
    out = g.apply(write(g, "double_generala"), faces("12346"))
    assert out.points == 0 and not g.over  # a crossed-out generala does not count
    assert sheet(g, 0) == {"generala": 0, "double_generala": 0}


def test_double_generala_after_a_scored_generala():
    g = new_game("double", players=2, first="22221")
    g.apply(hold(g, "2222"), [2])
    g.apply(write(g, "generala"), faces("12346"))  # seat 0: generala 50, not served
    g.apply(write(g, "ones"), faces("55555"))  # seat 1; seat 0 is served five fives
    assert not g.served_generala_pending()  # generala line is filled: no instant win
    out = g.apply(write(g, "double_generala"), faces("12346"))
    assert out.points == 100 and not g.over
    assert sheet(g, 0) == {"generala": 50, "double_generala": 100}


def test_double_generala_before_the_generala_is_crossed_out():
    g = new_game("double", first="55555")
    out = g.apply(write(g, "double_generala"), faces("55555"))
    assert out.points == 0
    out = g.apply(write(g, "generala"), faces("55555"))
    assert out.points == 50
    assert sheet(g) == {"double_generala": 0, "generala": 50}


def test_served_generala_for_points_with_two_players():
    rules = {"base": "double", "served_generala": "points", "served_generala_points": 80}
    g = new_game(rules, players=2, first="44444")
    assert not g.served_generala_pending()
    assert g.legal_mask()[:ALL_HELD].all()
    out = g.apply(write(g, "generala"), faces("44441"))
    assert out.points == 80 and not out.served_generala_win and not g.over
    g.apply(hold(g, "4444"), [4])  # seat 1: five alike, not served
    out = g.apply(write(g, "generala"), faces("66666"))
    assert out.points == 50
    out = g.apply(write(g, "double_generala"), faces("12345"))  # seat 0 served again, after a scored generala
    assert out.points == 100
    assert list(g.totals()) == [180, 50]


def test_rules_without_a_generala_line_have_no_instant_win():
    g = new_game({"lines": ["ones", "twos", "threes", "fours", "fives", "sixes"]}, players=2, first="66666")
    assert not g.served_generala_pending()
    assert g.legal_mask()[:ALL_HELD].all() and g.legal_mask()[NUM_MASKS:].all()
    out = g.apply(write(g, "ones"), faces("12345"))
    assert out.points == 0 and not g.over and g.player == 1


# -- whole games ----------------------------------------------------------------------
def test_scripted_one_player_game():
    """Ten turns of classic; the state after every write."""
    script = [  # (first roll, holds and rerolls, line, points)
        ("33333", [], "generala", 50),
        ("66663", [("6666", "6")], "sixes", 30),
        ("23456", [], "straight", 25),
        ("55533", [], "full_house", 35),
        ("22224", [], "four_of_a_kind", 45),
        ("55541", [("555", "24")], "fives", 15),
        ("11234", [("4", "4431"), ("444", "42")], "fours", 16),
        ("33312", [], "threes", 9),
        ("21166", [], "twos", 2),
        ("12346", [(None, "11111")], "ones", 5),
    ]
    rng = ScriptedDice(script[0][0])
    g = Game("classic", 1)
    g.reset(rng)
    total = 0
    for t, (first, rerolls, line, pts) in enumerate(script):
        assert sorted(g.dice) == sorted(faces(first)) and g.rolls_left == 2 and g.turn == t
        for keep, new in rerolls:
            g.apply(0 if keep is None else hold(g, keep), faces(new))
        assert g.rolls_left == 2 - len(rerolls)
        nxt = faces(script[t + 1][0]) if t + 1 < len(script) else []
        out = g.apply(write(g, line), nxt)
        total += pts
        assert out.points == pts and g.sheets[0, g.rules.line_index(line)] == pts
        assert int(g.totals()[0]) == total and g.writes == t + 1
        assert g.over == (t == len(script) - 1)
    assert total == 232
    assert g.winners() == (0,) and g.served_generala_winner is None
    assert not g.legal_mask().any()


def test_two_player_game_ends_after_every_line_and_ties_share_the_win():
    g = new_game("classic", players=2, first="12346")
    n = g.num_lines
    for k in range(n):  # both players write the same dice on the same lines
        for p in (0, 1):
            assert g.player == p and g.turn == k
            g.apply(write(g, g.rules.lines[k]), faces("12346"))
    assert g.over and g.writes == 2 * n
    assert list(g.totals()) == [16, 16]
    assert g.winners() == (0, 1)


def test_clone_is_independent():
    g = new_game(players=2, first="12346")
    c = g.clone()
    c.apply(write(c, "ones"), faces("12346"))
    assert (g.sheets == OPEN).all() and g.player == 0
    assert c.sheets[0, 0] == 1 and c.player == 1


def test_step_draws_from_the_generator_it_is_given():
    a, b = Game("double", 2), Game("double", 2)
    ra, rb = np.random.default_rng(7), np.random.default_rng(7)
    a.reset(ra)
    b.reset(rb)
    while not a.over:
        act = a.legal_actions()[len(a.legal_actions()) // 2]
        a.step(act, ra)
        b.step(act, rb)
        assert state(a) == state(b)
    assert b.over


# -- the mask is exactly what the game accepts ------------------------------------------
MASK_CASES = [
    ("classic", 1),
    ("classic", 3),
    ({"locked_holds": True}, 3),
    ({"base": "double", "locked_holds": True}, 1),
    ({"base": "sixty", "served_generala": "points", "served_generala_points": 90, "straight_gap": True}, 2),
]


def _accepts(g, a, rng) -> bool:
    """Whether ``apply`` takes action ``a`` (on a copy, with fresh dice for it)."""
    c = g.clone()
    n = 5 - bin(a).count("1") if a < NUM_MASKS else 5
    try:
        c.apply(a, list(rng.integers(1, 7, size=n)))
    except IllegalActionError:
        return False
    return True


def _legal_by_the_rules(g, a) -> bool:
    """The rules' own words, on what the game shows: a served generala that wins must be
    claimed; a reroll needs a roll left and a die back in the cup, and under locked_holds
    keeps every die kept earlier this turn; a line takes the dice while it is open."""
    if g.served_generala_pending():
        return a == write(g, "generala")
    if a < NUM_MASKS:
        held = [int(f) for i, f in enumerate(g.dice) if a >> i & 1]
        locked = [f for f in range(1, 7) for _ in range(int(KEEP_COUNTS[g.locked][f - 1]))] if g.rules.locked_holds else []
        return g.rolls_left > 0 and len(held) < 5 and all(held.count(f) >= locked.count(f) for f in set(locked))
    return int(g.sheets[g.player, a - NUM_MASKS]) == OPEN


@pytest.mark.parametrize("rules,players", MASK_CASES)
def test_mask_equals_the_actions_the_game_accepts(rules, players):
    rng = np.random.default_rng(1)
    seen = {"pending": 0, "locked": 0, "no_rolls": 0, "filled": 0}
    for game_no in range(3):
        g = Game(rules, players)
        dice = LoadedDice(game_no)
        g.reset(dice)
        while not g.over:
            mask = g.legal_mask()
            assert mask.dtype == bool and mask.shape == (g.num_actions,) and mask.any()
            for a in range(g.num_actions):
                assert mask[a] == _legal_by_the_rules(g, a), a
                assert mask[a] == _accepts(g, a, rng), a
                assert (g.why_illegal(a) is None) == mask[a], a
            seen["pending"] += g.served_generala_pending()
            seen["locked"] += int(KEEP_SIZE[g.locked]) > 0 and g.rolls_left > 0
            seen["no_rolls"] += g.rolls_left == 0
            seen["filled"] += (g.sheets[g.player] != OPEN).any()
            legal = np.flatnonzero(mask)
            holds = legal[legal < NUM_MASKS]
            a = int(rng.choice(holds)) if len(holds) and rng.random() < 0.6 else int(rng.choice(legal))
            g.step(a, dice)
        assert not g.legal_mask().any()
    assert seen["locked"] and seen["no_rolls"] and seen["filled"]
    if players >= 2 and g.rules.served_generala == "win":
        assert seen["pending"], "no served generala reached: the forced claim went untested"


# -- properties -----------------------------------------------------------------------
@QUICK
@given(
    rules=st.sampled_from(
        ["classic", "double", "sixty", {"locked_holds": True, "base": "double"}, {"served_generala": "points", "served_generala_points": 70}]
    ),
    players=st.integers(1, 4),
    seed=st.integers(0, 2**32 - 1),
)
def test_a_game_takes_L_writes_per_player_unless_a_served_generala_ends_it(rules, players, seed):
    g = Game(rules, players)
    dice = LoadedDice(seed, p_alike=0.05)
    rng = np.random.default_rng(seed)
    g.reset(dice)
    writes = [0] * players
    steps = 0
    while not g.over:
        me = g.player
        out = g.step(int(rng.choice(g.legal_actions())), dice)
        steps += 1
        writes[me] += out.wrote
        assert (g.sheets[me] != OPEN).sum() == writes[me]
    L = g.num_lines
    assert steps <= 3 * L * players
    if g.served_generala_winner is None:
        assert writes == [L] * players and g.writes == L * players
        assert (g.sheets != OPEN).all()
        t = g.totals()
        assert set(g.winners()) == set(np.flatnonzero(t == t.max()).tolist())
    else:
        w = g.served_generala_winner
        assert players >= 2 and g.rules.served_generala == "win"
        k = writes[w] - 1  # the winner's earlier rounds
        assert writes == [k + 1] * (w + 1) + [k] * (players - w - 1)
        assert g.sheets[w, g.rules.line_index("generala")] == g.rules.value("generala")
        assert g.winners() == (w,)


# -- the dice cup ---------------------------------------------------------------------
def test_dice_cup_hands_out_the_generators_blocks_in_order():
    """Every face of every block, in order, none skipped or repeated, across block ends."""
    cup = DiceCup(np.random.default_rng(9), block=8)
    sizes = (5, 2, 3, 5, 1, 5)  # 21 faces: the third throw and the fifth run past a block's end
    throws = [cup.throw(n) for n in sizes]
    assert [len(t) for t in throws] == list(sizes)
    rng = np.random.default_rng(9)
    blocks = [f for _ in range(3) for f in rng.integers(1, 7, size=8, dtype=np.int8).tolist()]
    assert sum(throws, []) == blocks[:21]
    assert all(type(f) is int for t in throws for f in t)


def test_dice_cup_asks_a_scripted_generator_for_each_throw_as_it_comes():
    script = ScriptedDice("12345", "66", "111")
    cup = DiceCup(script)
    assert cup.throw(5) == [1, 2, 3, 4, 5] and cup.throw(2) == [6, 6] and cup.throw(3) == [1, 1, 1]
    assert script.faces == []  # nothing drawn ahead


def test_a_game_on_a_cup_is_the_game_on_its_faces():
    """Game.step with a cup and Game.apply with the cup's faces, given again, agree."""
    a, b = Game("classic", 2), Game("classic", 2)
    cup, replay = DiceCup(np.random.default_rng(4), block=16), DiceCup(np.random.default_rng(4), block=16)
    a.reset(cup)
    b.reset(ScriptedDice(*replay.throw(5)))
    rng = np.random.default_rng(0)
    while not a.over:
        act = int(rng.choice(a.legal_actions()))
        need = 5 - int(KEEP_SIZE[HOLD_KEEP[a.roll, act]]) if act < NUM_MASKS else 5
        out_a = a.step(act, cup)
        out_b = b.apply(act, replay.throw(need))
        assert (out_a.points, a.roll, a.rolls_left, a.player) == (out_b.points, b.roll, b.rolls_left, b.player)
    assert np.array_equal(a.sheets, b.sheets)


def test_a_game_and_the_env_keep_their_attributes_few():
    """CPython keeps an object's attributes in a compact table shared by its class only up
    to 30 names; past that every attribute read costs more (``Game``, at 37, ran its
    identical code about 12% slower). The rule set's look-ups live in one attribute."""
    import gymnasium as gym

    import generala_env  # noqa: F401

    for rules, players in (("classic", 1), ("double", 3)):
        g = Game(rules, players)
        rng = np.random.default_rng(0)
        g.reset(rng)
        for _ in range(40):
            if not g.over:
                g.step(g.legal_actions()[0], rng)
        g.views(), g.filled_lines, g.totals()
        assert len(vars(g)) <= 30, sorted(vars(g))
    for kwargs in ({}, {"num_players": 2, "opponents": ["greedy"], "render_mode": "rgb_array"}):
        env = gym.make("Generala-v0", **kwargs)
        env.reset(seed=0)
        env.step(32)
        env.render()
        assert len(vars(env.unwrapped)) <= 30, sorted(vars(env.unwrapped))


def test_games_pickled_in_earlier_formats_play_on():
    """A game pickled when its state was attributes of its own (with the rule set's look-ups as
    one attribute, or as many, from before they were grouped) is read, and plays on as the game
    it was; a game pickles as its rules, players and state."""
    import pickle

    rng = np.random.default_rng(0)
    g = Game("double", 2)
    g.reset(rng)
    g.step(0, rng)
    attrs = dict(rules=g.rules, num_players=2, num_lines=g.num_lines, num_actions=g.num_actions, sheets=g.sheets.copy(), roll=g.roll)
    attrs.update(rolls_left=g.rolls_left, player=g.player, locked=g.locked, over=False, served_generala_winner=None, writes=g.writes)
    attrs.update(throw_keep=-1, _throw_starts_turn=False, _legal_key=None, _sheets_key=None, _pending=False)
    grouped = dict(attrs, _r=None, _totals=(None, np.zeros(0)), _filled=(None, np.zeros(0)))
    ungrouped = dict(attrs, _t=None, _first_roll={}, _after_write=[], _generala=5, _masks={}, _totals_of=None, _filled_of=None)
    before_the_dice_model = {k: v for k, v in attrs.items() if k not in ("throw_keep", "_throw_starts_turn")}
    assert len(pickle.dumps(g)) < 2000  # the look-ups (tables, compiled step) are named, not carried
    for state in (grouped, ungrouped, before_the_dice_model, pickle.loads(pickle.dumps(g)).__getstate__()):
        game = Game.__new__(Game)
        game.__setstate__(state)
        assert len(vars(game)) <= 30 and (game.roll, game.rolls_left, game.locked) == (g.roll, g.rolls_left, g.locked)
        a, b = np.random.default_rng(1), np.random.default_rng(1)
        twin = g.clone()
        while not twin.over:
            action = twin.legal_actions()[-1]
            assert twin.step(action, a) == game.step(action, b)
            assert np.array_equal(twin.sheets, game.sheets) and twin.views()[2] == game.views()[2]


# -- the engine's one game ----------------------------------------------------------------------
@pytest.mark.parametrize("rules", ["classic", "double", {"base": "classic", "locked_holds": True}])
def test_a_cup_refilled_inside_the_compiled_step_deals_the_faces_in_order(rules):
    """A cup's faces go straight into the compiled step, which asks for a refill when too few
    are left; a block of 7 faces makes that happen mid-turn. The game is the one the same faces
    make when thrown one by one in Python."""
    cup = DiceCup(np.random.default_rng(3), block=7)
    draws = np.random.default_rng(3)
    script = ScriptedDice(*[f for _ in range(200) for f in draws.integers(1, 7, size=7, dtype=np.int8).tolist()])
    a, b = Game(rules, 2), Game(rules, 2)
    a.reset(cup)
    b.reset(script)
    pick = np.random.default_rng(0)
    while not a.over:
        legal = a.legal_actions()
        assert legal == b.legal_actions()
        action = legal[int(pick.integers(len(legal)))]
        assert a.step(action, cup) == b.step(action, script)
        assert np.array_equal(a.sheets, b.sheets) and a.roll == b.roll and a.views()[2:] == b.views()[2:]
    assert a.winners() == b.winners() and b.over


@pytest.mark.parametrize("rules,players", [("classic", 1), ("double", 3), ({"base": "classic", "served_generala": "win"}, 2)])
def test_a_step_that_observes_writes_the_encoders_observation(rules, players):
    from generala_env.core.encoding import Encoder

    g = Game(rules, players)
    enc = Encoder(g.rules, players)
    cup = DiceCup(np.random.default_rng(1))
    g.reset(cup)
    pick = np.random.default_rng(2)
    for _ in range(3 * g.num_lines * players):
        if g.over:
            g.reset(cup)
        legal = g.legal_actions()
        seat = int(pick.integers(players))
        out = np.full(enc.size, np.nan, dtype=np.float32)
        g.step(legal[int(pick.integers(len(legal)))], cup, (*enc.observe_tables, seat, out))
        assert out.tobytes() == enc.encode(g, seat).tobytes()


def test_the_state_is_a_one_game_game_state_of_views():
    from generala_env.core.engine import GameState

    g = Game("classic", 2)
    g.reset(np.random.default_rng(0))
    s = g.state
    assert isinstance(s, GameState) and s.sheets.shape == (1, 2, 10) and s.roll.shape == (1,)
    assert g.legal_view[:NUM_MASKS].sum() == NUM_MASKS - 1
    with pytest.raises(ValueError, match="read-only"):  # a change goes through the checks
        s.rolls_left[0] = 0
    g.rolls_left = 0  # the view follows the game, and what the game derives follows it
    assert s.rolls_left[0] == 0 and not g.legal_view[:NUM_MASKS].any()
    g.sheets = [[OPEN] * 10, [3] + [OPEN] * 9]
    assert s.sheets[0, 1, 0] == 3 and g.totals().tolist() == [0, 3]


def test_the_packed_tables_read_back_as_the_tables():
    from generala_env.compiled import one_game
    from generala_env.core.engine import Tables, tables
    from generala_env.core.rules import load_rules

    for name in ("classic", "double"):
        t = tables(load_rules(name), 3)
        back = one_game.unpack_tables(one_game.pack_tables(t))
        assert len(Tables._fields) == len(back)
        for field, a, b in zip(Tables._fields, t, back, strict=True):
            assert np.array_equal(np.asarray(a).ravel(), np.asarray(b).ravel()), field


def test_a_cup_pickled_with_its_faces_as_a_list_deals_on():
    import copy

    cup = DiceCup(np.random.default_rng(0), block=8)
    cup.throw(3)
    state = {"rng": copy.deepcopy(cup.rng), "block": 8, "_faces": cup.faces.tolist(), "_next": int(cup.at[0])}
    old = DiceCup.__new__(DiceCup)
    old.__setstate__(state)
    assert [old.throw(2) for _ in range(6)] == [cup.throw(2) for _ in range(6)]


@pytest.mark.parametrize(
    "attr,value,named",
    [("roll", 10**8, "roll"), ("player", 2, "player"), ("player", 50_000_000, "player"), ("locked", -5, "locked"), ("rolls_left", 3, "rolls_left")],
)
def test_a_number_set_by_hand_out_of_range_is_refused_where_it_is_set(attr, value, named):
    """The compiled calls index the rules' tables by the game's numbers: one out of range is
    refused as it is set, by name, and the game is left as it was (it never reaches them)."""
    g = Game("classic", 2)
    g.reset(np.random.default_rng(0))
    before = (g.roll, g.player, g.locked, g.rolls_left, g.legal_mask())
    with pytest.raises(ValueError, match=f"{named} must be from .* got {value}"):
        setattr(g, attr, value)
    assert (g.roll, g.player, g.locked, g.rolls_left) == before[:4] and np.array_equal(g.legal_mask(), before[4])


def test_sheets_out_of_range_are_refused_where_they_are_set():
    g = Game("classic", 2)
    g.reset(np.random.default_rng(0))
    with pytest.raises(ValueError, match="read-only"):
        g.sheets[1, 0] = 10**6
    with pytest.raises(ValueError, match=r"sheets\[1, 0\] \(ones\) must be -1 \(open\) or points the line can hold \(0, 1, 2, 3, 4, 5\), got 1000000"):
        g.sheets = [[OPEN] * 10, [10**6] + [OPEN] * 9]
    assert (g.sheets == OPEN).all()
    from generala_env.planning.model import Model

    m = Model("classic", 2)
    with pytest.raises(ValueError, match="roll must be from 0 to 251, got 100000000"):
        m.legal_mask(m.initial_state()._replace(roll=10**8, throw_keep=-1, starts_turn=False, rolls_left=2))


def test_a_cup_holds_at_least_a_throw():
    for block in (0, 4, 2.5, True):
        with pytest.raises(ValueError, match="block must be a whole number of faces, at least 5"):
            DiceCup(np.random.default_rng(0), block=block)
    assert DiceCup(np.random.default_rng(0), block=5).throw(5) == np.random.default_rng(0).integers(1, 7, size=5, dtype=np.int8).tolist()


def test_a_loaded_model_state_counts_its_writes():
    from generala_env.planning.model import Model

    g, rng = Game("classic", 2), np.random.default_rng(0)
    g.reset(rng)
    for _ in range(6):
        g.step(g.legal_actions()[-1], rng)
    m = Model("classic", 2)
    assert m.load(Game("classic", 2), m.state_of(g)).writes == g.writes == 6


def test_an_observation_that_does_not_fit_the_game_is_refused_and_changes_nothing():
    from generala_env.core.encoding import Encoder

    g = Game("classic", 2)
    cup = DiceCup(np.random.default_rng(1))
    g.reset(cup)
    two, one = Encoder(g.rules, 2), Encoder(g.rules, 1)
    before = (g.roll, g.rolls_left, g.sheets.copy(), cup.at.copy())
    for observe in (
        (*two.observe_tables, 2, np.empty(two.size, dtype=np.float32)),  # no seat 2
        (*two.observe_tables, -1, np.empty(two.size, dtype=np.float32)),
        (*two.observe_tables, 0, np.empty(3, dtype=np.float32)),  # too short
        (*one.observe_tables, 0, np.empty(one.size, dtype=np.float32)),  # another game's encoding
    ):
        with pytest.raises(ValueError, match="observe must be"):
            g.step(0, cup, observe)
        assert (g.roll, g.rolls_left) == before[:2] and np.array_equal(g.sheets, before[2]) and np.array_equal(cup.at, before[3])
    with pytest.raises(ValueError, match="seat must be a seat from 0 to 1"):
        two.encode(g, 5)
    with pytest.raises(ValueError, match="this encoder is for 1 player"):
        one.encode(g, 0)
    assert not two.observe_tables[0].flags.writeable and not two.tables.opponent_at.flags.writeable


def test_a_cup_tampered_with_is_refused_not_read():
    g = Game("classic")
    cup = DiceCup(np.random.default_rng(1))
    g.reset(cup)
    cup.at[0] = -(10**6)
    with pytest.raises(ValueError, match="not faces 1 to 6"):
        g.step(0, cup)
    cup.at[:] = 0, len(cup.faces)
    cup.faces = np.full(len(cup.faces), 7, dtype=np.int8)
    with pytest.raises(ValueError, match="not faces 1 to 6"):
        g.step(0, cup)
    small = DiceCup(np.random.default_rng(1))
    small.block = 2  # set after it was made (or a cup pickled with a small block)
    with pytest.raises(ValueError, match="block of 2 faces does not hold a throw of 5"):
        Game("classic").reset(small)


def test_numbers_set_by_hand_are_whole_numbers():
    g = Game("classic")
    g.reset(np.random.default_rng(0))
    with pytest.raises(TypeError, match="roll must be a whole number"):
        g.roll = 3.7
    with pytest.raises(TypeError, match="player must be a whole number"):
        g.player = "0"
    with pytest.raises(TypeError, match="sheets must hold whole numbers"):
        g.sheets = np.full((1, 10), 2.5)
    with pytest.raises(ValueError, match=r"sheets must have shape \(1, 10\)"):
        g.sheets = np.zeros((2, 10), dtype=int)
    with pytest.raises(ValueError, match=r"sheets\[0, 0\] \(ones\) must be -1"):
        g.sheets = np.full((1, 10), 2**32 + 5, dtype=np.int64)
    g.over = 2  # any non-zero is over
    from generala_env.core.info import make_info

    assert g.over and make_info(g, 0)["game_over"] is True
    _, _, mask, totals = g.numbers()
    assert not mask.flags.writeable and not totals.flags.writeable


def test_a_throw_keep_out_of_range_is_refused_where_it_is_set():
    g = Game("classic")
    g.reset(np.random.default_rng(0))
    g.decide(0)
    with pytest.raises(ValueError, match="throw_keep must be from -1 to 461, got 462"):
        g.throw_keep = 462
    g.land([1, 2, 3, 4, 5])
    assert g.throw_keep == -1
