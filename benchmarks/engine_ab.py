"""This checkout's env against another commit's, paired in one process.

Two versions of ``generala_env`` run side by side: this checkout's (imported from the
repository this script is in, not from whatever is installed) and the package at
``--base`` (a git revision, taken with ``git archive`` into a temporary folder and imported
as ``generala_env_base``). Each plays random legal games of the same rules, seeds and
action choices; their spells alternate, in turn order swapped every round, and the ratio
this/base of each round's decisions per second is reported as the median over rounds with
the 10th to 90th percentile. Two processes run minutes apart drift by more than the
change being measured on a shared machine; two spells a second apart do not.

    python benchmarks/engine_ab.py --base 040cac6                    # the batched env, N = 4096
    python benchmarks/engine_ab.py --base 040cac6 --what single --rules double
    python benchmarks/engine_ab.py --base HEAD~1 --what game --quick

(040cac6 is the last commit before the one-engine change.) The base's numba kernels are
compiled at every run, into the temporary folder (seconds).

One process's figure can be luck: at N = 4096 the same commit's best spell has come out at 8.1M
decisions/s in one process and 10.8M in the next (where its arrays land in memory, presumably).
``--processes K`` runs the comparison in K processes one after another and reports each one's
median and the median of the K medians:

    python benchmarks/engine_ab.py --base f408a44 --processes 5 --rounds 12
"""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import env_speed  # beside this script: the contestants
import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def import_base(rev: str, where: Path):
    """The package ``generala_env`` of git revision ``rev``, as ``generala_env_base``, and the commit it is."""
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", f"{rev}^{{commit}}"], capture_output=True, text=True, check=False)
    if commit.returncode != 0:
        sys.exit(f"engine_ab: {rev!r} is no commit of {ROOT}")
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "generala_env"], capture_output=True, check=False)
    if archive.returncode != 0:
        sys.exit(f"engine_ab: git archive {rev} failed: {archive.stderr.decode().strip()}")
    subprocess.run(["tar", "-x", "-C", str(where)], input=archive.stdout, check=True)
    (where / "generala_env").rename(where / "generala_env_base")
    sys.path.insert(0, str(where))
    return importlib.import_module("generala_env_base"), commit.stdout.strip()


def runner(pkg: str, what: str, rules: str, num_envs: int, seed: int):
    """``env_speed.py``'s contestant of that kind, for package ``pkg``: ``run(seconds) ->
    (decisions, elapsed)``. The single env is the env class itself (``gym.make`` would make
    whichever version registered ``Generala-v0`` last)."""
    if what == "vector":
        return env_speed.vector_runner(num_envs, seed, pkg=pkg, rules=rules)
    if what == "game":
        return env_speed.engine_runner(seed, pkg=pkg, rules=rules)
    return env_speed.single_env_runner(seed, pkg=pkg, rules=rules, wrapped=False)


def rate(run, seconds: float) -> float:
    decisions, elapsed = run(seconds)
    return decisions / elapsed


def in_processes(args, argv: list[str]) -> None:
    """The comparison run in ``args.processes`` processes in turn: each one's lines, then the
    median of their medians."""
    rest = [a for i, a in enumerate(argv) if a != "--processes" and not a.startswith("--processes=") and (i == 0 or argv[i - 1] != "--processes")]
    medians = []
    for k in range(args.processes):
        out = subprocess.run([sys.executable, __file__, *rest], capture_output=True, text=True, check=False)
        if out.returncode != 0:
            sys.exit(f"engine_ab: process {k + 1} failed: {out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode}")
        lines = [line for line in out.stdout.splitlines() if line.strip()]
        print(f"process {k + 1}: " + " | ".join(lines[1:]) if k else "\n".join([lines[0], "process 1: " + " | ".join(lines[1:])]))
        medians.append(float(lines[1].split("median ")[1].split()[0]))
    print(f"median of the {args.processes} processes' medians: {np.median(medians):.3f} (lowest {min(medians):.3f}, highest {max(medians):.3f})")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", required=True, help="git revision to compare against (e.g. main, HEAD~3)")
    p.add_argument("--what", choices=("vector", "single", "game"), default="vector")
    p.add_argument("--rules", default="classic")
    p.add_argument("--num-envs", type=int, default=4096, help="games of the batched env")
    p.add_argument("--rounds", type=int, default=None, help="rounds (default 24, quick 3)")
    p.add_argument("--seconds", type=float, default=None, help="seconds a spell (default 0.3, quick 0.1)")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--processes", type=int, default=1, help="run the comparison in this many processes, one after another")
    args = p.parse_args(argv)
    if args.processes > 1:
        return in_processes(args, argv if argv is not None else sys.argv[1:])
    rounds = args.rounds or (3 if args.quick else 24)
    seconds = args.seconds or (0.1 if args.quick else 0.3)
    warnings.filterwarnings("ignore", module="gymnasium")  # both versions register Generala-v0
    warnings.filterwarnings("ignore", message=".*numba.*", category=Warning)  # the base's cache notes
    sys.path.insert(0, str(ROOT))
    import generala_env

    with tempfile.TemporaryDirectory() as tmp:
        base, commit = import_base(args.base, Path(tmp))
        plays = {name: runner(name, args.what, args.rules, args.num_envs, args.seed) for name in ("generala_env", "generala_env_base")}
        for run in plays.values():
            rate(run, 0.2)
        rates: dict[str, list[float]] = {name: [] for name in plays}
        for r in range(rounds):
            for name in list(plays) if r % 2 == 0 else list(plays)[::-1]:
                rates[name].append(rate(plays[name], seconds))
    ratio = np.array(rates["generala_env"]) / np.array(rates["generala_env_base"])
    what = f"{args.what} N={args.num_envs}" if args.what == "vector" else args.what
    print(
        f"{what}, {args.rules}: this checkout ({Path(generala_env.__file__).parent}) against {args.base} (commit {commit}, as {Path(base.__file__).parent.name})"
    )
    print(
        f"{rounds} rounds of {seconds} s spells; this/base: median {np.median(ratio):.3f} [p10 {np.percentile(ratio, 10):.3f} - p90 {np.percentile(ratio, 90):.3f}]"
    )
    print(f"best spells, decisions/s: this {max(rates['generala_env']):,.0f}, base {max(rates['generala_env_base']):,.0f}")


if __name__ == "__main__":
    main()
