"""The ``generala`` command: rules, agents, solve, play-random, evaluate, tournament, train, play."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from generala_env.extras import how_to_install

from .options import RULES_HELP, HelpFormatter, MissingExtra, parser, positive_float, positive_int, require_extra, seed_int

if TYPE_CHECKING:
    from generala_agents.solver import Solver
    from generala_agents.solver2p import TwoPlayerSolver


def _rules_cmd(args) -> int:
    from generala_env.core.rules import load_rules, preset_names
    from generala_env.core.scoring import line_max

    if args.name is None:
        print("presets: " + ", ".join(preset_names()))
        print("(generala rules NAME shows one; NAME may also be a path to a YAML file)")
        return 0
    rules = load_rules(args.name)
    if args.yaml:
        print(rules.to_yaml(), end="")
        return 0
    print(f"rule set: {rules.name}  (fingerprint {rules.fingerprint()})")
    print("sheet:")
    mx = line_max(rules)
    for l, line in enumerate(rules.lines):
        if line in ("ones", "twos", "threes", "fours", "fives", "sixes"):
            how = f"sum of the {line}"
        elif line == "three_of_a_kind":
            how = "sum of the three matching dice"
        elif line == "double_generala":
            how = f"{rules.value(line)} (five alike after a scored generala)"
        elif line == "generala":
            sg = " ; served: wins the game (2+ players)" if rules.served_generala == "win" else f" ; served: {rules.served_generala_points}"
            how = f"{rules.value(line)}{sg}"
        else:
            how = f"{rules.value(line)}" + (f" (+{rules.served_bonus} served)" if rules.served_bonus else "")
        print(f"  {l:2d}  {line:<16} {how:<44} max {int(mx[l])}")
    s = rules.settings()
    for k in ("served_bonus", "served_generala", "served_generala_points", "straight_wraps", "straight_one_as_two", "straight_gap", "locked_holds"):
        print(f"{k}: {s[k]}")
    return 0


def _play_random_cmd(args) -> int:
    import gymnasium as gym

    from generala_env import ENV_ID  # registers the env
    from generala_env.envs.env import GeneralaEnv, opponent_moves

    env = gym.make(ENV_ID, rules=args.rules, num_players=args.players, opponents="random" if args.players > 1 else None, render_mode="ansi")
    base = env.unwrapped
    assert isinstance(base, GeneralaEnv)  # gym.make returns it wrapped
    rng = np.random.default_rng(args.seed)
    obs, info = env.reset(seed=args.seed)
    print(env.render())
    done, ret = False, 0.0
    while not done:
        legal = np.flatnonzero(info["action_mask"])
        dice = info["dice"]
        a = int(legal[rng.integers(len(legal))])
        obs, r, done, _, info = env.step(a)
        ret += float(r)
        for seat, oa, pts in opponent_moves(info):
            print(f"-- P{seat} (random) action {oa}" + (f": wrote {pts}" if oa >= 32 else ""))
        print(f"\n-- P{base.seat} (you, random) action {a}: {describe_action(base.rules, dice, a)} -> reward {r:g}")
        print(env.render())
    result = f"final score {int(info['totals'][0])}" if args.players == 1 else f"winner(s): {tuple(np.flatnonzero(info['winners']).tolist())}"
    print(f"\nreturn {ret:g}; {result}")
    return 0


def describe_action(rules, dice, a: int) -> str:
    """An action in words: ``hold 4 4 4, reroll 2`` or ``write fours``."""
    if a < 32:
        held = [int(d) for i, d in enumerate(dice) if a >> i & 1]
        return f"hold {' '.join(map(str, held)) or 'nothing'}, reroll {5 - len(held)}"
    return f"write {rules.lines[a - 32]}"


def _agents_cmd(args) -> int:
    import generala_agents as agents

    described = agents.describe()
    width = max(map(len, described), default=0) + 2
    for name, doc in described.items():
        print(f"{name:<{width}}{doc}")
    return 0


def _peak_memory_mib() -> float:
    """This process's peak resident memory so far (Linux and macOS report different units)."""
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024.0


def _solve_progress():
    """A progress bar over the values solved (tqdm if installed, else a line now and then
    on stderr), and a function that closes it."""
    try:
        from tqdm import tqdm
    except ImportError:
        tqdm = None
    if tqdm is not None:
        bar = tqdm(total=None, unit="value", unit_scale=True, desc="solving", file=sys.stderr, leave=False)

        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        return progress, bar.close
    import time

    last = [0.0]

    def progress(done: int, total: int) -> None:
        if time.monotonic() - last[0] > 5 or done == total:
            last[0] = time.monotonic()
            print(f"solving: {done / total:6.1%} of {total:,} values", file=sys.stderr, flush=True)

    return progress, lambda: None


