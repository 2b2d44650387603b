"""The Generala-v0 environment: API checkers, seeding, pickling, rewards, info and observation."""

from __future__ import annotations

import pickle
import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env
from helpers import QUICK, ScriptedDice, write
from hypothesis import given
from hypothesis import strategies as st

import generala_env
from generala_env import OPEN, IllegalActionError, NotAnActionError, load_rules, observation_layout, observation_size
from generala_env.core.scoring import line_max, line_points
from generala_env.envs.env import GeneralaEnv, opponent_moves
from generala_env.rendering.render import render_text

PRESETS = ["classic", "double", "sixty"]


def first_legal(obs, info):
    """An opponent: the first legal action (reroll everything while it may)."""
    return int(np.flatnonzero(info["action_mask"])[0])


def last_legal(obs, info):
    """An opponent: the last legal action (writes on the last open line at once)."""
    return int(np.flatnonzero(info["action_mask"])[-1])


def scripted_env(dice, **kwargs) -> GeneralaEnv:
    """An env reset onto dice given in advance (the env draws them from its generator)."""
    env = GeneralaEnv(**kwargs)
    env.np_random = ScriptedDice(dice)
    return env


def random_legal(env, rng):
    return int(rng.choice(np.flatnonzero(env.unwrapped.action_masks())))


# -- the API checkers -------------------------------------------------------------------
@pytest.mark.parametrize("players", [1, 2])
@pytest.mark.parametrize("rules", PRESETS)
def test_gymnasium_check_env(rules, players):
    # made through gym.make so the checker can also try the other render modes; no
    # warning is expected, so every warning is an error
    env = gym.make("Generala-v0", rules=rules, num_players=players, render_mode="ansi")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gym_check_env(env.unwrapped)


@pytest.mark.parametrize("players", [1, 2])
@pytest.mark.parametrize("rules", PRESETS)
def test_sb3_check_env(rules, players):
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.env_checker import check_env

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(GeneralaEnv(rules=rules, num_players=players), warn=True)


def test_make_from_a_bare_gymnasium_import():
    code = (
        "import gymnasium as gym, sys\n"
        "assert 'generala_env' not in sys.modules\n"
        "env = gym.make('generala_env:Generala-v0', rules='double', num_players=2)\n"
        "obs, info = env.reset(seed=0)\n"
        "print(env.action_space.n, obs.shape[0], env.spec.id)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    n = observation_size(load_rules("double"), 2)
    assert out.stdout.split() == ["43", str(n), "Generala-v0"]


def test_make_after_import_and_the_spaces():
    env = gym.make("Generala-v0")
    assert env.spec.id == generala_env.ENV_ID == "Generala-v0"
    assert env.action_space == gym.spaces.Discrete(42)
    assert env.observation_space.shape == (observation_size(load_rules("classic"), 1),)
    assert env.observation_space.dtype == np.float32
    env3 = gym.make("Generala-v0", rules="double", num_players=3, opponents="random")
    assert env3.action_space.n == 43
    assert env3.observation_space.shape == (observation_size(load_rules("double"), 3),)


def test_maskable_ppo_finds_the_masks_through_a_vec_env():
    pytest.importorskip("sb3_contrib")
    from sb3_contrib.common.maskable.utils import get_action_masks
    from stable_baselines3.common.env_util import make_vec_env

    # make_vec_env asks for render_mode="rgb_array" unless told otherwise; None is fine too
    vec = make_vec_env("Generala-v0", n_envs=2, seed=0, env_kwargs={"rules": "double", "render_mode": None})
    vec.reset()
    masks = get_action_masks(vec)
    assert masks.shape == (2, 43) and masks.dtype == bool
    assert masks[:, 32:].all() and not masks[:, 31].any()


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"reward": "points"}, "reward must be one of"),
        ({"num_players": 2, "agent_seat": 2}, "agent_seat"),
        ({"illegal_action": "ignore"}, "illegal_action"),
        ({"opponents": "random"}, "num_players is 1"),
        ({"num_players": 3, "opponents": ["random"]}, "2 opponent"),
        ({"num_players": 2, "opponents": 5}, "an opponent must be"),
        ({"num_players": 7}, "num_players"),
        ({"rules": {"bonus": 1}}, "unknown rule key"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        GeneralaEnv(**kwargs)


# -- seeding and pickling -------------------------------------------------------------
def assert_same_step(a, b):
    for x, y in zip(a[:4], b[:4], strict=True):
        assert np.array_equal(x, y)
        assert type(x) is type(y)
    ia, ib = a[-1], b[-1]
    assert ia.keys() == ib.keys()
    for k in ia:
        assert np.array_equal(ia[k], ib[k]), k
        assert type(ia[k]) is type(ib[k]), k
        if isinstance(ia[k], np.ndarray):
            assert ia[k].dtype == ib[k].dtype, k


def play_both_to_the_end(a, b, rng):
    """Step two envs with the same random legal actions to the episode's end; every step must agree."""
    done = False
    while not done:
        act = random_legal(a, rng)
        sa, sb = a.step(act), b.step(act)
        assert_same_step(sa, sb)
        done = sa[2]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"rules": "classic"},
        {"rules": "double", "num_players": 3, "opponents": "random", "agent_seat": "random", "reward": "win"},
        {"rules": {"base": "sixty", "locked_holds": True}, "num_players": 2, "opponents": "greedy"},
    ],
)
def test_same_seed_same_actions_same_everything(kwargs):
    a, b = gym.make("Generala-v0", **kwargs), gym.make("Generala-v0", **kwargs)
    rng = np.random.default_rng(0)
    for episode in range(2):
        seed = 11 if episode == 0 else None  # the second episode goes on from the seeded generator
        ra, rb = a.reset(seed=seed), b.reset(seed=seed)
        assert_same_step((ra[0], 0.0, False, False, ra[1]), (rb[0], 0.0, False, False, rb[1]))
        play_both_to_the_end(a, b, rng)
    other = gym.make("Generala-v0", **kwargs)
    dice = [np.array(other.reset(seed=s)[1]["dice"]) for s in range(11, 16)]
    assert any(not np.array_equal(d, dice[0]) for d in dice)  # the seed matters at all


