"""Train the td-search agents from their own games: ``python -m generala_training.td_search``.

One player (``--players 1``): TD learning of the table of points to come (agents/td_search.py).
Two players (``--players 2``): TD self-play of the chance-to-win model on top of a one-player
table learned the same way (``--values``: a td-search file from ``--players 1``).

Everything goes to ``--out DIR``: ``td_search.json`` (the values, the generator's state and the
learning curve, rewritten whole every ``--save-every`` games) and ``curve.csv``. Run it again on
the same folder and it goes on from there; Ctrl-C or SIGTERM stops it after saving. No solver
values are read: the learned values start from the rules alone.

The folder is locked while a run uses it (a second run on it is refused with one line); its
files are written atomically, never through a link and never over a file this program did
not write there (``.generala-outputs.json`` records what it wrote). A file it cannot read or
write is one line, not a traceback.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import signal
import sys
import time
from pathlib import Path

import numpy as np

from generala_agents.base import AgentError
from generala_agents.td_search import (
    FORMAT,
    VALUES_FILE,
    OnePlayerLearner,
    TwoPlayerLearner,
    TwoPlayerValue,
    check_sizes,
    read_values_file,
    trained_fingerprint,
)
from generala_env.core.checks import is_whole
from generala_env.core.rules import RulesError, load_rules
from generala_env.files import FileProblem, OutputFolder, lock_folder, lstat_or_none, sha256_of

PROG = "python -m generala_training.td_search"
CURVE_FILE = "curve.csv"

EVAL_SEED = 10**6  # evaluation dice: seeds EVAL_SEED + i, apart from the training dice


def evaluate_1p(learner: OnePlayerLearner, games: int) -> float:
    return float(np.mean([learner.play_game(np.random.default_rng(EVAL_SEED + i), learn=False) for i in range(games)]))


def curve_csv(curve: list[dict]) -> str:
    """The learning curve as ``curve.csv`` (a header of the first row's keys)."""
    text = io.StringIO()
    w = csv.DictWriter(text, fieldnames=list(curve[0]) if curve else ["games"])
    w.writeheader()
    w.writerows(curve)
    return text.getvalue()


def check_state(state: dict, file: Path) -> None:
    """Refuse a ``td_search.json`` to resume from whose run keys are of the wrong type: one line naming it."""
    checks = {
        "games": (lambda v: is_whole(v) and v >= 0, "a whole number of 0 or more"),
        "train_seconds": (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool), "a number"),
        "curve": (lambda v: isinstance(v, list) and all(isinstance(r, dict) for r in v), "a list of mappings"),
        "rng_state": (lambda v: isinstance(v, dict), "a mapping (numpy's generator state)"),
    }
    for key, (ok, what) in checks.items():
        if not ok(state.get(key)):
            raise AgentError(f"{file}: {key!r} must be {what}, got {state.get(key)!r:.80}")
    built_on = state.get("built_on")
    if built_on is not None and not (isinstance(built_on, dict) and isinstance(built_on.get("solver_in_training"), list)):
        raise AgentError(f"{file}: 'built_on' must be a mapping with a list 'solver_in_training', got {built_on!r:.80}")
    recipes = state.get("recipes", [])
    if not isinstance(recipes, list) or not all(isinstance(r, str) for r in recipes):
        raise AgentError(f"{file}: 'recipes' must be a list of commands, got {recipes!r:.80}")


def claim_folder(folder: OutputFolder, state: dict | None) -> None:
    """Check before any game that ``td_search.json`` and ``curve.csv`` may be written in the folder.

    Files this program recorded there are its own. A run resumed from a ``td_search.json``
    written before the folder kept a record takes over that file (it was just read as this
    program's values) and the ``curve.csv`` beside it if it is exactly that file's curve;
    anything else there (a link, a file of the user's) is refused with one line."""
    if state is not None and not folder.ours(VALUES_FILE) and VALUES_FILE not in folder.written():
        folder.adopt(VALUES_FILE)
        curve = folder.folder / CURVE_FILE
        if lstat_or_none(curve) is not None and sha256_of(curve) == _sha256(curve_csv(state["curve"])):
            folder.adopt(CURVE_FILE)
    folder.claim([VALUES_FILE, CURVE_FILE])


