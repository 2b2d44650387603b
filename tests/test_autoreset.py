"""The vector env's autoreset modes, Gymnasium 1.x's three: in each mode ``gym.make_vec("Generala-v0")``
is ``gymnasium.vector.SyncVectorEnv`` of ``gym.make("Generala-v0")`` envs seeded ``s + i``, step for
step; and every Gymnasium vector wrapper that fits a Box observation and a Discrete action runs on
the default ``make_vec`` (NEXT_STEP, Gymnasium's own default) through the end of its games."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.wrappers import vector as vw

import generala_env  # noqa: F401  (registers Generala-v0)
from generala_env.core.game import OPEN
from generala_env.envs.vector import GeneralaVectorEnv, uniform_legal

SHORT = {"base": "classic", "lines": ["ones", "twos", "fours", "generala"]}  # games of 4 turns: many ends in few steps
MODES = [pytest.param(m, id=m.value) for m in AutoresetMode]
HOLD_ALL = 31  # never legal: keeping all five dice is no reroll


def actions_with_illegal_runs(rng, masks, streaks):
    """Random legal actions; a game sometimes starts a run of illegal ones (``HOLD_ALL``), kept up
    for ``streaks[i]`` more steps, so that the cap on illegal actions in a row truncates games."""
    actions = uniform_legal(rng, masks)
    start = (streaks == 0) & (rng.random(len(masks)) < 0.05)
    streaks[start] = 3
    running = streaks > 0
    actions[running] = HOLD_ALL
    streaks[running] -= 1
    return actions


def flagged_rows_agree(a: dict, b: dict, key: str) -> None:
    """``a[key]`` and ``b[key]`` agree for every game that gave the key in ``b``."""
    rows = np.asarray(b["_" + key], dtype=bool)
    np.testing.assert_array_equal(np.asarray(a[key])[rows], np.asarray(b[key])[rows], err_msg=key)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"rules": SHORT}, id="1p"),
        pytest.param({"rules": SHORT, "num_players": 2, "opponents": "random", "agent_seat": "random", "reward": "win"}, id="2p-random"),
    ],
)
def test_each_mode_is_sync_vector_env_of_single_envs(mode, kwargs):
    n, seed = 4, 21
    kwargs = dict(kwargs, max_illegal_in_a_row=3)
    venv = gym.make_vec("Generala-v0", num_envs=n, autoreset_mode=mode, full_info=True, **kwargs)
    sync = SyncVectorEnv([lambda: gym.make("Generala-v0", **kwargs) for _ in range(n)], autoreset_mode=mode)
    assert venv.metadata["autoreset_mode"] == sync.metadata["autoreset_mode"] == mode and venv.unwrapped.autoreset_mode == mode
    obs, info = venv.reset(seed=seed)
    obs_s, info_s = sync.reset(seed=seed)
    np.testing.assert_array_equal(obs, obs_s)
    flagged_rows_agree(info, info_s, "action_mask")
    rng, streaks = np.random.default_rng(seed), np.zeros(n, dtype=int)
    ends = {"terminated": 0, "truncated": 0}
    after_end = 0  # NEXT_STEP: steps that started a game anew
    done = np.zeros(n, dtype=bool)
    for t in range(160):
        masks = venv.unwrapped.action_masks()
        np.testing.assert_array_equal(masks, np.stack(sync.call("action_masks")), err_msg=f"step {t}: masks")
        actions = actions_with_illegal_runs(rng, masks, streaks)
        obs, reward, term, trunc, info = venv.step(actions)
        obs_s, reward_s, term_s, trunc_s, info_s = sync.step(actions)
        for got, want, what in ((obs, obs_s, "observations"), (reward, reward_s, "rewards"), (term, term_s, "terminations"), (trunc, trunc_s, "truncations")):
            np.testing.assert_array_equal(got, want, err_msg=f"step {t}: {what}")
        flagged_rows_agree(info, info_s, "action_mask")
        if mode == AutoresetMode.NEXT_STEP:
            assert (reward[done] == 0).all() and not (term | trunc)[done].any()  # the step after an end starts a new game
            after_end += int(done.sum())
        if mode == AutoresetMode.SAME_STEP:
            for i in np.flatnonzero(term | trunc):
                np.testing.assert_array_equal(info["final_obs"][i], info_s["final_obs"][i], err_msg=f"step {t}: final observation {i}")
                assert info["final_info"]["winner"][i] == info_s["final_info"]["winner"][i]
        else:  # the end is seen at its step, with its winner
            flagged_rows_agree(info, info_s, "winner")
        done = term | trunc
        ends["terminated"] += int(term.sum())
        ends["truncated"] += int(trunc.sum())
        if mode == AutoresetMode.DISABLED and done.any():
            obs, info = venv.reset(options={"reset_mask": done.copy()})
            obs_s, info_s = sync.reset(options={"reset_mask": done.copy()})
            np.testing.assert_array_equal(obs, obs_s, err_msg=f"step {t}: partial reset")
            flagged_rows_agree(info, info_s, "action_mask")
            done[:] = False
    assert ends["terminated"] >= n and ends["truncated"] >= 2, ends
    assert mode != AutoresetMode.NEXT_STEP or after_end >= n


def test_the_mode_through_make_vec_and_the_constructor():
    assert gym.make_vec("Generala-v0", num_envs=2).metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP  # Gymnasium's default
    for given in (AutoresetMode.SAME_STEP, "SameStep"):
        envs = gym.make_vec("Generala-v0", num_envs=2, autoreset_mode=given)
        assert envs.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP and envs.autoreset_mode is AutoresetMode.SAME_STEP
    assert GeneralaVectorEnv(2, autoreset_mode="Disabled").metadata["autoreset_mode"] is AutoresetMode.DISABLED
    assert GeneralaVectorEnv.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP  # one env's mode is its own
    # Gymnasium's own vector envs take it in vector_kwargs (make_vec passes a vector entry point keywords only)
    sync = gym.make_vec("Generala-v0", num_envs=2, vectorization_mode="sync", vector_kwargs={"autoreset_mode": AutoresetMode.DISABLED})
    assert sync.metadata["autoreset_mode"] is AutoresetMode.DISABLED
    with pytest.raises(gym.error.Error, match="only through kwargs"):
        gym.make_vec("Generala-v0", num_envs=2, vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP})
    for bad in ("same", "SAME_STEP ", 1, None):
        with pytest.raises(ValueError, match="autoreset_mode must be a gymnasium.vector.AutoresetMode or one of 'NextStep', 'SameStep', 'Disabled'"):
            GeneralaVectorEnv(2, autoreset_mode=bad)


def test_disabled_refuses_to_step_an_ended_game_until_it_is_reset():
    venv = GeneralaVectorEnv(2, rules={"lines": ["ones"]}, autoreset_mode="Disabled")
    venv.reset(seed=0)
    ones = 32  # the one line: writing it ends the game
    _, _, term, _, info = venv.step(np.array([ones, 0]))
    assert term.tolist() == [True, False] and info["game_over"].tolist() == [True, False]
    assert venv.action_masks()[0].all()  # an ended game marks every action, as the single env's
    with pytest.raises(RuntimeError, match=r"games \[0\] ended at the last step and autoreset_mode is DISABLED: reset them first"):
        venv.step(np.array([ones, ones]))
    venv.reset(options={"reset_mask": np.array([True, False])})
    _, reward, term, _, _ = venv.step(np.array([ones, ones]))
    assert term.tolist() == [True, True] and (reward >= 0).all()


def test_next_step_ignores_the_action_of_the_step_that_starts_a_game():
    venv = GeneralaVectorEnv(1, rules={"lines": ["ones", "twos"]}, autoreset_mode="NextStep")
    venv.reset(seed=3)
    venv.step(np.array([32]))
    _, _, term, _, _ = venv.step(np.array([33]))  # both lines written: the game ends
    assert term[0] and venv.game_view(0).over  # the ended game is seen as it ended
    _, reward, term, trunc, info = venv.step(np.array([HOLD_ALL]))  # an illegal action, ignored
    assert reward[0] == 0.0 and not term[0] and not trunc[0] and not info["illegal_action"][0] and venv.illegal_streak[0] == 0
    assert not venv.game_view(0).over and (venv.game_view(0).sheets == OPEN).all()  # a new game


# -- Gymnasium's vector wrappers on the default make_vec ---------------------------------------
WRAPPERS = {
    "RecordEpisodeStatistics": lambda e, tmp: vw.RecordEpisodeStatistics(e),
    "DictInfoToList": lambda e, tmp: vw.DictInfoToList(e),
    "NormalizeObservation": lambda e, tmp: vw.NormalizeObservation(e),
    "NormalizeReward": lambda e, tmp: vw.NormalizeReward(e),
    "TransformObservation": lambda e, tmp: vw.TransformObservation(e, lambda o: o / 2),
    "VectorizeTransformObservation": lambda e, tmp: vw.VectorizeTransformObservation(
        e, gym.wrappers.TransformObservation, func=lambda o: -o, observation_space=e.single_observation_space
    ),
    "FlattenObservation": lambda e, tmp: vw.FlattenObservation(e),
    "ReshapeObservation": lambda e, tmp: vw.ReshapeObservation(e, (1, e.single_observation_space.shape[0])),
    "RescaleObservation": lambda e, tmp: vw.RescaleObservation(e, 0.0, 1.0),
    "DtypeObservation": lambda e, tmp: vw.DtypeObservation(e, np.float64),
    "TransformAction": lambda e, tmp: vw.TransformAction(e, lambda a: a),
    "VectorizeTransformAction": lambda e, tmp: vw.VectorizeTransformAction(
        e, gym.wrappers.TransformAction, func=lambda a: a, action_space=e.single_action_space
    ),
    "TransformReward": lambda e, tmp: vw.TransformReward(e, lambda r: r / 50.0),
    "ClipReward": lambda e, tmp: vw.ClipReward(e, 0.0, 10.0),
    "VectorizeTransformReward": lambda e, tmp: vw.VectorizeTransformReward(e, gym.wrappers.TransformReward, func=lambda r: r + 1.0),
    "NumpyToTorch": lambda e, tmp: vw.NumpyToTorch(e),
    "RecordVideo": lambda e, tmp: vw.RecordVideo(e, str(tmp / "videos"), episode_trigger=lambda k: k == 0, disable_logger=True),
}
NEEDS = {"NumpyToTorch": ("torch", "array_api_compat"), "RecordVideo": ("moviepy",)}


@pytest.mark.parametrize("name", list(WRAPPERS))
def test_gymnasium_vector_wrapper_runs_through_game_ends(name, tmp_path):
    for package in NEEDS.get(name, ()):
        pytest.importorskip(package)
    render = {"render_mode": "rgb_array", "render_scale": 1} if name == "RecordVideo" else {}
    base = gym.make_vec("Generala-v0", num_envs=3, rules={"lines": ["ones", "generala"]}, **render)
    assert base.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    envs = WRAPPERS[name](base, tmp_path)
    envs.reset(seed=0)
    rng = np.random.default_rng(0)
    ended = np.zeros(3, dtype=int)
    for _ in range(40):
        actions = uniform_legal(rng, base.unwrapped.action_masks())
        obs, reward, term, trunc, info = envs.step(actions)
        ended += np.asarray(term, dtype=int)
        if name == "RecordEpisodeStatistics" and np.asarray(term).any():
            assert info["_episode"].tolist() == np.asarray(term).tolist() and (info["episode"]["l"][np.asarray(term)] >= 2).all()
    assert (ended >= 2).all(), ended  # every game ended and went on
    assert envs.observation_space.contains(obs.numpy() if name == "NumpyToTorch" else obs)
    envs.close()
    if name == "RecordVideo":
        assert list((tmp_path / "videos").glob("*.mp4"))


def test_human_rendering_wrapper():
    pytest.importorskip("pygame")
    envs = vw.HumanRendering(gym.make_vec("Generala-v0", num_envs=2, rules={"lines": ["ones"]}, render_mode="rgb_array"))
    envs.reset(seed=0)
    for _ in range(3):
        envs.step(uniform_legal(np.random.default_rng(0), envs.unwrapped.action_masks()))
    envs.close()


def test_the_sb3_adapter_asks_for_same_step_and_refuses_another():
    pytest.importorskip("stable_baselines3")
    from generala_env.adapters.sb3 import GeneralaSB3VecEnv

    assert GeneralaSB3VecEnv(2).venv.autoreset_mode is AutoresetMode.SAME_STEP
    with pytest.raises(ValueError, match="make the vector env with autoreset_mode=AutoresetMode.SAME_STEP, not NEXT_STEP"):
        GeneralaSB3VecEnv(venv=GeneralaVectorEnv(2))
