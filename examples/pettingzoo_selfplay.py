"""Self-play on the PettingZoo env ``generala_env.envs.multiagent``: two seats, one masked PPO policy.

    pip install -e ".[train,multiagent]"
    python examples/pettingzoo_selfplay.py --steps 1000000

Both seats of a two-player game are played by the same network: the observation is always
from the acting seat's point of view (its own sheet first), so one policy fits every seat.
The AEC loop (``agent_iter`` / ``last`` / ``step``) gives each agent, when it is next
selected, the reward earned since its own last action; so a seat's step is rewarded at
that seat's next turn, or at the final ``last()`` that every agent gets when the game
ends. Each seat's steps form their own trajectory for GAE, with the other seat's moves
part of the environment.

Illegal actions never happen: logits of actions outside ``action_mask`` are set to -1e8.
(The env's wrappers would end the game on one, with ``illegal_reward`` to the offender.)

``--reward win`` (default) gives +1 / 0 / -1 at the end, so the seats compete;
``--reward score`` gives each seat its own points. The update is PPO with the project's
from-scratch recipe where it maps (10 epochs, 8 minibatches, lr 3e-4, gamma 1, GAE lambda
0.1, clip 0.2, 256-256 ReLU MLPs with LayerNorm); rewards are not scaled under ``win``.

The evaluation plays the greedy policy (the most probable legal action) against the
project's ``greedy`` agent, seats alternating, and prints its score (win 1, tie 0.5).
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical

import generala_agents as agents
from generala_env.envs.multiagent import env as generala_aec


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


class Policy(nn.Module):
    def __init__(self, n_obs: int, n_actions: int):
        super().__init__()
        self.actor, self.critic = mlp(n_obs, n_actions), mlp(n_obs, 1)

    def dist(self, obs: torch.Tensor, mask: torch.Tensor) -> Categorical:
        return Categorical(logits=self.actor(obs).masked_fill(~mask, -1e8))


def collect(env, policy: Policy, steps: int, reward_scale: float, seed: int | None = None) -> tuple[dict, int]:
    """Whole self-play games until at least ``steps`` actions; the rollout as tensors.
    ``seed`` seeds the first game's reset; later games go on drawing from its generator."""
    keys = ("obs", "mask", "action", "logp", "value", "reward", "done", "next")
    buf: dict[str, list] = {k: [] for k in keys}
    games = 0
    while len(buf["obs"]) < steps:
        env.reset(seed=seed if games == 0 else None)
        pending: dict[str, int] = {}  # agent -> its last step, waiting for its reward
        for agent in env.agent_iter():
            obs, reward, termination, truncation, _ = env.last()
            if agent in pending:
                buf["reward"][pending[agent]] += reward * reward_scale
            if termination or truncation:
                if agent in pending:
                    buf["done"][pending.pop(agent)] = True
                env.step(None)
                continue
            x = torch.as_tensor(obs["observation"])
            m = torch.as_tensor(obs["action_mask"], dtype=torch.bool)
            with torch.no_grad():
                d, value = policy.dist(x, m), policy.critic(x)
                action = d.sample()
            if agent in pending:  # this seat's previous step leads here
                buf["next"][pending[agent]] = len(buf["obs"])
            pending[agent] = len(buf["obs"])
            for k, v in zip(keys, (x, m, action, d.log_prob(action), value.squeeze(), 0.0, False, -1), strict=True):
                buf[k].append(v)
            env.step(int(action))
        games += 1
    rollout = {k: torch.stack(buf[k]) for k in ("obs", "mask", "action", "logp", "value")}
    rollout.update({k: torch.tensor(buf[k]) for k in ("reward", "done", "next")})
    return rollout, games


def advantages(r: dict, gamma: float, lam: float) -> torch.Tensor:
    """GAE along each seat's own trajectory (``next`` links a step to the seat's next one)."""
    adv = torch.zeros(len(r["reward"]))
    for i in reversed(range(len(adv))):
        nxt = int(r["next"][i])
        going_on = nxt >= 0 and not bool(r["done"][i])
        next_value, next_adv = (r["value"][nxt], adv[nxt]) if going_on else (0.0, 0.0)
        delta = r["reward"][i] + gamma * next_value - r["value"][i]
        adv[i] = delta + gamma * lam * next_adv
    return adv


