"""Behaviour cloning from a teacher: an optional warm start for PPO.

With ``pretrain.games > 0`` in a training config, a fresh policy first learns to imitate
``pretrain.teacher`` on states it visits (with ``pretrain.epsilon`` of random legal moves
mixed in, so that the policy also sees states the teacher rarely reaches), and its value
head learns the value of those states:

* teacher ``optimal`` (the exact score-maximiser): with ``reward: score`` the exact expected
  points still to come, with ``reward: win`` the game's final result;
* teacher ``optimal-2p`` (the exact two-player win-maximiser, ``reward: win``): the exact
  expected reward, ``2 (P(win) + ½ P(draw)) - 1``;
* teacher ``td-search`` (one player, learned from scratch): its own learned expected points
  still to come; ``td-search-2p`` (two players, ``reward: win``, learned from scratch by
  self-play): the game's final result. Neither saw a solver, so a run that imitates them
  still learned from scratch (see ``generala_training.export_metadata.solver_ingredients``).

Value targets are in the env's reward units (times ``env.reward_scale``). PPO then trains
on from there. The run's config records that this was done, and whom it imitated.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from generala_env.core.encoding import Encoder
from generala_env.core.game import Game
from generala_env.core.rules import RuleSet, load_rules
from generala_env.core.scoring import generala_scored
from generala_env.envs.env import make_info, win_reward
from generala_env.files.cache import Progress

from .config import SOLVER_TEACHERS, Config, EnvConfig
from .harness import game_seed


def _opponent_names(env_cfg: EnvConfig, game_index: int, teacher: str = "optimal") -> list[str]:
    opp = env_cfg.opponents or "greedy"
    if isinstance(opp, list):
        opp = opp[game_index % len(opp)]
    n = env_cfg.num_players - 1
    names = list(opp) if isinstance(opp, list) else [opp] * n
    # the run's own checkpoints don't exist yet: imitated games meet the teacher instead
    return [teacher if o == "self-play" else o for o in names]


def _generate(job):
    """Play games; return observations, masks, teacher actions and value targets at the learner's seat.

    ``job``: ``(env_cfg, rules, seed, game indices, epsilon, teacher name)``."""
    import generala_agents as agents

    env_cfg, rules, seed, indices, epsilon, teacher_name = job
    P = env_cfg.num_players
    enc = Encoder(rules, P)
    teacher = agents.load(teacher_name, rules=rules)
    cache: dict = {teacher_name: teacher}
    scale = env_cfg.reward_scale
    obs_l, mask_l, act_l, val_l = [], [], [], []
    for gi in indices:
        rng = np.random.default_rng(game_seed(seed, gi))
        seat = int(rng.integers(P)) if env_cfg.agent_seat == "random" else int(env_cfg.agent_seat)
        opps = []
        for name in _opponent_names(env_cfg, gi, teacher_name):
            if name not in cache:
                cache[name] = agents.load(name, rules=rules)
            opps.append(cache[name])
        for o in opps:
            o.reset(seed=int(rng.integers(2**63)))
        game = Game(rules, P)
        game.reset(rng)
        start = len(val_l)
        while not game.over:
            s = game.player
            obs, info = enc.encode(game, s), make_info(game, s)
            if s == seat:
                a = teacher.act(obs, info)
                obs_l.append(obs)
                mask_l.append(info["action_mask"].astype(bool))
                act_l.append(a)
                legal_now = info["action_mask"].astype(bool)
                if teacher_name == "optimal-2p":  # the exact chance to win, as an expected reward
                    v = teacher.action_values(info)
                    val_l.append((2.0 * float(np.max(np.where(legal_now, v, -np.inf))) - 1.0) * scale)
                elif env_cfg.reward == "score":
                    v = teacher.solver.action_values(*_state(teacher, info))
                    val_l.append(float(np.max(np.where(legal_now, v, -np.inf))) * scale)
                else:
                    val_l.append(np.nan)
                if rng.random() < epsilon:
                    legal = np.flatnonzero(info["action_mask"])
                    a = int(legal[rng.integers(len(legal))])
            else:
                a = opps[(s - seat - 1) % P].act(obs, info)
            game.step(int(a), rng)
        if env_cfg.reward == "win" and teacher_name != "optimal-2p":
            r = win_reward(game.winners(), seat) * scale
            val_l[start:] = [r] * (len(val_l) - start)
    return np.array(obs_l, np.float32), np.array(mask_l, bool), np.array(act_l, np.int64), np.array(val_l, np.float32)


def _state(agent, info):
    from generala_agents.base import SeatView

    v = SeatView.from_info(info)
    s = agent.solver
    return v.filled_mask, generala_scored(s.rules, v.sheet), v.roll, v.rolls_left, v.locked


def _teacher_ready(cfg: Config, rules: RuleSet) -> None:
    """Play the first of the teacher's games here, before the workers fork: the table the
    teacher needs is solved (or read) and the game's loops are compiled once, each with its
    notice, not once in every worker (forked workers inherit both)."""
    _generate((cfg.env, rules, cfg.seed + 7_000_001, [0], cfg.pretrain.epsilon, cfg.pretrain.teacher))


def _play_teacher_games(jobs, workers: int, bar: Progress) -> list:
    """:func:`_generate` of each job, in ``workers`` forked processes; ``bar`` counts the games."""
    if workers == 1:
        parts = []
        for job in jobs:
            parts.append(_generate(job))
            bar.update(len(job[3]))  # its game indices
        return parts
    import multiprocessing as mp
    import signal

    from .harness import STOP_SIGNALS, stop_workers, worker_init

    # the workers ignore SIGINT, end with this process and are stopped when it is interrupted
    pool = ProcessPoolExecutor(workers, mp_context=mp.get_context("fork"), initializer=worker_init)
    try:
        held = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            results = pool.map(_generate, jobs)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
        parts = []
        for job, part in zip(jobs, results, strict=True):
            parts.append(part)
            bar.update(len(job[3]))  # its game indices
    except BaseException:
        stop_workers(pool)
        raise
    pool.shutdown()
    return parts


# long: the cloning in order (the teacher's games, the epochs, the measured agreement), as its log tells it
def behaviour_clone(model, cfg: Config, rules: RuleSet | None = None, log=print) -> dict:
    """Train ``model.policy`` to imitate ``cfg.pretrain.teacher`` on games of ``rules`` (the run's
    rule set; ``None``: ``cfg.env.rules``); returns what it measured."""
    import torch

    rules = load_rules(cfg.env.rules if rules is None else rules)
    p = cfg.pretrain
    t0 = time.time()
    games = p.games
    workers = max(1, min(os.cpu_count() or 1, games))
    chunks = [list(range(i, games, workers * 8)) for i in range(workers * 8)]
    jobs = [(cfg.env, rules, cfg.seed + 7_000_001, c, p.epsilon, p.teacher) for c in chunks if c]
    _teacher_ready(cfg, rules)
    log(f"behaviour cloning: playing {games:,} games of the {p.teacher} player in {workers} process{'es' if workers > 1 else ''}")
    bar = Progress("teacher's games", games, "game")
    try:
        parts = _play_teacher_games(jobs, workers, bar)
    finally:
        bar.close()
    obs, masks, acts, vals = (np.concatenate([x[i] for x in parts]) for i in range(4))
    log(f"behaviour cloning: {len(acts):,} decisions from {games:,} games of the {p.teacher} player in {time.time() - t0:.0f} s")

    policy = model.policy
    policy.set_training_mode(True)
    opt = torch.optim.Adam(policy.parameters(), lr=p.learning_rate)
    gen = torch.Generator().manual_seed(cfg.seed)
    O, M, A, V = (torch.as_tensor(x) for x in (obs, masks, acts, vals))
    n = len(A)
    bs = 1024
    for epoch in range(p.epochs):
        perm = torch.randperm(n, generator=gen)
        tot_pi = tot_v = correct = 0.0
        for i in range(0, n, bs):
            idx = perm[i : i + bs]
            values, logp, _ = policy.evaluate_actions(O[idx], A[idx], action_masks=M[idx])
            loss_pi = -logp.mean()
            loss_v = torch.nn.functional.mse_loss(values.flatten(), V[idx])
            loss = loss_pi + 0.5 * loss_v
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
            opt.step()
            tot_pi += loss_pi.item() * len(idx)
            tot_v += loss_v.item() * len(idx)
            with torch.no_grad():
                correct += (logp > np.log(0.5)).sum().item()
        log(f"  epoch {epoch + 1}/{p.epochs}: policy loss {tot_pi / n:.4f}, value loss {tot_v / n:.5f}, teacher action prob>0.5 on {correct / n:.1%}")
    policy.set_training_mode(False)
    out = {"teacher": p.teacher, "decisions": int(n), "games": games, "epochs": p.epochs, "seconds": time.time() - t0, "final_policy_loss": tot_pi / n}
    return {**out, **teacher_record(p.teacher)}


def teacher_record(teacher: str) -> dict:
    """How a learned teacher learned, from its values file: what went into it, its games and
    its training seconds (part of the budget of a run that imitates it). Empty for a solver."""
    from generala_agents.td_search import read_values

    if teacher in SOLVER_TEACHERS:
        return {}
    data = read_values(teacher)
    keep = {"solver_in_training": "teacher_solver_in_training", "how": "teacher_how", "games": "teacher_games", "train_seconds": "teacher_train_seconds"}
    out = {new: data[old] for old, new in keep.items() if old in data}
    base = data.get("built_on")
    if isinstance(base, dict):  # a two-player teacher's one-player table: its time is part of the teacher's
        out["teacher_built_on"] = base
    return out
