"""What a game of ``generala serve`` costs in memory and time: six-seat tables (Ana and five
``win-max``), made as the server makes them (:class:`generala_play.web_games.Games`), in one
process.

It prints the resident memory the process gained (``/proc/self/statm``, Linux) and the seconds
each of the first ``--games`` games took to start, then, over ``--more`` games beyond the first,
the memory a game adds when it starts and after ``--rounds`` rounds of Ana's writes (the five
``win-max`` seats playing between them). The tables come from the cache
(``$GENERALA_CACHE``): run it once to build them first.

    python benchmarks/serve_memory.py classic
    python benchmarks/serve_memory.py sixty --games 8 --more 64 --rounds 5
"""

from __future__ import annotations

import argparse
import time

from generala_play.web_games import Games

SIX = [{"person": "Ana"}, *[{"agent": "win-max"}] * 5]


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("rules", nargs="?", default="classic")
    p.add_argument("--games", type=int, default=8, help="games whose start is timed one by one")
    p.add_argument("--more", type=int, default=64, help="games beyond the first for the cost of a game")
    p.add_argument("--rounds", type=int, default=5, help="rounds played in each of them")
    args = p.parse_args()
    games = Games(args.rules)
    base = rss_mib()
    steps = []
    for seed in range(args.games):
        t = time.perf_counter()
        games.start({"seats": SIX, "seed": seed})
        steps.append(f"{rss_mib() - base:.0f} MiB after {time.perf_counter() - t:.1f} s")
    print(f"{args.rules}: {args.games} six-seat games, the process's memory gained after each (and the seconds it took):")
    print("  " + "; ".join(steps))
    one = rss_mib()
    ids = [games.start({"seats": SIX, "seed": 1000 + i})["id"] for i in range(args.more)]
    started = rss_mib()
    for gid in ids:
        for _ in range(args.rounds):
            g = games.state(gid)
            if g["over"]:
                break
            games.move(gid, {"write": next(iter(g["open_points"]))})
    played = rss_mib()
    per = 1024 / max(args.more, 1)
    print(f"  {args.more} more games: {(started - one) * per:.0f} KiB a game started, {(played - one) * per:.0f} KiB a game after {args.rounds} rounds")


if __name__ == "__main__":
    main()
