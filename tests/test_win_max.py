"""win-max: the distributions of the points still to come, the end-game choices known by hand,
legal play at every table size, and the cache of its tables."""

import json
from math import comb

import numpy as np
import pytest

import generala_agents as agents
from generala_agents.distributions import remaining_points
from generala_agents.solver import Solver, checksum, load_or_solve
from generala_agents.win_max import TABLE_VERSION, WinMaxAgent, load_or_build, table_path, valid_sheets
from generala_env.core.dice import NUM_MASKS
from generala_env.core.game import OPEN
from generala_env.core.rules import load_rules
from generala_env.files.cache import CacheWarning
from generala_training.harness import game_seed, play_game

SMALL = {"lines": ["ones", "sixes", "straight", "generala", "double_generala"], "values": {"double_generala": 100}}
P_FACE = 1 - (5 / 6) ** 3  # a die shows a given face within three rolls, keeping that face


@pytest.mark.parametrize("rules", ["classic", SMALL, {**SMALL, "locked_holds": True}, {**SMALL, "served_generala": "points", "served_generala_points": 80}])
def test_distributions_add_up_to_one_and_their_means_are_the_solvers_values(rules):
    solver = Solver(rules).solve()
    ok = valid_sheets(solver)
    table = remaining_points(solver, served_wins=False)
    assert np.abs(table.dist.sum(axis=1) - 1)[ok].max() < 1e-12 and table.dist.min() >= 0
    assert np.abs(table.means() - solver.V)[ok].max() < 1e-6
    # with a served generala that wins, those games are kept apart: the two still add up to 1
    won = remaining_points(solver, served_wins=True)
    assert np.abs(won.dist.sum(axis=1) + won.served - 1)[ok].max() < 1e-12
    assert 0 < won.served[0] < 0.05


def test_one_number_line_left_is_a_binomial_count_of_that_face():
    # only "sixes" open: keep every six for three rolls, so the count of sixes is Binomial(5, 91/216)
    solver = Solver(SMALL).solve()
    table = remaining_points(solver, served_wins=True)
    six = load_rules(SMALL).line_index("sixes")
    mask = ((1 << solver.L) - 1) & ~(1 << six)
    dist = table.dist[solver.state(mask, True)]
    expected = np.zeros(table.bins)
    for k in range(6):
        expected[6 * k] = comb(5, k) * P_FACE**k * (1 - P_FACE) ** (5 - k)
    assert np.allclose(dist, expected, atol=1e-12)
    assert table.served[solver.state(mask, True)] == 0.0  # the generala line is filled


def end_game(behind: int):
    """Seat 1's third roll with ``ones`` and ``sixes`` open, dice 6 6 1 2 3; seat 0 has finished
    ``behind`` points ahead of it."""
    rules = load_rules("classic")
    ones, sixes = rules.line_index("ones"), rules.line_index("sixes")
    mine = np.array([0, 4, 9, 12, 15, 0, 20, 30, 0, 0])  # 90 points
    mine[[ones, sixes]] = OPEN
    theirs = np.array({18: [2, 6, 9, 12, 5, 24, 20, 30, 0, 0], 11: [1, 6, 9, 12, 5, 18, 20, 30, 0, 0]}[behind])  # 108 or 101
    mask = np.zeros(NUM_MASKS + rules.num_lines, dtype=np.int8)
    mask[[NUM_MASKS + ones, NUM_MASKS + sixes]] = 1
    info = {
        "action_mask": mask,
        "dice": np.array([1, 2, 3, 6, 6]),
        "rolls_left": 0,
        "locked": np.zeros(6, dtype=np.int64),
        "sheets": np.stack([theirs, mine]),
        "seat": 1,
    }
    return info, NUM_MASKS + ones, NUM_MASKS + sixes


