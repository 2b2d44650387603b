"""Hardening: failing opponents, copies of the PettingZoo env, states set by hand, argument
and rule-value checks, and the solver's disk cache. Each test states one misuse and the
clear error (or the right game) it must give."""

from __future__ import annotations

import copy
import math
import os
import pickle
import warnings

import numpy as np
import pytest
from helpers import ScriptedDice, write

from generala_env import OPEN, Game
from generala_env.core.rules import MAX_VALUE, RulesError, load_rules
from generala_env.envs.env import GeneralaEnv
from generala_env.envs.vector import GeneralaVectorEnv


class Flaky:
    """An opponent that writes on its last open line, and raises once ``fail`` is set."""

    def __init__(self):
        self.fail = False
        self.calls = 0

    def __call__(self, obs, info):
        self.calls += 1
        if self.fail:
            raise ZeroDivisionError("the opponent's own bug")
        return int(np.flatnonzero(info["action_mask"])[-1])


# -- 1. a failing opponent ---------------------------------------------------------------------
def test_single_env_refuses_to_step_after_an_opponent_failed():
    opp = Flaky()
    env = GeneralaEnv(num_players=2, opponents=opp, agent_seat=0)
    env.reset(seed=0)
    opp.fail = True
    with pytest.raises(ZeroDivisionError):
        env.step(write(env.rules, "ones"))  # the agent writes, then the opponent fails
    sheets = env.game.sheets.copy()
    assert env.game.player == 1  # the opponent still has the move
    for _ in range(2):  # the refusal lasts until reset()
        with pytest.raises(RuntimeError, match=r"opponent in seat 1.*ZeroDivisionError.*reset\(\)"):
            env.step(write(env.rules, "twos"))
    assert np.array_equal(env.game.sheets, sheets)  # nothing written on the opponent's sheet
    opp.fail = False
    obs, info = env.reset(seed=1)
    assert info["player"] == 0
    _, _, _, _, info = env.step(write(env.rules, "twos"))
    assert not info["illegal_action"] and info["sheets"][1].tolist().count(OPEN) == 9


def test_single_env_refuses_to_step_after_an_opponent_failed_in_reset():
    opp = Flaky()
    opp.fail = True
    env = GeneralaEnv(num_players=3, opponents=opp, agent_seat=2)
    with pytest.raises(ZeroDivisionError):
        env.reset(seed=0)
    with pytest.raises(RuntimeError, match=r"opponent in seat 0.*reset\(\)"):
        env.step(write(env.rules, "ones"))
    assert (env.game.sheets == OPEN).all()


def test_single_env_refuses_to_step_after_an_opponent_played_an_illegal_action():
    moves = iter([32, 32])  # the second write on ones is illegal
    env = GeneralaEnv(num_players=2, opponents=lambda obs, info: next(moves), agent_seat=0)
    env.reset(seed=0)
    env.step(write(env.rules, "ones"))
    with pytest.raises(Exception, match="opponent in seat 1"):
        env.step(write(env.rules, "twos"))
    with pytest.raises(RuntimeError, match=r"seat 1.*reset\(\)"):
        env.step(write(env.rules, "threes"))


def test_vector_env_refuses_to_step_after_an_opponent_failed():
    opp = Flaky()
    venv = GeneralaVectorEnv(3, num_players=2, opponents=opp)
    venv.reset(seed=0)
    opp.fail = True
    with pytest.raises(ZeroDivisionError):
        venv.step(np.full(3, write(venv.rules, "ones")))
    sheets = venv.sheets.copy()
    for _ in range(2):
        with pytest.raises(RuntimeError, match=r"opponent.*ZeroDivisionError.*reset\(\)"):
            venv.step(np.full(3, write(venv.rules, "twos")))
    assert np.array_equal(venv.sheets, sheets)  # nothing written on the opponents' sheets
    opp.fail = False
    venv.reset(seed=1)
    _, _, _, _, info = venv.step(np.full(3, write(venv.rules, "twos")))
    assert not info["illegal_action"].any()
    assert (venv.sheets[:, 1] != OPEN).sum(axis=1).tolist() == [1, 1, 1]  # the opponents wrote once each


def test_vector_env_refuses_to_step_after_an_opponent_played_an_illegal_action():
    from generala_env import IllegalActionError

    venv = GeneralaVectorEnv(2, num_players=2, opponents=lambda obs, info: 31)
    venv.reset(seed=0)
    with pytest.raises(IllegalActionError, match="opponent in seat 1 of game 0"):
        venv.step(np.full(2, 32))
    with pytest.raises(RuntimeError, match=r"opponent in seat 1 of game 0 played illegal action 31.*reset\(\)"):
        venv.step(np.full(2, 33))