def test_reset_with_the_same_seed_replays():
    env = GeneralaEnv(rules="double", num_players=2, opponents="random")
    first = env.reset(seed=5)
    env.step(int(np.flatnonzero(env.action_masks())[-1]))
    again = env.reset(seed=5)
    assert_same_step((first[0], 0, False, False, first[1]), (again[0], 0, False, False, again[1]))


def test_reseeding_replays_whole_episodes_whatever_dice_were_left_over():
    """The env draws its dice in blocks; a new seed must start from a fresh block."""
    env = GeneralaEnv(rules="classic", num_players=2, opponents="random", agent_seat="random")

    def episode(seed):
        rng = np.random.default_rng(0)
        obs, info = env.reset(seed=seed)
        out = [obs, info["dice"]]
        done = False
        while not done:
            obs, r, done, _, info = env.step(random_legal(env, rng))
            out += [obs, r]
        return out

    first = episode(21)
    for _ in range(3):  # leave the cup part-way through a block
        env.reset()
        env.step(random_legal(env, np.random.default_rng(1)))
    again = episode(21)
    assert len(first) == len(again) and all(np.array_equal(x, y) for x, y in zip(first, again, strict=True))


@pytest.mark.parametrize("make", [GeneralaEnv, lambda **kw: gym.make("Generala-v0", **kw)])
def test_env_pickles_mid_game_and_goes_on_identically(make):
    env = make(rules="double", num_players=2, opponents="random", reward="win")
    env.reset(seed=3)
    rng = np.random.default_rng(3)
    for _ in range(7):
        env.step(random_legal(env, rng))
    copy = pickle.loads(pickle.dumps(env))
    assert np.array_equal(copy.unwrapped.game.sheets, env.unwrapped.game.sheets)
    play_both_to_the_end(env, copy, rng)


# -- illegal actions --------------------------------------------------------------------
def snapshot(env):
    g = env.unwrapped.game
    return (g.sheets.tolist(), g.roll, g.rolls_left, g.player, g.locked, g.over, g.writes)


