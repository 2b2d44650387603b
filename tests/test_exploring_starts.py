"""Exploring starts: episodes that begin some turns in, from legal, seeded, reproducible sheets."""

import gymnasium as gym
import numpy as np
import pytest

import generala_env  # noqa: F401  (registers the env)
from generala_env.core.game import OPEN, Game, prefilled_sheets
from generala_env.core.rules import load_rules
from generala_env.envs.vector import GeneralaVectorEnv


def _legal(rules, sheets) -> None:
    """Raises unless ``set_state`` accepts these sheets (legal values, reachable, player 0 to move)."""
    Game(rules, len(sheets)).set_state(sheets=sheets, player=0)


@pytest.mark.parametrize("rules", ["classic", "double", {"lines": ["ones", "generala", "double_generala"]}])
@pytest.mark.parametrize("players", [1, 3])
def test_prefilled_sheets_are_legal_and_leave_the_game_open(rules, players):
    rules = load_rules(rules)
    rng = np.random.default_rng(0)
    ks = set()
    for _ in range(200):
        sheets = prefilled_sheets(rules, players, rng)
        _legal(rules, sheets)
        filled = (sheets != OPEN).sum(axis=1)
        assert (filled == filled[0]).all() and 1 <= filled[0] <= rules.num_lines - 1
        ks.add(int(filled[0]))
    assert ks == set(range(1, rules.num_lines))  # every depth occurs


def test_the_env_is_unchanged_by_default_and_explores_when_asked():
    plain = gym.make("Generala-v0")
    for seed in range(20):
        _, info = plain.reset(seed=seed)
        assert (info["sheets"] == OPEN).all()
    env = gym.make("Generala-v0", exploring_starts=1.0)
    for seed in range(20):
        _, info = env.reset(seed=seed)
        sheets = info["sheets"]
        assert (sheets != OPEN).any() and (sheets == OPEN).any()
        assert info["turn"] == int((sheets[0] != OPEN).sum())
        _legal(load_rules("classic"), sheets)


def test_exploring_starts_are_seeded_and_reproducible_to_the_end():
    def play(seed):
        env = gym.make("Generala-v0", num_players=2, exploring_starts=0.5, opponents="greedy")
        out = []
        for episode in range(4):
            obs, info = env.reset(seed=seed if episode == 0 else None)
            rng = np.random.default_rng(episode)
            done, ret = False, 0.0
            while not done:
                legal = np.flatnonzero(info["action_mask"])
                obs, r, done, _, info = env.step(int(legal[rng.integers(len(legal))]))
                ret += r
            out.append((info["sheets"].tolist(), ret))
        return out

    assert play(7) == play(7)
    assert play(7) != play(8)


def test_the_episode_return_counts_only_what_is_written_from_the_start():
    env = gym.make("Generala-v0", exploring_starts=1.0)
    _, info = env.reset(seed=3)
    before = int(info["totals"][0])
    done, ret = False, 0.0
    while not done:
        _, r, done, _, info = env.step(int(np.flatnonzero(info["action_mask"])[-1]))
        ret += r
    assert before > 0 and ret == info["totals"][0] - before


def test_the_vector_env_explores_with_legal_seeded_sheets():
    def starts(seed):
        venv = GeneralaVectorEnv(16, exploring_starts=0.5, full_info=True)
        venv.reset(seed=seed)
        return venv.sheets.copy()

    a = starts(1)
    assert (a == starts(1)).all() and not (a == starts(2)).all()
    fresh = (a == OPEN).all(axis=(1, 2))
    assert fresh.any() and (~fresh).any()
    for sheets in a:
        _legal(load_rules("classic"), sheets)
    venv = GeneralaVectorEnv(4)
    venv.reset(seed=1)
    assert (venv.sheets == OPEN).all()  # off by default


def test_the_vector_env_plays_prefilled_games_to_their_end():
    venv = GeneralaVectorEnv(8, exploring_starts=1.0)
    venv.reset(seed=0)
    ended, rng = 0, np.random.default_rng(0)
    for _ in range(60):
        masks = venv.action_masks()
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        _, _, term, trunc, info = venv.step(actions)
        ended += int((term | trunc).sum())
    assert ended > 8  # prefilled games are shorter than a whole game


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), True, "half"])
def test_a_share_outside_zero_to_one_is_refused(bad):
    with pytest.raises(ValueError, match="exploring_starts must be"):
        gym.make("Generala-v0", exploring_starts=bad)
    with pytest.raises(ValueError, match="exploring_starts must be"):
        GeneralaVectorEnv(2, exploring_starts=bad)
