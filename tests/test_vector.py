"""The batched env is the single env N times over: same dice in, same everything out.

Each game ``i`` of a :class:`GeneralaVectorEnv` and a lone :class:`GeneralaEnv` draw
their dice from one shared per-game stream (the vector env through ``dice_source``, the
single env through a stand-in generator), take the same actions (random legal ones and
some illegal ones), and must agree on every observation, reward, mask, termination and
info field, across episode ends (autoreset) too. The two run the same rule and encoding
functions (``generala_env.core.engine``, ``generala_env.core.observe``), so this is a regression test
of the drivers: autoreset, opponents, illegal actions, info and the dice they draw.
"""

from __future__ import annotations

import zlib
from collections import defaultdict, deque

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import generala_env  # noqa: F401  (registers Generala-v0)
from generala_env.core.game import IllegalActionError
from generala_env.envs.env import GeneralaEnv
from generala_env.envs.vector import BatchedOpponent, BatchedRandom, GeneralaVectorEnv, uniform_legal


class DiceStreams:
    """Per-game dice: the ``j``-th draw of game ``i`` is fixed by ``(seed, i)`` and the sizes of
    the draws before it (two instances with one seed deal the same dice to the same requests).

    Loaded: in odd games a draw is all one face with probability 0.2, in even games 0.02
    (so served generalas, double generalas and opponents' instant wins come up in a few
    hundred steps, and full games still get played to the end).
    """

    def __init__(self, seed: int):
        self.rngs: dict[int, np.random.Generator] = {}
        self.seed = seed

    def draw(self, game: int, n: int) -> np.ndarray:
        rng = self.rngs.setdefault(game, np.random.default_rng([self.seed, game]))
        if rng.random() < (0.2 if game % 2 else 0.02):
            return np.full(n, rng.integers(1, 7), dtype=np.int8)
        return rng.integers(1, 7, size=n, dtype=np.int8)

    def source(self, games, need):
        """The vector env's ``dice_source``."""
        out = np.ones((len(games), 5), dtype=np.int8)
        for j, (g, k) in enumerate(zip(games, need, strict=True)):
            out[j, :k] = self.draw(int(g), int(k))
        return out


class StreamGenerator:
    """What the single env of game ``i`` uses as ``np_random``: dice from game ``i``'s stream,
    the seat the vector env drew, and 0 for opponent seeds."""

    def __init__(self, streams: DiceStreams, game: int, seat_of):
        self.streams, self.game, self.seat_of = streams, game, seat_of

    def integers(self, low, high=None, size=None, dtype=None):
        if size is not None:
            assert (low, high) == (1, 7)
            return self.streams.draw(self.game, int(size)).astype(dtype)
        if low == 2**63:  # an opponent's seed
            return 0
        return self.seat_of()


class Recorder(BatchedOpponent):
    """A batched opponent that remembers each game's choices, for the single envs to replay."""

    def __init__(self, inner: BatchedOpponent):
        self.inner = inner
        self.moves: dict[int, deque] = defaultdict(deque)

    def act_batch(self, venv, games, masks):
        actions = self.inner.act_batch(venv, games, masks)
        for g, a in zip(games, actions, strict=True):
            self.moves[int(g)].append(int(a))
        return actions

    def replay(self, game: int):
        return lambda obs, info: self.moves[game].popleft()


def single_opponents(opponents, num_players: int, game: int):
    if num_players == 1:
        return None
    seats = opponents if isinstance(opponents, list) else [opponents] * (num_players - 1)
    return [o.replay(game) if isinstance(o, Recorder) else o for o in seats]


def choose(rng, masks, num_actions, p_illegal):
    """Random legal actions, with some illegal or out-of-range ones mixed in."""
    actions = uniform_legal(rng, masks)
    for i in np.flatnonzero(rng.random(len(masks)) < p_illegal):
        bad = np.flatnonzero(~masks[i])
        actions[i] = rng.choice(np.concatenate([bad, [num_actions, num_actions + 7, -1]]))
    return actions