def test_illegal_action_changes_nothing_and_is_penalized():
    env = GeneralaEnv(rules="classic", num_players=2, opponents="greedy", illegal_penalty=-0.5)
    obs, info = env.reset(seed=0)
    env.step(write(env.rules, "ones"))  # ones is now filled
    obs, _, _, _, info = env.step(0)  # reroll all: one roll left
    for bad in (31, write(env.rules, "ones"), 99, -1):
        before = snapshot(env)
        obs2, reward, terminated, truncated, info2 = env.step(bad)
        assert snapshot(env) == before
        assert np.array_equal(obs2, obs)
        assert reward == -0.5 and not terminated and not truncated
        assert info2["illegal_action"] is True and env.illegal_reason() != ""  # the reason in words, out of the info
        assert opponent_moves(info2) == []
        for k in info:
            if k not in ("illegal_action", "opponent_moves"):
                assert np.array_equal(info[k], info2[k]), k
    env.step(0)  # the third roll
    _, reward, _, _, info3 = env.step(5)  # no rolls left: holding is illegal
    assert reward == -0.5 and info3["illegal_action"] and "no rolls left" in env.illegal_reason()
    _, reward, _, _, info4 = env.step(write(env.rules, "twos"))
    assert info4["illegal_action"] is False and env.illegal_reason() == ""
    assert "illegal_reason" not in info4  # numbers and arrays only


def test_default_penalty_is_minus_one():
    env = GeneralaEnv()
    env.reset(seed=0)
    _, reward, _, _, info = env.step(31)
    assert reward == -1.0 and info["illegal_action"]


def test_illegal_action_can_raise():
    env = GeneralaEnv(illegal_action="raise")
    env.reset(seed=0)
    before = snapshot(env)
    with pytest.raises(IllegalActionError, match="holding all five"):
        env.step(31)
    with pytest.raises(IllegalActionError, match="out of range"):
        env.step(42)
    assert snapshot(env) == before
    env.step(32)


def test_numpy_actions_are_taken():
    """What SB3's ``predict`` returns for one observation is a 0-d integer array."""
    a, b = GeneralaEnv(), GeneralaEnv()
    a.reset(seed=4)
    b.reset(seed=4)
    for act in (3, 40):
        sa = a.step(act)
        sb = b.step(np.array(act))
        assert not sb[-1]["illegal_action"]
        assert_same_step(sa, sb)
    _, _, _, _, info = b.step(np.int64(33))
    assert not info["illegal_action"]
    with pytest.raises(NotAnActionError, match=r"^an action is an integer from 0 to 41, got np.float64\(33.0\)$"):
        b.step(np.array(33.0))  # a float is no action: refused, the game as it was
    _, _, _, _, info = b.step(np.int64(33))
    assert info["illegal_action"] and "already filled" in b.illegal_reason()


def test_opponent_playing_an_illegal_action_is_an_error():
    env = GeneralaEnv(num_players=2, opponents=lambda obs, info: 31, agent_seat=1)
    with pytest.raises(IllegalActionError, match="opponent in seat 0"):
        env.reset(seed=0)


def test_step_after_the_end_needs_a_reset():
    env = GeneralaEnv(rules={"lines": ["ones"]})
    env.reset(seed=0)
    _, _, terminated, _, info = env.step(32)
    assert terminated and info["winners"].tolist() == [True]
    with pytest.raises(RuntimeError, match="reset"):
        env.step(32)


# -- scripted episodes: rewards and info --------------------------------------------------
def test_score_reward_is_the_points_written():
    env = scripted_env("53535" + "12346" + "6" + "22222", rules="classic")
    obs, info = env.reset()
    assert list(info["dice"]) == [3, 3, 5, 5, 5] and info["rolls_left"] == 2
    _, r, done, _, info = env.step(write(env.rules, "full_house"))
    assert (r, done) == (35.0, False)
    assert info["sheets"][0, env.rules.line_index("full_house")] == 35 and list(info["totals"]) == [35]
    assert list(info["dice"]) == [1, 2, 3, 4, 6] and info["turn"] == 1
    _, r, _, _, info = env.step(0b01111)  # keep 1-2-3-4, reroll the 6 into a 6
    assert r == 0.0 and list(info["dice"]) == [1, 2, 3, 4, 6] and info["rolls_left"] == 1
    assert info["locked"].tolist() == [1, 1, 1, 1, 0, 0]  # one each of 1, 2, 3, 4
    _, r, _, _, info = env.step(write(env.rules, "straight"))
    assert r == 0.0  # crossed out
    assert info["sheets"][0, env.rules.line_index("straight")] == 0


@pytest.mark.parametrize("reward,expected", [("win", 1.0), ("score", 50.0)])
def test_agent_served_generala_wins_the_episode(reward, expected):
    env = scripted_env("44444" + "12345", num_players=2, opponents=last_legal, reward=reward)
    obs, info = env.reset()
    assert info["served_generala_pending"]
    assert np.flatnonzero(info["action_mask"]).tolist() == [write(env.rules, "generala")]
    assert np.array_equal(env.action_masks(), info["action_mask"].astype(bool))
    assert obs[env.layout["served_generala"]][0] == 1.0
    _, r, terminated, truncated, info = env.step(write(env.rules, "generala"))
    assert (r, terminated, truncated) == (expected, True, False)
    assert info["winner"] == 0 and info["winners"].tolist() == [True, False] and info["served_generala_win"] is True
    assert info["action_mask"].all() and env.action_masks().all()  # the game is over: no action is applied


