"""Plain stable-baselines3 DQN or PPO on ``Generala-v0``: no action masks.

    pip install -e ".[train]"
    python examples/sb3_dqn_ppo.py --algo ppo --timesteps 2000000
    python examples/sb3_dqn_ppo.py --algo dqn --timesteps 2000000

These algorithms do not read masks, so the policy can pick an illegal action (a line
already written, or a hold with no rolls left). The env then leaves the game as it was,
gives the ``illegal_penalty`` (-1) and sets ``info["illegal_action"]``; after
``max_illegal_in_a_row`` (default 100) illegal actions in a row it truncates the episode,
so even an untrained policy's episodes end and ``evaluate_policy`` returns. The policy
learns the rules only from the penalty; a masked one (``sb3_maskable_ppo.py``) never
tries an illegal action.

PPO takes the from-scratch recipe where it maps (``configs/ppo_classic_scratch.yaml``:
256 games x 64 steps, 8 minibatches, 10 epochs, lr 3e-4, gamma 1, GAE lambda 0.1, rewards
x 0.02, 256-256 ReLU; SB3's ``MlpPolicy`` has no LayerNorm). DQN has no recipe in the
project: SB3's defaults with the same network, reward scale and gamma, a 100k-step buffer,
learning from step 1000 on, and exploration annealed over the first 20% of the steps.

The evaluation prints the mean final total and the share of illegal actions.
"""

from __future__ import annotations

import argparse
import operator
from functools import partial

import gymnasium as gym
import numpy as np
from stable_baselines3 import DQN, PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy
from torch import nn

import generala_env  # noqa: F401  (registers Generala-v0)


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--algo", choices=("ppo", "dqn"), default="ppo")
    p.add_argument("--timesteps", type=int, default=2_000_000)
    p.add_argument("--n-envs", type=int, default=None, help="games side by side (PPO: 256, DQN: 8)")
    p.add_argument("--n-steps", type=int, default=64, help="PPO: steps per game per rollout")
    p.add_argument("--rules", default="classic")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-games", type=int, default=100)
    p.add_argument("--save", default=None, help="where to save the model (.zip)")
    args = p.parse_args(argv)
    if args.n_envs is None:
        args.n_envs = 256 if args.algo == "ppo" else 8
    for name in ("timesteps", "n_envs", "n_steps", "eval_games"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def build(args, envs):
    policy_kwargs = {"net_arch": [256, 256], "activation_fn": nn.ReLU}
    if args.algo == "ppo":
        rollout = args.n_envs * args.n_steps
        return PPO(
            "MlpPolicy",
            envs,
            learning_rate=3e-4,
            n_steps=args.n_steps,
            batch_size=max(1, rollout // 8),
            n_epochs=10,
            gamma=1.0,
            gae_lambda=0.1,
            clip_range=0.2,
            ent_coef=0.0,
            policy_kwargs=policy_kwargs,
            seed=args.seed,
        )
    return DQN(
        "MlpPolicy",
        envs,
        learning_rate=1e-4,
        buffer_size=100_000,
        learning_starts=min(1000, args.timesteps // 2),
        gamma=1.0,
        exploration_fraction=0.2,
        policy_kwargs=policy_kwargs,
        seed=args.seed,
    )


def main(argv=None) -> dict:
    args = parse_args(argv)
    env_kwargs = {"rules": args.rules}
    # Monitor (inside make_vec_env) records the unscaled rewards; the learner sees them x 0.02
    envs = make_vec_env(
        "Generala-v0",
        n_envs=args.n_envs,
        seed=args.seed,
        env_kwargs=env_kwargs,
        wrapper_class=gym.wrappers.TransformReward,
        wrapper_kwargs={"func": partial(operator.mul, 0.02)},
    )
    model = build(args, envs)
    model.learn(total_timesteps=args.timesteps)
    if args.save:
        model.save(args.save)

    totals, steps, illegal = [], [0], [0]

    def count(local_vars, _globals):  # called by evaluate_policy after every step
        info = local_vars["info"]
        steps[0] += 1
        illegal[0] += bool(info["illegal_action"])
        if local_vars["done"]:
            totals.append(int(info["totals"][info["seat"]]))

    eval_env = make_vec_env("Generala-v0", n_envs=1, seed=args.seed + 1, env_kwargs=env_kwargs)
    evaluate_policy(model, eval_env, n_eval_episodes=args.eval_games, deterministic=True, callback=count)
    mean, illegal_share = float(np.mean(totals)), illegal[0] / steps[0]
    print(
        f"{args.algo.upper()} after {model.num_timesteps} steps: mean final total {mean:.2f} over {len(totals)} games, "
        f"{illegal_share:.1%} of its actions illegal"
    )
    return {"timesteps": model.num_timesteps, "mean_score": mean, "games": len(totals), "illegal_actions": illegal[0], "illegal_share": illegal_share}


if __name__ == "__main__":
    main()
