"""Decisions per second of random legal play: Generala-v0 and its engine against peers.

Contestants, each choosing uniformly among the legal actions at every decision:

* ``pyhtzee``: the pyhtzee Yahtzee engine (``get_possible_actions`` + ``take_action``).
* ``OpenSpiel yacht``: OpenSpiel's C++ ``yacht`` game through pyspiel (two players; its
  explicit chance nodes are sampled too, but only the players' moves count as decisions).
* ``Game engine``: ``generala_env.game.Game`` (``legal_actions`` + ``step``), no env.
* ``Generala-v0 (gym.make)``: the single env with gym.make's wrappers, actions chosen
  from ``info["action_mask"]``.
* ``GeneralaVectorEnv N=...``: the batched env, ``N`` decisions per ``step``; actions
  from ``action_masks()`` with the env's own batched uniform choice.

All run one-player classic rules (yacht: its fixed two-player game). Timing is
interleaved: every contestant runs a short spell in turn, several rounds, and the best
spell counts (other load on the machine only ever slows a spell down). Ratios in the
table are to pyhtzee and to OpenSpiel in the same run.

    python benchmarks/env_speed.py            # about a minute and a half
    python benchmarks/env_speed.py --quick    # a few seconds
"""

from __future__ import annotations

import argparse
import platform
import random
import sys
import time

import numpy as np


def pyhtzee_runner(seed: int):
    from pyhtzee import Pyhtzee

    rnd = random.Random(seed)
    game = Pyhtzee(seed=rnd.randrange(1, 2**31))

    def run(seconds: float) -> tuple[int, float]:
        nonlocal game
        n, t0 = 0, time.perf_counter()
        end = t0 + seconds
        while True:
            for _ in range(100):
                if game.is_finished():
                    game = Pyhtzee(seed=rnd.randrange(1, 2**31))
                acts = game.get_possible_actions()
                game.take_action(acts[rnd.randrange(len(acts))])
            n += 100
            if time.perf_counter() >= end:
                return n, time.perf_counter() - t0

    return run


def yacht_runner(seed: int):
    import pyspiel

    rnd = random.Random(seed)
    yacht = pyspiel.load_game("yacht")
    state, outcomes, checked = yacht.new_initial_state(), 6**5, 0

    def run(seconds: float) -> tuple[int, float]:
        nonlocal state, outcomes, checked
        n, t0 = 0, time.perf_counter()
        end = t0 + seconds
        while True:
            for _ in range(100):
                while True:
                    if state.is_terminal():
                        state, outcomes = yacht.new_initial_state(), 6**5
                    elif state.is_chance_node():
                        # outcomes are 0..6^k-1, uniform, k the dice thrown (checked below)
                        if checked < 50:
                            assert len(state.chance_outcomes()) == outcomes
                            checked += 1
                        state.apply_action(rnd.randrange(outcomes))
                    else:
                        break
                acts = state.legal_actions()
                a = acts[rnd.randrange(len(acts))]
                state.apply_action(a)
                outcomes = 6 ** bin(a).count("1") if a < 32 else 6**5
            n += 100
            if time.perf_counter() >= end:
                return n, time.perf_counter() - t0

    return run


def engine_runner(seed: int):
    from generala_env.game import Game

    rnd, rng = random.Random(seed), np.random.default_rng(seed)
    game = Game("classic")
    game.reset(rng)

    def run(seconds: float) -> tuple[int, float]:
        n, t0 = 0, time.perf_counter()
        end = t0 + seconds
        while True:
            for _ in range(100):
                if game.over:
                    game.reset(rng)
                acts = game.legal_actions()
                game.step(acts[rnd.randrange(len(acts))], rng)
            n += 100
            if time.perf_counter() >= end:
                return n, time.perf_counter() - t0

    return run


def single_env_runner(seed: int):
    import gymnasium as gym

    import generala_env  # noqa: F401

    rnd = random.Random(seed)
    env = gym.make("Generala-v0", rules="classic")
    _, info = env.reset(seed=seed)

    def run(seconds: float) -> tuple[int, float]:
        nonlocal info
        n, t0 = 0, time.perf_counter()
        end = t0 + seconds
        while True:
            for _ in range(100):
                legal = info["action_mask"].nonzero()[0]
                _, _, terminated, _, info = env.step(int(legal[rnd.randrange(len(legal))]))
                if terminated:
                    _, info = env.reset()
            n += 100
            if time.perf_counter() >= end:
                return n, time.perf_counter() - t0

    return run


def vector_runner(num_envs: int, seed: int):
    from generala_env.vector import GeneralaVectorEnv, uniform_legal

    rng = np.random.default_rng(seed)
    env = GeneralaVectorEnv(num_envs, rules="classic")
    env.reset(seed=seed)
    for _ in range(3):  # compile (or load) the numba kernels before timing
        env.step(uniform_legal(rng, env.action_masks()))

    def run(seconds: float) -> tuple[int, float]:
        n, t0 = 0, time.perf_counter()
        end = t0 + seconds
        while True:
            env.step(uniform_legal(rng, env.action_masks()))
            n += num_envs
            if time.perf_counter() >= end:
                return n, time.perf_counter() - t0

    return run


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="short spells, one round")
    p.add_argument("--rounds", type=int, default=None, help="rounds of spells (default 10, quick 1)")
    p.add_argument("--seconds", type=float, default=None, help="seconds per spell (default 1, quick 0.5)")
    p.add_argument("--sizes", type=int, nargs="+", default=[1, 64, 1024, 4096], help="batch sizes N of the vector env")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    rounds = args.rounds or (1 if args.quick else 10)
    seconds = args.seconds or (0.5 if args.quick else 1.0)

    contestants: dict[str, object] = {}
    missing = []
    try:
        contestants["pyhtzee (engine)"] = pyhtzee_runner(args.seed)
    except ImportError:
        missing.append("pyhtzee")
    try:
        contestants["OpenSpiel yacht (C++)"] = yacht_runner(args.seed)
    except ImportError:
        missing.append("open_spiel")
    contestants["Game engine (raw)"] = engine_runner(args.seed)
    contestants["Generala-v0 (gym.make)"] = single_env_runner(args.seed)
    for n in args.sizes:
        contestants[f"GeneralaVectorEnv N={n}"] = vector_runner(n, args.seed)

    best: dict[str, float] = {name: 0.0 for name in contestants}
    for _ in range(rounds):
        for name, run in contestants.items():
            decisions, elapsed = run(seconds)
            best[name] = max(best[name], decisions / elapsed)

    from generala_env import batched

    print(f"random legal play, best of {rounds} spell(s) of {seconds:g} s each; python {platform.python_version()}, "
          f"numpy {np.__version__}, numba {'on' if batched.NUMBA else 'off'}, {platform.machine()}")
    if missing:
        print(f"not installed (pip install -e '.[bench]'): {', '.join(missing)}")
    ref_ph = best.get("pyhtzee (engine)")
    ref_os = best.get("OpenSpiel yacht (C++)")
    head = f"{'contestant':<26}{'decisions/s':>14}{'x pyhtzee':>11}{'x yacht':>10}"
    print(head)
    print("-" * len(head))
    for name, rate in best.items():
        r1 = f"{rate / ref_ph:10.2f}x" if ref_ph else f"{'-':>11}"
        r2 = f"{rate / ref_os:9.1f}x" if ref_os else f"{'-':>10}"
        print(f"{name:<26}{rate:>14,.0f}{r1}{r2}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
