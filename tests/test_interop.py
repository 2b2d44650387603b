"""The env as other RL libraries use it: dict observations, render modes, the cap on illegal
actions, fixed-shape info, and masks under Gymnasium's vector envs (docs/interop.md)."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env
from helpers import ROOT, ScriptedDice, write

import generala_env  # noqa: F401  (registers Generala-v0)
from generala_env.envs.env import MAX_ILLEGAL_IN_A_ROW, GeneralaEnv, opponent_moves
from generala_env.envs.vector import GeneralaVectorEnv, uniform_legal

SHORT = {"lines": ["ones", "sixes", "generala"]}  # three lines: games of at most 9 agent steps
HOLD_ALL = 31  # never legal


def random_action(rng, mask, p_illegal=0.0):
    """A legal action drawn from ``mask``, or (with probability ``p_illegal``) hold-all."""
    if rng.random() < p_illegal:
        return HOLD_ALL
    return int(rng.choice(np.flatnonzero(mask)))


# -- 1. obs_type="dict" ---------------------------------------------------------------------
@pytest.mark.parametrize("rules,players", [("classic", 1), ("double", 2), ("sixty", 3)])
def test_dict_observation_passes_the_gymnasium_checker(rules, players):
    env = gym.make("Generala-v0", rules=rules, num_players=players, obs_type="dict", render_mode="ansi")
    space = env.observation_space
    A = env.action_space.n
    assert isinstance(space, gym.spaces.Dict) and set(space.spaces) == {"observation", "action_mask"}
    assert space["action_mask"] == gym.spaces.Box(0, 1, shape=(A,), dtype=np.int8)
    assert space["observation"] == gym.make("Generala-v0", rules=rules, num_players=players).observation_space
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gym_check_env(env.unwrapped)
    pytest.importorskip("stable_baselines3")  # SB3's checker too, where the train extra is installed
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sb3_check_env(GeneralaEnv(rules=rules, num_players=players, obs_type="dict"), warn=True)


@pytest.mark.parametrize("kwargs", [{}, {"num_players": 2, "opponents": "random", "agent_seat": "random"}, {"rules": SHORT, "num_players": 2}])
def test_dict_mask_is_action_masks_at_every_step_and_the_game_is_the_flat_one(kwargs):
    flat = GeneralaEnv(**kwargs)
    env = GeneralaEnv(obs_type="dict", **kwargs)
    rng = np.random.default_rng(0)
    steps = endings = 0
    for seed in range(4):
        obs, info = env.reset(seed=seed)
        fobs, _ = flat.reset(seed=seed)
        while True:
            assert env.observation_space.contains(obs)
            assert np.array_equal(obs["observation"], fobs)  # the same game, seen the same way
            assert obs["action_mask"].dtype == np.int8
            assert np.array_equal(obs["action_mask"], env.action_masks().astype(np.int8))
            assert np.array_equal(obs["action_mask"], info["action_mask"])
            assert obs["action_mask"] is not info["action_mask"]  # each the caller's own copy
            if info["game_over"]:
                endings += 1
                break
            a = random_action(rng, obs["action_mask"], p_illegal=0.1)
            obs, r, term, trunc, info = env.step(a)
            fobs, fr, *_ = flat.step(a)
            assert r == fr
            steps += 1
    assert endings == 4 and steps >= 4 * 3  # at least one write per line


def test_dict_mask_when_an_opponent_ends_the_game_before_the_agent_moves():
    env = GeneralaEnv(num_players=2, opponents="greedy", agent_seat=1, obs_type="dict")
    env.np_random = ScriptedDice("66666" + "12345")  # seat 0 is served a generala: it wins at once
    obs, info = env.reset()
    assert info["game_over"] and obs["action_mask"].all() and env.action_masks().all()
    obs, r, term, _, info = env.step(0)
    assert term and np.array_equal(obs["action_mask"], env.action_masks().astype(np.int8))


@pytest.mark.parametrize("make", [GeneralaEnv, lambda **kw: GeneralaVectorEnv(2, **kw)])
@pytest.mark.parametrize("obs_type", ["image", "Dict", None, 1])
def test_unknown_obs_type_is_an_error_naming_it(make, obs_type):
    with pytest.raises(ValueError, match="obs_type must be one of flat, dict"):
        make(obs_type=obs_type)


@pytest.mark.parametrize("autoreset_mode", ["SameStep", "NextStep"])
def test_vector_env_dict_observations_agree_with_the_flat_ones(autoreset_mode):
    kw = dict(rules=SHORT, num_players=2, opponents="random", reward="win")
    flat, venv = (GeneralaVectorEnv(8, autoreset_mode=autoreset_mode, obs_type=t, **kw) for t in ("flat", "dict"))
    assert venv.single_observation_space == GeneralaEnv(obs_type="dict", **kw).observation_space
    obs, _ = venv.reset(seed=5)
    fobs, _ = flat.reset(seed=5)
    rng = np.random.default_rng(5)
    finals = 0
    for _ in range(40):
        assert venv.observation_space.contains(obs)
        assert np.array_equal(obs["observation"], fobs)
        assert np.array_equal(obs["action_mask"], venv.action_masks().astype(np.int8))
        actions = uniform_legal(rng, venv.action_masks())
        obs, r, term, trunc, info = venv.step(actions)
        fobs, fr, fterm, *_ = flat.step(actions)
        assert np.array_equal(r, fr) and np.array_equal(term, fterm)
        for i in np.flatnonzero(term):  # the ending observation marks every action
            final = info["final_obs"][i] if autoreset_mode == "SameStep" else {k: v[i] for k, v in obs.items()}
            assert set(final) == {"observation", "action_mask"} and final["action_mask"].all()
            finals += 1
    assert finals >= 8


def test_vector_dict_observations_through_make_vec_and_the_sb3_adapter():
    envs = gym.make_vec("Generala-v0", num_envs=3, vectorization_mode="vector_entry_point", obs_type="dict")
    obs, _ = envs.reset(seed=0)
    assert envs.observation_space.contains(obs) and obs["action_mask"].shape == (3, 42)
    pytest.importorskip("stable_baselines3")  # the SB3 adapter: the train extra
    from generala_env.adapters.sb3 import make_sb3_vec_env

    venv = make_sb3_vec_env(3, seed=0, obs_type="dict")
    obs = venv.reset()
    assert set(obs) == {"observation", "action_mask"} and obs["observation"].shape[0] == 3
    assert np.array_equal(obs["action_mask"].astype(bool), np.array(venv.env_method("action_masks")))


# -- 2. render modes the env lacks: a warning ------------------------------------------------
def test_unsupported_render_mode_warns_and_renders_as_none():
    for make in (GeneralaEnv, lambda **kw: GeneralaVectorEnv(2, **kw)):
        with pytest.warns(UserWarning, match="render_mode='rgb_array_list' is not one of"):
            env = make(render_mode="rgb_array_list")
        assert env.render_mode is None
    pytest.importorskip("pettingzoo")  # the PettingZoo env too, where the multiagent extra is installed
    from generala_env.envs.multiagent import raw_env

    with pytest.warns(UserWarning, match="render_mode='rgb_array_list' is not one of"):
        env = raw_env(render_mode="rgb_array_list")
    assert env.render_mode is None


def test_the_env_pages_say_an_unknown_render_mode_warns():
    """docs/env.md and docs/interop.md say what the test above checks: a warning, not an error."""
    env_page = " ".join((ROOT / "docs" / "env.md").read_text().split())
    assert "any other mode is not an error: Gymnasium's logger warns once, naming these three, and the env renders as with `render_mode=None`" in env_page
    assert "an unknown mode is an error" not in env_page
    assert "Any other mode gives a warning, not an error" in " ".join((ROOT / "docs" / "interop.md").read_text().split())
    with pytest.warns(UserWarning, match=r"render_mode='bogus' is not one of this env's render modes \['ansi', 'human', 'rgb_array'\]"):
        env = GeneralaEnv(render_mode="bogus")
    env.reset(seed=0)
    assert env.render() is None


def test_sb3_make_vec_env_works_as_is():
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.env_util import make_vec_env

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # make_vec_env asks for render_mode="rgb_array", which the env has
        vec = make_vec_env("Generala-v0", n_envs=4, seed=0)
    obs = vec.reset()
    assert obs.shape == (4, vec.observation_space.shape[0])
    rng = np.random.default_rng(0)
    for _ in range(40):
        masks = np.array(vec.env_method("action_masks"))
        obs, rewards, dones, infos = vec.step(np.array([random_action(rng, m) for m in masks]))
        assert not any(i["illegal_action"] for i in infos)
    vec.close()


# -- 3. no policy loops forever ----------------------------------------------------------------
def test_illegal_actions_in_a_row_truncate_the_episode():
    env = GeneralaEnv(rules=SHORT)
    env.reset(seed=0)
    for n in range(1, MAX_ILLEGAL_IN_A_ROW + 1):
        _, r, term, trunc, info = env.step(HOLD_ALL)
        assert r == -1.0 and info["illegal_action"] and not term
        assert trunc == (n == MAX_ILLEGAL_IN_A_ROW)
    with pytest.raises(RuntimeError, match="truncated after 100 illegal actions in a row"):
        env.step(32)
    _, info = env.reset(seed=0)
    assert not info["illegal_action"]
    _, _, _, trunc, _ = env.step(HOLD_ALL)  # the count starts again
    assert not trunc


def test_the_cap_counts_illegal_actions_in_a_row_and_can_be_set_or_removed():
    env = GeneralaEnv(rules=SHORT, max_illegal_in_a_row=3)
    env.reset(seed=0)
    truncs = [env.step(a)[3] for a in (HOLD_ALL, HOLD_ALL, 0, HOLD_ALL, HOLD_ALL)]  # a reroll between
    assert truncs == [False] * 5
    assert env.step(HOLD_ALL)[3] is True
    free = GeneralaEnv(rules=SHORT, max_illegal_in_a_row=None)
    free.reset(seed=0)
    assert not any(free.step(HOLD_ALL)[3] for _ in range(3 * MAX_ILLEGAL_IN_A_ROW))
    for bad in (0, -1, True, 2.5, "10"):
        with pytest.raises(ValueError, match="max_illegal_in_a_row must be a positive integer or None"):
            GeneralaEnv(max_illegal_in_a_row=bad)


def test_the_vector_env_truncates_each_game_on_its_own():
    venv = GeneralaVectorEnv(3, rules=SHORT, num_players=2, opponents="greedy", reward="win", max_illegal_in_a_row=4, autoreset_mode="SameStep")
    venv.reset(seed=0)
    for n in range(1, 5):
        masks = venv.action_masks()
        actions = uniform_legal(np.random.default_rng(n), masks)
        actions[:2] = HOLD_ALL  # games 0 and 1 play illegal actions; game 1 plays one legal move
        if n == 2:
            actions[1] = int(np.flatnonzero(masks[1])[0])
        _, r, term, trunc, info = venv.step(actions)
        assert not term[:2].any()
        assert trunc.tolist()[:2] == [n == 4, False] and not trunc[2]
    assert info["_final_obs"].tolist()[:2] == [True, False]
    assert info["final_info"]["winner"][0] == -1 and r[0] == -1.0  # no win reward: the game did not end
    assert venv.illegal_streak.tolist()[:2] == [0, 2]  # game 0 is a new game


def test_evaluate_policy_returns_for_an_untrained_unmasked_ppo():
    torch = pytest.importorskip("torch")
    from stable_baselines3 import PPO
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.monitor import Monitor

    torch.set_num_threads(1)

    class LengthBound(gym.Wrapper):
        """Fails the test instead of hanging: no episode may outlast the documented bound."""

        def __init__(self, env):
            super().__init__(env)
            u = env.unwrapped
            self.bound = 3 * u.rules.num_lines * u.max_illegal_in_a_row
            self.steps = 0

        def reset(self, **kwargs):
            self.steps = 0
            return self.env.reset(**kwargs)

        def step(self, action):
            self.steps += 1
            assert self.steps <= self.bound, "an episode outlasted 3 L x max_illegal_in_a_row steps"
            return self.env.step(action)

    env = Monitor(LengthBound(gym.make("Generala-v0")))
    model = PPO("MlpPolicy", env, n_steps=64, batch_size=64, seed=0, device="cpu")
    mean, _ = evaluate_policy(model, env, n_eval_episodes=3, deterministic=True, warn=False)
    lengths = env.get_episode_lengths()
    assert len(lengths) == 3 and max(lengths) <= env.env.bound
    assert mean < 0  # a deterministic untrained policy repeats an illegal action until truncated


# -- 4. info: every key at every step, with a fixed shape ----------------------------------------
def signature(info: dict) -> dict:
    """Each key's type, and for arrays their shape and dtype."""
    return {k: (type(v), getattr(v, "shape", None), getattr(v, "dtype", None)) for k, v in info.items()}


