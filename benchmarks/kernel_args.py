"""What numba charges to read a call's arguments: a no-op compiled function given what
``one_game.step_game`` is given (without the observation, and with it), with the rules' and the
encoding's tables as tuples of their fields (as the batched loops take them) or packed into one
array each (``one_game.pack_tables``, ``one_game.pack_encoding``, as the one-game calls take them), and the
packed tables read-only (what a read-only argument costs). The variants alternate, for several
rounds; the figure is the median of the µs a call took.

    python benchmarks/kernel_args.py            # about ten seconds
    python benchmarks/kernel_args.py --quick
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package, not an installed one


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--rules", default="classic")
    args = p.parse_args(argv)
    from generala_env.compiled import batched, one_game
    from generala_env.core.encoding import Encoder
    from generala_env.core.engine import NUMBERS, facts_size, tables
    from generala_env.core.rules import load_rules

    if not batched.NUMBA:
        sys.exit("kernel_args: needs numba")
    njit = batched.njit

    @njit(_nrt=False)
    def noop(v, sheets, rules, faces, at, mask, facts, action):
        return v[0, 0]

    @njit(_nrt=False)
    def noop_observed(v, sheets, rules, faces, at, mask, facts, action, ints, floats, seat, out):
        return v[0, 0]

    @njit(_nrt=False)
    def noop_observed_tuple(v, sheets, rules, faces, at, mask, facts, action, enc, seat, out):
        return v[0, 0]

    rules = load_rules(args.rules)
    t, enc = tables(rules, 1), Encoder(rules, 1)
    v, sheets = np.zeros((len(NUMBERS), 1), dtype=np.int64), np.full((1, 1, rules.num_lines), -1, dtype=np.int32)
    facts = np.zeros(facts_size(1), dtype=np.int64)
    faces, at, mask = np.ones(1024, dtype=np.int8), np.zeros(2, dtype=np.int64), np.zeros((1, 32 + rules.num_lines), dtype=bool)
    out, packed, ints, floats = np.zeros(enc.size, dtype=np.float32), one_game.pack_tables(t), *one_game.pack_encoding(enc.tables, enc.size)
    rt, et = tuple(t), tuple(enc.tables)  # made once: the figure is the call's, not tuple()'s
    frozen = packed.copy()
    frozen.flags.writeable = False
    calls = {
        "tables as a tuple": lambda: noop(v, sheets, rt, faces, at, mask, facts, 0),
        "tables packed": lambda: noop(v, sheets, packed, faces, at, mask, facts, 0),
        "packed, read-only": lambda: noop(v, sheets, frozen, faces, at, mask, facts, 0),
        "observed, tuples": lambda: noop_observed_tuple(v, sheets, rt, faces, at, mask, facts, 0, et, 0, out),
        "observed, packed": lambda: noop_observed(v, sheets, packed, faces, at, mask, facts, 0, ints, floats, 0, out),
    }
    n, rounds = (20_000, 3) if args.quick else (100_000, 9)
    times: dict[str, list[float]] = {k: [] for k in calls}
    for f in calls.values():
        f()
    for _ in range(rounds):
        for k, f in calls.items():
            t0 = time.perf_counter()
            for _ in range(n):
                f()
            times[k].append((time.perf_counter() - t0) / n * 1e6)
    for k, ts in times.items():
        print(f"{k:20s} {np.median(ts):.3f} µs a call  [{min(ts):.3f}-{max(ts):.3f}]")


if __name__ == "__main__":
    main()