def update(policy: Policy, optimizer, r: dict, epochs: int = 10, minibatches: int = 8, clip: float = 0.2) -> None:
    adv = advantages(r, gamma=1.0, lam=0.1)
    returns = adv + r["value"]
    n = len(adv)
    size = max(1, n // minibatches)
    for _ in range(epochs):
        order = torch.randperm(n)
        for lo in range(0, n, size):
            mb = order[lo : lo + size]
            d = policy.dist(r["obs"][mb], r["mask"][mb])
            ratio = (d.log_prob(r["action"][mb]) - r["logp"][mb]).exp()
            a = adv[mb]
            if len(mb) > 1:
                a = (a - a.mean()) / (a.std() + 1e-8)
            pg_loss = torch.max(-a * ratio, -a * ratio.clamp(1 - clip, 1 + clip)).mean()
            v_loss = ((policy.critic(r["obs"][mb]).squeeze(-1) - returns[mb]) ** 2).mean()
            optimizer.zero_grad()
            (pg_loss + 0.5 * v_loss).backward()
            nn.utils.clip_grad_norm_(policy.parameters(), 0.5)
            optimizer.step()


def evaluate(policy: Policy, rules: str, games: int, seed: int) -> tuple[list[float], int]:
    """The policy's points in each game against ``greedy`` (win 1, tie 0.5, loss 0), and how
    many illegal actions it chose (none, with the masks)."""
    env = generala_aec(rules=rules, num_players=2, reward="win")
    greedy = agents.load("greedy", rules=rules, seed=seed)
    points, illegal = [], 0
    for g in range(games):
        env.reset(seed=seed if g == 0 else None)
        ours = env.possible_agents[g % 2]  # seats alternate
        for agent in env.agent_iter():
            obs, reward, termination, truncation, info = env.last()
            if termination or truncation:
                if agent == ours:
                    points.append((reward + 1) / 2)  # +1 / 0 / -1 -> 1 / 0.5 / 0
                env.step(None)
                continue
            if agent == ours:
                with torch.no_grad():
                    x = torch.as_tensor(obs["observation"])
                    action = int(policy.dist(x, torch.as_tensor(obs["action_mask"], dtype=torch.bool)).probs.argmax())
                illegal += not obs["action_mask"][action]
            else:
                action = int(greedy.act(obs["observation"], env.unwrapped.seat_info(agent)))  # the info with the mask
            env.step(action)
    return points, illegal


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=1_000_000, help="training actions over both seats")
    p.add_argument("--rollout", type=int, default=4096, help="actions per PPO update (whole games)")
    p.add_argument("--reward", choices=("win", "score"), default="win")
    p.add_argument("--rules", default="classic")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-games", type=int, default=100)
    args = p.parse_args(argv)
    for name in ("steps", "rollout", "eval_games"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def main(argv=None) -> dict:
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    env = generala_aec(rules=args.rules, num_players=2, reward=args.reward)
    space = env.observation_space(env.possible_agents[0])
    policy = Policy(space["observation"].shape[0], space["action_mask"].shape[0])
    optimizer = torch.optim.Adam(policy.parameters(), lr=3e-4)
    reward_scale = 0.02 if args.reward == "score" else 1.0

    steps = games = 0
    while steps < args.steps:
        rollout, n_games = collect(env, policy, args.rollout, reward_scale, seed=args.seed if games == 0 else None)
        update(policy, optimizer, rollout)
        steps, games = steps + len(rollout["action"]), games + n_games
        print(f"step {steps}  games {games}")

    points, illegal = evaluate(policy, args.rules, args.eval_games, seed=args.seed + 10**6)
    score = float(np.mean(points))
    print(f"self-play PPO after {steps} steps ({games} games): score {score:.3f} against greedy over {args.eval_games} games")
    return {"timesteps": steps, "games": games, "eval_games": len(points), "score_vs_greedy": score, "illegal_actions": illegal}


if __name__ == "__main__":
    main()