@pytest.mark.parametrize(
    "kwargs",
    [
        {"rules": "classic"},
        {"rules": "double", "num_players": 3, "opponents": "random", "agent_seat": "random", "reward": "win"},
        {"rules": {"base": "classic", "locked_holds": True}, "num_players": 2, "opponents": "greedy"},
    ],
)
def test_every_info_key_at_every_step_with_one_shape(kwargs):
    env = GeneralaEnv(max_illegal_in_a_row=5, **kwargs)
    rng = np.random.default_rng(1)
    _, info = env.reset(seed=1)
    first = signature(info)
    P = env.num_players
    assert first["locked"][1:] == ((6,), np.int8) and first["opponent_moves"][1:] == ((3 * (P - 1), 3), np.int64)
    assert first["winners"][1:] == ((P,), np.bool_)
    assert all(isinstance(v, (bool, int, np.integer, np.bool_, np.ndarray)) for v in info.values())  # no text: tensors of every value
    seen = {"illegal": 0, "truncated": 0, "ended": 0, "locked": 0}
    for _ in range(6):
        while True:
            obs, r, term, trunc, info = env.step(random_action(rng, info["action_mask"], p_illegal=0.3))
            assert signature(info) == first
            assert (env.illegal_reason() != "") == info["illegal_action"]
            seen["illegal"] += info["illegal_action"]
            seen["locked"] += bool(info["locked"].any())
            np.testing.assert_allclose(obs[env.layout["locked_counts"]] * 5, info["locked"], atol=1e-6)
            moves = opponent_moves(info)
            assert all(0 <= s < P and s != info["seat"] for s, _, _ in moves)
            assert (info["opponent_moves"][len(moves) :] == -1).all()
            if term or trunc:
                seen["truncated"] += trunc
                seen["ended"] += term
                assert info["game_over"] == term and info["winners"].any() == term
                if term:
                    won = np.flatnonzero(info["winners"]).tolist()
                    assert info["winner"] == (won[0] if len(won) == 1 else -1)
                break
            assert not info["winners"].any() and info["winner"] == -1 and not info["game_over"]
        _, info = env.reset()
        assert signature(info) == first
    assert seen["illegal"] and seen["ended"] and seen["truncated"]
    assert seen["locked"] or not env.rules.locked_holds


