"""Time and memory to solve each preset exactly: ``generala_agents.solver.Solver(rules).solve()``.

No disk cache is read or written. Each preset is solved in a fresh process (spawned), so
its peak resident memory is that solve's alone:

* ``seconds``: best wall time of ``--repeat`` solves;
* ``peak traced``: the most memory the solve's Python and NumPy allocations held at once
  (tracemalloc, one extra solve, not timed);
* ``peak RSS``: the process's peak resident set size (``ru_maxrss``), and how much of it
  the solve added to the process after imports.

    python benchmarks/solver_speed.py            # every preset, 3 solves each
    python benchmarks/solver_speed.py --quick    # classic, one solve
    python benchmarks/solver_speed.py --players 2 --rules classic   # the two-player table

With ``--players 2`` it times ``generala_agents.solver2p.TwoPlayerSolver(rules).solve()`` (one
solve, numba compiled beforehand in the same process, not timed); a rule set whose table
would exceed ``--max-memory`` GiB is reported as refused, with the memory it would need.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import platform
import resource
import time
import tracemalloc


def _rss_peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def solve_in_this_process(rules: str, repeat: int) -> dict:
    from generala_agents.solver import Solver

    base = _rss_peak_mib()
    times, value = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        solver = Solver(rules).solve()
        times.append(time.perf_counter() - t0)
        value = solver.expected_score
        del solver
    rss = _rss_peak_mib()
    tracemalloc.start()
    Solver(rules).solve()
    _, traced = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"rules": rules, "seconds": min(times), "all": times, "value": value, "traced_mib": traced / 2**20, "rss_mib": rss, "rss_added_mib": rss - base}


def solve_2p_in_this_process(rules: str, max_memory_gib: float) -> dict:
    from generala_agents.solver2p import Layout, SolveTooBigError, TwoPlayerSolver
    from generala_env.core.rules import load_rules

    need = Layout.bytes_needed(load_rules(rules)) / 2**20
    TwoPlayerSolver({"lines": ["ones", "generala"]}).solve()  # compile (or load) the kernel: not timed
    base = _rss_peak_mib()
    try:
        solver = TwoPlayerSolver(rules).solve(max_memory=int(max_memory_gib * 2**30))
    except SolveTooBigError:
        return {
            "rules": rules,
            "seconds": float("nan"),
            "value": float("nan"),
            "need_mib": need,
            "rss_mib": float("nan"),
            "rss_added_mib": float("nan"),
            "refused": True,
        }
    rss = _rss_peak_mib()
    return {
        "rules": rules,
        "seconds": solver.solve_seconds,
        "value": solver.first_player_value,
        "need_mib": need,
        "rss_mib": rss,
        "rss_added_mib": rss - base,
        "refused": False,
    }


def _child(rules: str, repeat: int, out, players: int = 1, max_memory_gib: float = 2.0) -> None:
    out.put(solve_in_this_process(rules, repeat) if players == 1 else solve_2p_in_this_process(rules, max_memory_gib))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="classic only, one solve")
    p.add_argument("--repeat", type=int, default=None, help="timed solves per preset (default 3, quick 1)")
    p.add_argument("--rules", nargs="+", default=None, help="presets or rule files (default: every preset)")
    p.add_argument("--players", type=int, choices=(1, 2), default=1, help="2: the exact two-player table (P(win) + 1/2 P(draw))")
    p.add_argument("--max-memory", type=float, default=2.0, metavar="GIB", help="two players: refuse tables bigger than this")
    args = p.parse_args(argv)
    from generala_env.core.rules import preset_names

    rules = args.rules or (["classic"] if args.quick else preset_names())
    repeat = args.repeat or (1 if args.quick else 3)

    ctx = mp.get_context("spawn")
    rows = []
    for r in rules:
        q = ctx.Queue()
        proc = ctx.Process(target=_child, args=(r, repeat, q, args.players, args.max_memory))
        proc.start()
        rows.append(q.get())
        proc.join()

    if args.players == 2:
        import numba

        print(
            f"exact two-player solve (generala_agents.solver2p.TwoPlayerSolver(rules).solve(), no cache), {numba.get_num_threads()} numba threads; python {platform.python_version()}, {platform.machine()}"
        )
        head = f"{'rules':<10}{'seconds':>9}{'seat 0 value':>14}{'table needs':>13}{'peak RSS':>10}{'solve added':>13}"
        print(head)
        print("-" * len(head))
        for row in rows:
            if row["refused"]:
                print(f"{row['rules']:<10}{'refused':>9}{'':>14}{row['need_mib']:>9.0f} MiB  over --max-memory {args.max_memory} GiB")
                continue
            print(
                f"{row['rules']:<10}{row['seconds']:>9.1f}{row['value']:>14.6f}{row['need_mib']:>9.0f} MiB{row['rss_mib']:>6.0f} MiB{row['rss_added_mib']:>9.0f} MiB"
            )
        return

    print(f"exact solve (generala_agents.solver.Solver(rules).solve(), no cache), best of {repeat}; python {platform.python_version()}, {platform.machine()}")
    head = f"{'rules':<10}{'seconds':>9}{'E[score]':>10}{'peak traced':>13}{'peak RSS':>10}{'solve added':>13}"
    print(head)
    print("-" * len(head))
    for row in rows:
        print(
            f"{row['rules']:<10}{row['seconds']:>9.3f}{row['value']:>10.2f}{row['traced_mib']:>10.1f} MiB"
            f"{row['rss_mib']:>6.0f} MiB{row['rss_added_mib']:>9.0f} MiB"
        )
    classic = next((row for row in rows if row["rules"] == "classic"), None)
    if classic is not None:
        print(f"classic under one second: {'yes' if classic['seconds'] < 1.0 else 'NO'} ({classic['seconds']:.3f} s)")


if __name__ == "__main__":
    main()