def test_vector_env_refuses_to_step_after_an_opponent_failed_in_reset():
    opp = Flaky()
    opp.fail = True
    venv = GeneralaVectorEnv(2, num_players=2, opponents=opp, agent_seat=1)
    with pytest.raises(ZeroDivisionError):
        venv.reset(seed=0)
    with pytest.raises(RuntimeError, match=r"opponent.*reset\(\)"):
        venv.step(np.full(2, 32))
    opp.fail = False
    venv.reset(seed=0)
    venv.step(np.full(2, 33))


# -- 2. copies of the PettingZoo env ----------------------------------------------------------
def pz_trace(e, rng):
    """Play ``e`` to the end with random legal actions; every agent, observation, reward and info."""
    out = []
    for agent in e.agent_iter():
        obs, reward, term, trunc, info = e.last()
        out.append((agent, obs["observation"].tobytes(), obs["action_mask"].tobytes(), reward, term, info["sheets"].tobytes(), info["dice"].tobytes()))
        e.step(None if term or trunc else int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    return out


def pz_snapshot(e):
    u = e.unwrapped
    return (
        u.agent_selection,
        dict(u.rewards),
        dict(u._cumulative_rewards),
        dict(u.terminations),
        u.game.sheets.tolist(),
        u.game.roll,
        u.game.rolls_left,
        u.game.player,
    )


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
@pytest.mark.parametrize("wrapped", [False, True])
def test_pettingzoo_copy_mid_game_is_the_same_game(how, wrapped):
    pytest.importorskip("pettingzoo")
    from generala_env.envs.multiagent import env, raw_env

    e = (env if wrapped else raw_env)(rules="double", num_players=3, reward="win")
    e.reset(seed=4)
    rng = np.random.default_rng(4)
    for _ in range(11):
        e.step(int(rng.choice(np.flatnonzero(e.observe(e.agent_selection)["action_mask"]))))
    c = copy.deepcopy(e) if how == "deepcopy" else pickle.loads(pickle.dumps(e))
    assert pz_snapshot(c) == pz_snapshot(e)
    assert c.unwrapped.game is not e.unwrapped.game
    state = rng.bit_generator.state
    a = pz_trace(e, rng)
    rng.bit_generator.state = state
    b = pz_trace(c, rng)
    assert a == b and len(a) > 3


def test_pettingzoo_pickle_of_a_fresh_env_still_works():
    pytest.importorskip("pettingzoo")
    from generala_env.envs.multiagent import raw_env

    clone = pickle.loads(pickle.dumps(raw_env(rules="sixty", num_players=4, reward="win")))
    assert clone.num_players == 4 and clone.reward_mode == "win" and clone.rules.name == "sixty"
    clone.reset(seed=0)
    clone.step(32)


# -- 3. states set by hand ---------------------------------------------------------------------
def _written(g: Game, where, value) -> None:
    """``g.sheets[where] = value`` through the sheets' setter (the sheets are read-only in place)."""
    sheets = g.sheets.copy()
    sheets[where] = value
    g.sheets = sheets


def test_a_hand_written_sheet_still_ends_the_game():
    g = Game("classic")
    g.reset(np.random.default_rng(0))
    _written(g, (0, slice(0, 9)), 0)
    g.step(32 + 9, np.random.default_rng(1))  # the last open line
    assert g.over and g.winners() == (0,) and not g.legal_mask().any()


def test_a_hand_filled_sheet_is_a_finished_game():
    g = Game("classic", 2)
    g.reset(np.random.default_rng(0))
    _written(g, slice(None), 0)
    assert g.winners() == (0, 1)
    assert not g.legal_mask().any()
    assert g.over and g.why_illegal(0) == "the game is over"


def test_apply_after_a_hand_written_sheet_needs_no_next_roll_for_the_last_write():
    g = Game("classic")
    g.reset(ScriptedDice("12345"))
    _written(g, (0, slice(0, 9)), 0)
    g.apply(32 + 9, [])
    assert g.over


def test_set_state_recomputes_what_the_game_derives():
    g = Game("classic", 2)
    lines = g.rules.lines
    sheets = np.full((2, 10), OPEN)
    sheets[0, lines.index("fours")] = 12
    sheets[0, lines.index("straight")] = 25  # served
    sheets[1, lines.index("generala")] = 50
    g.set_state(sheets=sheets, dice=[6, 2, 2, 2, 2], rolls_left=1, player=1, locked=[2, 2])
    assert g.totals().tolist() == [37, 50] and g.filled_lines.tolist() == [2, 1]
    assert g.turn == 1 and g.player == 1 and list(g.dice) == [2, 2, 2, 2, 6] and not g.over
    assert g.legal_mask()[32 + lines.index("generala")] == 0  # filled
    assert g.legal_mask()[32 + lines.index("ones")] == 1
    g.step(32 + lines.index("twos"), ScriptedDice("55555"))
    assert g.sheets[1, lines.index("twos")] == 8 and g.player == 0 and g.writes == 4
    assert g.served_generala_pending()  # five alike on the first roll, generala open, two players


def test_set_state_can_end_the_game():
    g = Game("classic", 2)
    g.set_state(sheets=np.zeros((2, 10), dtype=int), player=1)
    assert g.over and g.winners() == (0, 1) and g.legal_actions() == []
    h = Game("classic", 2)
    gen = h.rules.lines.index("generala")
    sheets = np.full((2, 10), OPEN)
    sheets[0, :2] = 0
    sheets[1, :1] = 0
    sheets[1, gen] = 50
    h.set_state(sheets=sheets, dice=[3] * 5, rolls_left=2, player=1, served_generala_winner=1)
    assert h.over and h.winners() == (1,)


def test_read_only_views():
    g = Game("classic", 2)
    g.reset(np.random.default_rng(0))
    ones = [int(f) for f in g.dice].count(1)  # seat 0 writes these dice on its ones line
    g.step(write(g, "ones"), np.random.default_rng(0))
    for view in (g.filled_lines, g.totals_view, g.legal_view, g.legal_int8_view):
        assert not view.flags.writeable
        with pytest.raises(ValueError):
            view[0] = 1
    assert g.filled_lines.tolist() == [1, 0]
    assert g.totals_view.tolist() == [ones, 0] == g.totals().tolist()
    assert np.array_equal(g.legal_view, g.legal_mask()) and np.array_equal(g.legal_int8_view, g.legal_mask().astype(np.int8))


def test_views_in_one_call_are_the_views():
    g = Game("double", 2)
    g.reset(np.random.default_rng(0))
    g.step(32, np.random.default_rng(0))
    legal, totals, filled, pending = g.views()
    assert legal is g.legal_int8_view and totals is g.totals_view
    assert filled == tuple(g.filled_lines.tolist()) == (1, 0) and all(type(n) is int for n in filled)
    assert filled[g.player] == g.turn
    assert pending is g.served_generala_pending() is False


def test_views_follow_sheets_written_by_hand_and_back():
    """The facts views() hands over are those of the sheets as they are now, even after the
    sheets were written by hand, their facts read, and written back."""
    g = Game("classic", 2)
    g.reset(np.random.default_rng(0))
    before = g.views()
    _written(g, (0, 0), 3)
    assert g.turn == 1 and g.totals_view.tolist() == [3, 0]  # the facts follow
    _written(g, (0, 0), OPEN)
    legal, totals, filled, _ = g.views()
    assert totals.tolist() == [0, 0] and filled == (0, 0) and g.turn == 0
    assert np.array_equal(legal, before[0])


def test_views_say_a_served_generala_is_pending():
    g = Game("classic", 2)
    g.set_state(dice=[4, 4, 4, 4, 4], rolls_left=2)
    assert g.views()[3] is True and g.served_generala_pending()
    g.set_state(dice=[4, 4, 4, 4, 3], rolls_left=2)
    assert g.views()[3] is False


SHEET = np.full((1, 10), OPEN)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"sheets": np.full((2, 10), OPEN)}, ValueError, r"sheets must have shape \(1, 10\)"),
        ({"sheets": np.full((1, 10), 0.5)}, TypeError, r"sheets must hold whole numbers"),
        ({"sheets": np.where(np.arange(10) == 0, 7, OPEN)[None]}, ValueError, r"sheets\[0, 0\] \(ones\).* 7"),
        ({"sheets": np.where(np.arange(10) == 6, 21, OPEN)[None]}, ValueError, r"straight.*0, 20, 25.*21"),
        ({"sheets": np.where(np.arange(10) == 1, -5, OPEN)[None]}, ValueError, r"twos"),
        ({"dice": [1, 2, 3]}, ValueError, r"dice must be five faces"),
        ({"dice": [1, 2, 3, 4, 7]}, ValueError, r"dice must be five faces from 1 to 6"),
        ({"dice": [1, 2, 3, 4, 5.5]}, TypeError, r"dice must be whole numbers"),
        ({"rolls_left": 3}, ValueError, r"rolls_left must be 0, 1 or 2, got 3"),
        ({"rolls_left": True}, TypeError, r"rolls_left must be a whole number"),
        ({"player": 1}, ValueError, r"player must be a seat from 0 to 0, got 1"),
        ({"dice": [1, 2, 3, 4, 5], "rolls_left": 1, "locked": [6]}, ValueError, r"locked.*\[6\].*not among the dice"),
        ({"dice": [1, 2, 3, 4, 5], "rolls_left": 2, "locked": [1]}, ValueError, r"locked.*first roll"),
        ({"dice": [1, 1, 1, 1, 1], "rolls_left": 1, "locked": [1] * 5}, ValueError, r"locked.*at most 4"),
        ({"served_generala_winner": 0}, ValueError, r"served_generala_winner.*two or more players"),
        ({"sheets": [[OPEN] * 9]}, ValueError, r"sheets must have shape"),
    ],
)
def test_set_state_refuses_bad_values(kwargs, error, message):
    g = Game("classic")
    g.reset(np.random.default_rng(0))
    before = (g.sheets.tolist(), g.roll, g.rolls_left, g.player, g.locked, g.over)
    with pytest.raises(error, match=message):
        g.set_state(**kwargs)
    assert (g.sheets.tolist(), g.roll, g.rolls_left, g.player, g.locked, g.over) == before  # nothing changed


