"""The JAX learner's steps per second against SB3's MaskablePPO, same recipe and network, in one process.

Both train PPO from the same training config (``jax_ppo_classic`` by default: 256 games x 64
steps an update, 10 epochs of minibatches of 2048, the config's network): JAX through
``generala_training.jax_ppo`` (env, rollout and update in one compiled call), SB3 through the
project's ``generala train`` pieces (MaskablePPO on the batched numba env, one torch thread).
Spells alternate, each first in turn: a JAX spell is ``--jax-updates`` updates, an SB3 spell
one update (``model.learn`` of one rollout); the ratio JAX/SB3 of each round's steps per
second is reported as the median over rounds, with the 10th to 90th percentile. Compilation
and model building happen before the first spell and are not timed.

    python benchmarks/jax_ppo_speed.py                      # about two minutes
    python benchmarks/jax_ppo_speed.py --net 256 256 --rounds 3
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package, not an installed one


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default="jax_ppo_classic")
    p.add_argument("--net", type=int, nargs="+", default=None, help="hidden layers of both networks (default: the config's)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--jax-updates", type=int, default=4)
    args = p.parse_args(argv)

    import torch

    torch.set_num_threads(1)
    from generala_training.config import load_config, run_rules

    overrides = [f"policy.net_arch=[{','.join(map(str, args.net))}]"] if args.net else []
    cfg = load_config(args.config, overrides)
    rules = run_rules(cfg)
    rollout = cfg.vec_env.n_envs * cfg.algo.n_steps

    # SB3 first: its envs fork nothing, but build it before JAX starts its threads all the same
    from generala_training.envs import training_envs
    from generala_training.models import model_from_config

    sb3_cfg = load_config(cfg, ["backend=sb3", "vec_env.kind=batched"])
    venv = training_envs(sb3_cfg, None, rules)
    model = model_from_config(sb3_cfg, venv, Path(tempfile.mkdtemp()) / "tb", rules=rules)
    model.learn(total_timesteps=rollout, reset_num_timesteps=False)  # warm-up

    import jax

    from generala_env.jax.env import make
    from generala_training.jax_ppo import init_runner, make_update
    from generala_training.jax_train import hyper_of

    env = make(rules, 1, "score")
    hp = hyper_of(cfg, 1000)
    runner = init_runner(env, hp, cfg.seed)
    update = make_update(env, hp)
    runner, _ = update(runner)
    jax.block_until_ready(runner.params)

    def jax_spell() -> float:
        nonlocal runner
        t = time.perf_counter()
        for _ in range(args.jax_updates):
            runner, _m = update(runner)
        jax.block_until_ready(runner.params)
        return args.jax_updates * rollout / (time.perf_counter() - t)

    def sb3_spell() -> float:
        t = time.perf_counter()
        model.learn(total_timesteps=rollout, reset_num_timesteps=False)
        return rollout / (time.perf_counter() - t)

    jx, sb = [], []
    for r in range(args.rounds):
        if r % 2 == 0:
            jx.append(jax_spell())
            sb.append(sb3_spell())
        else:
            sb.append(sb3_spell())
            jx.append(jax_spell())
        print(f"round {r + 1}: JAX {jx[-1]:,.0f} steps/s, SB3 {sb[-1]:,.0f} steps/s", flush=True)
    venv.close()
    ratio = np.array(jx) / np.array(sb)
    net = list(cfg.policy.net_arch)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"PPO training steps/s, {cfg.name} recipe, net {net}, LayerNorm {cfg.policy.layer_norm}, {cfg.vec_env.n_envs} games x {cfg.algo.n_steps} steps, "
        f"{cfg.algo.n_epochs} epochs of {cfg.algo.batch_size}; jax {jax.__version__} on {jax.devices()[0]}, torch {torch.__version__} (1 thread); "
        f"load average {load:.1f} at the end"
    )
    print(
        f"JAX best {max(jx):,.0f}, SB3 best {max(sb):,.0f}; JAX / SB3 median {np.median(ratio):.2f}x [p10 {np.percentile(ratio, 10):.2f} - p90 {np.percentile(ratio, 90):.2f}]"
    )


if __name__ == "__main__":
    main()