def test_sync_vector_env_gives_every_info_key_for_every_game():
    envs = gym.make_vec("Generala-v0", num_envs=2, vectorization_mode="sync", rules=SHORT, num_players=2, opponents="random")
    _, info = envs.reset(seed=0)
    keys = {k for k in info if not k.startswith("_")}
    rng = np.random.default_rng(0)
    for _ in range(30):
        _, _, _, _, info = envs.step([random_action(rng, m, p_illegal=0.2) for m in info["action_mask"]])
        assert {k for k in info if not k.startswith("_")} == keys
        assert all(info["_" + k].all() for k in keys)  # every game gave every key
    envs.close()


def test_tianshou_replay_buffer_stores_the_info():
    pytest.importorskip("tianshou")
    from tianshou.data import Batch, ReplayBuffer

    env = GeneralaEnv(rules=SHORT, num_players=3, opponents="random", max_illegal_in_a_row=4)
    buf = ReplayBuffer(500)
    rng = np.random.default_rng(0)
    obs, info = env.reset(seed=0)
    for _ in range(120):
        a = random_action(rng, info["action_mask"], p_illegal=0.3)
        obs2, r, term, trunc, info = env.step(a)
        buf.add(Batch(obs=obs, act=a, rew=r, terminated=term, truncated=trunc, obs_next=obs2, info=info))
        obs = obs2
        if term or trunc:
            obs, info = env.reset()
    assert len(buf) == 120 and buf.info.opponent_moves.shape == (500, 6, 3)
    assert buf.info.illegal_action[:120].any() and buf.info.winners[:120].any()