@contextlib.contextmanager
def _warnings_as_lines(prog: str) -> Iterator[None]:
    """The project's runtime warnings raised in the block (a cache not used or not written)
    printed as ``generala PROG: warning: MESSAGE``, one line each on stderr; others as Python
    prints them."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        try:
            yield
        finally:
            for w in caught:
                if issubclass(w.category, RuntimeWarning) and w.category.__module__.split(".")[0] in ("builtins", "generala_env", "generala_agents"):
                    print(f"generala {prog}: warning: {str(w.message).splitlines()[0] if str(w.message) else w.category.__name__}", file=sys.stderr)
                else:
                    warnings.showwarning(w.message, w.category, w.filename, w.lineno)


def _solve_cmd(args) -> int:
    from generala_env.core.rules import load_rules

    rules = load_rules(args.rules)
    if args.players > 2:
        raise SystemExit(f"generala solve: only one and two players are solved exactly, got --players {args.players}")
    import time

    t0 = time.perf_counter()
    out = {"rules": rules.name, "fingerprint": rules.fingerprint(), "players": args.players}
    solver: Solver | TwoPlayerSolver
    with _warnings_as_lines("solve"):  # a cache not used or not written: one line each, and the solve goes on
        if args.players == 1:
            from generala_agents.solver import load_or_solve

            solver, source = load_or_solve(rules, use_cache=not args.no_cache)
            out["expected_score"] = solver.expected_score
        else:
            from generala_agents.solver2p import SolveTooBigError, load_or_solve_2p

            progress, close = _solve_progress() if not args.json else (None, lambda: None)
            try:
                solver, source = load_or_solve_2p(rules, use_cache=not args.no_cache, progress=progress, max_memory=int(args.max_memory * 2**30))
            except SolveTooBigError as e:
                raise SystemExit(f"generala solve: {e}") from None
            finally:
                close()
            out["first_player_value"] = solver.first_player_value
    wall = time.perf_counter() - t0
    out.update(solve_seconds=solver.solve_seconds, source=source, load_seconds=wall, peak_memory_mib=_peak_memory_mib())
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    if args.players == 1:
        print(f"rules {rules.name}: optimal expected score {out['expected_score']:.4f}")
    else:
        print(f"rules {rules.name}, two players: seat 0's P(win) + 1/2 P(draw) under optimal play by both {out['first_player_value']:.6f}")
    how = "read from cache" if source == "cache" else "solved"
    print(f"{how} in {wall:.3f} s (exact solve took {solver.solve_seconds:.3f} s); peak memory {out['peak_memory_mib']:.0f} MiB")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = parser("generala", "Generala: environment, agents, solver, evaluation and training")
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser("rules", allow_abbrev=False, formatter_class=HelpFormatter, help="list presets, or print one rule set")
    r.add_argument("name", nargs="?", help="preset name or YAML path")
    r.add_argument("--yaml", action="store_true", help="print the full settings as YAML")
    r.set_defaults(func=_rules_cmd)

    pr = sub.add_parser("play-random", allow_abbrev=False, formatter_class=HelpFormatter, help="play one game with random legal moves, rendered as text")
    pr.add_argument("--rules", default="classic", help=RULES_HELP)
    pr.add_argument("--players", type=int, default=1, help="players at the table, the others random too")
    pr.add_argument("--seed", type=seed_int, default=0, help="seed of the dice and the moves")
    pr.set_defaults(func=_play_random_cmd)

    a = sub.add_parser("agents", allow_abbrev=False, formatter_class=HelpFormatter, help="list the agents by name")
    a.set_defaults(func=_agents_cmd)

    s = sub.add_parser(
        "solve",
        allow_abbrev=False,
        formatter_class=HelpFormatter,
        help="solve a rule set exactly: the optimal one-player score, or the two-player chance to win",
    )
    s.add_argument("--rules", default="classic", help=RULES_HELP)
    s.add_argument("--players", type=positive_int, default=1, help="1: the best expected score; 2: both maximise P(win) + 1/2 P(draw)")
    s.add_argument(
        "--max-memory",
        type=positive_float,
        default=2.0,
        metavar="GIB",
        help="two players: refuse a solve needing more than this many GiB (default: %(default)g)",
    )
    s.add_argument("--json", action="store_true")
    s.add_argument("--no-cache", action="store_true", help="solve anew and do not write the cache")
    s.set_defaults(func=_solve_cmd)

    for name, (_module, what, _) in PROGRAMS.items():
        sub.add_parser(name, allow_abbrev=False, help=f"{what} (see 'generala {name} --help')", add_help=False)
    return p


TRAIN_MODULES = ("torch", "stable_baselines3", "sb3_contrib", "tensorboard", "tqdm")

# subcommands with parsers of their own: everything after the name goes to them; the extra
# and modules a program needs before it can start (evaluate and tournament check their own)
PROGRAMS = {
    "evaluate": ("generala_training.evaluate", "one-player games of agents on the same dice", None),
    "tournament": ("generala_training.tournament", "head-to-head games, seats swapped on the same dice", None),
    "train": ("generala_training.train", "train a MaskablePPO agent from a YAML config", ("train", TRAIN_MODULES)),
    # checks its own extra ([jax]) without importing it: JAX's threads start at import, and the
    # run's evaluation forks its workers first
    "jax-train": ("generala_training.jax_train", "train PPO compiled end to end in JAX from a YAML config (backend: jax)", None),
    "export": ("generala_training.export", "make a checkpoint folder (plain tensors, an agent spec) from a training run", ("train", TRAIN_MODULES)),
    "play": ("generala_play.terminal", "play in the terminal against agents", None),
    "replay": ("generala_play.replay", "games as one self-contained HTML page, every move judged by the exact optimum", None),
    "serve": ("generala_play.serve", "play in the browser against agents, with hints (local only by default)", ("serve", ("fastapi", "uvicorn"))),
    "dataset": ("generala_training.dataset", "Minari datasets of games played by any agent, for offline RL", ("offline", ("minari", "pyarrow", "PIL"))),
    # checks its own extras ([benchmark], and [ray] for --backend ray)
    "benchmark": ("generala_training.benchmark", "train RL algorithms on the task suite, scored against the optimum with rliable", None),
}


def _interrupt_again(unraisable) -> None:
    """``sys.unraisablehook`` while a program runs: a Ctrl-C (or a SIGTERM that train turns into
    one) that landed in a callback from C code, such as numba's compiler cache, cannot be raised
    there and would be lost with a traceback printed; it is raised again in the main thread, where
    the program's interrupt handling catches it. Anything else goes to the usual hook."""
    import _thread
    import threading

    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        # from another thread, a moment later: raised in the hook itself, it would be lost again
        timer = threading.Timer(0.01, _thread.interrupt_main)
        timer.daemon = True
        timer.start()
        return
    sys.__unraisablehook__(unraisable)