def assert_info_agrees(vinfo, i, info):
    assert vinfo["seat"][i] == info["seat"]
    assert np.array_equal(vinfo["dice"][i], info["dice"])
    assert vinfo["rolls_left"][i] == info["rolls_left"]
    assert vinfo["turn"][i] == info["turn"]
    assert np.array_equal(vinfo["totals"][i], info["totals"])
    assert np.array_equal(vinfo["action_mask"][i], info["action_mask"])
    assert bool(vinfo.get("game_over", np.zeros(i + 1, bool))[i]) == bool(info.get("game_over", False))


CASES = {
    "classic-1p": dict(rules="classic"),
    "classic-1p-locked": dict(rules={"base": "classic", "locked_holds": True}),
    "sixty-1p-straights": dict(rules={"base": "sixty", "straight_wraps": True, "straight_one_as_two": True}),
    "double-2p-greedy-win": dict(rules="double", num_players=2, opponents="greedy", reward="win", agent_seat="random"),
    "sixty-2p-random-seat1": dict(rules="sixty", num_players=2, opponents="random", agent_seat=1),
    "classic-2p-served-points": dict(
        rules={"base": "classic", "served_generala": "points", "served_generala_points": 80}, num_players=2, opponents="greedy", agent_seat=1
    ),
    "double-3p-locked-mixed": dict(
        rules={"base": "double", "locked_holds": True}, num_players=3, opponents=["greedy", "random"], reward="win", agent_seat="random"
    ),
    "classic-2p-per-game-agent": dict(rules="classic", num_players=2, opponents="rules-of-thumb", agent_seat="random"),
}


@pytest.mark.parametrize("mode", list(AutoresetMode), ids=[m.value for m in AutoresetMode])
@pytest.mark.parametrize("case", list(CASES))
def test_same_game_as_single_envs(case, mode):
    """In every autoreset mode: SAME_STEP resets an ended game inside its last step (the ending
    observation in ``final_obs``); NEXT_STEP shows the end, then starts the game anew at the
    next step (reward 0, the action ignored); DISABLED shows the end and waits for
    ``reset(options={"reset_mask": ...})``. The single envs are reset at those same points."""
    kw = dict(CASES[case])
    n, steps = 6, 120 if case.endswith("per-game-agent") else 200
    opp = kw.pop("opponents", None)
    if opp is not None:  # random opponents are recorded in the vector env and replayed in the singles
        opp = (
            [Recorder(BatchedRandom()) if o == "random" else o for o in opp]
            if isinstance(opp, list)
            else (Recorder(BatchedRandom()) if opp == "random" else opp)
        )
    seed = zlib.crc32(case.encode())
    venv = GeneralaVectorEnv(n, opponents=opp, dice_source=DiceStreams(seed).source, full_info=True, autoreset_mode=mode, **kw)
    streams = DiceStreams(seed)  # the same dice again, for the single envs
    obs_v, info_v = venv.reset(seed=1)
    singles = []
    for i in range(n):
        env = GeneralaEnv(opponents=single_opponents(opp, kw.get("num_players", 1), i), **kw)
        env.np_random = StreamGenerator(streams, i, seat_of=lambda i=i: int(venv.seat[i]))
        obs, info = env.reset()
        assert np.array_equal(obs_v[i], obs)
        assert_info_agrees(info_v, i, info)
        singles.append(env)

    rng = np.random.default_rng(7)
    episodes = 0
    ended = np.zeros(n, dtype=bool)  # games that ended at the last step (NEXT_STEP starts them at this one)
    for _ in range(steps):
        masks = venv.action_masks()
        assert masks.shape == (n, venv.num_actions) and masks.dtype == bool
        for i, env in enumerate(singles):
            assert np.array_equal(masks[i], env.action_masks())
        actions = choose(rng, masks, venv.num_actions, p_illegal=0.1)
        obs_v, rew_v, term_v, trunc_v, info_v = venv.step(actions)
        assert not trunc_v.any()
        for i, env in enumerate(singles):
            if ended[i]:  # NEXT_STEP: this step is game i's reset
                (obs, info), rew, term = env.reset(), 0.0, False
            else:
                obs, rew, term, trunc, info = env.step(int(actions[i]))
            assert rew_v[i] == rew and term_v[i] == term
            assert info_v["illegal_action"][i] == info["illegal_action"]
            if term:
                episodes += 1
                if mode == AutoresetMode.SAME_STEP:
                    assert info_v["_final_obs"][i]
                    assert np.array_equal(info_v["final_obs"][i], obs)
                    fi = info_v["final_info"]
                else:  # the end is seen at this step
                    fi = info_v
                    assert "final_obs" not in info_v
                assert fi["winner"][i] == info["winner"]
                assert fi["served_generala_win"][i] == info["served_generala_win"]
                if mode == AutoresetMode.SAME_STEP:
                    assert np.array_equal(fi["totals"][i], info["totals"])
                    obs, info = env.reset()
            elif "_final_obs" in info_v:
                assert not info_v["_final_obs"][i]
            elif mode != AutoresetMode.SAME_STEP:
                assert info_v["winner"][i] == -1 and not info_v["served_generala_win"][i]
            assert np.array_equal(obs_v[i], obs), f"game {i}: observations differ"
            assert_info_agrees(info_v, i, info)
        ended = term_v if mode == AutoresetMode.NEXT_STEP else np.zeros(n, dtype=bool)
        if mode == AutoresetMode.DISABLED and term_v.any():
            with pytest.raises(RuntimeError, match="reset them first"):
                venv.step(actions)
            obs_v, info_v = venv.reset(options={"reset_mask": term_v})
            for i in np.flatnonzero(term_v):
                obs, info = singles[i].reset()
                assert np.array_equal(obs_v[i], obs)
                assert_info_agrees(info_v, i, info)
    assert episodes >= n  # every game went through at least one autoreset on average


