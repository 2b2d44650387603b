"""Decisions per second of random legal play: Generala-v0 and its engine against peers.

Contestants, each choosing uniformly among the legal actions at every decision:

* ``pyhtzee``: the pyhtzee Yahtzee engine (``get_possible_actions`` + ``take_action``).
* ``OpenSpiel yacht``: OpenSpiel's C++ ``yacht`` game through pyspiel (two players; its
  explicit chance nodes are sampled too, but only the players' moves count as decisions).
* ``Game engine``: ``generala_env.core.game.Game`` (``legal_actions`` + ``step``), no env,
  its dice from a ``DiceCup`` as the env draws them.
* ``Generala-v0 (gym.make)``: the single env with gym.make's wrappers, actions chosen
  from ``info["action_mask"]``.
* ``GeneralaVectorEnv N=...``: the batched env, ``N`` decisions per ``step``; actions
  from ``action_masks()`` with the env's own batched uniform choice.

All run one-player classic rules (yacht: its fixed two-player game). Timing is
interleaved: every contestant runs a short spell in turn, for many rounds. The rate
shown is the best spell (other load only ever slows a spell down); the ratios are
paired: each round's rate over pyhtzee's (or OpenSpiel's) rate in the same round, the
median over rounds, with the 10th to 90th percentile (on a shared machine the speed of
a core drifts by tens of percent within a minute; a ratio of two spells seconds apart
drifts much less).

    python benchmarks/env_speed.py            # about a minute and a half
    python benchmarks/env_speed.py --quick    # a few seconds
"""

from __future__ import annotations

import argparse
import importlib
import platform
import random
import sys
import time

import numpy as np


def spell(play, decisions: int):
    """A contestant's ``run(seconds) -> (decisions, elapsed)``: calls ``play()``, which
    makes ``decisions`` decisions, until the spell is over."""

    def run(seconds: float) -> tuple[int, float]:
        n, t0 = 0, time.perf_counter()
        end = t0 + seconds
        while True:
            play()
            n += decisions
            if time.perf_counter() >= end:
                return n, time.perf_counter() - t0

    return run


def pyhtzee_runner(seed: int):
    from pyhtzee import Pyhtzee

    rnd = random.Random(seed)
    game = Pyhtzee(seed=rnd.randrange(1, 2**31))

    def play() -> None:
        nonlocal game
        for _ in range(100):
            if game.is_finished():
                game = Pyhtzee(seed=rnd.randrange(1, 2**31))
            acts = game.get_possible_actions()
            game.take_action(acts[rnd.randrange(len(acts))])

    return spell(play, 100)


def yacht_runner(seed: int):
    import pyspiel

    rnd = random.Random(seed)
    yacht = pyspiel.load_game("yacht")
    state, outcomes, checked = yacht.new_initial_state(), 6**5, 0

    def play() -> None:
        nonlocal state, outcomes, checked
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

    return spell(play, 100)


def engine_runner(seed: int, pkg: str = "generala_env", rules: str = "classic"):
    """``pkg``: the package to time (``engine_ab.py`` times two versions of it side by side)."""
    dice, game_module = importlib.import_module(pkg + ".dice"), importlib.import_module(pkg + ".game")
    rnd, rng = random.Random(seed), dice.DiceCup(np.random.default_rng(seed))  # dice as the env draws them
    game = game_module.Game(rules)
    game.reset(rng)

    def play() -> None:
        for _ in range(100):
            if game.over:
                game.reset(rng)
            acts = game.legal_actions()
            game.step(acts[rnd.randrange(len(acts))], rng)

    return spell(play, 100)


def single_env_runner(seed: int, pkg: str = "generala_env", rules: str = "classic", wrapped: bool = True):
    """Through ``gym.make`` (``wrapped``), or the env class of ``pkg`` itself."""
    import gymnasium as gym

    env_module = importlib.import_module(pkg + ".env")  # registers Generala-v0
    rnd = random.Random(seed)
    env = gym.make("Generala-v0", rules=rules) if wrapped else env_module.GeneralaEnv(rules=rules)
    _, info = env.reset(seed=seed)

    def play() -> None:
        nonlocal info
        for _ in range(100):
            legal = info["action_mask"].nonzero()[0]
            _, _, terminated, _, info = env.step(int(legal[rnd.randrange(len(legal))]))
            if terminated:
                _, info = env.reset()

    return spell(play, 100)