def test_set_state_checks_the_sheets_against_each_other():
    g = Game("double", 2)
    lines = g.rules.lines
    sheets = np.full((2, 11), OPEN)
    sheets[0, lines.index("double_generala")] = 100
    with pytest.raises(ValueError, match=r"double_generala.*generala line"):
        g.set_state(sheets=sheets, player=1)
    sheets = np.full((2, 11), OPEN)
    sheets[1, :3] = 0
    with pytest.raises(ValueError, match=r"seat order.*\[0, 3\]"):
        g.set_state(sheets=sheets, player=0)
    sheets = np.full((2, 11), OPEN)
    sheets[0, 0] = 3
    g.set_state(sheets=sheets, player=1)  # seat 0 has played its turn: fine
    assert g.turn == 0 and g.player == 1


# -- 4. env arguments and calls ------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_players": 2, "agent_seat": True}, r"agent_seat must be 'random' or a seat from 0 to 1, got True"),
        ({"num_players": 2, "agent_seat": np.bool_(False)}, r"agent_seat"),
        ({"illegal_penalty": math.nan}, r"illegal_penalty must be a finite number, got nan"),
        ({"illegal_penalty": -math.inf}, r"illegal_penalty must be a finite number, got -inf"),
        ({"illegal_penalty": "low"}, r"illegal_penalty must be a finite number, got 'low'"),
    ],
)
@pytest.mark.parametrize("make", [GeneralaEnv, lambda **kw: GeneralaVectorEnv(2, **kw)], ids=["single", "vector"])
def test_env_arguments_are_refused(make, kwargs, message):
    with pytest.raises(ValueError, match=message):
        make(**kwargs)