def test_make_vec_and_spaces():
    envs = gym.make_vec("Generala-v0", num_envs=5, vectorization_mode="vector_entry_point", rules="double", num_players=2, opponents="random")
    assert isinstance(envs.unwrapped, GeneralaVectorEnv)
    assert envs.metadata["autoreset_mode"] == gym.vector.AutoresetMode.NEXT_STEP  # Gymnasium's default
    single = gym.make("Generala-v0", rules="double", num_players=2, opponents="random")
    assert envs.single_observation_space == single.observation_space
    assert envs.single_action_space == single.action_space
    obs, info = envs.reset(seed=3)
    assert obs.shape == (5, single.observation_space.shape[0]) and obs.dtype == np.float32
    assert envs.observation_space.contains(obs)
    obs, rew, term, trunc, info = envs.step(uniform_legal(np.random.default_rng(0), envs.unwrapped.action_masks()))
    assert envs.observation_space.contains(obs) and rew.shape == (5,)
    envs.close()


def play(venv, seed, steps=60):
    obs, _ = venv.reset(seed=seed)
    rng = np.random.default_rng(seed)
    out = [obs]
    for _ in range(steps):
        obs, rew, term, _, _ = venv.step(uniform_legal(rng, venv.action_masks()))
        out += [obs, rew, term]
    return out


def test_seeded_replay():
    a = play(GeneralaVectorEnv(8, num_players=2, opponents="random", agent_seat="random"), seed=11)
    b = play(GeneralaVectorEnv(8, num_players=2, opponents="random", agent_seat="random"), seed=11)
    c = play(GeneralaVectorEnv(8, num_players=2, opponents="random", agent_seat="random"), seed=12)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c, strict=True))


