"""``win-max``'s share of the points at tables of 2 to 6 (a win 1, a win shared by k 1/k).

Each table is ``win-max`` and the listed opponents; on each of ``--games`` seeded dice the
table plays every rotation of the seats (``win-max`` once in each seat, on the same dice:
:func:`generala_training.harness.play_many`). The share's 95% interval is over the seeds (a
seed's rotations together, so that their shared dice count once); the edge is the share less
the fair share 1/N. The decision time is ``win-max``'s own ``act`` calls, timed in this
process over ``--timing-games`` more games::

    python benchmarks/win_max_eval.py --table optimal-2p --table optimal*3 --games 10000
    python benchmarks/win_max_eval.py --table td-search,rules-of-thumb,greedy --games 1000

``optimal*3`` is three ``optimal`` seats; ``--vs-optimal 3,4,5,6`` adds a table against N-1
``optimal`` players for each N.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def opponents_of(spec: str) -> list[str]:
    """``"optimal*3"`` -> three ``optimal``; ``"a,b"`` -> ``a`` and ``b``."""
    out: list[str] = []
    for part in spec.split(","):
        name, _, count = part.strip().partition("*")
        if not name or (count and not count.isdigit()):
            raise SystemExit(f"win_max_eval: error: cannot read the table {spec!r}: write names separated by commas, name*N for N seats")
        out += [name] * (int(count) if count else 1)
    if not 1 <= len(out) <= 5:
        raise SystemExit(f"win_max_eval: error: the table {spec!r} has {len(out)} opponents; a table seats 2 to 6 players")
    return out


def rotations(opponents: list[str]) -> list[tuple[str, ...]]:
    """Every seating with ``win-max`` once in each seat and the opponents in their order after it."""
    seats = ["win-max", *opponents]
    n = len(seats)
    return [tuple(seats[(j - r) % n] for j in range(n)) for r in range(n)]


def play_table(opponents: list[str], rules, games: int, seed: int, workers: int | None, me=None) -> dict:
    from generala_env.core.game import outcome_points
    from generala_training.harness import game_seed, play_many
    from generala_training.stats import mean_ci

    lineups = rotations(opponents)
    n = len(lineups)
    seeds = [game_seed(seed, i) for i in range(games)]
    t0 = time.perf_counter()
    table = {"win-max": me} if me is not None else None
    recs = play_many(
        [x for _ in seeds for x in lineups], [s for s in seeds for _ in lineups], rules, workers=workers, progress=False, desc="win-max", agents=table
    )
    wall = time.perf_counter() - t0
    points = np.array([outcome_points(r.winners, r.seats.index("win-max")) for r in recs]).reshape(games, n)
    share, lo, hi = mean_ci(points.mean(axis=1))
    served = float(np.mean([r.served_generala_win for r in recs]))
    return {
        "table": ["win-max", *opponents],
        "players": n,
        "games": games * n,
        "share": share,
        "low": lo,
        "high": hi,
        "served": served,
        "wall": wall,
        "per_seed": points.mean(axis=1),
    }


def decision_ms(opponents: list[str], rules, games: int, seed: int, me) -> float:
    """``win-max``'s (``me``) mean ``act`` time in milliseconds over ``games`` games in this process."""
    import generala_agents as agents
    from generala_training.harness import game_seed, play_game

    spent, calls = 0.0, 0

    class Timed:
        name = "win-max"

        def act(self, observation, info):
            nonlocal spent, calls
            t = time.perf_counter()
            a = me.act(observation, info)
            spent += time.perf_counter() - t
            calls += 1
            return a

    others = {name: agents.load(name, rules=rules) for name in set(opponents)}
    for i in range(games):
        for lineup in rotations(opponents):
            play_game([Timed() if x == "win-max" else others[x] for x in lineup], rules, game_seed(seed + 1, i), names=lineup)
    return 1000 * spent / max(calls, 1)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--table", action="append", default=[], help="win-max's opponents: names separated by commas, name*N for N seats (repeatable)")
    p.add_argument("--vs-optimal", default="", help="player counts N (comma-separated) of tables against N-1 optimal players")
    p.add_argument("--rules", default="classic")
    p.add_argument("--games", type=int, default=1000, help="seeded dice per table; each plays every rotation of the seats")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--timing-games", type=int, default=20, help="games per table timed in this process (0: none)")
    p.add_argument("--lookahead", type=int, default=1, help="win-max's turns of expectimax (1 or 2)")
    p.add_argument("--risks", default="", help="win-max's policy risks per 150 points, comma-separated (default: its own; tables then built, not cached)")
    p.add_argument("--per-seed", default="", help="write each seed's share (a row per table) to this .npy file, for paired comparisons")
    args = p.parse_args(argv)

    import generala_agents.win_max as win_max
    from generala_env.core.rules import load_rules

    rules = load_rules(args.rules)
    if args.risks:
        win_max.RISKS = tuple(float(x) for x in args.risks.split(","))
    me = win_max.WinMaxAgent(rules, lookahead=args.lookahead, use_cache=not args.risks)
    print(f"win-max: lookahead {me.lookahead}, risks per 150 points {win_max.RISKS}")
    tables = [opponents_of(t) for t in args.table]
    tables += [["optimal"] * (int(n) - 1) for n in args.vs_optimal.split(",") if n.strip()]
    if not tables:
        tables = [["optimal-2p"], ["optimal"] * 3]
    print(f"rules {rules.name}: win-max's share of the points (a win 1, a shared win its share), seats rotated, seed {args.seed}")
    print(f"{'table':<44}{'games':>7}{'share':>8}  {'95% CI':<15}{'fair':>6}{'edge':>8}  {'served-gen':>10}{'ms/decision':>12}{'wall s':>8}")
    rows = []
    for opponents in tables:
        r = play_table(opponents, rules, args.games, args.seed, args.workers, me)
        rows.append(r["per_seed"])
        ms = decision_ms(opponents, rules, args.timing_games, args.seed, me) if args.timing_games > 0 else float("nan")
        fair = 1 / r["players"]
        name = " vs " + ",".join(opponents)
        print(
            f"{'win-max' + name:<44}{r['games']:>7}{r['share']:>8.2%}  {r['low']:.2%}-{r['high']:<8.2%}{fair:>6.1%}{r['share'] - fair:>+8.2%}"
            f"  {r['served']:>10.2%}{ms:>12.2f}{r['wall']:>8.0f}",
            flush=True,
        )
    if args.per_seed:  # a new file, never over one that is there, never through a link
        import io

        from generala_env.files import create_new

        buffer = io.BytesIO()
        np.save(buffer, np.array(rows))  # to a buffer: np.save would add .npy to a name without it
        create_new(args.per_seed, lambda tmp: tmp.write_bytes(buffer.getvalue()))


if __name__ == "__main__":
    main()