def test_env_arguments_still_accepted():
    env = GeneralaEnv(num_players=2, opponents="random", agent_seat=np.int64(1), illegal_penalty=np.float32(-2))
    assert env.seat == 1 and env.illegal_penalty == -2.0
    assert GeneralaVectorEnv(2, illegal_penalty=0).illegal_penalty == 0.0


def test_pettingzoo_illegal_reward_must_be_finite():
    pytest.importorskip("pettingzoo")
    from generala_env.envs.multiagent import env

    with pytest.raises(ValueError, match="illegal_reward must be a finite number"):
        env(illegal_reward=math.nan)


def test_step_and_render_before_reset_say_so():
    env = GeneralaEnv(render_mode="ansi")
    with pytest.raises(RuntimeError, match=r"reset\(\) has not been called yet"):
        env.step(32)
    with pytest.raises(RuntimeError, match=r"reset\(\) has not been called yet"):
        env.render()
    env.reset(seed=0)
    assert "Game over" not in env.render()
    venv = GeneralaVectorEnv(2, render_mode="ansi")
    with pytest.raises(RuntimeError, match=r"reset\(\) has not been called yet"):
        venv.step(np.full(2, 32))
    with pytest.raises(RuntimeError, match=r"reset\(\) has not been called yet"):
        venv.render()


def test_pettingzoo_step_and_render_before_reset_say_so():
    pytest.importorskip("pettingzoo")
    from generala_env.envs.multiagent import raw_env

    e = raw_env(render_mode="ansi")
    with pytest.raises(RuntimeError, match=r"reset\(\) has not been called yet"):
        e.step(32)
    with pytest.raises(RuntimeError, match=r"reset\(\) has not been called yet"):
        e.render()


