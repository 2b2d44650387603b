"""RLlib's PPO with action masks on ``Generala-v0`` (RLlib's new API stack).

    python -m venv .venv-rllib && . .venv-rllib/bin/activate
    pip install torch==2.13.0 && pip install "ray[rllib]==2.60.0" && pip install -e .
    python examples/rllib_masked_ppo.py --timesteps 1000000

A separate environment: ``ray[rllib]`` 2.60.0 pins ``gymnasium==1.2.2``, so installing it
next to this project's other extras moves gymnasium back from 1.4 (which they and
``pip install -e ".[test]"`` resolve to). ``Generala-v0`` itself works with either.

RLlib's shipped masking module (``ActionMaskingTorchRLModule``, from RLlib's examples)
reads a dict observation with the keys ``"observations"`` and ``"action_mask"``, and adds
log(mask) (clamped to RLlib's FLOAT_MIN) to the logits when acting, when computing values
and in the update. ``gym.make("Generala-v0", obs_type="dict")`` gives
``{"observation", "action_mask"}`` (the PettingZoo names); ``RLlibKeys`` renames them.

Hyperparameters: the project's from-scratch recipe (``configs/ppo_classic_scratch.yaml``)
where it maps: 16,384 steps a rollout (here 8 games x 2048 steps: RLlib steps single envs,
in the driver with ``num_env_runners=0``), 8 minibatches, 10 epochs, lr 3e-4, gamma 1,
GAE lambda 0.1, clip 0.2, no entropy bonus, rewards x 0.02, 256-256 ReLU (RLlib's default
MLP has no LayerNorm).
"""

from __future__ import annotations

import argparse
import operator
from functools import partial

import gymnasium as gym
import numpy as np
import ray
import torch
from gymnasium import spaces
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.examples.rl_modules.classes.action_masking_rlm import (
    ActionMaskingTorchRLModule,
)
from ray.tune.registry import register_env

import generala_env  # noqa: F401  (registers Generala-v0)

ENV_NAME = "generala-masked"


class RLlibKeys(gym.ObservationWrapper):
    """``{"observation", "action_mask"}`` as RLlib's masking module's ``{"observations", "action_mask"}``."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        space = env.observation_space
        self.observation_space = spaces.Dict({"observations": space["observation"], "action_mask": space["action_mask"]})

    def observation(self, observation):
        return {"observations": observation["observation"], "action_mask": observation["action_mask"]}


def make_env(config: dict) -> gym.Env:
    env = RLlibKeys(gym.make("Generala-v0", rules=config.get("rules", "classic"), obs_type="dict"))
    scale = config.get("reward_scale", 1.0)
    return gym.wrappers.TransformReward(env, partial(operator.mul, scale)) if scale != 1.0 else env


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--timesteps", type=int, default=1_000_000, help="training steps (at least one rollout)")
    p.add_argument("--n-envs", type=int, default=8, help="games side by side")
    p.add_argument("--n-steps", type=int, default=2048, help="steps per game per rollout")
    p.add_argument("--rules", default="classic")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-games", type=int, default=100)
    args = p.parse_args(argv)
    for name in ("timesteps", "n_envs", "n_steps", "eval_games"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def evaluate(module, rules: str, games: int, seed: int) -> tuple[float, int]:
    """Mean final total of ``games`` games, the module playing its most probable legal action,
    and how many illegal actions it played (none, with the masks)."""
    env = make_env({"rules": rules})
    totals, illegal = [], 0
    for g in range(games):
        obs, _ = env.reset(seed=seed if g == 0 else None)
        total, done = 0.0, False
        while not done:
            batch = {Columns.OBS: {k: torch.as_tensor(v[None], dtype=torch.float32) for k, v in obs.items()}}
            with torch.no_grad():
                logits = module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS]
            obs, reward, terminated, truncated, info = env.step(int(logits.argmax()))
            total += reward
            illegal += bool(info["illegal_action"])
            done = terminated or truncated
        totals.append(total)
    return float(np.mean(totals)), illegal


def main(argv=None) -> dict:
    args = parse_args(argv)
    register_env(ENV_NAME, make_env)
    rollout = args.n_envs * args.n_steps
    config = (
        PPOConfig()
        .environment(ENV_NAME, env_config={"rules": args.rules, "reward_scale": 0.02})
        .env_runners(num_env_runners=0, num_envs_per_env_runner=args.n_envs, rollout_fragment_length=args.n_steps)
        .training(
            train_batch_size_per_learner=rollout,
            minibatch_size=max(1, rollout // 8),
            num_epochs=10,
            lr=3e-4,
            gamma=1.0,
            lambda_=0.1,
            clip_param=0.2,
            entropy_coeff=0.0,
            vf_loss_coeff=0.5,
        )
        .rl_module(
            rl_module_spec=RLModuleSpec(
                module_class=ActionMaskingTorchRLModule,
                model_config={"fcnet_hiddens": [256, 256], "fcnet_activation": "relu"},
            )
        )
        .debugging(seed=args.seed)
    )
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    try:
        algo = config.build_algo()
        steps = 0
        while steps < args.timesteps:
            result = algo.train()
            steps = int(result["num_env_steps_sampled_lifetime"])
        score, illegal = evaluate(algo.get_module(), args.rules, args.eval_games, seed=args.seed + 1)
        algo.stop()
    finally:
        ray.shutdown()
    print(f"RLlib masked PPO after {steps} steps: mean final total {score:.2f} over {args.eval_games} games")
    return {"timesteps": steps, "mean_score": score, "games": args.eval_games, "illegal_actions": illegal}


if __name__ == "__main__":
    main()