def _sha256(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


def main(argv=None) -> int:
    try:
        return _main(argv)
    except (AgentError, FileProblem) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2


# long: the script's whole run in order (arguments, resume, learn on a budget, save at the end or on SIGTERM)
def _main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    ap.add_argument("--players", type=int, choices=(1, 2), default=1)
    ap.add_argument("--rules", default="classic")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--minutes", type=float, default=15.0, help="wall-clock budget of this run (default 15)")
    ap.add_argument("--games", type=int, default=10**9, help="stop after this many training games in all")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--save-every", type=int, default=1000)
    ap.add_argument("--eval-games", type=int, default=1000, help="games of each evaluation on the curve (one player)")
    ap.add_argument("--values", type=Path, help="two players: the one-player td_search.json to build on")
    ap.add_argument("--lr", type=float, default=0.02, help="two players: the step size")
    ap.add_argument("--no-spread", action="store_true", help="two players: keep the spread weights c as they are (zero in a new run)")
    args = ap.parse_args(argv)
    try:
        rules = load_rules(args.rules)
    except RulesError as e:
        ap.error(str(e))
    file = args.out / VALUES_FILE
    folder = OutputFolder(args.out, PROG)
    with lock_folder(args.out, f"another {PROG}"):
        state = None
        if lstat_or_none(file) is not None:
            state = read_values_file(file, "td-search values")
            if trained_fingerprint(state) != rules.fingerprint() or state.get("players") != args.players:
                raise AgentError(f"{file} was trained for other rules or players; give another --out")
            check_sizes(state, rules, file)
            check_state(state, file)
            print(f"resuming {file} at {state['games']} games", flush=True)
        claim_folder(folder, state)
        return _learn(args, rules, file, folder, state, recipe_of(argv))


def recipe_of(argv) -> str:
    return f"{PROG} " + " ".join(sys.argv[1:] if argv is None else argv)


# long: learn on a budget, save at the end or on SIGTERM
def _learn(args, rules, file: Path, folder: OutputFolder, state: dict | None, recipe: str) -> int:
    rng = np.random.default_rng(args.seed)
    if state:
        try:
            rng.bit_generator.state = state["rng_state"]
        except (TypeError, ValueError, KeyError) as e:
            raise AgentError(f"{file}: 'rng_state' is not a state of numpy's generator ({e})") from None
    curve = state["curve"] if state else []
    previous = (state.get("recipes") or ([state["recipe"]] if "recipe" in state else [])) if state else []
    recipes = [*previous, recipe]
    spent = state["train_seconds"] if state else 0.0
    learner: OnePlayerLearner | TwoPlayerLearner
    built_on = state.get("built_on") if state else None  # the one-player table a two-player run builds on
    if args.players == 1:
        learner = OnePlayerLearner(rules, state["values"] if state else None)
        learner.games = state["games"] if state else 0
    else:
        if state:
            V1 = state["values"]
            value = TwoPlayerValue(rules, V1, state["a"], state["b"], state.get("c"))
        else:
            if args.values is None:
                raise AgentError("--players 2 builds on a one-player table: give --values DIR/td_search.json")
            one = read_values_file(args.values, "--values")
            if trained_fingerprint(one) != rules.fingerprint() or one.get("players") != 1:
                raise AgentError(
                    f"--values {args.values} holds {one.get('players')}-player values trained for other rules or players; give a one-player table of these rules"
                )
            check_sizes(one, rules, f"--values {args.values}")
            V1 = one["values"]
            value = TwoPlayerValue(rules, V1)
            inside = one.get("solver_in_training")
            built_on = {
                "file": str(args.values),
                "games": one.get("games"),
                "train_seconds": one.get("train_seconds"),
                "solver_in_training": inside if isinstance(inside, list) else ["a one-player table that does not say how it learned"],
            }
        learner = TwoPlayerLearner(rules, V1, lr=args.lr, value=value, spread=not args.no_spread)
        learner.games = state["games"] if state else 0

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))

    def save():
        data = {
            "format": FORMAT,
            "players": args.players,
            "rules_name": rules.name,
            "rules_fingerprint": rules.fingerprint(),
            "rules": rules.settings(),
            "games": learner.games,
            "train_seconds": round(spent, 1),
            "solver_in_training": list(built_on["solver_in_training"]) if built_on else [],
            "how": "TD(0) from its own games"
            + (" (one player: expected target of the turn's expectimax, optimistic start)" if args.players == 1 else " (self-play, win objective)"),
            "recipes": recipes,  # every run that trained this file, in order
            "rng_state": rng.bit_generator.state,
            "curve": curve,
            "values": learner.V.tolist() if args.players == 1 else list(map(float, learner.value.V1)),
        }
        if built_on:
            data["built_on"] = built_on
        if args.players == 2:
            data["a"], data["b"], data["c"] = learner.value.a.tolist(), learner.value.b.tolist(), learner.value.c.tolist()
        if args.players == 1:
            data["expected_score_estimate"] = float(learner.V[0])
        folder.write(VALUES_FILE, json.dumps(data, indent=1))
        folder.write(CURVE_FILE, curve_csv(curve))

    t0 = time.perf_counter()
    base = spent
    recent = []
    try:
        while learner.games < args.games and not stop and time.perf_counter() - t0 < args.minutes * 60:
            recent.append(learner.play_game(rng))
            spent = base + time.perf_counter() - t0
            if learner.games % args.save_every == 0:
                row = {"games": learner.games, "train_seconds": round(spent, 1)}
                if args.players == 1:
                    assert isinstance(learner, OnePlayerLearner)
                    row["train_mean"] = round(float(np.mean(recent)), 3)
                    row["value_estimate"] = round(float(learner.V[0]), 3)
                    e0 = time.perf_counter()
                    row["eval_mean"] = round(evaluate_1p(learner, args.eval_games), 3)
                    t0 += time.perf_counter() - e0  # evaluation time is not training time
                else:
                    assert isinstance(learner, TwoPlayerLearner)
                    row["seat0_points"] = round(float(np.mean([1.0 if w == 0 else 0.5 if w < 0 else 0.0 for w in recent])), 4)
                    row["a_mid"] = round(float(learner.value.a[len(learner.value.a) // 2]), 4)
                curve.append(row)
                recent = []
                save()
                print(json.dumps(row), flush=True)
    except KeyboardInterrupt:
        pass
    save()
    print(f"saved {file} after {learner.games} games, {spent:.0f} s of training", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