@pytest.mark.parametrize("lookahead", [1, 2])
def test_it_takes_the_risky_line_when_behind_and_the_safe_one_when_a_lead_is_in_reach(lookahead):
    # writing sixes (12 now, then the last turn on ones: 0-5 more) against ones (1 now, then
    # sixes: 6 a six). 18 behind: 12 + 5 never gets there, 1 + 6k does for 3+ sixes. 11 behind:
    # 12 now wins whatever comes, 1 + 6k needs 2+ sixes. The score-maximiser writes sixes both times.
    me, optimal = agents.load("win-max", rules="classic", lookahead=lookahead), agents.load("optimal", rules="classic")
    for behind, wanted in ((18, "ones"), (11, "sixes")):
        info, ones, sixes = end_game(behind)
        assert optimal.act(None, info) == sixes
        assert me.act(None, info) == (ones if wanted == "ones" else sixes), behind
    info, ones, sixes = end_game(18)
    values = me.action_values(info)
    at_least = sum(comb(5, k) * P_FACE**k * (1 - P_FACE) ** (5 - k) for k in range(3, 6))
    assert values[ones] == pytest.approx(at_least, abs=1e-6) and values[sixes] == pytest.approx(0.0, abs=1e-6)
    info, ones, sixes = end_game(11)
    assert me.action_values(info)[sixes] == pytest.approx(1.0, abs=1e-6)
    assert me.action_values(info)[ones] == pytest.approx(1 - (1 - P_FACE) ** 5 - 5 * P_FACE * (1 - P_FACE) ** 4, abs=1e-6)


@pytest.mark.parametrize("players", [2, 3, 4, 5, 6])
def test_it_plays_legal_moves_at_every_table_size(players):
    me, other = WinMaxAgent(SMALL), agents.load("rules-of-thumb", rules=SMALL)
    seats = [me if i % 2 == 0 else other for i in range(players)]
    for seed in range(3):  # play_game raises on an illegal move
        rec = play_game(seats, SMALL, game_seed(players, seed))
        assert rec.winners and ((rec.sheets != OPEN).all() or rec.served_generala_win)


def test_it_plays_legal_moves_under_locked_holds_and_alone():
    rules = {**SMALL, "locked_holds": True}
    me = WinMaxAgent(rules)
    rec = play_game([me, agents.load("optimal", rules=rules), me], rules, 5)
    assert rec.winners and ((rec.sheets != OPEN).all() or rec.served_generala_win)
    alone = play_game([me], rules, 5)  # alone it plays the score-maximiser's moves
    assert alone.totals[0] == play_game([agents.load("optimal", rules=rules)], rules, 5).totals[0]
    with pytest.raises(agents.AgentError, match="lookahead must be 1 or 2"):
        WinMaxAgent(rules, lookahead=3)


def test_it_is_registered_for_tables_of_two_to_six():
    from generala_env.envs import opponents

    assert "win-max" in agents.names()
    why = opponents.cannot_play("win-max", load_rules("classic"), 1)
    assert why is not None and "2 to 6" in why
    assert all(opponents.cannot_play("win-max", load_rules("classic"), n) is None for n in range(2, 7))


def test_its_table_is_cached_and_a_forged_one_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path))
    rules = load_rules(SMALL)
    solver = load_or_solve(rules)[0]
    first, src1 = load_or_build(rules, True, solver=solver)
    again, src2 = load_or_build(rules, True, solver=solver)
    assert (src1, src2) == ("built", "cache") and all(np.array_equal(a.dist, b.dist) for a, b in zip(first, again, strict=True))
    path = table_path(rules, True)
    with np.load(path) as z:
        dist, served, utility, meta = z["V"].copy(), z["served"].copy(), z["utility"].copy(), json.loads(str(z["meta"]))
    original = dist.copy()
    # move probability within the start sheet's row keeping its sum and its mean, with checksums to match
    a = int(np.argmax(dist[0, 0]))
    dist[0, 0, a - 1 : a + 2] += np.array([0.01, -0.02, 0.01])
    meta["checksum"] = checksum(dist)
    np.savez(path, V=dist, served=served, utility=utility, meta=np.array(json.dumps(meta)))
    with pytest.warns(CacheWarning, match="do not follow from one another"):
        rebuilt, src3 = load_or_build(rules, True, solver=solver)
    assert src3 == "built" and np.allclose(rebuilt[0].dist, original[0])
    # another version's file is not read either
    meta["solver_version"], meta["checksum"] = TABLE_VERSION + 1, checksum(original)
    np.savez(path, V=original, served=served, utility=utility, meta=np.array(json.dumps(meta)))
    with pytest.warns(CacheWarning, match="solver version"):
        assert load_or_build(rules, True, solver=solver)[1] == "built"
    assert load_or_build(rules, True, solver=solver)[1] == "cache"