def test_illegal_actions():
    venv = GeneralaVectorEnv(3, illegal_penalty=-2.5)
    obs, _ = venv.reset(seed=0)
    masks = venv.action_masks()
    acts = uniform_legal(np.random.default_rng(0), masks)
    acts[1] = 31  # holding all five is never legal
    obs2, rew, term, _, info = venv.step(acts)
    assert rew[1] == -2.5 and info["illegal_action"].tolist() == [False, True, False]
    assert np.array_equal(obs2[1], obs[1]) and np.array_equal(venv.action_masks()[1], masks[1])
    with pytest.raises(ValueError):
        venv.step(np.zeros(2, dtype=int))
    strict = GeneralaVectorEnv(2, illegal_action="raise")
    strict.reset(seed=0)
    with pytest.raises(IllegalActionError, match="game 0"):
        strict.step(np.array([31, 32]))


def test_partial_reset_and_render():
    venv = GeneralaVectorEnv(4, render_mode="ansi")
    venv.reset(seed=0)
    venv.step(np.full(4, 32))  # everyone writes ones
    before = venv.sheets.copy()
    venv.reset(options={"reset_mask": np.array([True, False, True, False])})
    assert (venv.sheets[[0, 2]] == -1).all() and np.array_equal(venv.sheets[[1, 3]], before[[1, 3]])
    texts = venv.render()
    assert len(texts) == 4 and all("ones" in t for t in texts)


def test_refuses_bad_arguments():
    with pytest.raises(ValueError, match="num_envs"):
        GeneralaVectorEnv(0)
    with pytest.raises(ValueError, match="opponent"):
        GeneralaVectorEnv(2, num_players=3, opponents=["greedy"])
    with pytest.raises(ValueError, match="not both"):
        GeneralaVectorEnv(2, num_players=2, opponents="greedy", opponent_mix=["random"])
    with pytest.raises(ValueError, match="reward"):
        GeneralaVectorEnv(2, reward="money")


def test_opponent_mix_per_game():
    venv = GeneralaVectorEnv(4, num_players=2, opponent_mix=["greedy", "random"])
    names = [venv.batched_opponents[j].name for j in venv.opponent_of[:, 0]]
    assert names == ["greedy", "random", "greedy", "random"]


def test_sb3_adapter_and_maskable_ppo():
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported

    from generala_env.adapters.sb3 import GeneralaSB3VecEnv, make_sb3_vec_env

    env = GeneralaSB3VecEnv(6, num_players=2, opponents="greedy", reward="win")
    env.seed(5)
    obs = env.reset()
    assert obs.shape == (6, env.observation_space.shape[0])
    assert is_masking_supported(env)
    masks = get_action_masks(env)
    assert masks.shape == (6, env.action_space.n) and masks.dtype == bool
    assert np.array_equal(masks, env.venv.action_masks())
    rng = np.random.default_rng(0)
    seen_end = False
    for _ in range(80):
        obs, rew, dones, infos = env.step(uniform_legal(rng, get_action_masks(env)))
        assert len(infos) == 6 and rew.dtype == np.float32
        for i in np.flatnonzero(dones):
            seen_end = True
            term = infos[i]["terminal_observation"]
            assert term.shape == obs[i].shape and not np.array_equal(term, obs[i])
            assert rew[i] in (-1.0, 0.0, 1.0) and infos[i]["TimeLimit.truncated"] is False
    assert seen_end

    def rollout(seed):  # seed() takes effect at the next reset, as for SB3's own VecEnvs
        e = GeneralaSB3VecEnv(4, rules="double")
        e.seed(seed)
        out = [e.reset()]
        for _ in range(30):
            obs, rew, dones, _ = e.step(uniform_legal(np.random.default_rng(1), get_action_masks(e)))
            out += [obs, rew, dones]
        return out

    assert all(np.array_equal(x, y) for x, y in zip(rollout(3), rollout(3), strict=True))
    assert not all(np.array_equal(x, y) for x, y in zip(rollout(3), rollout(4), strict=True))

    venv = make_sb3_vec_env(8, seed=0, rules="classic", reward_scale=0.02)
    model = MaskablePPO("MlpPolicy", venv, n_steps=32, batch_size=64, n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=256)
    assert model.num_timesteps >= 256


