"""What the exact two-player solve costs: wall-clock time, peak memory and seat 0's value,
one rule set at a time, each solve in a process of its own.

    python benchmarks/solve2p_cost.py                      # classic, double and sixty
    python benchmarks/solve2p_cost.py --rules classic --old main --compare

Each solve runs ``generala solve --players 2 --rules NAME --no-cache --json`` in a child
process; its peak resident memory is the child's own (``os.wait4``'s ``ru_maxrss``).
``--old REV`` also runs the solver of git revision ``REV`` (its ``agents/solver2p.py`` and
kernel, loaded beside the installed package) on the same rules, for a ratio; ``--compare``
then compares every value the two tables store (the old table is saved to a temporary
folder, the new one solved into a temporary cache) and reports the largest difference.
Timings depend on the machine and its load: report them with both.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# the two-player solver's modules, each before the modules that import it; a revision from
# before solver2p.py was split has only the first and the last
SOLVER2P_MODULES = ("solver2p_kernel", "solver2p_layout", "solver2p_solve", "solver2p")

# the old solver, loaded from a git revision into a folder of its own, as modules of the
# installed package (its relative imports find the one-player solver there)
OLD_CHILD = """
import importlib.util, json, os, sys, time
import numpy as np
import generala_agents
folder, rules, save = sys.argv[1], sys.argv[2], sys.argv[3]
for name in SOLVER2P_MODULES:
    path = f"{folder}/old_{name}.py"
    if not os.path.exists(path):
        continue
    spec = importlib.util.spec_from_file_location("generala_agents.old_" + name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
old = sys.modules["generala_agents.old_solver2p"]
t0 = time.perf_counter()
s = old.TwoPlayerSolver(rules).solve(max_memory=None)
out = {"solve_seconds": time.perf_counter() - t0, "first_player_value": s.first_player_value}
if save:
    lay = s.sheet_layout()
    np.savez(save, V=s.V, a=lay.pair_a, b=lay.pair_b, off=lay.off, size=lay.size)
print(json.dumps(out))
""".replace("SOLVER2P_MODULES", repr(SOLVER2P_MODULES))


def peak_of(cmd: list[str], env: dict[str, str]) -> dict:
    """Run ``cmd``: its JSON output, wall-clock and CPU seconds, and its own peak resident
    memory in MiB (``wait4``'s usage of that one child)."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen(cmd, env=env, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        text, why = out.read(), err.read()
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:8])} failed ({child.returncode}): {why[-2000:]}")
    got = json.loads(text[text.index("{") :])
    kib = usage.ru_maxrss if sys.platform != "darwin" else usage.ru_maxrss / 1024
    return {**got, "wall_seconds": wall, "peak_mib": kib / 1024, "cpu_seconds": usage.ru_utime + usage.ru_stime}


def old_solver_folder(rev: str, folder: Path) -> None:
    """The two-player solver of git revision ``rev`` in ``folder``, each of its modules as
    ``old_NAME.py`` importing the others by those names."""
    for name in SOLVER2P_MODULES:
        got = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:agents/{name}.py"], capture_output=True, text=True)
        if got.returncode != 0:
            if name in ("solver2p_layout", "solver2p_solve"):  # a revision from before the split
                continue
            raise SystemExit(f"git show {rev}:agents/{name}.py failed: {got.stderr.strip()}")
        text = got.stdout
        for other in SOLVER2P_MODULES:
            text = text.replace(f"from .{other} import", f"from .old_{other} import")
        (folder / f"old_{name}.py").write_text(text)


