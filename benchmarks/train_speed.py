"""MaskablePPO environment steps per second: 8 single envs against the batched env.

Every run trains sb3-contrib's MaskablePPO (``MlpPolicy``, CPU) on one-player classic
Generala with the same rollout size (``n_envs * n_steps``), minibatch size and epochs, for
the same budget of environment steps:

* ``DummyVecEnv x8`` / ``SubprocVecEnv x8``: eight ``gym.make("Generala-v0")`` envs;
* ``batched N=...``: :class:`generala_env.adapters.sb3.GeneralaSB3VecEnv`, one
  :class:`generala_env.envs.vector.GeneralaVectorEnv` of N games (``n_steps`` shrunk so the
  rollout holds as many steps).

``learn steps/s`` is what training runs at (rollouts and gradient updates);
``rollout steps/s`` counts only the time spent collecting rollouts (env + policy
forward passes), the part the environment decides. Building the model and starting
worker processes are not timed. Torch runs one thread by default (``--threads``): on a
busy two-core machine more threads wait on each other (``docs/performance.md``). Then the memory of a ``GeneralaVectorEnv`` of 4096 games (built,
reset and stepped 200 times in a fresh process) is reported.

    python benchmarks/train_speed.py            # 3 rollouts of 2048 steps per setup
    python benchmarks/train_speed.py --quick    # 1 rollout, no SubprocVecEnv
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import platform
import resource
import time
import tracemalloc

import numpy as np


def _single_env():
    import gymnasium as gym

    import generala_env  # noqa: F401

    return gym.make("Generala-v0", rules="classic")


def make_venv(kind: str, n: int, seed: int):
    if kind == "batched":
        from generala_env.adapters.sb3 import make_sb3_vec_env

        return make_sb3_vec_env(n, seed=seed, rules="classic", monitor=False)
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    fns = [_single_env] * n
    venv = SubprocVecEnv(fns, start_method="fork") if kind == "subproc" else DummyVecEnv(fns)
    venv.seed(seed)
    return venv


def time_training(kind: str, n: int, rollout: int, budget: int, batch_size: int, n_epochs: int, seed: int) -> dict:
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback

    class RolloutClock(BaseCallback):
        def __init__(self):
            super().__init__()
            self.seconds = 0.0

        def _on_rollout_start(self) -> None:
            self._t0 = time.perf_counter()

        def _on_rollout_end(self) -> None:
            self.seconds += time.perf_counter() - self._t0

        def _on_step(self) -> bool:
            return True

    venv = make_venv(kind, n, seed)
    model = MaskablePPO("MlpPolicy", venv, n_steps=rollout // n, batch_size=batch_size, n_epochs=n_epochs, seed=seed, device="cpu", verbose=0)
    clock = RolloutClock()
    t0 = time.perf_counter()
    model.learn(total_timesteps=budget, callback=clock)
    seconds = time.perf_counter() - t0
    steps = model.num_timesteps
    venv.close()
    return {"steps": steps, "learn": steps / seconds, "rollout": steps / clock.seconds, "seconds": seconds}


def _rss_mib() -> float:
    """Resident memory now (psutil, else /proc)."""
    try:
        import psutil

        return psutil.Process().memory_info().rss / 2**20
    except ImportError:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def _memory_child(n: int, steps: int, out) -> None:
    from generala_env.envs.vector import GeneralaVectorEnv, uniform_legal

    GeneralaVectorEnv(1).reset(seed=0)  # load the compiled kernels before measuring
    base = _rss_mib()
    tracemalloc.start()
    env = GeneralaVectorEnv(n, rules="classic", autoreset_mode="SameStep")  # as measured before the modes
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(steps):
        env.step(uniform_legal(rng, env.action_masks()))
    _, traced = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    out.put({"traced_mib": traced / 2**20, "rss_mib": _rss_mib(), "added_mib": _rss_mib() - base})


def batched_memory(n: int = 4096, steps: int = 200) -> dict:
    import generala_env.compiled.batched  # noqa: F401  (compile the kernels here first, so the child loads them from the cache)

    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    proc = ctx.Process(target=_memory_child, args=(n, steps, q))
    proc.start()
    res = q.get()
    proc.join()
    return res


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="one rollout per setup, no SubprocVecEnv")
    p.add_argument("--rollout", type=int, default=2048, help="environment steps per rollout (n_envs * n_steps)")
    p.add_argument("--rollouts", type=int, default=None, help="rollouts of training per setup (default 3, quick 1)")
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--sizes", type=int, nargs="+", default=[8, 256, 1024], help="batch sizes N of the batched env")
    p.add_argument("--threads", type=int, default=1, help="torch threads")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    rollouts = args.rollouts or (1 if args.quick else 3)
    budget = rollouts * args.rollout

    import torch

    torch.set_num_threads(args.threads)
    setups = [("DummyVecEnv x8", "dummy", 8)]
    if not args.quick:
        setups.append(("SubprocVecEnv x8", "subproc", 8))
    setups += [(f"batched N={n}", "batched", n) for n in args.sizes if args.rollout % n == 0]
    time_training("batched", 8, args.rollout, args.rollout, args.batch_size, 1, args.seed)  # warm-up: numba kernels, torch

    rows = []
    for name, kind, n in setups:
        rows.append((name, n, time_training(kind, n, args.rollout, budget, args.batch_size, args.epochs, args.seed)))

    print(
        f"MaskablePPO MlpPolicy, {budget} steps ({rollouts} rollout(s) of {args.rollout}), batch {args.batch_size}, "
        f"{args.epochs} epochs; torch {torch.__version__} with {torch.get_num_threads()} threads, python {platform.python_version()}"
    )
    ref = rows[0][2]
    head = f"{'setup':<18}{'n_steps':>8}{'learn steps/s':>15}{'x dummy':>9}{'rollout steps/s':>17}{'x dummy':>9}"
    print(head)
    print("-" * len(head))
    for name, n, r in rows:
        print(
            f"{name:<18}{args.rollout // n:>8}{r['learn']:>15,.0f}{r['learn'] / ref['learn']:>8.2f}x{r['rollout']:>17,.0f}{r['rollout'] / ref['rollout']:>8.1f}x"
        )

    mem = batched_memory()
    print(
        f"GeneralaVectorEnv N=4096 (built, reset, 200 steps): peak traced {mem['traced_mib']:.1f} MiB (NumPy arrays), "
        f"resident memory {mem['added_mib']:.1f} MiB above the process with imports and kernels loaded ({mem['rss_mib']:.0f} MiB in all)"
    )


if __name__ == "__main__":
    main()
