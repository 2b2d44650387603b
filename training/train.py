"""Train a MaskablePPO agent on Generala from a YAML config.

    generala train --config configs/ppo_classic.yaml [KEY=VALUE ...]
    generala train --resume runs/ppo_classic__seed0__20261129-1310 [KEY=VALUE ...]
    python -m training.train --config configs/ppo_tiny.yaml

Each run writes to its own folder: ``config.yaml`` (the resolved config), ``command.txt``,
``tb/`` (TensorBoard: episode score, share of the optimal expected score, win rate
against the evaluation opponent, losses, entropy), ``checkpoints/step_N.zip``,
``latest.zip`` with ``state.json`` (what ``--resume`` continues from, optimizer state and
step count included), ``best_model.zip`` and ``evaluations.csv``. Ctrl-C or SIGTERM saves
``latest.zip`` before exiting, so a cut run loses nothing.
"""

from __future__ import annotations

import argparse
import json
import shlex
import signal
import sys
import time
from pathlib import Path

import numpy as np
import yaml

from .config import ConfigError, load_config

EVAL_SEED_BASE = 20_261_129  # evaluation games use fixed dice, the same for every run


# -- environments ---------------------------------------------------------------------
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


def _opponents_for(env_cfg: dict, rank: int):
    opp = env_cfg["opponents"]
    if env_cfg["num_players"] == 1:
        return None
    if isinstance(opp, list):
        # a mix: each env plays one entry (an entry may itself be a list, one per seat)
        return opp[rank % len(opp)]
    return opp


def make_env_fn(env_cfg: dict, rank: int, seed: int):
    def _init():
        import gymnasium as gym
        from stable_baselines3.common.monitor import Monitor

        import generala_env  # noqa: F401  (registers Generala-v0)

        env = gym.make(
            "Generala-v0",
            rules=env_cfg["rules"],
            num_players=env_cfg["num_players"],
            opponents=_opponents_for(env_cfg, rank),
            reward=env_cfg["reward"],
            agent_seat=env_cfg["agent_seat"],
        )
        env = Monitor(_scale_wrapper()(env, env_cfg["reward_scale"]))
        env.reset(seed=seed + rank)
        env.action_space.seed(seed + rank)
        return env

    return _init


def _with_self_play(env_cfg: dict, run: Path | None) -> dict:
    """Replace the opponent name ``self-play`` by the pool of this run's own checkpoints."""
    opp = env_cfg["opponents"]
    if run is None or opp is None:
        return env_cfg
    pool = f"pool:{run / 'checkpoints'}"
    swap = lambda o: pool if o == "self-play" else o  # noqa: E731
    opp = [swap(o) for o in opp] if isinstance(opp, list) else swap(opp)
    return {**env_cfg, "opponents": opp}


def make_vec_env(cfg: dict, run: Path | None = None):
    kind, n = cfg["vec_env"]["kind"], cfg["vec_env"]["n_envs"]
    env_cfg, seed = _with_self_play(cfg["env"], run), cfg["seed"]
    if kind == "batched":
        try:
            from generala_env.vector import make_sb3_vec_env
        except ImportError as e:
            raise ConfigError(f"vec_env.kind 'batched' needs generala_env.vector: {e}") from None
        return make_sb3_vec_env(n_envs=n, seed=seed, **env_cfg)
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    fns = [make_env_fn(env_cfg, i, seed * 1000) for i in range(n)]
    if kind == "subproc":
        return SubprocVecEnv(fns, start_method="fork")
    return DummyVecEnv(fns)


# -- the model ------------------------------------------------------------------------
def build_model(cfg: dict, venv, tb_dir: Path):
    import torch
    from sb3_contrib import MaskablePPO

    a = cfg["algo"]
    lr = a["learning_rate"]
    if a["lr_schedule"] == "linear":
        lr0 = lr
        lr = lambda progress_remaining: lr0 * progress_remaining  # noqa: E731
    act = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[cfg["policy"]["activation"]]
    arch = list(cfg["policy"]["net_arch"])
    policy_kwargs = dict(net_arch=dict(pi=arch, vf=arch), activation_fn=act, ortho_init=cfg["policy"]["ortho_init"])
    hyper = dict(
        learning_rate=lr,
        n_steps=a["n_steps"],
        batch_size=a["batch_size"],
        n_epochs=a["n_epochs"],
        gamma=a["gamma"],
        gae_lambda=a["gae_lambda"],
        clip_range=a["clip_range"],
        ent_coef=a["ent_coef"],
        vf_coef=a["vf_coef"],
        max_grad_norm=a["max_grad_norm"],
        target_kl=a["target_kl"],
        tensorboard_log=str(tb_dir),
        seed=cfg["seed"],
        verbose=0,
    )
    if cfg["init_from"]:
        # the saved weights, this config's hyperparameters; the step count starts again at 0
        model = MaskablePPO.load(cfg["init_from"], env=venv, device=cfg["device"], **hyper)
        model.num_timesteps = 0
        return model
    return MaskablePPO("MlpPolicy", venv, policy_kwargs=policy_kwargs, device=cfg["device"], **hyper)