@pytest.mark.parametrize("reward,expected", [("win", -1.0), ("score", 0.0)])
def test_opponent_served_generala_before_the_agent_moves(reward, expected):
    env = scripted_env("66666" + "12345", num_players=2, opponents="greedy", agent_seat=1, reward=reward)
    obs, info = env.reset()
    assert info["game_over"] is True and info["winner"] == 0 and info["served_generala_win"]
    assert info["action_mask"].all() and env.action_masks().all()  # any action ends the episode
    assert opponent_moves(info) == [(0, write(env.rules, "generala"), 50)]
    _, r, terminated, _, info = env.step(0)
    assert (r, terminated) == (expected, True)
    assert info["winners"].tolist() == [True, False]


def test_opponents_play_inside_step_and_are_reported():
    env = scripted_env("12346" + "55555" + "12346" + "12345", num_players=2, opponents=last_legal, reward="win")
    obs, info = env.reset()
    assert info["player"] == 0 and info["seat"] == 0 and opponent_moves(info) == []
    _, r, terminated, _, info = env.step(write(env.rules, "ones"))
    # seat 1 was served five fives: its only legal move is the generala, which wins
    assert opponent_moves(info) == [(1, write(env.rules, "generala"), 50)]
    assert (r, terminated) == (-1.0, True)
    assert info["winner"] == 1 and info["served_generala_win"]


def test_shared_win_is_a_draw():
    rules = {"lines": ["ones"]}
    env = scripted_env("12346" + "12346" + "12345", rules=rules, num_players=2, opponents=last_legal, reward="win")
    env.reset()
    _, r, terminated, _, info = env.step(32)
    assert terminated and info["winners"].tolist() == [True, True] and info["winner"] == -1 and r == 0.0
    assert list(info["totals"]) == [1, 1]


def test_one_player_served_generala_is_an_ordinary_roll():
    env = scripted_env("33333", num_players=1, reward="score")
    _, info = env.reset()
    assert not info["served_generala_pending"] and info["action_mask"][:31].all()


# -- properties of whole episodes -------------------------------------------------------
ENV_CASES = st.sampled_from(
    [
        {"rules": "classic", "num_players": 1},
        {"rules": "double", "num_players": 2, "opponents": "greedy", "agent_seat": 1},
        {"rules": "sixty", "num_players": 3, "opponents": "random", "agent_seat": "random"},
        {"rules": {"locked_holds": True, "straight_gap": True}, "num_players": 2, "opponents": "random"},
    ]
)


@QUICK
@given(kwargs=ENV_CASES, seed=st.integers(0, 2**31 - 1))
def test_score_return_is_the_final_sheet_total(kwargs, seed):
    env = GeneralaEnv(reward="score", **kwargs)
    rng = np.random.default_rng(seed)
    _, info = env.reset(seed=seed)
    ret, steps, done = 0.0, 0, info.get("game_over", False)
    while True:
        _, r, done, _, info = env.step(random_legal(env, rng))
        assert not info["illegal_action"]
        assert np.array_equal(info["action_mask"].astype(bool), env.action_masks())
        ret += r
        steps += 1
        if done:
            break
    seat = info["seat"]
    sheet = info["sheets"][seat]
    assert ret == info["totals"][seat] == np.where(sheet == OPEN, 0, sheet).sum()
    assert steps <= 3 * env.rules.num_lines


@QUICK
@given(kwargs=ENV_CASES, seed=st.integers(0, 2**31 - 1))
def test_win_reward_agrees_with_the_winners(kwargs, seed):
    env = GeneralaEnv(reward="win", **kwargs)
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    rewards = []
    while True:
        _, r, done, _, info = env.step(random_legal(env, rng))
        rewards.append(r)
        if done:
            break
    assert all(r == 0.0 for r in rewards[:-1])
    seat, winners = info["seat"], tuple(np.flatnonzero(info["winners"]).tolist())
    expected = (1.0 if len(winners) == 1 else 0.0) if seat in winners else -1.0
    assert rewards[-1] == expected
    assert info["winner"] == (winners[0] if len(winners) == 1 else -1)
    totals = info["totals"]
    if not info["served_generala_win"]:
        assert set(winners) == set(np.flatnonzero(totals == totals.max()).tolist())
        assert (info["sheets"] != OPEN).all()
    else:
        assert len(winners) == 1 and env.num_players >= 2


