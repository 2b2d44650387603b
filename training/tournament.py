"""``generala tournament``: head-to-head games, seats swapped on the same dice.

    generala tournament --agents optimal,rules-of-thumb,greedy --players 2 --games 2000 --seed 0

With ``--players 2`` every pair of agents meets: each of ``--games`` dice seeds is played
twice, once with each agent in seat 0 ("duplicate" play), so neither seat nor dice luck
favours one side. With more players the listed agents (exactly ``--players`` of them) play
every rotation of the seats on each seed. Reports win/draw/loss with Wilson 95% intervals,
mean margins, games ended by a served generala and the first seat's points (1 a win,
1/2 a draw) a game; writes ``results.json``,
``results.md`` and ``winrates.png`` into ``--out``. Ctrl-C or SIGTERM stops the workers
and writes nothing (exit status 130 or 143).
"""

from __future__ import annotations

import itertools
import sys
import time
from pathlib import Path

import numpy as np

from generala_env.files import OutputFolder
from generala_env.game import outcome_points

from .evaluate import check_agents, require_outputs, run_guarded
from .harness import game_seed, play_many
from .options import RULES_HELP, parser, positive_int, seed_int
from .stats import mean_ci, wilson


def _lineups(names: list[str], players: int, games: int, seed: int):
    """(lineup, seed, matchup key) for every game to play."""
    out: list[tuple[tuple[str, ...], int, tuple[str, ...]]] = []
    if players == 2:
        for a, b in itertools.combinations(names, 2):
            for i in range(games):
                s = game_seed(seed, i)
                out.append(((a, b), s, (a, b)))
                out.append(((b, a), s, (a, b)))
    else:
        for i in range(games):
            s = game_seed(seed, i)
            for r in range(players):
                lineup = tuple(names[(j + r) % players] for j in range(players))
                out.append((lineup, s, tuple(names)))
    return out


def _pair_stats(a: str, b: str, recs) -> dict:
    """Results of agent a against agent b from the games both played."""
    w = d = l = 0
    margins, served = [], 0
    for rec in recs:
        sa, sb = rec.seats.index(a), rec.seats.index(b)
        pa, pb = outcome_points(rec.winners, sa), outcome_points(rec.winners, sb)
        if pa > pb:
            w += 1
        elif pa < pb:
            l += 1
        else:
            d += 1  # a shared win, or (with 3+ players) neither won: no result between them
        margins.append(float(rec.totals[sa] - rec.totals[sb]))
        served += rec.served_generala_win
    n = w + d + l
    m, lo, hi = mean_ci(margins)
    # the first seat's result (1, 1/2 or 0 a game): each agent sits there on half the games
    first = mean_ci([outcome_points(rec.winners, 0) for rec in recs]) if n else (float("nan"),) * 3
    return {
        "agent": a,
        "opponent": b,
        "games": n,
        "wins": w,
        "draws": d,
        "losses": l,
        "win_rate": wilson(w, n),
        "draw_rate": wilson(d, n),
        "loss_rate": wilson(l, n),
        "points_rate": (w + 0.5 * d) / n if n else float("nan"),
        "mean_margin": [m, lo, hi],
        "served_generala_endings": served,
        "seat_0_points_rate": list(first),
    }


def plot_matrix(names, matrix, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(1.6 * len(names) + 2, 1.3 * len(names) + 1.5))
    im = ax.imshow(matrix, vmin=0, vmax=1, cmap="RdYlGn")
    ax.set_xticks(range(len(names)), names, rotation=30, ha="right")
    ax.set_yticks(range(len(names)), names)
    for i in range(len(names)):
        for j in range(len(names)):
            if not np.isnan(matrix[i, j]):
                ax.text(j, i, f"{matrix[i, j]:.1%}", ha="center", va="center", fontsize=9)
    ax.set_xlabel("opponent")
    ax.set_ylabel("agent (win rate of the row)")
    ax.set_title(title)
    fig.colorbar(im, ax=ax, fraction=0.046)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def matchups(names: list[str], players: int, plan, recs) -> tuple[list[dict], np.ndarray]:
    """Every matchup's row, in the order the agents were given (with two players, each pair
    once: the earlier-listed agent is the row's ``agent``), and the win-rate matrix."""
    rows = []
    matrix = np.full((len(names), len(names)), np.nan)
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            if i == j:
                continue
            games = [r for r, (_, _, key) in zip(recs, plan, strict=True) if a in key and b in key]
            st = _pair_stats(a, b, games)
            matrix[i, j] = st["win_rate"][0]
            if i < j or players > 2:
                rows.append(st)
    return rows, matrix


