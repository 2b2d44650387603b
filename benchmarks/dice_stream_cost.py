"""What one game's refill of 1024 faces costs: numpy's ``Generator.integers(1, 7, size=1024,
dtype=np.int8)`` called from Python once per game (one generator per game, as a vector env of
numpy generators would), against :func:`generala_env.compiled.dice_stream.faces_into` called inside one
compiled loop over the games' rows, and :func:`~generala_env.compiled.dice_stream.cup_fill` refilling
every game's cup in such a loop (the faces left over moved first, as ``DiceCup.refill`` does);
and what seeding all the games' streams costs, from Python and in a compiled loop.
Both draw the same faces (checked before timing). The variants alternate for several rounds, each first in turn;
each figure is the median over rounds of the µs per refill (a round's time / games).

    python benchmarks/dice_stream_cost.py            # about ten seconds after the compile
    python benchmarks/dice_stream_cost.py --quick
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package, not an installed one


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--games", type=int, default=4096)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--quick", action="store_true", help="5 rounds over 1024 games")
    args = p.parse_args(argv)
    if args.quick:
        args.games, args.rounds = 1024, 5
    from generala_env.compiled import dice_stream as ds

    if not ds.NUMBA:
        sys.exit("dice_stream_cost: needs numba")
    from numba import njit

    @njit(error_model="numpy", _nrt=False)
    def refill_all(pcg, out):
        for g in range(pcg.shape[0]):
            ds.faces_into(pcg, np.uint64(g), out[g], 0, ds.BLOCK)
        return 0

    @njit(error_model="numpy", _nrt=False)
    def cup_refill_all(faces, at, pcg):
        for g in range(pcg.shape[0]):
            at[g, 0] = max(at[g, 0], at[g, 1] - 2)  # two faces left: a throw of five needs a refill
            ds.cup_fill(pcg, faces, at, np.uint64(g), 5)
            for _ in range(5):
                ds.cup_face(faces, at, np.uint64(g))
        return 0

    @njit(error_model="numpy", _nrt=False)
    def reseed_all(pcg, seeds):
        for g in range(pcg.shape[0]):
            ds.seeded_row(pcg, np.uint64(g), seeds[g])
        return 0

    n = args.games
    seeds = range(n)
    gens = [np.random.Generator(np.random.PCG64(np.random.SeedSequence(s))) for s in seeds]
    pcg = ds.streams_from_seeds(seeds)
    out = np.zeros((n, ds.BLOCK), dtype=np.int8)
    faces, at = ds.empty_cups(n)
    t = time.perf_counter()
    refill_all(pcg, out)  # compiles
    cup_refill_all(faces, at, pcg)
    reseed_all(pcg[:1].copy(), np.zeros(1, dtype=np.uint64))
    compile_s = time.perf_counter() - t
    pcg = ds.streams_from_seeds(seeds)
    refill_all(pcg, out)
    for g in range(n):
        if not np.array_equal(out[g], gens[g].integers(1, 7, size=ds.BLOCK, dtype=np.int8)):
            sys.exit(f"dice_stream_cost: game {g}'s faces differ from numpy's")

    def numpy_refills():
        for gen in gens:
            gen.integers(1, 7, size=1024, dtype=np.int8)

    runs = {
        "numpy Generator.integers, one call per game": numpy_refills,
        "faces_into in a compiled loop over the games": lambda: refill_all(pcg, out),
        "cup_fill refilling each game's cup, compiled loop": lambda: cup_refill_all(faces, at, pcg),
    }
    times: dict[str, list[float]] = {k: [] for k in runs}
    order = list(runs)
    for r in range(args.rounds):
        for name in order[r % len(order) :] + order[: r % len(order)]:  # each variant first in turn
            call = runs[name]
            t = time.perf_counter()
            call()
            times[name].append((time.perf_counter() - t) / n * 1e6)
    print(f"one refill of {ds.BLOCK} faces, {n} games, median of {args.rounds} rounds (compile of the loops: {compile_s:.1f} s)")
    for name, ts in times.items():
        print(f"  {statistics.median(ts):8.2f} µs per refill   {name}")

    # what a reset(seed=...) of all the games costs the streams: seeding them from Python
    # (numpy's SeedSequence and PCG64 per game), or reseeding each row in a compiled loop
    seeding = [time.perf_counter()]
    ds.streams_from_seeds(seeds)
    seeding.append(time.perf_counter())
    reseed_all(pcg, np.arange(n, dtype=np.uint64))
    seeding.append(time.perf_counter())
    print(
        f"seeding {n} games' streams: streams_from_seeds {(seeding[1] - seeding[0]) / n * 1e6:.2f} µs per game; seeded_row in a compiled loop {(seeding[2] - seeding[1]) / n * 1e6:.3f} µs per game"
    )


if __name__ == "__main__":
    main()
