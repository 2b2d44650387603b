"""Where a step of the single env goes: its parts, added one at a time, in one process.

Each variant plays random legal one-player classic games with its own env, choosing
from the legal mask as ``env_speed.py`` does, and does a little more of a step than the
one before it:

* ``choice``: the choice of a legal action alone (what every variant also pays);
* ``game``: ``Game.step``, one compiled call of the engine, and the next legal mask
  (``Game.numbers()``);
* ``+obs``: the same call writing the observation too (``Game.step(..., observe=...)``, as the
  env's step does);
* ``+info``: and ``make_info``, the ``info`` dict;
* ``core``: the env core's step at N = 1 (``EnvCore.step``: the compiled env step, with the
  illegal-action checks, the observation and the legal mask), then ``make_info``;
* ``env.step``: ``GeneralaEnv.step`` itself (its checks and bookkeeping on top);
* ``gym.make``: through ``gym.make``'s wrappers;
* ``pyhtzee``: a pyhtzee decision, for scale (if pyhtzee is installed).

Spells of the variants are interleaved, for many rounds; each figure is the median over
rounds of the microseconds a decision took. The differences between rows are what each
part costs.

    python benchmarks/step_breakdown.py            # about a minute
    python benchmarks/step_breakdown.py --quick    # a few seconds
"""

from __future__ import annotations

import argparse
import random
import warnings

import env_speed  # beside this script: its contestants and spells
import numpy as np


def variant(kind: str, seed: int):
    """``env_speed``'s ``run(seconds)`` of ``play()``, which makes 100 decisions of the given kind."""
    import gymnasium as gym

    import generala_env  # noqa: F401  # registers Generala-v0
    from generala_env.core.dice import DiceCup
    from generala_env.core.info import make_info
    from generala_env.envs.env import GeneralaEnv

    rnd = random.Random(seed)
    env = gym.make("Generala-v0", rules="classic") if kind == "gym.make" else GeneralaEnv(rules="classic")
    _, info = env.reset(seed=seed)
    u = env.unwrapped
    game, cup, core = u.game, DiceCup(np.random.default_rng(seed)), u.core
    actions = np.zeros(1, dtype=np.int64)
    state = {"mask": info["action_mask"]}

    def part(a: int):
        """The part of a step that ``kind`` does; the next legal mask (int8)."""
        if kind == "game":
            game.step(a, cup)
            return game.numbers()[2]
        if kind == "core":
            actions[0] = a
            core.step(actions, np.empty((1, u.encoder.size), dtype=np.float32))
            return make_info(game, 0)["action_mask"]
        obs = np.empty(u.encoder.size, dtype=np.float32)
        game.step(a, cup, (*u.encoder.observe_tables, 0, obs))
        if kind == "+obs":
            return game.numbers()[2]
        return make_info(game, 0)["action_mask"]

    def play() -> None:
        mask = state["mask"]
        for _ in range(100):
            legal = mask.nonzero()[0]
            a = int(legal[rnd.randrange(len(legal))])
            if kind == "choice":
                continue
            if kind in ("env.step", "gym.make"):
                _, _, over, _, info = env.step(a)
                mask = info["action_mask"]
            else:
                mask = part(a)
                over = game.over
            if over:
                _, info = env.reset()
                mask = info["action_mask"]
        state["mask"] = mask

    return env_speed.spell(play, 100)


def spell(run, seconds: float) -> float:
    """Microseconds a decision over a spell of ``run`` (an ``env_speed`` contestant)."""
    decisions, elapsed = run(seconds)
    return elapsed / decisions * 1e6


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="short spells, few rounds")
    p.add_argument("--rounds", type=int, default=None, help="rounds of spells (default 20, quick 2)")
    p.add_argument("--seconds", type=float, default=None, help="seconds per spell (default 0.3, quick 0.1)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    rounds = args.rounds or (2 if args.quick else 20)
    seconds = args.seconds or (0.1 if args.quick else 0.3)
    warnings.filterwarnings("ignore", module="gymnasium")
    kinds = ["choice", "game", "+obs", "+info", "core", "env.step", "gym.make"]
    plays = {k: variant(k, args.seed) for k in kinds}
    try:
        plays["pyhtzee"] = env_speed.pyhtzee_runner(args.seed)
    except ImportError:
        from generala_env.extras import how_to_install

        print(f"pyhtzee is not installed ({how_to_install('bench')}): no pyhtzee row")
    for play in plays.values():  # warm: numba's kernels loaded, caches filled
        spell(play, 0.05)
    times: dict[str, list[float]] = {k: [] for k in plays}
    for r in range(rounds):
        order = list(plays) if r % 2 == 0 else list(plays)[::-1]
        for k in order:
            times[k].append(spell(plays[k], seconds))
    print(f"{rounds} round(s) of one {seconds} s spell per variant; µs a decision, median over rounds [10th-90th percentile]")
    prev = None
    for k, ts in times.items():
        med = float(np.median(ts))
        step = f"  (+{med - prev:.2f})" if prev is not None and k != "pyhtzee" else ""
        print(f"{k:10s} {med:7.2f} µs  [{np.percentile(ts, 10):.2f}-{np.percentile(ts, 90):.2f}]{step}")
        prev = med


if __name__ == "__main__":
    main()