def _check_lineup(names: list[str], players: int) -> None:
    if not 2 <= players <= 6:
        raise ValueError(f"--players must be 2 to 6, got {players}")
    if len(names) != len(set(names)):
        raise ValueError("each agent may be listed once")
    if players == 2 and len(names) < 2:
        raise ValueError("a 2-player tournament needs at least two agents")
    if players > 2 and len(names) != players:
        raise ValueError(f"with --players {players}, list exactly {players} agents")


def play_tournament(table: dict, rules, players: int, games: int, seed: int, workers=None, progress: bool = False, trust_zip: bool = False, counter=None):
    """The games of a tournament between the agents of ``table``: the plan and the records."""
    names = list(table)
    _check_lineup(names, players)
    check_agents(table, rules, players, trust_zip)
    plan = _lineups(names, players, games, seed)
    recs = play_many(
        [x[0] for x in plan], [x[1] for x in plan], rules, workers=workers, progress=progress, desc="tournament", agents=table, trust_zip=trust_zip
    )
    if counter is not None:
        counter["played"] = len(recs)
    return plan, recs


def tournament(
    agents, players: int = 2, rules="classic", games: int = 1000, seed: int = 0, workers: int | None = None, progress: bool = False, trust_zip: bool = False
) -> list[dict]:
    """Head-to-head games, seats swapped on the same dice; the matchup rows of ``results.json``.

    ``agents`` as for :func:`generala_training.evaluate.evaluate` (specs and agent objects, or a
    mapping ``{name: spec or object}``). Each row has ``agent``, ``opponent``, ``games``,
    ``wins``, ``draws``, ``losses``, ``win_rate`` (with its Wilson 95% interval),
    ``points_rate`` (the row agent's: a win 1, a draw 1/2), ``mean_margin`` and more; rows
    come in the order the agents were given (``agent`` listed before ``opponent``)::

        from generala_training.tournament import tournament
        rows = tournament(["greedy", "random"], games=100)
    """
    from generala_env.rules import load_rules

    from .evaluate import name_agents

    table = name_agents(agents)
    plan, recs = play_tournament(table, load_rules(rules), players, games, seed, workers, progress, trust_zip)
    return matchups(list(table), players, plan, recs)[0]