def test_pettingzoo_infos_keep_their_shape():
    pytest.importorskip("pettingzoo")
    from generala_env.envs.multiagent import raw_env

    e = raw_env(rules=SHORT, num_players=3)
    e.reset(seed=0)
    first = {a: signature(e.infos[a]) for a in e.agents}
    assert e.infos["player_1"]["last_move"].tolist() == [-1, -1, -1]
    rng = np.random.default_rng(0)
    for agent in e.agent_iter():
        obs, _, term, trunc, info = e.last()
        assert signature(info) == first[agent]
        e.step(None if term or trunc else random_action(rng, obs["action_mask"]))
    assert first["player_0"]["last_move"][1:] == ((3,), np.int64)


# -- 5. masks under Gymnasium's vector envs (NEXT_STEP autoreset) ---------------------------------
@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("obs_type", ["flat", "dict"])
def test_next_step_autoreset_never_gives_an_all_zero_mask(mode, obs_type):
    envs = gym.make_vec("Generala-v0", num_envs=2, vectorization_mode=mode, rules=SHORT, obs_type=obs_type)
    assert envs.metadata["autoreset_mode"] == gym.vector.AutoresetMode.NEXT_STEP
    obs, info = envs.reset(seed=0)
    rng = np.random.default_rng(0)
    ended = 0
    for _ in range(25):
        masks = info["action_mask"].astype(bool)
        assert masks.any(axis=1).all()
        assert np.array_equal(masks, np.array(envs.call("action_masks")))
        if obs_type == "dict":
            assert np.array_equal(obs["action_mask"], info["action_mask"])
        logits = np.where(masks, 0.0, -np.inf)  # -inf masking, as masked policies do
        probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        assert np.isfinite(probs / probs.sum(axis=1, keepdims=True)).all()
        obs, _, term, trunc, info = envs.step([random_action(rng, m) for m in masks])
        ended += int(term.sum())
    assert ended >= 4  # several final steps were checked
    envs.close()