# -- evaluation during training ---------------------------------------------------------
class Evaluator:
    """Seeded masked evaluations of a policy: score, share of optimal, win rate."""

    def __init__(self, cfg: dict):
        from agents.solver import load_or_solve
        from generala_env.rules import load_rules

        from .harness import game_seed

        self.cfg = cfg
        self.rules = load_rules(cfg["env"]["rules"])
        self.players = cfg["env"]["num_players"]
        self.games = cfg["eval"]["games"]
        self.opponent = cfg["eval"]["opponent"]
        self.seeds = [game_seed(EVAL_SEED_BASE, i) for i in range(self.games)]
        self.optimal = load_or_solve(self.rules)[0].expected_score
        self._opp_totals = None

    def __call__(self, policy) -> dict:
        from agents.ppo import masked_argmax_actions

        from .harness import play_game, play_lockstep, play_many

        if self.players == 1:
            recs = play_lockstep(lambda o, m: masked_argmax_actions(policy, o, m), self.rules, self.seeds)
            totals = np.array([r.totals[0] for r in recs], dtype=float)
            if self._opp_totals is None:
                opp = play_many([(self.opponent,)] * self.games, self.seeds, self.rules, progress=False)
                self._opp_totals = np.array([r.totals[0] for r in opp], dtype=float)
            win = np.mean((totals > self._opp_totals) + 0.5 * (totals == self._opp_totals))
            return {"mean_score": totals.mean(), "share_of_optimal": totals.mean() / self.optimal, "win_rate": float(win)}
        # several players: real games against the opponent, seats swapped on the same dice
        import agents as agents_pkg

        me = _PolicyAgent(policy)
        opp = agents_pkg.load(self.opponent, rules=self.rules)
        points, scores = [], []
        half = max(1, self.games // 2)
        for s in self.seeds[:half]:
            for seat in range(self.players):
                lineup = [opp] * self.players
                lineup[seat] = me
                rec = play_game(lineup, self.rules, s, names=["x"] * self.players)
                w = rec.winners
                points.append(1.0 if w == (seat,) else (0.5 if seat in w else 0.0))
                scores.append(rec.totals[seat])
        return {"mean_score": float(np.mean(scores)), "share_of_optimal": float(np.mean(scores)) / self.optimal, "win_rate": float(np.mean(points))}


class _PolicyAgent:
    name = "policy"

    def __init__(self, policy):
        self.policy = policy

    def reset(self, seed=None):
        pass

    def act(self, obs, info):
        from agents.ppo import masked_argmax_actions

        return int(masked_argmax_actions(self.policy, np.asarray(obs)[None], np.asarray(info["action_mask"])[None])[0])


def _callback(cfg: dict, run: Path, state: dict, total: int):
    from stable_baselines3.common.callbacks import BaseCallback
    from tqdm import tqdm

    evaluator = Evaluator(cfg)
    seat_key = "seat"

    class TrainCallback(BaseCallback):
        def _on_training_start(self) -> None:
            self.bar = tqdm(total=total, initial=self.num_timesteps, unit="step", dynamic_ncols=True, desc=run.name[:40])
            self.next_eval = (self.num_timesteps // cfg["eval"]["every"] + 1) * cfg["eval"]["every"]
            self.next_ckpt = (self.num_timesteps // cfg["checkpoint_every"] + 1) * cfg["checkpoint_every"]
            self.t_start = time.time()
            self.steps_start = self.num_timesteps
            self.scores: list[float] = []

        def _on_step(self) -> bool:
            for done, info in zip(self.locals["dones"], self.locals["infos"]):
                if done and "totals" in info:
                    seat = info.get(seat_key, 0)
                    self.scores.append(float(info["totals"][seat]))
            self.bar.update(self.training_env.num_envs)
            if self.num_timesteps >= self.next_eval:
                self.next_eval += cfg["eval"]["every"]
                self.evaluate()
            if self.num_timesteps >= self.next_ckpt:
                self.next_ckpt += cfg["checkpoint_every"]
                self.model.save(run / "checkpoints" / f"step_{self.num_timesteps}.zip")
                save_latest(self.model, run, state, self.t_start)
            return True

        def _on_rollout_end(self) -> None:
            if self.scores:
                self.logger.record("rollout/episode_score", float(np.mean(self.scores)))
                self.logger.record("rollout/episode_share_of_optimal", float(np.mean(self.scores)) / evaluator.optimal)
                self.scores = []
            elapsed = time.time() - self.t_start
            if elapsed > 0:
                self.logger.record("time/steps_per_second", (self.num_timesteps - self.steps_start) / elapsed)

        def evaluate(self) -> None:
            res = evaluator(self.model.policy)
            for k, v in res.items():
                self.logger.record(f"eval/{k}", v)
            self.logger.record(f"eval/win_rate_vs_{cfg['eval']['opponent']}", res["win_rate"])
            key = "mean_score" if cfg["env"]["num_players"] == 1 else "win_rate"
            line = {"step": self.num_timesteps, "wall_seconds": state["train_seconds"] + time.time() - self.t_start, **res}
            state["evaluations"].append(line)
            with open(run / "evaluations.csv", "a") as f:
                if f.tell() == 0:
                    f.write(",".join(line) + "\n")
                f.write(",".join(f"{v:.6g}" if isinstance(v, float) else str(v) for v in line.values()) + "\n")
            if res[key] > state.get("best", -np.inf):
                state["best"] = res[key]
                state["best_step"] = self.num_timesteps
                self.model.save(run / "best_model.zip")
            self.bar.set_postfix(score=f"{res['mean_score']:.1f}", opt=f"{res['share_of_optimal']:.1%}", win=f"{res['win_rate']:.1%}")
            self.logger.dump(self.num_timesteps)

        def _on_training_end(self) -> None:
            self.bar.close()

    return TrainCallback()


def save_latest(model, run: Path, state: dict, t_start: float) -> None:
    model.save(run / "latest.zip")
    s = dict(state)
    s["num_timesteps"] = int(model.num_timesteps)
    s["train_seconds"] = state["train_seconds"] + (time.time() - t_start)
    (run / "state.json").write_text(json.dumps(s, indent=2, default=float))


# -- the program ----------------------------------------------------------------------------
def train(cfg: dict, run: Path, resume: bool = False, command: str = "") -> Path:
    import torch

    torch.set_num_threads(cfg["threads"])
    run.mkdir(parents=True, exist_ok=True)
    (run / "checkpoints").mkdir(exist_ok=True)
    (run / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    with open(run / "command.txt", "a") as f:
        f.write(command + "\n")
    state = {"train_seconds": 0.0, "evaluations": [], "best": -float("inf")}
    venv = make_vec_env(cfg, run)
    if resume:
        from sb3_contrib import MaskablePPO

        state.update(json.loads((run / "state.json").read_text()))
        model = MaskablePPO.load(run / "latest.zip", env=venv, device=cfg["device"], tensorboard_log=str(run / "tb"))
        print(f"resuming {run} at step {model.num_timesteps:,}")
    else:
        model = build_model(cfg, venv, run / "tb")
        if cfg["pretrain"]["games"] > 0 and not cfg["init_from"]:
            from .pretrain import behaviour_clone

            state["pretrain"] = behaviour_clone(model, cfg)
            model.save(run / "pretrained.zip")
    remaining = cfg["total_timesteps"] - model.num_timesteps
    if remaining <= 0:
        print(f"run {run} already has {model.num_timesteps:,} of {cfg['total_timesteps']:,} steps")
        return run
    cb = _callback(cfg, run, state, cfg["total_timesteps"])

    def _term(signum, frame):  # SIGTERM saves like Ctrl-C
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, _term)
    t0 = time.time()
    try:
        model.learn(total_timesteps=remaining, callback=cb, reset_num_timesteps=False, tb_log_name="ppo")
    except KeyboardInterrupt:
        save_latest(model, run, state, t0)
        print(f"\ninterrupted at step {model.num_timesteps:,}: saved {run / 'latest.zip'}; continue with: generala train --resume {run}")
        raise SystemExit(130)
    finally:
        signal.signal(signal.SIGTERM, old)
        venv.close()
    save_latest(model, run, state, t0)
    model.save(run / "final_model.zip")
    print(f"done: {model.num_timesteps:,} steps in {time.time() - t0:.0f} s; run folder {run}")
    return run


def parse_args(argv):
    p = argparse.ArgumentParser(prog="generala train", description="Train MaskablePPO on Generala from a YAML config.")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--config", help="YAML config (see configs/ppo_classic.yaml)")
    src.add_argument("--resume", metavar="RUN_DIR", help="continue a run from its latest.zip")
    p.add_argument("overrides", nargs="*", help="KEY=VALUE overrides, e.g. algo.learning_rate=1e-4 total_timesteps=2e6")
    p.add_argument("--run-name", help="folder name under run_dir (default NAME__seedS__TIME)")
    return p.parse_intermixed_args(argv)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    command = "generala train " + " ".join(shlex.quote(a) for a in argv)
    try:
        if args.resume:
            run = Path(args.resume)
            if not (run / "latest.zip").is_file() or not (run / "config.yaml").is_file():
                raise ConfigError(f"{run} is not a run folder with latest.zip and config.yaml")
            cfg = load_config(yaml.safe_load((run / "config.yaml").read_text()), args.overrides)
            train(cfg, run, resume=True, command=command)
            return 0
        cfg = load_config(args.config, args.overrides)
    except ConfigError as e:
        print(f"generala train: error: {e}", file=sys.stderr)
        return 2
    name = args.run_name or f"{cfg['name']}__seed{cfg['seed']}__{time.strftime('%Y%m%d-%H%M%S')}"
    train(cfg, Path(cfg["run_dir"]) / name, command=command)
    return 0


if __name__ == "__main__":
    sys.exit(main())