def largest_difference(old_file: Path, new_cache: Path, rules: str) -> tuple[float, int]:
    """The largest |old - new| over every value both tables store, and how many values."""
    import numpy as np

    from generala_agents.solver2p import Layout, cache_path
    from generala_env.core.rules import load_rules

    old = np.load(old_file)
    os.environ["GENERALA_CACHE"] = str(new_cache)
    new_V = np.load(cache_path(load_rules(rules)), mmap_mode="r")
    lay = Layout(load_rules(rules))
    # the same pairs and differences in both; only the order of the pairs differs
    where = {(int(a), int(b)): i for i, (a, b) in enumerate(zip(old["a"], old["b"], strict=True))}
    assert np.array_equal(np.sort(old["size"]), np.sort(lay.size))
    order = np.array([where[(int(a), int(b))] for a, b in zip(lay.pair_a, lay.pair_b, strict=True)])
    old_sizes = old["size"][order]
    assert np.array_equal(old_sizes, lay.size)
    worst = 0.0
    old_V, old_off = old["V"], old["off"][order]
    for start in range(0, lay.num_pairs, 1 << 16):  # a block of pairs at a time
        ps = np.arange(start, min(start + (1 << 16), lay.num_pairs))
        idx_new = np.concatenate([np.arange(lay.off[p], lay.off[p] + lay.size[p]) for p in ps])
        idx_old = np.concatenate([np.arange(old_off[p], old_off[p] + lay.size[p]) for p in ps])
        worst = max(worst, float(np.abs(old_V[idx_old].astype(np.float64) - new_V[idx_new]).max()))
    return worst, lay.num_values


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rules", nargs="+", default=["classic", "double", "sixty"])
    p.add_argument("--old", metavar="REV", help="also run the solver of this git revision, for a ratio")
    p.add_argument("--compare", action="store_true", help="with --old: the largest difference over all stored values")
    p.add_argument("--max-memory", type=float, default=2.0, metavar="GIB", help="passed to generala solve (default 2)")
    args = p.parse_args()
    if args.compare and not args.old:
        p.error("--compare needs --old REV")
    py = sys.executable
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start (other work on it slows every figure)")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        cache = tmp / "cache"
        cache.mkdir(mode=0o700)
        env = {**os.environ, "GENERALA_CACHE": str(cache)}
        if args.old:
            old_solver_folder(args.old, tmp)
        # the numba loops are compiled (and cached) first, on a one-line sheet, so that the figures are the solves'
        tiny = tmp / "tiny.yaml"
        tiny.write_text("lines: [ones, generala]\n")
        peak_of([py, "-m", "generala_training.cli", "solve", "--players", "2", "--rules", str(tiny), "--no-cache", "--json"], env)
        if args.old:
            peak_of([py, "-c", OLD_CHILD, str(tmp), str(tiny), ""], env)
        rows = []
        for rules in args.rules:
            cmd = [py, "-m", "generala_training.cli", "solve", "--players", "2", "--rules", rules, "--json", "--max-memory", str(args.max_memory)]
            new = peak_of([*cmd, *([] if args.compare else ["--no-cache"])], env)
            row = {"rules": rules, "new": new}
            print(
                f"{rules}: seat 0's value {new['first_player_value']:.6f}; {new['wall_seconds']:.1f} s wall "
                f"({new['cpu_seconds']:.1f} s CPU), peak {new['peak_mib']:.0f} MiB" + ("" if args.compare else " (--no-cache)"),
                flush=True,
            )
            if args.old:
                save = str(tmp / f"old-{rules}.npz") if args.compare else ""
                old = peak_of([py, "-c", OLD_CHILD, str(tmp), rules, save], env)
                row["old"] = old
                print(
                    f"{rules} (solver of {args.old}): seat 0's value {old['first_player_value']:.6f}; {old['wall_seconds']:.1f} s wall "
                    f"({old['cpu_seconds']:.1f} s CPU), peak {old['peak_mib']:.0f} MiB; "
                    f"new/old: {new['wall_seconds'] / old['wall_seconds']:.2f} of the time, {new['peak_mib'] / old['peak_mib']:.2f} of the memory; "
                    f"value difference {abs(new['first_player_value'] - old['first_player_value']):.2e}",
                    flush=True,
                )
                if args.compare:
                    worst, n = largest_difference(Path(save), cache, rules)
                    row["largest_difference"] = worst
                    print(f"{rules}: largest difference over all {n:,} stored values: {worst:.2e}", flush=True)
            rows.append(row)
        print(json.dumps(rows, indent=1))
    print(
        f"load average {os.getloadavg()[0]:.1f} at the end; this process's children used {resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime:.0f} s of CPU"
    )


if __name__ == "__main__":
    main()