@pytest.mark.parametrize("wrapped", [False, True])
def test_pettingzoo_takes_numpy_actions_as_the_single_env_does(wrapped):
    pytest.importorskip("pettingzoo")
    from generala_env.envs.multiagent import env, raw_env

    make = env if wrapped else raw_env
    plain, arr, i64 = make(num_players=2), make(num_players=2), make(num_players=2)
    for e in (plain, arr, i64):
        e.reset(seed=2)
    for act in (3, 33, 0, 40):
        plain.step(act)
        arr.step(np.array(act))
        i64.step(np.int64(act))
        assert pz_snapshot(plain) == pz_snapshot(arr) == pz_snapshot(i64)
    from generala_env import NotAnActionError

    with pytest.raises(NotAnActionError, match=r"an action is an integer from 0 to 41, got np.float64\(33.0\)"):
        arr.step(np.array(33.0))


# -- 5. rule values ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "spec, key",
    [
        ({"values": {"generala": 10**18}}, "values.generala"),
        ({"values": {"generala": 10**7}}, "values.generala"),
        ({"values": {"straight": MAX_VALUE + 1}}, "values.straight"),
        ({"served_bonus": 10**9}, "served_bonus"),
        ({"served_generala": "points", "served_generala_points": 10**18}, "served_generala_points"),
    ],
)
def test_rule_values_are_bounded(spec, key):
    with pytest.raises(RulesError, match=rf"{key} must be at most {MAX_VALUE}"):
        load_rules(spec)


def test_the_largest_values_make_a_small_env():
    rules = load_rules(
        {
            "base": "double",
            "values": dict.fromkeys(["straight", "full_house", "four_of_a_kind", "generala", "double_generala"], MAX_VALUE),
            "served_bonus": MAX_VALUE,
        }
    )
    env = GeneralaEnv(rules=rules)
    assert env.encoder.points_obs.nbytes < 2_000_000
    obs, _ = env.reset(seed=0)
    assert np.isfinite(obs).all() and np.abs(obs).max() <= 1


def test_numpy_whole_numbers_and_booleans_are_rule_values():
    a = load_rules({"values": {"straight": np.int64(20)}, "served_bonus": np.int32(5), "straight_wraps": np.bool_(False)})
    b = load_rules({"values": {"straight": 20}, "served_bonus": 5, "straight_wraps": False})
    assert a == b and a.fingerprint() == b.fingerprint() and type(a.value("straight")) is int
    assert type(a.straight_wraps) is bool
    with pytest.raises(RulesError, match=r"values\.straight must be a whole number"):
        load_rules({"values": {"straight": np.float64(20)}})
    with pytest.raises(RulesError, match=r"served_bonus must be a whole number"):
        load_rules({"served_bonus": np.bool_(True)})


# -- 6. the solver's disk cache ------------------------------------------------------------------
def test_an_empty_cache_variable_means_the_default_folder(tmp_path, monkeypatch):
    from generala_agents.solver import cache_dir, load_or_solve

    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GENERALA_CACHE", "")
    monkeypatch.chdir(work)
    assert cache_dir() == home / ".cache" / "generala"
    assert load_or_solve({"lines": ["ones", "generala"]})[1] == "solved"
    assert os.listdir(work) == []
    assert len(list((home / ".cache" / "generala").glob("solve-*.npz"))) == 1


def test_a_cache_that_cannot_be_written_warns_and_leaves_no_temp_file(tmp_path, monkeypatch):
    from generala_agents.solver import cache_path, load_or_solve

    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path))
    rules = load_rules({"lines": ["twos", "generala"]})
    cache_path(rules).mkdir()  # the file the cache wants to write is a directory
    with pytest.warns(RuntimeWarning, match="solver cache"):
        s, src = load_or_solve(rules)
    assert src == "solved" and s.expected_score > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [cache_path(rules).name]
    assert list(cache_path(rules).iterdir()) == []


def test_a_cache_folder_that_cannot_be_made_warns(tmp_path, monkeypatch):
    from generala_agents.solver import load_or_solve

    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("GENERALA_CACHE", str(blocker / "cache"))
    with pytest.warns(RuntimeWarning, match="cache folder .* is not used"):
        assert load_or_solve({"lines": ["threes", "generala"]})[1] == "solved"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_or_solve({"lines": ["threes", "generala"]}, use_cache=False)[1] == "solved"