def test_the_project_vector_env_masks_are_never_all_zero():
    venv = GeneralaVectorEnv(16, rules=SHORT, num_players=2, opponents="random", reward="win")
    venv.reset(seed=0)
    rng = np.random.default_rng(0)
    ended = 0
    for _ in range(60):
        masks = venv.action_masks()
        assert masks.any(axis=1).all()
        _, _, term, _, _ = venv.step(uniform_legal(rng, masks))
        ended += int(term.sum())
    assert ended >= 16


def test_terminal_mask_marks_every_action_and_applies_none():
    env = GeneralaEnv(rules={"lines": ["ones"]})
    env.reset(seed=0)
    _, _, term, _, info = env.step(write(env.rules, "ones"))
    assert term and info["action_mask"].all() and env.action_masks().all()
    with pytest.raises(RuntimeError, match="after the episode ended"):
        env.step(0)


# -- processes, Shimmy, AEC: docs/interop.md's last section, its examples as written ---------------
def _section_examples() -> list[str]:
    """The Python examples of docs/interop.md's section on processes, Shimmy and AEC, in order."""
    import re

    text = (ROOT / "docs" / "interop.md").read_text()
    section = text[text.index("## Processes, OpenSpiel through Shimmy") :]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def _run_example(source: str, name: str = "interop_example") -> dict:
    namespace: dict = {"__name__": name}
    exec(compile(source, "docs/interop.md", "exec"), namespace)
    return namespace


@pytest.mark.parametrize("start_method", ["spawn", "forkserver"])
def test_subproc_vec_env_workers_started_afresh_find_the_env_by_module_id(start_method):
    """SB3's SubprocVecEnv with spawn or forkserver: the example's ``"generala_env:Generala-v0"``
    makes each fresh worker import generala_env; the plain id stops them (``NameNotFound`` in
    the worker, which SB3 reports as a broken pipe)."""
    pytest.importorskip("stable_baselines3")
    import multiprocessing as mp

    if start_method not in mp.get_all_start_methods():
        pytest.skip(f"no {start_method} here")
    source = _section_examples()[0].replace('"start_method": "spawn"', f'"start_method": "{start_method}"')
    obs, masks = _run_example(source)["main"]()
    assert obs.shape == (2, gym.make("Generala-v0").observation_space.shape[0])
    assert len(masks) == 2 and all(m.dtype == bool and m.any() for m in masks)

    plain = _run_example(source.replace('"generala_env:Generala-v0"', '"Generala-v0"'))
    with pytest.raises((EOFError, ConnectionError, BrokenPipeError)):
        plain["main"]()


def test_shimmy_plays_the_openspiel_game_by_game_name_and_config():
    pytest.importorskip("pyspiel")
    pytest.importorskip("shimmy.openspiel_compatibility")
    played = _run_example(_section_examples()[1])
    assert played["env"].possible_agents == ["player_0", "player_1"]
    assert not played["env"].agents  # the game was played to its end
    assert sorted(played["returns"]) in ([-1.0, 1.0], [0.0, 0.0])  # reward="win": a sole win, or a shared one


def test_the_pettingzoo_env_is_aec_and_says_it_cannot_be_made_parallel():
    pytest.importorskip("pettingzoo")
    from pettingzoo.utils.conversions import aec_to_parallel

    from generala_env.envs.multiagent import env as aec_env

    e = aec_env(num_players=2)
    assert e.metadata["is_parallelizable"] is False
    with pytest.raises(AssertionError, match="is_parallelizable"):
        aec_to_parallel(e)