# -- the observation ---------------------------------------------------------------------
def check_observation(env, obs, info):
    u = env.unwrapped
    rules, P = u.rules, u.num_players
    lay = observation_layout(rules, P)
    lm = line_max(rules)
    tmax = float(lm.sum())
    assert obs.dtype == np.float32 and obs.shape == (observation_size(rules, P),) == u.observation_space.shape
    assert (obs >= -1).all() and (obs <= 1).all()
    assert u.observation_space.contains(obs)

    dice, seat, sheets = info["dice"], info["seat"], info["sheets"]
    close = lambda got, want: np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)  # noqa: E731
    close(obs[lay["dice_counts"]] * 5, np.bincount(dice, minlength=7)[1:])
    close(obs[lay["dice_sorted"]] * 6, dice)
    assert list(obs[lay["rolls_left"]]) == [float(i == info["rolls_left"]) for i in range(3)]
    first = info["rolls_left"] == 2
    assert obs[lay["first_roll"]][0] == float(first)
    close(obs[lay["locked_counts"]] * 5, info["locked"])
    assert obs[lay["served_generala"]][0] == float(info["served_generala_pending"])

    own = sheets[seat]
    is_open = own == OPEN
    assert list(obs[lay["own_open"]]) == list(is_open.astype(float))
    close(obs[lay["own_points"]] * lm, np.where(is_open, 0, own))
    close(obs[lay["own_total"]] * tmax, [info["totals"][seat]])
    close(obs[lay["round"]] * rules.num_lines, [(~is_open).sum()])
    gen_scored = "generala" in rules.lines and own[rules.line_index("generala")] > 0
    now = [line_points(line, dice, rules, served=first, generala_scored=gen_scored) if is_open[l] else 0 for l, line in enumerate(rules.lines)]
    close(obs[lay["points_now"]] * lm, now)

    best = -np.inf
    for k in range(1, P):
        other = sheets[(seat + k) % P]
        assert list(obs[lay[f"opponent_{k}_open"]]) == list((other == OPEN).astype(float))
        close(obs[lay[f"opponent_{k}_points"]] * lm, np.where(other == OPEN, 0, other))
        close(obs[lay[f"opponent_{k}_total"]] * tmax, [info["totals"][(seat + k) % P]])
        best = max(best, info["totals"][(seat + k) % P])
    if P > 1:
        close(obs[lay["score_lead"]] * tmax, [info["totals"][seat] - best])
    else:
        assert "score_lead" not in lay


@pytest.mark.parametrize("rules", ["classic", "double", {"locked_holds": True, "base": "sixty"}])
@pytest.mark.parametrize("players,seat", [(1, 0), (2, 1), (3, 1)])
def test_observation_slices_hold_what_they_claim(rules, players, seat):
    opponents = "greedy" if players > 1 else None
    env = GeneralaEnv(rules=rules, num_players=players, opponents=opponents, agent_seat=seat)
    rng = np.random.default_rng(players)
    obs, info = env.reset(seed=players)
    check_observation(env, obs, info)
    seen_locked = seen_filled_opponent = False
    done = False
    while not done:
        obs, _, done, _, info = env.step(random_legal(env, rng))
        check_observation(env, obs, info)
        seen_locked |= bool(info["locked"].any())
        seen_filled_opponent |= players > 1 and (info["sheets"][(seat + 1) % players] != OPEN).any()
    assert seen_locked and (players == 1 or seen_filled_opponent)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"rules": "classic"},
        {"rules": "double", "num_players": 3, "opponents": "random"},
        {"rules": {"base": "double", "locked_holds": True, "served_generala": "points", "served_generala_points": 80}, "num_players": 2, "opponents": "greedy"},
        {"rules": {"base": "sixty", "straight_wraps": True}, "num_players": 4, "opponents": "random"},
    ],
)
def test_compiled_and_plain_python_encoders_agree_bit_for_bit(kwargs):
    """With numba the env encodes in one compiled call of ``observe.encode_game``; without,
    the same function runs as plain Python. Same bytes, every seat."""
    from generala_env.compiled import batched
    from generala_env.core.observe import encode_game

    if not batched.NUMBA:
        pytest.skip("numba is off: only the plain Python encoder runs")
    env = GeneralaEnv(**kwargs)
    env.reset(seed=2)
    rng = np.random.default_rng(2)
    checked = 0
    for _ in range(300):
        g = env.game
        for seat in range(env.num_players):
            compiled = env.encoder.encode(g, seat)
            assert compiled.dtype == np.float32
            plain = np.empty_like(compiled)
            encode_game(plain, env.encoder.tables, g.roll, g.rolls_left, g.locked, g.served_generala_pending(), g.sheets, seat)
            assert compiled.tobytes() == plain.tobytes()
            checked += 1
        _, _, done, _, _ = env.step(random_legal(env, rng))
        if done:
            env.reset()
    assert checked >= 100


