"""Masked PPO in one file, in the style of CleanRL's ``ppo.py``, over ``gym.make_vec("Generala-v0")``.

    pip install -e ".[train]"
    python examples/cleanrl_masked_ppo.py --total-timesteps 2000000
    python examples/cleanrl_masked_ppo.py --vectorization-mode sync --num-envs 16
    # three seeds at the leaderboard's 1M-step budget, each scored on the benchmark suite and
    # written as a submission, then ranked with the built-in runs:
    python examples/cleanrl_masked_ppo.py --total-timesteps 1000000 --seeds 3 --submissions runs/cleanrl_subs
    generala benchmark report --runs docs/benchmarks/classic_1m runs/cleanrl_subs --out runs/leaderboard

Benchmark scoring (``--score-points``, on by default): before training and at evenly spaced
steps, the greedy policy is scored with ``generala_training.benchmark.score_policy`` on the suite's
evaluation games (its ``games``; at the end its ``final_games``), exactly as the built-in
runs are scored; with ``--submissions DIR`` each seed's learning curve and final score are
written as a submission file (``generala_training.benchmark.submission``).

The whole algorithm is below: rollout, GAE, clipped surrogate, value loss. The masks come
from ``info["action_mask"]`` (int8, one row per game): illegal logits are set to -1e8
before the softmax, during the rollout and again in the update (the masks are stored with
the rollout), so the policy never picks an illegal action and its gradient ignores them.

Vectorization: by default ``gym.make_vec`` builds the project's batched env
(``vector_entry_point``; ``full_info=True`` makes it publish ``action_mask``). With
``--vectorization-mode sync`` or ``async`` Gymnasium runs one ``GeneralaEnv`` per game.

Autoreset: the loop asks for ``SAME_STEP`` autoreset, where a game that ends is reset
inside the same ``step()``: the returned observation and mask already belong to the new
game and the last ones are in ``info["final_obs"]`` / ``info["final_info"]``. Gymnasium's
default for sync/async, ``NEXT_STEP``, instead returns the last observation and then
spends one more ``step()`` on the reset, ignoring its action; such a step is no
transition and must not be trained on. ``SAME_STEP`` keeps every stored step a real move,
as CleanRL's loop assumes.

Hyperparameters: the project's from-scratch recipe (``configs/ppo_classic_scratch.yaml``):
256 games x 64 steps, 8 minibatches, 10 epochs, lr 3e-4, gamma 1, GAE lambda 0.1,
clip 0.2, no entropy bonus, rewards x 0.02, 256-256 ReLU MLPs with LayerNorm, advantages
normalised per minibatch, gradients clipped at 0.5 (SB3's defaults).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import AutoresetMode
from torch import nn
from torch.distributions import Categorical

import generala_env  # noqa: F401  (registers Generala-v0)


@dataclass
class Args:
    seed: int = 0
    """seed of the dice, the network and the minibatch order"""
    rules: str = "classic"
    """rule preset (generala rules lists them)"""
    total_timesteps: int = 12_000_000
    """total steps over all games (the recipe's budget)"""
    vectorization_mode: str = "vector_entry_point"
    """gym.make_vec's mode: vector_entry_point (the batched env), sync or async"""
    num_envs: int = 256
    """games played side by side"""
    num_steps: int = 64
    """steps per game per rollout"""
    learning_rate: float = 3e-4
    """Adam's learning rate (constant)"""
    gamma: float = 1.0
    """discount: 1, the return is the final total"""
    gae_lambda: float = 0.1
    """GAE lambda: low, the critic is trusted"""
    num_minibatches: int = 8
    """minibatches a rollout"""
    update_epochs: int = 10
    """passes over each rollout"""
    clip_coef: float = 0.2
    """PPO's clip range"""
    ent_coef: float = 0.0
    """entropy bonus"""
    vf_coef: float = 0.5
    """weight of the value loss"""
    max_grad_norm: float = 0.5
    """gradient clipping"""
    reward_scale: float = 0.02
    """rewards are multiplied by this for learning (the printed totals are not)"""
    eval_games: int = 100
    """games played greedily at the end"""
    seeds: int = 1
    """runs, seeds seed, seed + 1, ..."""
    score_points: int = 10
    """benchmark scores along the way (the suite's evaluation games), besides the first and the last; 0: none"""
    task: str = "classic"
    """the benchmark task the runs are scored on (its rules must be --rules)"""
    submissions: str = ""
    """a folder for each seed's submission JSON ('' : none)"""
    budget: int = 0
    """the named budget the submissions compete at (0: --total-timesteps, when it is one)"""


def parse_args(argv=None) -> Args:
    """Each field of Args becomes an option (--total-timesteps ...)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for f in dataclasses.fields(Args):
        p.add_argument("--" + f.name.replace("_", "-"), type=type(f.default), default=f.default)
    args = Args(**vars(p.parse_args(argv)))
    for name in ("total_timesteps", "num_envs", "num_steps", "num_minibatches", "update_epochs", "eval_games", "seeds"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.vectorization_mode not in ("vector_entry_point", "sync", "async"):
        p.error("--vectorization-mode must be vector_entry_point, sync or async")
    if args.submissions and args.score_points < 1:
        p.error("--submissions needs the benchmark scores: --score-points of at least 1")
    return args


def make_envs(args: Args, num_envs: int) -> gym.vector.VectorEnv:
    if args.vectorization_mode == "vector_entry_point":
        # a vector entry point takes its arguments as keywords (make_vec refuses vector_kwargs for it)
        envs = gym.make_vec("Generala-v0", num_envs=num_envs, rules=args.rules, full_info=True, autoreset_mode=AutoresetMode.SAME_STEP)
    else:
        envs = gym.make_vec(
            "Generala-v0",
            num_envs=num_envs,
            vectorization_mode=args.vectorization_mode,
            rules=args.rules,
            vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP},
        )
    assert envs.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    return envs


def layer(n_in: int, n_out: int, std: float = np.sqrt(2)) -> nn.Linear:
    lin = nn.Linear(n_in, n_out)
    nn.init.orthogonal_(lin.weight, std)
    nn.init.zeros_(lin.bias)
    return lin


def mlp(n_in: int, n_out: int, out_std: float) -> nn.Sequential:
    return nn.Sequential(
        layer(n_in, 256),
        nn.LayerNorm(256),
        nn.ReLU(),
        layer(256, 256),
        nn.LayerNorm(256),
        nn.ReLU(),
        layer(256, n_out, out_std),
    )


class Agent(nn.Module):
    def __init__(self, n_obs: int, n_actions: int):
        super().__init__()
        self.critic = mlp(n_obs, 1, 1.0)
        self.actor = mlp(n_obs, n_actions, 0.01)

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, mask, action=None):
        logits = torch.where(mask, self.actor(x), torch.tensor(-1e8))
        probs = Categorical(logits=logits)
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(x)


def evaluate(agent: Agent, args: Args, games: int) -> tuple[float, int]:
    """Mean final total of ``games`` games played greedily (the most probable legal action),
    one game per env (the first games to finish would favour short ones), and how many
    illegal actions were played (none, with the masks)."""
    envs = make_envs(args, games)
    obs, info = envs.reset(seed=args.seed + 1)
    running, totals, illegal = np.zeros(games), np.full(games, np.nan), 0
    while np.isnan(totals).any():
        with torch.no_grad():
            logits = agent.actor(torch.as_tensor(obs))
        logits[~torch.as_tensor(info["action_mask"], dtype=torch.bool)] = -torch.inf
        obs, reward, terminated, truncated, info = envs.step(logits.argmax(1).numpy())
        playing = np.isnan(totals)  # the env's first game is still on
        running += reward
        illegal += int(np.sum(info["illegal_action"] & playing))
        ended = (terminated | truncated) & playing
        totals[ended] = running[ended]
    envs.close()
    return float(totals.mean()), illegal


def act_batch_of(agent: Agent):
    """The greedy policy as the benchmark plays it: ``act_batch(observations, masks) -> actions``."""

    def act_batch(observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            logits = agent.actor(torch.as_tensor(observations, dtype=torch.float32))
        logits[~torch.as_tensor(masks, dtype=torch.bool)] = -torch.inf
        return logits.argmax(1).numpy()

    return act_batch


class Scorer:
    """Benchmark scores of the policy along the way: the curve and the final score of a submission."""

    def __init__(self, args: Args, steps: int):
        from generala_training.benchmark import score_policy
        from generala_training.benchmark.suite import load_suite

        self.score_policy, self.suite, self.task = score_policy, load_suite(), args.task
        task_rules = self.suite.tasks[args.task].env.get("rules", "classic")
        if task_rules != args.rules:
            raise SystemExit(f"--task {args.task} is played on rules {task_rules!r}, not --rules {args.rules!r}")
        self.targets = sorted({max(1, round(k * steps / args.score_points)) for k in range(1, args.score_points + 1)})
        self.curve: list = []

    def __call__(self, agent: Agent, step: int, final: bool = False) -> dict:
        games = self.suite.evaluation.final_games if final else self.suite.evaluation.games
        result = self.score_policy(act_batch_of(agent), task=self.task, games=games)
        if not final:
            self.curve.append([step, result["normalized_score"]])
        return result


def main(argv=None) -> dict:
    """Train ``--seeds`` runs; one run's result, or ``{"runs": [...]}`` for several."""
    args = parse_args(argv)
    runs = [train(dataclasses.replace(args, seed=args.seed + k)) for k in range(args.seeds)]
    return runs[0] if len(runs) == 1 else {"runs": runs}


def train(args: Args) -> dict:
    """One run: the agent, its greedy evaluation and, with scoring, its benchmark curve and final score."""
    batch_size = args.num_envs * args.num_steps
    minibatch_size = max(1, batch_size // args.num_minibatches)
    num_iterations = max(1, args.total_timesteps // batch_size)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)

    envs = make_envs(args, args.num_envs)
    n_obs, n_actions = envs.single_observation_space.shape[0], envs.single_action_space.n
    agent = Agent(n_obs, n_actions)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

    obs = torch.zeros((args.num_steps, args.num_envs, n_obs))
    masks = torch.zeros((args.num_steps, args.num_envs, n_actions), dtype=torch.bool)
    actions = torch.zeros((args.num_steps, args.num_envs), dtype=torch.long)
    logprobs = torch.zeros((args.num_steps, args.num_envs))
    rewards = torch.zeros((args.num_steps, args.num_envs))
    dones = torch.zeros((args.num_steps, args.num_envs))
    values = torch.zeros((args.num_steps, args.num_envs))

    run_start = time.time()  # the run's wall-clock, its benchmark scoring included
    scorer = Scorer(args, num_iterations * batch_size) if args.score_points > 0 else None
    if scorer:
        scorer(agent, 0)
    global_step, start = 0, time.time()
    next_obs, info = envs.reset(seed=args.seed)
    next_obs, next_mask = torch.as_tensor(next_obs), torch.as_tensor(info["action_mask"], dtype=torch.bool)
    next_done = torch.zeros(args.num_envs)
    running, finished = np.zeros(args.num_envs), []
    for iteration in range(1, num_iterations + 1):
        for step in range(args.num_steps):
            global_step += args.num_envs
            obs[step], masks[step], dones[step] = next_obs, next_mask, next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs, next_mask)
            values[step], actions[step], logprobs[step] = value.flatten(), action, logprob

            next_obs, reward, terminated, truncated, info = envs.step(action.numpy())
            # with SAME_STEP autoreset, next_obs and the mask already belong to the new game
            # where a game ended (a truncated game is not bootstrapped, as in CleanRL)
            done = terminated | truncated
            rewards[step] = torch.as_tensor(reward * args.reward_scale, dtype=torch.float32)
            next_obs, next_done = torch.as_tensor(next_obs), torch.as_tensor(done, dtype=torch.float32)
            next_mask = torch.as_tensor(info["action_mask"], dtype=torch.bool)
            running += reward
            finished += list(running[done])
            running[done] = 0.0

        with torch.no_grad():  # GAE
            next_value = agent.get_value(next_obs).reshape(1, -1)
            advantages = torch.zeros_like(rewards)
            lastgaelam = 0
            for t in reversed(range(args.num_steps)):
                nextnonterminal = 1.0 - (next_done if t == args.num_steps - 1 else dones[t + 1])
                nextvalues = next_value if t == args.num_steps - 1 else values[t + 1]
                delta = rewards[t] + args.gamma * nextvalues * nextnonterminal - values[t]
                advantages[t] = lastgaelam = delta + args.gamma * args.gae_lambda * nextnonterminal * lastgaelam
            returns = advantages + values

        b_obs, b_masks = obs.reshape(-1, n_obs), masks.reshape(-1, n_actions)
        b_actions, b_logprobs = actions.reshape(-1), logprobs.reshape(-1)
        b_advantages, b_returns = advantages.reshape(-1), returns.reshape(-1)
        b_inds = np.arange(batch_size)
        for _ in range(args.update_epochs):
            np.random.shuffle(b_inds)
            for lo in range(0, batch_size, minibatch_size):
                mb = b_inds[lo : lo + minibatch_size]
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb], b_masks[mb], b_actions[mb])
                ratio = (newlogprob - b_logprobs[mb]).exp()
                mb_adv = b_advantages[mb]
                if len(mb) > 1:
                    mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                pg_loss = torch.max(-mb_adv * ratio, -mb_adv * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)).mean()
                v_loss = ((newvalue.flatten() - b_returns[mb]) ** 2).mean()  # SB3's: vf_coef x MSE
                loss = pg_loss - args.ent_coef * entropy.mean() + args.vf_coef * v_loss
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()

        if scorer and scorer.targets and global_step >= scorer.targets[0]:
            while scorer.targets and global_step >= scorer.targets[0]:
                scorer.targets.pop(0)
            scorer(agent, global_step)
        recent = np.mean(finished[-1000:]) if finished else float("nan")
        print(
            f"iteration {iteration}/{num_iterations}  step {global_step}  mean total of the last "
            f"{min(len(finished), 1000)} games {recent:.2f}  {int(global_step / (time.time() - start))} steps/s"
        )
    envs.close()

    score, illegal = evaluate(agent, args, args.eval_games)
    print(f"masked PPO after {global_step} steps: mean final total {score:.2f} over {args.eval_games} greedy games")
    out = {"timesteps": global_step, "mean_score": score, "games": args.eval_games, "illegal_actions": illegal, "training_games": len(finished)}
    out.update(agent=agent, act_batch=act_batch_of(agent), seed=args.seed)
    if scorer:
        final = scorer(agent, global_step, final=True)
        out.update(normalized_score=final["normalized_score"], curve=scorer.curve)
        print(f"seed {args.seed}: benchmark score on {args.task} {final['normalized_score']:.4f} ({final['games']} games of the suite)")
        if args.submissions:
            out["submission"] = write_submission(args, scorer, final, global_step, time.time() - run_start)
    return out


def write_submission(args: Args, scorer: Scorer, final: dict, steps: int, seconds: float) -> str:
    """This run as a submission file in ``--submissions``."""
    from pathlib import Path

    from generala_training.benchmark import submission

    budget = args.budget or args.total_timesteps
    data = submission.make(
        task=args.task,
        algorithm="cleanrl-masked-ppo",
        library=("torch", torch.__version__.split("+")[0]),
        seed=args.seed,
        budget=budget,
        steps=steps,
        wall_clock_seconds=seconds,
        hardware=submission.hardware(),
        curve=scorer.curve,
        final=final,
        suite=scorer.suite,
        notes="examples/cleanrl_masked_ppo.py: masked PPO in plain PyTorch with the project's from-scratch hyperparameters; no solver in training",
    )
    folder = Path(args.submissions)
    folder.mkdir(parents=True, exist_ok=True)
    path = submission.write(folder / f"cleanrl-masked-ppo-{args.task}-seed{args.seed}.json", data)
    print(f"wrote {path}")
    return str(path)


if __name__ == "__main__":
    main()
