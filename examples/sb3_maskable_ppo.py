"""MaskablePPO (sb3-contrib) on ``Generala-v0``, with the env's action masks.

    pip install -e ".[train]"
    python examples/sb3_maskable_ppo.py --timesteps 2000000

MaskablePPO asks every env for ``action_masks()``; ``GeneralaEnv`` has that method, so the
envs come from SB3's own ``make_vec_env`` as for any Gymnasium id, and the policy only ever
picks legal actions. The hyperparameters are the project's from-scratch recipe
(``configs/ppo_classic_scratch.yaml``): 256 games x 64 steps a rollout, 8 minibatches,
10 epochs, lr 3e-4, gamma 1, GAE lambda 0.1, no entropy bonus, rewards x 0.02, and a
256-256 ReLU network with LayerNorm (``generala_training.policies.LayerNormMaskablePolicy``). The
recipe reached 95.9% of the optimal player's mean after 6.5M steps; it ran on the batched
env (``generala_env.adapters.sb3.make_sb3_vec_env``), which steps all games at once and is what
``generala train`` uses. Here each game is its own ``GeneralaEnv`` in a ``DummyVecEnv``.

Evaluation: sb3-contrib's maskable ``evaluate_policy`` on unscaled rewards, so an episode's
return is the final total of the sheet.
"""

from __future__ import annotations

import argparse
import operator
from functools import partial

import gymnasium as gym
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.evaluation import evaluate_policy
from stable_baselines3.common.env_util import make_vec_env
from torch import nn

import generala_env  # noqa: F401  (registers Generala-v0)
from generala_training.policies import LayerNormMaskablePolicy


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--timesteps", type=int, default=12_000_000, help="training steps (the recipe's budget by default)")
    p.add_argument("--n-envs", type=int, default=256, help="games played side by side")
    p.add_argument("--n-steps", type=int, default=64, help="steps per game per rollout")
    p.add_argument("--rules", default="classic")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-games", type=int, default=100)
    p.add_argument("--save", default=None, help="where to save the model (.zip)")
    args = p.parse_args(argv)
    for name in ("timesteps", "n_envs", "n_steps", "eval_games"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def main(argv=None) -> dict:
    args = parse_args(argv)
    env_kwargs = {"rules": args.rules}
    # Monitor (inside make_vec_env) records the unscaled points; the learner sees them x 0.02
    envs = make_vec_env(
        "Generala-v0",
        n_envs=args.n_envs,
        seed=args.seed,
        env_kwargs=env_kwargs,
        wrapper_class=gym.wrappers.TransformReward,
        wrapper_kwargs={"func": partial(operator.mul, 0.02)},
    )
    rollout = args.n_envs * args.n_steps
    model = MaskablePPO(
        LayerNormMaskablePolicy,
        envs,
        learning_rate=3e-4,
        n_steps=args.n_steps,
        batch_size=max(1, rollout // 8),  # 8 minibatches a rollout
        n_epochs=10,
        gamma=1.0,
        gae_lambda=0.1,
        clip_range=0.2,
        ent_coef=0.0,
        policy_kwargs={"net_arch": [256, 256], "activation_fn": nn.ReLU},
        seed=args.seed,
        verbose=0,
    )
    model.learn(total_timesteps=args.timesteps)
    if args.save:
        model.save(args.save)

    illegal = [0]

    def count(local_vars, _globals):  # called by evaluate_policy after every step
        illegal[0] += bool(local_vars["info"]["illegal_action"])

    eval_env = make_vec_env("Generala-v0", n_envs=1, seed=args.seed + 1, env_kwargs=env_kwargs)
    returns, _ = evaluate_policy(model, eval_env, n_eval_episodes=args.eval_games, deterministic=True, return_episode_rewards=True, callback=count)
    mean = sum(returns) / len(returns)
    print(f"MaskablePPO after {model.num_timesteps} steps: mean final total {mean:.2f} over {len(returns)} games")
    return {"timesteps": model.num_timesteps, "mean_score": mean, "games": len(returns), "illegal_actions": illegal[0]}


if __name__ == "__main__":
    main()