def test_layout_tiles_the_vector():
    for rules in PRESETS:
        for players in (1, 2, 6):
            r = load_rules(rules)
            lay = observation_layout(r, players)
            stops = 0
            for s in lay.values():
                assert s.start == stops and s.stop > s.start
                stops = s.stop
            assert stops == observation_size(r, players)
            L = r.num_lines
            assert observation_size(r, players) == 22 + 3 * L + 2 + (players - 1) * (2 * L + 1) + (players > 1)


def test_opponent_slices_from_seat_one_show_seat_zero():
    """Seat 1 of two: seat 0 played its first turn inside reset(); the obs shows that sheet."""
    env = scripted_env("53535" + "12346", num_players=2, opponents=last_legal, agent_seat=1)
    obs, info = env.reset()
    lay = env.layout
    g = env.rules.line_index("generala")
    assert info["seat"] == 1 and info["player"] == 1
    assert opponent_moves(info) == [(0, write(env.rules, "generala"), 0)]  # seat 0 crossed out generala
    opp_open = obs[lay["opponent_1_open"]]
    assert opp_open[g] == 0.0 and opp_open.sum() == env.rules.num_lines - 1
    assert obs[lay["own_open"]].all()
    assert obs[lay["opponent_1_total"]][0] == 0.0 and obs[lay["score_lead"]][0] == 0.0
    check_observation(env, obs, info)


# -- rendering ---------------------------------------------------------------------------
def test_render_ansi_returns_the_sheet():
    env = scripted_env("53535" + "12346", rules="classic", render_mode="ansi")
    env.reset()
    text = env.render()
    assert text.splitlines()[0] == "Player 0 to move, round 1/10, roll 1 of 3"
    assert "3 " in text.splitlines()[1] and "Dice:" in text
    for label in ("ones", "full house", "four of a kind", "generala", "total"):
        assert any(row.startswith(label) for row in text.splitlines()), label
    env.step(write(env.rules, "full_house"))
    text = env.render()
    assert [row.split() for row in text.splitlines() if row.startswith("full house")] == [["full", "house", "35"]]
    assert text.splitlines()[-1].split() == ["total", "35"]
    assert text == render_text(env.game, seat=0)


def test_render_human_prints_it(capsys):
    a = scripted_env("44426" + "12346", render_mode="human")
    b = scripted_env("44426" + "12346", render_mode="ansi")
    a.reset()
    b.reset()
    assert a.render() is None
    assert capsys.readouterr().out == b.render() + "\n"
    a.step(write(a.rules, "fours"))
    b.step(write(b.rules, "fours"))
    assert capsys.readouterr().out == b.render() + "\n"  # human mode also shows each step
    assert "12" in b.render()


def test_render_marks_crossed_out_lines_and_the_end():
    env = scripted_env("12346" + "12346" + "12345", rules={"lines": ["ones", "generala"]}, render_mode="ansi")
    env.reset()
    env.step(write(env.rules, "generala"))
    env.step(write(env.rules, "ones"))
    rows = {row.split()[0]: row.split()[1:] for row in env.render().splitlines()[1:]}
    assert rows["generala"] == ["x"] and rows["ones"] == ["1"] and rows["total"] == ["1"]
    assert env.render().splitlines()[0].startswith("Game over")


def test_observation_layout_takes_a_rule_name():
    lay = observation_layout("classic", 2)
    assert lay["dice_counts"] == slice(0, 6) and lay["dice_sorted"] == slice(6, 11)
    assert lay == observation_layout(load_rules("classic"), 2)
    assert max(s.stop for s in lay.values()) == observation_size(load_rules("classic"), 2)
