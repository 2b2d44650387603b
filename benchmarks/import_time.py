"""What ``import generala_env`` costs, against ``import gymnasium`` (which it needs anyway).

Each import runs in a fresh interpreter (``python -c``), timed inside that process around
the ``import`` statement alone, so interpreter start-up is not counted. The two imports
alternate, in a random order within each round, for ``--rounds`` rounds; the ratio of a
round is generala_env's time over gymnasium's in that round, and the figure printed is the
median of those ratios (with the 10th to 90th percentile): on a shared machine a core's
speed drifts within a minute, a ratio of two runs a second apart much less.

Also shown: ``import agents`` and making and stepping a two-player env against ``greedy``
(what ``gym.make(..., opponents="greedy")`` loads on top of the package).

    python benchmarks/import_time.py            # 15 rounds, about half a minute
    python benchmarks/import_time.py --quick    # 3 rounds
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import subprocess
import sys

SNIPPETS = {
    "gymnasium": "import gymnasium",
    "generala_env": "import generala_env",
    "agents": "import agents",
    "env + greedy": (
        "import gymnasium as gym, generala_env\n"
        "env = gym.make('Generala-v0', num_players=2, opponents='greedy')\n"
        "obs, info = env.reset(seed=0)\n"
        "env.step(int(info['action_mask'].nonzero()[0][0]))"
    ),
}


def timed(code: str) -> float:
    """Seconds that ``code`` takes in a fresh interpreter (start-up excluded)."""
    body = "import time\nt0 = time.perf_counter()\n" + code + "\nprint(time.perf_counter() - t0)\n"
    out = subprocess.run([sys.executable, "-c", body], check=True, capture_output=True, text=True, env=dict(os.environ))
    return float(out.stdout.strip().splitlines()[-1])


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--quick", action="store_true", help="3 rounds")
    args = p.parse_args(argv)
    rounds = 3 if args.quick else args.rounds

    for code in SNIPPETS.values():  # warm the file cache and numba's on-disk cache once
        timed(code)
    times: dict[str, list[float]] = {name: [] for name in SNIPPETS}
    rng = random.Random(0)
    for _ in range(rounds):
        order = list(SNIPPETS)
        rng.shuffle(order)
        for name in order:
            times[name].append(timed(SNIPPETS[name]))

    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores, {rounds} rounds")
    print(f"{'import':<14} {'median s':>9} {'best s':>8} {'x gymnasium (median [p10-p90])':>32}")
    gym = times["gymnasium"]
    for name, ts in times.items():
        ratios = [t / g for t, g in zip(ts, gym, strict=True)]
        band = f"{statistics.median(ratios):.2f} [{percentile(ratios, 0.1):.2f}-{percentile(ratios, 0.9):.2f}]"
        print(f"{name:<14} {statistics.median(ts):>9.3f} {min(ts):>8.3f} {band:>32}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
