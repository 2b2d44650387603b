"""TorchRL's PPO with action masks on ``Generala-v0``.

    pip install -e ".[train,examples]"        # torchrl 0.14, tensordict 0.14
    python examples/torchrl_masked_ppo.py --frames 2000000

``gym.make("Generala-v0", obs_type="dict")`` gives ``{"observation", "action_mask"}``;
TorchRL's ``GymEnv`` turns them into two tensordict entries of those names. Two pieces
read the mask:

- the ``ActionMask`` transform puts it into the env's action spec, so anything that
  samples the spec (a random policy, ``check_env_specs``) plays legal actions only;
- the policy is a ``ProbabilisticActor`` over ``MaskedCategorical``, whose ``in_keys`` take
  the logits and ``action_mask``, so illegal actions have probability 0 when acting and
  in the PPO update (the mask is stored with each step of the rollout).

The rest is TorchRL's PPO tutorial: a collector, GAE, ``ClipPPOLoss`` and minibatches drawn
without replacement. Hyperparameters: the project's from-scratch recipe
(``configs/ppo_classic_scratch.yaml``) where it maps: 64 steps a game a rollout,
8 minibatches, 10 epochs, lr 3e-4, gamma 1, GAE lambda 0.1, clip 0.2, no entropy bonus,
rewards x 0.02, 256-256 ReLU MLPs with LayerNorm. Each game is its own ``GeneralaEnv``; a
``SerialEnv`` steps them one after another, 16 by default rather than the recipe's 256
games of the batched env.
"""

from __future__ import annotations

import argparse

import torch
from tensordict.nn import TensorDictModule
from torch import nn
from torchrl.collectors import Collector
from torchrl.data import LazyTensorStorage, ReplayBuffer
from torchrl.data.replay_buffers.samplers import SamplerWithoutReplacement
from torchrl.envs import (
    ActionMask,
    Compose,
    DTypeCastTransform,
    GymEnv,
    RewardScaling,
    SerialEnv,
    TransformedEnv,
)
from torchrl.envs.utils import ExplorationType, set_exploration_type
from torchrl.modules import MaskedCategorical, ProbabilisticActor, ValueOperator
from torchrl.objectives import ClipPPOLoss
from torchrl.objectives.value import GAE

import generala_env  # noqa: F401  (registers Generala-v0)


def make_env(rules: str, reward_scale: float = 1.0) -> TransformedEnv:
    env = GymEnv("Generala-v0", rules=rules, obs_type="dict", categorical_action_encoding=True)
    # MaskedCategorical wants a bool mask; the env's is int8
    transforms = [DTypeCastTransform(torch.int8, torch.bool, in_keys=["action_mask"]), ActionMask()]
    if reward_scale != 1.0:
        transforms.append(RewardScaling(loc=0.0, scale=reward_scale))
    return TransformedEnv(env, Compose(*transforms))


def mlp(n_in: int, n_out: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Linear(n_in, 256),
        nn.LayerNorm(256),
        nn.ReLU(),
        nn.Linear(256, 256),
        nn.LayerNorm(256),
        nn.ReLU(),
        nn.Linear(256, n_out),
    )


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--frames", type=int, default=2_000_000, help="training steps over all games")
    p.add_argument("--n-envs", type=int, default=16, help="games side by side")
    p.add_argument("--n-steps", type=int, default=64, help="steps per game per rollout")
    p.add_argument("--rules", default="classic")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-games", type=int, default=100)
    args = p.parse_args(argv)
    for name in ("frames", "n_envs", "n_steps", "eval_games"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def main(argv=None) -> dict:
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    env = SerialEnv(args.n_envs, lambda: make_env(args.rules, reward_scale=0.02))
    env.set_seed(args.seed)
    n_obs = env.observation_spec["observation"].shape[-1]
    n_actions = env.action_spec.space.n

    logits = TensorDictModule(mlp(n_obs, n_actions), in_keys=["observation"], out_keys=["logits"])
    policy = ProbabilisticActor(
        logits,
        in_keys={"logits": "logits", "mask": "action_mask"},
        spec=env.full_action_spec["action"],
        distribution_class=MaskedCategorical,
        return_log_prob=True,
    )
    value = ValueOperator(mlp(n_obs, 1), in_keys=["observation"])

    frames_per_batch = args.n_envs * args.n_steps
    minibatch = max(1, frames_per_batch // 8)  # 8 minibatches a rollout
    collector = Collector(
        env,
        policy,
        frames_per_batch=frames_per_batch,
        total_frames=max(args.frames, frames_per_batch),
        auto_register_policy_transforms=True,
    )
    advantage = GAE(gamma=1.0, lmbda=0.1, value_network=value, average_gae=True)
    loss_module = ClipPPOLoss(policy, value, clip_epsilon=0.2, entropy_coeff=0.0, critic_coeff=0.5, loss_critic_type="l2")
    optimizer = torch.optim.Adam(loss_module.parameters(), lr=3e-4)
    buffer = ReplayBuffer(storage=LazyTensorStorage(frames_per_batch), sampler=SamplerWithoutReplacement(), batch_size=minibatch)

    frames = 0
    for data in collector:
        frames += data.numel()
        for _ in range(10):  # epochs
            with torch.no_grad():
                advantage(data)
            buffer.extend(data.reshape(-1))
            for _ in range(frames_per_batch // minibatch):
                losses = loss_module(buffer.sample())
                loss = losses["loss_objective"] + losses["loss_critic"] + losses["loss_entropy"]
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(loss_module.parameters(), 0.5)
                optimizer.step()
        collector.update_policy_weights_()
    collector.shutdown()

    eval_env = make_env(args.rules)  # unscaled: a game's return is its final total
    eval_env.set_seed(args.seed + 1)
    totals, illegal = [], 0
    with set_exploration_type(ExplorationType.DETERMINISTIC), torch.no_grad():
        for _ in range(args.eval_games):
            game = eval_env.rollout(10_000, policy)  # stops at the end of the game
            totals.append(game["next", "reward"].sum().item())
            legal = game["action_mask"].gather(-1, game["action"].unsqueeze(-1))
            illegal += int((~legal).sum())
    mean = sum(totals) / len(totals)
    print(f"TorchRL masked PPO after {frames} steps: mean final total {mean:.2f} over {len(totals)} games")
    return {"timesteps": frames, "mean_score": mean, "games": len(totals), "illegal_actions": illegal}


if __name__ == "__main__":
    main()