def vector_runner(num_envs: int, seed: int, pkg: str = "generala_env", rules: str = "classic", autoreset_mode: str = "SameStep"):
    """``autoreset_mode``: the vector env's (default ``SameStep``, what its figures were first
    measured with; a ``pkg`` from before the modes takes none and autoresets in the same step)."""
    import inspect

    vector = importlib.import_module(pkg + ".vector")
    rng = np.random.default_rng(seed)
    modes = "autoreset_mode" in inspect.signature(vector.GeneralaVectorEnv).parameters
    env = vector.GeneralaVectorEnv(num_envs, rules=rules, **({"autoreset_mode": autoreset_mode} if modes else {}))
    env.reset(seed=seed)
    for _ in range(3):  # compile (or load) the numba kernels before timing
        env.step(vector.uniform_legal(rng, env.action_masks()))

    return spell(lambda: env.step(vector.uniform_legal(rng, env.action_masks())), num_envs)


def paired_ratio(rates: list[float], refs: list[float]) -> tuple[float, float, float]:
    """Median, 10th and 90th percentile over rounds of a contestant's rate over the
    reference's rate in the same round (the two ran seconds apart, on the same machine)."""
    r = np.array(rates) / np.array(refs)
    return float(np.median(r)), float(np.percentile(r, 10)), float(np.percentile(r, 90))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="short spells, few rounds")
    p.add_argument("--rounds", type=int, default=None, help="rounds of spells (default 30, quick 2)")
    p.add_argument("--seconds", type=float, default=None, help="seconds per spell (default 0.3, quick 0.2)")
    p.add_argument("--sizes", type=int, nargs="+", default=[1, 64, 1024, 4096], help="batch sizes N of the vector env")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--autoreset-modes", nargs="+", default=["SameStep"], choices=["SameStep", "NextStep"],
        help="the vector env's autoreset modes (default SameStep); with both, each NextStep size is also paired with SameStep's",
    )  # fmt: skip
    args = p.parse_args(argv)
    rounds = args.rounds or (2 if args.quick else 30)
    seconds = args.seconds or (0.2 if args.quick else 0.3)

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
        for mode in args.autoreset_modes:
            suffix = "" if args.autoreset_modes == ["SameStep"] else f" {mode}"
            contestants[f"GeneralaVectorEnv N={n}{suffix}"] = vector_runner(n, args.seed, autoreset_mode=mode)

    rates: dict[str, list[float]] = {name: [] for name in contestants}
    for _ in range(rounds):
        for name, run in contestants.items():
            decisions, elapsed = run(seconds)
            rates[name].append(decisions / elapsed)

    from generala_env.compiled import batched
    from generala_env.extras import how_to_install

    print(
        f"random legal play, {rounds} round(s) of one {seconds:g} s spell per contestant; python {platform.python_version()}, "
        f"numpy {np.__version__}, numba {'on' if batched.NUMBA else 'off'}, {platform.machine()}"
    )
    print("decisions/s: the best spell; ratios: the median over rounds of the ratio within a round [10th-90th percentile]")
    if missing:
        print(f"not installed ({how_to_install('bench')}): {', '.join(missing)}")
    ref_ph = rates.get("pyhtzee (engine)")
    ref_os = rates.get("OpenSpiel yacht (C++)")
    w = max(26, 2 + max(map(len, rates)))
    head = f"{'contestant':<{w}}{'decisions/s':>14}{'x pyhtzee':>11}{'[p10-p90]':>15}{'x yacht':>10}"
    print(head)
    print("-" * len(head))
    for name, rs in rates.items():
        if ref_ph:
            med, lo, hi = paired_ratio(rs, ref_ph)
            r1 = f"{med:10.2f}x{f'[{lo:.2f}-{hi:.2f}]':>15}" if med < 10 else f"{med:10.1f}x{f'[{lo:.0f}-{hi:.0f}]':>15}"
        else:
            r1 = f"{'-':>11}{'':>15}"
        r2 = f"{paired_ratio(rs, ref_os)[0]:9.2f}x" if ref_os else f"{'-':>10}"
        print(f"{name:<{w}}{max(rs):>14,.0f}{r1}{r2}")
    if {"SameStep", "NextStep"} <= set(args.autoreset_modes):
        print("NextStep over SameStep, paired by round: median [10th-90th percentile]")
        for n in args.sizes:
            med, lo, hi = paired_ratio(rates[f"GeneralaVectorEnv N={n} NextStep"], rates[f"GeneralaVectorEnv N={n} SameStep"])
            print(f"  N={n:<6}{med:8.3f}x [{lo:.3f}-{hi:.3f}]")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
