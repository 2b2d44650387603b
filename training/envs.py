"""The training games: one builder of the vector env that SB3 learns on, for training and the benchmark.

:func:`make_envs` makes ``n_envs`` games of Generala-v0 as an SB3 ``VecEnv``, with the options
either pipeline asks for: how they are stepped (the batched env, or one env per game in this
process or in subprocesses), the reward scale, the score-margin reward of the benchmark's margin
tasks, the seeds, the monitor and the running reward normalization. ``generala train`` asks for
its config's games (:func:`training_envs`), ``generala benchmark`` for a task's
(:func:`generala_training.benchmark.run.make_venv`). Both pass the run's rule set, loaded once.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import Config, EnvConfig

if TYPE_CHECKING:
    from stable_baselines3.common.vec_env import VecEnv

    from generala_env.core.rules import RuleSet

KINDS = ("dummy", "subproc", "batched")
TRAINING_REWARDS = ("env", "margin")


def _scale_wrapper():
    import gymnasium as gym

    class RewardScale(gym.RewardWrapper):
        """Multiplies rewards by a constant for learning (evaluations use raw points)."""

        def __init__(self, env, scale: float):
            super().__init__(env)
            self.scale = scale

        def reward(self, reward):
            return reward * self.scale

    return RewardScale


def _one_game(rank: int, seed: int, reward_scale: float, monitor: bool, game: dict):
    """The maker of env ``rank`` of a ``dummy`` or ``subproc`` vector env: one Generala-v0, its
    rewards scaled, seeded ``seed + rank``; of a mix of opponents it plays entry ``rank``."""

    def _init():
        import gymnasium as gym
        from stable_baselines3.common.monitor import Monitor

        import generala_env  # noqa: F401  (registers Generala-v0)

        kwargs = dict(game)
        opp = kwargs.get("opponents")
        if kwargs.get("num_players", 1) == 1:
            kwargs["opponents"] = None
        elif isinstance(opp, list):  # a mix: each env plays one entry (an entry may itself be a list, one per seat)
            kwargs["opponents"] = opp[rank % len(opp)]
        env = _scale_wrapper()(gym.make("Generala-v0", **kwargs), reward_scale)
        if monitor:
            env = Monitor(env)
        env.reset(seed=seed + rank)
        env.action_space.seed(seed + rank)
        return env

    return _init


def _margin_envs(n_envs: int, seed: int, reward_scale: float, win_bonus: float, game: dict):
    """The batched games, rewarded with the score margin (:class:`generala_training.benchmark.rewards.MarginReward`)."""
    from gymnasium.vector import AutoresetMode

    from generala_env.adapters.sb3 import GeneralaSB3VecEnv
    from generala_env.envs.vector import GeneralaVectorEnv

    from .benchmark.rewards import MarginReward

    kwargs = dict(game)
    if isinstance(kwargs.get("opponents"), (list, tuple)):  # a list is a mix of entries, as make_sb3_vec_env reads it
        kwargs["opponent_mix"] = list(kwargs.pop("opponents"))
    games = GeneralaVectorEnv(n_envs, full_info=True, autoreset_mode=AutoresetMode.SAME_STEP, **kwargs)  # SB3's autoreset
    # GeneralaSB3VecEnv annotates venv as GeneralaVectorEnv; MarginReward answers all it asks of one (see rewards.py)
    venv = GeneralaSB3VecEnv(venv=MarginReward(games, games.illegal_penalty, win_bonus), reward_scale=reward_scale)  # type: ignore[arg-type]
    venv.seed(seed)
    return venv


def make_envs(
    n_envs: int,
    seed: int,
    *,
    kind: str = "batched",
    reward_scale: float = 1.0,
    training_reward: str = "env",
    win_bonus: float = 0.0,
    monitor: bool = True,
    normalize_reward: bool = False,
    gamma: float = 1.0,
    **game: Any,
) -> VecEnv:
    """``n_envs`` training games of Generala-v0 as an SB3 ``VecEnv``.

    :param n_envs: games stepped together
    :param seed: ``batched``: the seed of the batch's first reset; ``dummy`` and ``subproc``:
        env ``i`` is reset with ``seed * 1000 + i`` (so that runs of nearby seeds share no game)
    :param kind: ``batched`` (:class:`generala_env.adapters.sb3.GeneralaSB3VecEnv`, all games in one
        batched env), ``dummy`` (one env per game, in this process) or ``subproc`` (one per
        game, each in a forked process)
    :param reward_scale: rewards are multiplied by this for learning
    :param training_reward: ``env`` (the env's own reward) or ``margin`` (the score margin over
        the best opponent, :mod:`generala_training.benchmark.rewards`; the batched env only)
    :param win_bonus: with ``margin``: raw points added at a game's end, times +1 / 0 / -1
    :param monitor: record each game's return and length (SB3's ``Monitor`` / ``VecMonitor``)
    :param normalize_reward: scale rewards by a running estimate of the returns' spread (SB3's
        ``VecNormalize``, discounted by ``gamma``)
    :param game: Generala-v0's keyword arguments (``rules``: the run's rule set; ``opponents``:
        a name, a list of one per seat, or a list of such entries, a mix where game ``i`` plays
        entry ``i % len``; ``reward``, ``agent_seat``, ``illegal_action``, ...)
    """
    if kind not in KINDS:
        raise ValueError(f"the kind of vector env must be one of {', '.join(KINDS)}, got {kind!r}")
    if training_reward not in TRAINING_REWARDS:
        raise ValueError(f"the training reward must be one of {', '.join(TRAINING_REWARDS)}, got {training_reward!r}")
    venv: VecEnv
    if training_reward == "margin":
        if kind != "batched":
            raise ValueError("the margin training reward is computed on the batched env: it needs kind batched")
        venv = _margin_envs(n_envs, seed, reward_scale, win_bonus, game)
        if monitor:
            from stable_baselines3.common.vec_env import VecMonitor

            venv = VecMonitor(venv)
    elif kind == "batched":
        from generala_env.adapters.sb3 import make_sb3_vec_env

        venv = make_sb3_vec_env(n_envs, seed=seed, reward_scale=reward_scale, monitor=monitor, **game)
    else:
        from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

        fns = [_one_game(i, seed * 1000, reward_scale, monitor, game) for i in range(n_envs)]
        venv = SubprocVecEnv(fns, start_method="fork") if kind == "subproc" else DummyVecEnv(fns)
    if normalize_reward:
        from stable_baselines3.common.vec_env import VecNormalize

        venv = VecNormalize(venv, norm_obs=False, norm_reward=True, gamma=gamma)
    return venv


# -- generala train's games -----------------------------------------------------------------
def _with_self_play(env_cfg: EnvConfig, run: Path | None) -> EnvConfig:
    """Replace the opponent name ``self-play`` by the pool of this run's own checkpoints."""
    opp = env_cfg.opponents
    if run is None or opp is None:
        return env_cfg
    pool = f"pool:{run / 'checkpoints'}"
    swap = lambda o: pool if o == "self-play" else o  # noqa: E731
    opp = [swap(o) for o in opp] if isinstance(opp, list) else swap(opp)
    return dataclasses.replace(env_cfg, opponents=opp)


def training_envs(cfg: Config, run: Path | None = None, rules: RuleSet | None = None, trust_zip: bool = False) -> VecEnv:
    """The training games of a ``generala train`` config (:func:`make_envs`): ``env:`` and
    ``vec_env:``, seeded with ``seed``, their rewards normalized where ``algo.normalize_reward``
    asks (the evaluations play their own, unscaled games). ``self-play`` opponents are the
    checkpoints of the run folder ``run``, played from their twins (``step_N.safetensors``);
    ``trust_zip`` lets the opponents load SB3 zips (a run saved before twins were written).
    ``rules``: the run's rule set (``None``: ``env.rules``)."""
    from generala_env.envs.opponents import Trust

    game = dataclasses.asdict(_with_self_play(cfg.env, run))
    reward_scale = game.pop("reward_scale")
    if rules is not None:
        game["rules"] = rules
    return make_envs(
        cfg.vec_env.n_envs,
        cfg.seed,
        kind=cfg.vec_env.kind,
        reward_scale=reward_scale,
        normalize_reward=cfg.algo.normalize_reward,
        gamma=cfg.algo.gamma,
        opponent_trust=Trust.PROGRAM.with_zip(trust_zip),
        **game,
    )
