"""Train the td-search agents from their own games: ``python -m training.td_search``.

One player (``--players 1``): TD learning of the table of points to come (agents/td_search.py).
Two players (``--players 2``): TD self-play of the chance-to-win model on top of a one-player
table learned the same way (``--values``: a td-search file from ``--players 1``).

Everything goes to ``--out DIR``: ``td_search.json`` (the values, the generator's state and the
learning curve, rewritten whole every ``--save-every`` games) and ``curve.csv``. Run it again on
the same folder and it goes on from there; Ctrl-C or SIGTERM stops it after saving. No solver
values are read: the learned values start from the rules alone.
"""

from __future__ import annotations

import argparse
import csv
import json
import signal
import sys
import time
from pathlib import Path

import numpy as np

from agents.td_search import FORMAT, VALUES_FILE, OnePlayerLearner, TwoPlayerLearner, TwoPlayerValue, save_checkpoint, trained_fingerprint
from generala_env.rules import RulesError, load_rules

EVAL_SEED = 10**6  # evaluation dice: seeds EVAL_SEED + i, apart from the training dice


def evaluate_1p(learner: OnePlayerLearner, games: int) -> float:
    return float(np.mean([learner.play_game(np.random.default_rng(EVAL_SEED + i), learn=False) for i in range(games)]))


# long: the script's whole run in order (arguments, resume, learn on a budget, save at the end or on SIGTERM)
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.td_search", description=__doc__.splitlines()[0])
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
    state = None
    if file.is_file():
        state = json.loads(file.read_text())
        if trained_fingerprint(state) != rules.fingerprint() or state.get("players") != args.players:
            ap.error(f"{file} was trained for other rules or players; give another --out")
        print(f"resuming {file} at {state['games']} games", flush=True)
    rng = np.random.default_rng(args.seed)
    if state:
        rng.bit_generator.state = state["rng_state"]
    curve = state["curve"] if state else []
    recipe = "python -m training.td_search " + " ".join(sys.argv[1:] if argv is None else argv)
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
                ap.error("--players 2 builds on a one-player table: give --values DIR/td_search.json")
            one = json.loads(args.values.read_text())
            if trained_fingerprint(one) != rules.fingerprint():
                ap.error(f"{args.values} was trained for other rules")
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
        save_checkpoint(file, data)
        with open(args.out / "curve.csv.tmp", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(curve[0]) if curve else ["games"])
            w.writeheader()
            w.writerows(curve)
        (args.out / "curve.csv.tmp").replace(args.out / "curve.csv")

    args.out.mkdir(parents=True, exist_ok=True)
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
