"""A probe, not the env: what a single-env step could cost with the game's transition, its legal
mask and its observation in one compiled call over a one-game ``GameState``.

The single env steps a Python ``Game`` (``benchmarks/step_breakdown.py`` says where its time
goes). This plays random legal one-player classic games the other way: the batched loops
(``apply_actions``, ``legal_masks``, ``encode``) fused into one numba function over one game,
then the same ``info`` dict as the env's (its seven fresh arrays, the rest constants here),
as a lower bound of such a step without the env's checks and ``gym.make``'s wrappers (about
0.8 and 0.7 µs in ``step_breakdown.py``). Spells of it alternate with pyhtzee's; the figure is
the median over rounds of the µs a decision took.

    python benchmarks/compiled_step_probe.py            # about half a minute
    python benchmarks/compiled_step_probe.py --quick
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package, not an installed one
import env_speed  # noqa: E402  # beside this script: its contestants and spells
from step_breakdown import spell  # noqa: E402


def probe(seed: int):
    """``env_speed``'s ``run(seconds)`` of 100 decisions at a time, the fused way."""
    from generala_env import batched as K
    from generala_env.dice import KEEP_COUNTS, ROLLS
    from generala_env.vector import GeneralaVectorEnv

    if not K.NUMBA:
        sys.exit("compiled_step_probe: needs numba")

    @K.njit(error_model="numpy", _nrt=False)
    def step_one(games, actions, throws, state, rules, pts, masks, seat, out, sheet_obs, sheets_seen, enc):
        K.apply_actions(games, actions, throws, state, rules, pts)
        K.legal_masks(games, masks, state, rules)
        K.encode(games, seat, out, sheet_obs, sheets_seen, state, rules, enc)

    venv = GeneralaVectorEnv(1, rules="classic")  # its state, tables and buffers for one game
    venv.reset(seed=seed)
    s, state, rules, enc = venv.state, venv._state, venv._tables, venv._enc
    one = np.zeros(1, dtype=np.int64)
    actions, throws, pts = one.copy(), one.copy(), one.copy()
    masks = np.zeros((1, venv.num_actions), dtype=bool)
    rows, locked_rows, blank = list(ROLLS), list(KEEP_COUNTS), np.full((0, 3), -1, dtype=np.int64)
    draws = np.random.default_rng(seed).integers(0, 6**5, size=1 << 20).tolist()  # a throw: five dice as one number
    rnd, box = random.Random(seed), {"next": 0}
    K.legal_masks(one, masks, state, rules)
    box["mask"] = masks[0].view(np.int8).copy()

    def play() -> None:
        mask = box["mask"]
        for _ in range(100):
            legal = mask.nonzero()[0]
            actions[0] = int(legal[rnd.randrange(len(legal))])
            throws[0] = draws[box["next"] % len(draws)]
            box["next"] += 1
            out = np.empty((1, venv.encoder.size), dtype=np.float32)
            step_one(one, actions, throws, state, rules, pts, masks, venv.seat, out, venv._sheet_obs, venv._sheets_seen, enc)
            over = bool(s.over[0])
            info = {
                "action_mask": masks[0].view(np.int8).copy(),
                "dice": rows[int(s.roll[0])].copy(),
                "rolls_left": int(s.rolls_left[0]),
                "locked": locked_rows[int(s.locked[0])].copy(),
                "sheets": s.sheets[0].copy(),
                "totals": np.zeros(1, dtype=np.int64),
                "turn": 0,
                "player": 0,
                "seat": 0,
                "served_generala_pending": False,
                "illegal_action": False,
                "illegal_reason": "",
                "opponent_moves": blank.copy(),
                "game_over": over,
                "winners": np.zeros(1, dtype=bool),
                "winner": -1,
                "served_generala_win": False,
            }
            mask = info["action_mask"]
            if over:
                venv.reset()
                K.legal_masks(one, masks, state, rules)
                mask = masks[0].view(np.int8).copy()
        box["mask"] = mask

    return env_speed.spell(play, 100)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--rounds", type=int, default=None, help="rounds (default 20, quick 3)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    rounds, seconds = args.rounds or (3 if args.quick else 20), 0.1 if args.quick else 0.3
    plays = {"probe": probe(args.seed)}
    try:
        plays["pyhtzee"] = env_speed.pyhtzee_runner(args.seed)
    except ImportError:
        print("pyhtzee is not installed (pip install -e '.[bench]'): no pyhtzee row")
    for play in plays.values():
        spell(play, 0.1)
    times: dict[str, list[float]] = {k: [] for k in plays}
    for _ in range(rounds):
        for k, play in plays.items():
            times[k].append(spell(play, seconds))
    for k, ts in times.items():
        print(f"{k:8s} {np.median(ts):6.2f} µs a decision  [{np.percentile(ts, 10):.2f}-{np.percentile(ts, 90):.2f}]")
    if "pyhtzee" in times:
        r = np.array(times["pyhtzee"]) / np.array(times["probe"])
        print(f"pyhtzee / probe, paired by round: {np.median(r):.2f}x  (the env would add its checks and the wrappers)")


if __name__ == "__main__":
    main()