def test_same_game_without_numba():
    """The kernels run as plain Python where numba is missing (GENERALA_NUMBA=0): same game."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = dict(os.environ, GENERALA_NUMBA="0")
    cmd = [sys.executable, "-m", "pytest", "-o", "addopts=", "-q", "-p", "no:cacheprovider", __file__, "-k", "same_game_as_single and 3p and SameStep"]
    res = subprocess.run(cmd, env=env, cwd=Path(__file__).parent.parent, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "1 passed" in res.stdout


@pytest.mark.parametrize("players", [2, 3])
def test_the_results_kernel_mirrors_winners_and_win_reward(players):
    """``env_loops.results`` (the outcome rules compiled over ended games, as the env core's
    step ends a game) gives ``Game.winners`` and ``env.win_reward``, on ties and served
    generalas too."""
    from generala_env.compiled import env_loops
    from generala_env.core.engine import new_state, tables
    from generala_env.core.game import Game
    from generala_env.core.rules import load_rules
    from generala_env.core.scoring import points_table
    from generala_env.envs.env import win_reward

    rules = load_rules("double")
    table, gen, dbl = points_table(rules), rules.generala_line, rules.double_generala_line
    rng = np.random.default_rng(players)
    n = 300
    sheets = np.zeros((n, players, rules.num_lines), dtype=np.int32)
    served = np.full(n, -1, dtype=np.int64)
    for i in range(n):
        for p in range(players):
            for l in range(rules.num_lines):  # mostly crossed out, so that totals often tie
                if rng.random() < 0.3:
                    sheets[i, p, l] = table[l, rng.integers(252), 0]
            if sheets[i, p, gen] == 0:
                sheets[i, p, dbl] = 0
        if i % 3 == 0:
            sheets[i, 1] = sheets[i, 0]  # a tie for the lead, unless someone else leads
        if i % 7 == 0:
            sheets[i, i % players, gen] = table[gen, 0, 0]  # a served generala wins
            served[i] = i % players
    seat = rng.integers(players, size=n)
    games = np.arange(n)
    final, reward = np.full((n, players + 2), -7, dtype=np.int64), np.empty(n)
    state = new_state(n, players, rules.num_lines)._replace(sheets=sheets, winner=served)
    env_loops.results(games, seat, tuple(state), tuple(tables(rules, players)), final, reward)
    totals, winner, served_win = final[:, :players], final[:, players] - 1, final[:, players + 1]
    game = Game(rules, players)
    for i in range(n):
        game.set_state(sheets=sheets[i], served_generala_winner=None if served[i] < 0 else int(served[i]))
        w = game.winners()
        assert totals[i].tolist() == game.totals().tolist()
        assert winner[i] == (w[0] if len(w) == 1 else -1)
        assert served_win[i] == (served[i] >= 0)
        assert reward[i] == win_reward(w, int(seat[i]))
    assert {-1.0, 0.0, 1.0} <= set(reward.tolist())  # every outcome came up


def test_a_pickled_or_copied_vector_env_resets_and_steps_its_own_games():
    """Pickled before its first reset (an env sent to a worker), the copy's state attributes
    were copies of their own, so its reset read stale games and refused every step."""
    import copy
    import pickle

    for make_copy in (lambda e: pickle.loads(pickle.dumps(e)), copy.deepcopy):
        env = make_copy(GeneralaVectorEnv(2, num_players=2))
        env.reset(seed=0)
        env.step(np.zeros(2, dtype=np.int64))
        assert env.player is env.core.player and env.sheets is env.core.sheets
        assert (env.player == env.seat).all()  # the agent's move again after the opponent's