def main(argv=None) -> int:
    old_hook, sys.unraisablehook = sys.unraisablehook, _interrupt_again
    try:
        code = _main(argv)
        sys.stdout.flush()  # here, so that a reader gone away (below) is caught
        return code
    except BrokenPipeError:
        # whoever read the output stopped reading (`generala rules classic | head -2`): stop
        # quietly, as the shell's own tools do; what is left unwritten goes nowhere, not into
        # a second error when Python flushes standard output at exit
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, the status of a tool the signal stopped
    finally:
        sys.unraisablehook = old_hook


def _installed(module: str) -> bool:
    """Whether ``module`` can be imported, without importing it."""
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent missing, or an entry of None in sys.modules
        return False


def _main(argv=None) -> int:
    from generala_env.core.rules import RulesError

    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[0] if argv else None
    try:
        if command in PROGRAMS:
            import importlib

            module, _, needs = PROGRAMS[command]
            if command == "train" and "--list-configs" in argv[1:]:  # a listing needs no training extra
                from .config_presets import list_configs

                return list_configs()
            if needs is not None:
                if any(h in argv[1:] for h in ("-h", "--help")) and not all(_installed(m) for m in needs[1]):
                    print(f"generala {command}: {PROGRAMS[command][1]}; it needs the {needs[0]} extra, which is not installed; {how_to_install(needs[0])}")
                    return 0
                if "torch" in needs[1] and "torch" not in sys.modules and _installed("torch"):
                    from generala_env.files.cache import notice

                    notice("torch", "loading torch and stable-baselines3 (a few seconds, longer on a busy machine)")
                require_extra(needs[0], needs[1], "this program")
            return int(importlib.import_module(module).main(argv[1:]) or 0)
        args = build_parser().parse_args(argv)
        return int(args.func(args) or 0)
    except (RulesError, ValueError, MissingExtra) as e:
        print(f"generala {command}: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away: main() stops quietly
        raise
    except OSError as e:  # a full disk, a folder that cannot be read: one line naming the file
        where = f"{e.filename}: " if getattr(e, "filename", None) else ""
        print(f"generala {command}: error: {where}{e.strerror or e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # SIGINT while a program loads or solves: one line, the shell's status
        print(f"\ngenerala {command}: interrupted", file=sys.stderr)
        return 130
    except RuntimeError as e:
        if not _caused_by_interrupt(e):
            raise
        # a Ctrl-C that landed inside a class statement of a module being imported (torch's,
        # loading): Python reports it as "Error calling __set_name__" caused by the interrupt
        print(f"\ngenerala {command}: interrupted", file=sys.stderr)
        return 130


def _caused_by_interrupt(e: BaseException) -> bool:
    """Whether ``e`` was caused by a KeyboardInterrupt (its chain of causes holds one)."""
    seen: set[int] = set()
    cause: BaseException | None = e
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


if __name__ == "__main__":
    sys.exit(main())