def report(args, rules, names: list[str], plan, recs, out: Path, wall: float, command: str) -> None:
    """Tally every matchup, print the table and write ``results.json``, ``results.md`` and
    ``winrates.png`` into ``out``."""
    rows, matrix = matchups(names, args.players, plan, recs)

    print(
        f"rules {rules.name}: {args.players}-player games, {args.games} dice seeds per matchup, every seating on each seed (seed {args.seed}); "
        "rows in the order the agents were given"
    )
    wa = max([len("agent")] + [len(r["agent"]) for r in rows]) + 2  # a long spec keeps its own column
    wo = max([len("vs")] + [len(r["opponent"]) for r in rows]) + 2
    print(f"{'agent':<{wa}}{'vs':<{wo}}{'games':>6}{'win':>8}  {'95% CI':<14}{'draw':>6}{'loss':>7}{'margin':>8}  {'95% CI':<15}{'served-gen':>10}")
    for r in rows:
        wr, dr, lr = r["win_rate"], r["draw_rate"], r["loss_rate"]
        mm = r["mean_margin"]
        print(
            f"{r['agent']:<{wa}}{r['opponent']:<{wo}}{r['games']:>6}{wr[0]:>8.1%}  {wr[1]:.1%}–{wr[2]:<7.1%}{dr[0]:>6.1%}{lr[0]:>7.1%}"
            f"{mm[0]:>+8.2f}  {mm[1]:+.2f}–{mm[2]:<+8.2f}{r['served_generala_endings']:>10}"
        )
    result = {
        "rules": rules.name,
        "players": args.players,
        "games_per_matchup": args.games,
        "seed": args.seed,
        "wall_seconds": wall,
        "matchups": rows,
        "agents": names,
        "command": command,
    }
    folder = OutputFolder(out, "generala tournament")
    folder.write_json("results.json", result)
    md = [
        f"# Tournament on `{rules.name}`: {args.players} players, {args.games} seeds per matchup, seats swapped on the same dice",
        "",
        "| agent | opponent | games | win | 95% CI (Wilson) | draw | loss | mean margin (95% CI) | served-generala endings | seat 0's points (95% CI) |",
        "|---|---|---:|---:|---|---:|---:|---|---:|---|",
    ]
    for r in rows:
        wr, mm = r["win_rate"], r["mean_margin"]
        md.append(
            f"| {r['agent']} | {r['opponent']} | {r['games']} | {wr[0]:.1%} | {wr[1]:.1%} – {wr[2]:.1%} | {r['draw_rate'][0]:.1%} | "
            f"{r['loss_rate'][0]:.1%} | {mm[0]:+.2f} ({mm[1]:+.2f} … {mm[2]:+.2f}) | {r['served_generala_endings']} | "
            f"{r['seat_0_points_rate'][0]:.1%} ({r['seat_0_points_rate'][1]:.1%} … {r['seat_0_points_rate'][2]:.1%}) |"
        )
    folder.write("results.md", "\n".join(md) + "\n")
    with folder.temporary("winrates.png") as tmp:
        plot_matrix(names, matrix, tmp, f"Win rate, {rules.name}, {args.players} players")
    print(f"wrote {out}/results.json, results.md, winrates.png ({wall:.1f} s)")


def main(argv=None) -> int:
    from generala_agents.specs import HELP, TRUST_ZIP_HELP

    from .evaluate import default_out, name_agents
    from .options import claim_out

    p = parser("generala tournament", __doc__.split("\n\n")[0])
    p.add_argument("--agents", required=True, help=f"comma-separated agents; each is {HELP}")
    p.add_argument("--trust-zip", action="store_true", help=TRUST_ZIP_HELP)
    p.add_argument("--players", type=int, default=2, help="players at each table: 2 (every pair of the agents meets) to 6 (list exactly that many)")
    p.add_argument("--rules", default="classic", help=RULES_HELP)
    p.add_argument("--games", type=positive_int, default=1000, help="dice seeds per matchup (each played in every seating)")
    p.add_argument("--seed", type=seed_int, default=0, help="seed of the dice seeds")
    p.add_argument("--workers", type=positive_int, default=None, help="processes (default: every core)")
    p.add_argument("--out", default=None, help="output folder (default results/tournament-RULES-Pp-sSEED-HASH, HASH of the command's options and agents)")
    p.add_argument("--force", action="store_true", help="replace results that a different generala tournament command wrote in --out")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = p.parse_args(argv)
    require_outputs(args)

    from generala_env.rules import load_rules

    rules = load_rules(args.rules)
    names = [n.strip() for n in args.agents.split(",")]
    if len(set(names)) != len(names):
        raise ValueError("each agent may be listed once")
    _check_lineup(names, args.players)
    given = list(argv if argv is not None else sys.argv[1:])
    out = Path(args.out) if args.out else default_out("tournament", f"{rules.name}-{args.players}p-s{args.seed}", given, names)
    command = "generala tournament " + " ".join(given)
    if not args.out:
        print(f"results go to {out} (--out chooses another folder)")
    claim_out(out, "generala tournament", command, ("results.json", "results.md", "winrates.png"), args.force, adopt=True)
    total = len(_lineups(names, args.players, args.games, args.seed))

    def body(progress: dict) -> None:
        t0 = time.time()
        plan, recs = play_tournament(
            name_agents(names), rules, args.players, args.games, args.seed, args.workers, not args.no_progress, args.trust_zip, progress
        )
        progress["writing"] = True
        report(args, rules, names, plan, recs, out, time.time() - t0, command)

    return run_guarded("generala tournament", out, total, body)


if __name__ == "__main__":
    sys.exit(main())
