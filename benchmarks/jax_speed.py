"""Steps per second of random legal play: the JAX env (generala_env.jax.env) against the numba vector env.

Contestants, each choosing uniformly among the legal actions of every game at every step:

* ``JAX N=...``: ``jax_env.make(...)`` with Pgx's ``auto_reset``, ``jax.vmap`` over N games, a
  jitted ``lax.scan`` of ``--scan`` steps per call (``--unroll`` steps compiled into one
  iteration of the loop). At each step the key is split into one key per game for the dice
  and N uniform ``u`` for the actions: each game plays its ``floor(u * n_legal)``-th legal action
  (:func:`uniform_legal`).
* ``GeneralaVectorEnv N=...``: the numba vector env (its own autoreset), actions from
  ``action_masks()`` with the env's batched uniform choice, as ``benchmarks/env_speed.py`` runs it;
  one player only (with more, its opponents move inside its step).

Same process, interleaved: every contestant runs a short spell in turn, for many rounds. The
rate shown is the best spell; the ratio is paired (each round's JAX rate over the numba rate
of the same round, the median over rounds with the 10th to 90th percentile), since the speed
of a shared machine drifts within a minute. The first line says on what it ran (JAX's
backend and device, the CPUs, the load average when it started).

    python benchmarks/jax_speed.py                    # N = 4096, one-player classic: about a minute and a half
    python benchmarks/jax_speed.py --quick            # about half a minute, mostly compiling
    python benchmarks/jax_speed.py --rules double --players 2   # JAX alone: the numba env is single-agent
    python benchmarks/jax_speed.py --sizes 4096 65536 1048576 --no-numba   # on a GPU: JAX alone
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import numpy as np


def spell(play, steps: int):
    """A contestant's ``run(seconds) -> (steps, elapsed)``: calls ``play()``, which makes
    ``steps`` game steps, until the spell is over."""

    def run(seconds: float) -> tuple[int, float]:
        n, t0 = 0, time.perf_counter()
        end = t0 + seconds
        while True:
            play()
            n += steps
            if time.perf_counter() >= end:
                return n, time.perf_counter() - t0

    return run


def uniform_legal(masks, u):
    """The ``floor(u[i] * n_legal)``-th legal action of each row of ``masks`` (at most 64
    actions), as ``generala_env.envs.vector.uniform_legal`` picks them: the mask as two 32-bit words,
    the chosen bit found by halving with population counts (a cumulative sum along the
    actions is several times slower in XLA on a CPU)."""
    import jax
    import jax.numpy as jnp

    n, actions = masks.shape
    bits = jnp.pad(masks, ((0, 0), (0, 64 - actions))).reshape(n, 2, 32).astype(jnp.uint32)
    words = jnp.sum(bits << jnp.arange(32, dtype=jnp.uint32), axis=2)  # (n, 2)
    counts = jax.lax.population_count(words).astype(jnp.int32)
    k = jnp.floor(u * jnp.sum(counts, axis=1)).astype(jnp.int32)
    high = k >= counts[:, 0]  # the chosen action is in the second word
    k = jnp.where(high, k - counts[:, 0], k)
    word, at = jnp.where(high, words[:, 1], words[:, 0]), jnp.where(high, 32, 0)
    for width in (16, 8, 4, 2, 1):
        low = jax.lax.population_count(word & jnp.uint32((1 << width) - 1)).astype(jnp.int32)
        up = k >= low  # the chosen bit is above the lowest `width` bits
        k, word, at = jnp.where(up, k - low, k), jnp.where(up, word >> width, word), jnp.where(up, at + width, at)
    return at


def jax_runner(num_envs: int, rules: str, players: int, seed: int, scan: int, unroll: int):
    import jax
    from pgx.experimental import auto_reset

    from generala_env.jax.env import make

    env = make(rules, players)
    step = auto_reset(env.step, env.init)

    def body(state, key):
        ka, ks = jax.random.split(key)
        actions = uniform_legal(state.legal_action_mask, jax.random.uniform(ka, (num_envs,)))
        return jax.vmap(step)(state, actions, jax.random.split(ks, num_envs)), None

    @jax.jit
    def play(state, key):
        return jax.lax.scan(body, state, jax.random.split(key, scan), unroll=unroll)[0]

    key = jax.random.key(seed)
    state = jax.jit(jax.vmap(env.init))(jax.random.split(key, num_envs))
    state = jax.block_until_ready(play(state, key))  # compile before timing

    def run() -> None:
        nonlocal state, key
        key, sub = jax.random.split(key)
        state = jax.block_until_ready(play(state, sub))

    return spell(run, num_envs * scan)


def numba_runner(num_envs: int, rules: str, players: int, seed: int):
    from generala_env.envs import vector

    rng = np.random.default_rng(seed)
    env = vector.GeneralaVectorEnv(num_envs, rules=rules, num_players=players, autoreset_mode="SameStep")  # as measured before the modes
    env.reset(seed=seed)
    for _ in range(3):  # compile (or load) the numba kernels before timing
        env.step(vector.uniform_legal(rng, env.action_masks()))
    return spell(lambda: env.step(vector.uniform_legal(rng, env.action_masks())), num_envs)


def paired_ratio(rates: list[float], refs: list[float]) -> tuple[float, float, float]:
    r = np.array(rates) / np.array(refs)
    return float(np.median(r)), float(np.percentile(r, 10)), float(np.percentile(r, 90))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="short spells, few rounds")
    p.add_argument("--rounds", type=int, default=None, help="rounds of spells (default 20, quick 2)")
    p.add_argument("--seconds", type=float, default=None, help="seconds per spell (default 1.0, quick 0.5)")
    p.add_argument("--sizes", type=int, nargs="+", default=[4096], help="batch sizes N")
    p.add_argument("--scan", type=int, default=64, help="steps per jitted call of the JAX env")
    p.add_argument("--unroll", type=int, default=1, help="lax.scan's unroll: steps compiled into one loop iteration")
    p.add_argument("--rules", default="classic")
    p.add_argument("--players", type=int, default=1)
    p.add_argument("--no-numba", action="store_true", help="the JAX env alone (e.g. N far beyond what the CPU env is run at)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    rounds = args.rounds or (2 if args.quick else 20)
    seconds = args.seconds or (0.5 if args.quick else 1.0)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")

    # the numba vector env is single-agent: with two players or more its opponents move inside its
    # step, so its steps are not the JAX env's (every seat's decision); it runs at one player only
    numba = not args.no_numba and args.players == 1
    import jax

    contestants: dict[str, object] = {}
    for n in args.sizes:
        contestants[f"JAX N={n}"] = jax_runner(n, args.rules, args.players, args.seed, args.scan, args.unroll)
        if numba:
            contestants[f"GeneralaVectorEnv N={n}"] = numba_runner(n, args.rules, args.players, args.seed)

    rates: dict[str, list[float]] = {name: [] for name in contestants}
    for _ in range(rounds):
        for name, run in contestants.items():
            steps, elapsed = run(seconds)
            rates[name].append(steps / elapsed)

    from generala_env.compiled import batched

    device = jax.devices()[0]
    print(
        f"random legal play, {args.rules} rules, {args.players} player(s), {rounds} round(s) of one {seconds:g} s spell per contestant; "
        f"jax {jax.__version__} on {device.platform} ({device.device_kind}), numba {'on' if batched.NUMBA else 'off'}, "
        f"python {platform.python_version()}, {os.cpu_count()} CPU(s), load average {load:.2f} at the start"
    )
    print("steps/s: the best spell; x numba: the median over rounds of the ratio within a round [10th-90th percentile]")
    if args.players > 1 and not args.no_numba:
        print("the numba vector env is not run: with opponents its step holds their moves too (it runs at --players 1)")
    head = f"{'contestant':<28}{'steps/s':>14}{'x numba':>10}{'[p10-p90]':>15}"
    print(head)
    print("-" * len(head))
    for name, rs in rates.items():
        ref = rates.get(name.replace("JAX", "GeneralaVectorEnv")) if name.startswith("JAX") else None
        if ref:
            med, lo, hi = paired_ratio(rs, ref)
            ratio = f"{med:9.2f}x{f'[{lo:.2f}-{hi:.2f}]':>15}"
        else:
            ratio = f"{'-':>10}{'':>15}"
        print(f"{name:<28}{max(rs):>14,.0f}{ratio}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
