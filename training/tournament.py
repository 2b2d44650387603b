"""``generala tournament``: games between agents on shared dice, every seat taken by each in turn.

    generala tournament --agents optimal,rules-of-thumb,greedy --players 2 --games 2000 --seed 0
    generala tournament --agents win-max,optimal*2 --players 3 --games 3334 --seed 0

Each listed agent is a player of its own, with its own seed in every game; an agent may be
listed more than once (``win-max,optimal,optimal``), or as ``NAME*K`` for K players of it
(``win-max,optimal*2`` is the same table), told apart in the results as ``optimal`` and
``optimal#2``.

With ``--players 2`` every pair of players meets: each of ``--games`` dice seeds is played
twice, once with each in seat 0 (the seats swapped, "duplicate" play), so neither seat nor
dice luck favours one side; the table gives each pair's wins, draws and losses with Wilson
95% intervals, mean margins, games ended by a served generala and the first seat's points (1
a win, 1/2 a draw). With 3 to 6 players the listed players (exactly ``--players`` of them)
play every seat rotation of each seed (each player once in every seat, on the same dice), and
the table gives each player's win share: a win 1, a win shared by k players 1/k each, so the
shares add up to 1 and the fair share is 1/N; its 95% interval is over the seeds (a seed's
rotations averaged first). ``--pairwise`` adds the table of each pair of them in the same games.

Writes ``results.json``, ``results.md`` and ``winrates.png`` into ``--out``. Ctrl-C or SIGTERM
stops the workers and writes nothing (exit status 130 or 143).
"""

from __future__ import annotations

import itertools
import sys
import time
from pathlib import Path

import numpy as np

from generala_env.core.game import MAX_PLAYERS, outcome_points
from generala_env.files import OutputFolder

from .evaluate import check_agents, require_outputs, run_guarded
from .harness import game_seed, play_many
from .options import RULES_HELP, parser, positive_int, seed_int
from .stats import mean_ci, wilson


def player_specs(text: str) -> list[str]:
    """The agents of ``--agents``, one per player: names separated by commas, ``NAME*K`` for K
    players of the same agent (``"win-max,optimal*2"`` is ``["win-max", "optimal", "optimal"]``)."""
    out: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        spec, star, count = part.rpartition("*")
        if not star or not count.strip().isdigit():  # no count: the whole text is the spec
            out.append(part)
            continue
        k = int(count)
        if not spec.strip() or not 1 <= k <= MAX_PLAYERS:
            raise ValueError(f"--agents: {part!r} is not NAME*K with K from 1 to {MAX_PLAYERS} (K players of the agent NAME)")
        out += [spec.strip()] * k
    return out


def _lineups(names: list[str], players: int, games: int, seed: int):
    """(lineup, seed, matchup key) for every game to play: with two players each pair on every
    seed, the seats swapped; with more, every seat rotation of the players on every seed."""
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


def win_shares(names: list[str], recs) -> list[dict]:
    """Each player's row of a table of 3 to 6 (``recs``: the games of :func:`_lineups`, every seat
    rotation of each seed in turn), in the order given: ``share`` (a win 1, a win shared by k
    players 1/k) with its 95% interval over the seeds (each seed's rotations averaged first, so
    that their shared dice count once; the normal interval, cut to [0, 1]), ``fair`` (1/N),
    ``edge`` (share - fair), sole and shared wins, the mean total with its interval, and the
    games it won with a served generala."""
    players = len(names)
    by_seed: dict[int, list] = {}
    for rec in recs:
        by_seed.setdefault(rec.seed, []).append(rec)
    rows = []
    for name in names:
        per_seed = [float(np.mean([outcome_points(r.winners, r.seats.index(name)) for r in games])) for games in by_seed.values()]
        mine = [(r, r.seats.index(name)) for r in recs]
        m, lo, hi = mean_ci(per_seed) if per_seed else (float("nan"),) * 3
        share = (m, max(0.0, lo), min(1.0, hi))  # a share lies in [0, 1]: so does its interval
        fair = 1 / players
        rows.append({
            "agent": name,
            "games": len(mine),
            "seeds": len(per_seed),
            "share": list(share),
            "fair": fair,
            "edge": share[0] - fair,
            "sole_wins": sum(r.winners == (seat,) for r, seat in mine),
            "shared_wins": sum(seat in r.winners and len(r.winners) > 1 for r, seat in mine),
            "mean_total": list(mean_ci([float(r.totals[seat]) for r, seat in mine])) if mine else [float("nan")] * 3,
            "served_generala_wins": sum(bool(r.served_generala_win) and r.winners == (seat,) for r, seat in mine),
        })  # fmt: skip
    return rows


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


def plot_shares(rows: list[dict], path: Path, title: str) -> None:
    """Each player's win share with its 95% interval, beside the fair share."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r["agent"] for r in rows]
    share = np.array([r["share"] for r in rows])
    fig, ax = plt.subplots(figsize=(1.3 * len(rows) + 2.5, 4))
    ax.bar(range(len(rows)), share[:, 0], yerr=[share[:, 0] - share[:, 1], share[:, 2] - share[:, 0]], capsize=4, color="tab:blue")
    ax.axhline(rows[0]["fair"], color="black", linestyle="--", linewidth=1, label=f"fair share 1/{len(rows)}")
    for i, m in enumerate(share[:, 0]):
        ax.text(i, m / 2, f"{m:.1%}", ha="center", va="center", color="white", fontsize=9)
    ax.set_xticks(range(len(rows)), names, rotation=30, ha="right")
    ax.set_ylabel("win share (a win shared by k: 1/k)")
    ax.set_title(title)
    ax.legend(loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def matchups(names: list[str], players: int, plan, recs) -> tuple[list[dict], np.ndarray]:
    """Every matchup's row, in the order the agents were given (with two players, each pair
    once: the earlier-listed agent is the row's ``agent``; with more, pairwise: each player
    against each other in the games they played together), and the win-rate matrix."""
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
    if not 2 <= players <= MAX_PLAYERS:
        raise ValueError(f"--players must be 2 to {MAX_PLAYERS}, got {players}")
    if players == 2 and len(names) < 2:
        raise ValueError("a 2-player tournament needs at least two agents (the same one twice plays itself: NAME*2)")
    if players > 2 and len(names) != players:
        raise ValueError(f"with --players {players}, list exactly {players} agents, one per player (NAME*K for K of the same), got {len(names)}")


def play_tournament(table: dict, rules, players: int, games: int, seed: int, workers=None, progress: bool = False, trust_zip: bool = False, counter=None):
    """The games of a tournament between the players of ``table`` (name: spec or agent object,
    each a player of its own): the plan and the records."""
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
    agents,
    players: int = 2,
    rules="classic",
    games: int = 1000,
    seed: int = 0,
    workers: int | None = None,
    progress: bool = False,
    trust_zip: bool = False,
    pairwise: bool = False,
) -> list[dict]:
    """Games between agents on shared dice, every seat taken by each in turn; the rows of ``results.json``.

    ``agents`` as for :func:`generala_training.evaluate.evaluate` (specs and agent objects, or a
    mapping ``{name: spec or object}``); a spec listed more than once is a player of its own each
    time (``optimal``, ``optimal#2``). With two players, the matchup rows: ``agent``,
    ``opponent``, ``games``, ``wins``, ``draws``, ``losses``, ``win_rate`` (with its Wilson 95%
    interval), ``points_rate`` (the row agent's: a win 1, a draw 1/2), ``mean_margin`` and more, in
    the order the agents were given (``agent`` listed before ``opponent``). With 3 to 6, each
    player's win-share row (:func:`win_shares`: ``share`` with its interval, ``fair``, ``edge``),
    or with ``pairwise`` the pairwise matchup rows::

        from generala_training.tournament import tournament
        rows = tournament(["greedy", "random"], games=100)
        rows = tournament(["win-max", "optimal", "optimal"], players=3, games=100)
    """
    from generala_env.core.rules import load_rules

    from .evaluate import name_agents

    table = name_agents(agents, repeat=True)
    plan, recs = play_tournament(table, load_rules(rules), players, games, seed, workers, progress, trust_zip)
    if players > 2 and not pairwise:
        return win_shares(list(table), recs)
    return matchups(list(table), players, plan, recs)[0]


def _print_pairs(rows: list[dict], players: int) -> None:
    even = "draw" if players == 2 else "even"  # with three or more, neither of the pair won (or they shared the win)
    wa = max([len("agent")] + [len(r["agent"]) for r in rows]) + 2  # a long spec keeps its own column
    wo = max([len("vs")] + [len(r["opponent"]) for r in rows]) + 2
    print(f"{'agent':<{wa}}{'vs':<{wo}}{'games':>6}{'win':>8}  {'95% CI':<14}{even:>6}{'loss':>7}{'margin':>8}  {'95% CI':<15}{'served-gen':>10}")
    for r in rows:
        wr, dr, lr = r["win_rate"], r["draw_rate"], r["loss_rate"]
        mm = r["mean_margin"]
        print(
            f"{r['agent']:<{wa}}{r['opponent']:<{wo}}{r['games']:>6}{wr[0]:>8.1%}  {wr[1]:.1%}–{wr[2]:<7.1%}{dr[0]:>6.1%}{lr[0]:>7.1%}"
            f"{mm[0]:>+8.2f}  {mm[1]:+.2f}–{mm[2]:<+8.2f}{r['served_generala_endings']:>10}"
        )


def _print_shares(rows: list[dict]) -> None:
    wa = max([len("agent")] + [len(r["agent"]) for r in rows]) + 2
    print(f"{'agent':<{wa}}{'games':>6}{'share':>9}  {'95% CI':<16}{'fair':>6}{'edge':>8}{'sole wins':>11}{'shared':>8}{'mean total':>12}{'served-gen':>12}")
    for r in rows:
        sh = r["share"]
        ci = f"{sh[1]:.2%}–{sh[2]:.2%}"
        print(
            f"{r['agent']:<{wa}}{r['games']:>6}{sh[0]:>9.2%}  {ci:<16}{r['fair']:>6.1%}{100 * r['edge']:>+8.2f}"
            f"{r['sole_wins']:>11}{r['shared_wins']:>8}{r['mean_total'][0]:>12.2f}{r['served_generala_wins']:>12}"
        )


def _md_pairs(rows: list[dict], players: int) -> list[str]:
    even = "draw" if players == 2 else "even (neither won, or they shared the win)"
    md = [
        f"| agent | opponent | games | win | 95% CI (Wilson) | {even} | loss | mean margin (95% CI) | served-generala endings | seat 0's points (95% CI) |",
        "|---|---|---:|---:|---|---:|---:|---|---:|---|",
    ]
    for r in rows:
        wr, mm = r["win_rate"], r["mean_margin"]
        md.append(
            f"| {r['agent']} | {r['opponent']} | {r['games']} | {wr[0]:.1%} | {wr[1]:.1%} – {wr[2]:.1%} | {r['draw_rate'][0]:.1%} | "
            f"{r['loss_rate'][0]:.1%} | {mm[0]:+.2f} ({mm[1]:+.2f} … {mm[2]:+.2f}) | {r['served_generala_endings']} | "
            f"{r['seat_0_points_rate'][0]:.1%} ({r['seat_0_points_rate'][1]:.1%} … {r['seat_0_points_rate'][2]:.1%}) |"
        )
    return md


def _md_shares(rows: list[dict]) -> list[str]:
    md = [
        "| agent | games | win share | 95% CI (over the seeds) | fair | edge (points) | sole wins | shared wins | mean total | served-generala wins |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        sh = r["share"]
        md.append(
            f"| {r['agent']} | {r['games']} | {sh[0]:.2%} | {sh[1]:.2%} – {sh[2]:.2%} | {r['fair']:.1%} | {100 * r['edge']:+.2f} | "
            f"{r['sole_wins']} | {r['shared_wins']} | {r['mean_total'][0]:.2f} | {r['served_generala_wins']} |"
        )
    return md


# long: the tally, the printed table and the three files of one report, written in that order
def report(args, rules, table: dict, plan, recs, out: Path, wall: float, command: str) -> None:
    """Tally the games, print the table and write ``results.json``, ``results.md`` and
    ``winrates.png`` into ``out``: with two players each pair's results; with more, each
    player's win share (and, with ``--pairwise``, each pair's results in the same games)."""
    names = list(table)
    n = args.players
    many = n > 2
    pairs, matrix = matchups(names, n, plan, recs) if not many or args.pairwise else ([], None)
    shares = win_shares(names, recs) if many else []
    players = ", ".join(f"{name} = {spec}" for name, spec in table.items() if name != spec)
    if n == 2:
        print(
            f"rules {rules.name}: 2-player games, seats swapped: each pair plays each of {args.games} dice seeds twice, "
            f"each once in seat 0 (seed {args.seed}); rows in the order the agents were given"
        )
        _print_pairs(pairs, n)
    else:
        print(
            f"rules {rules.name}: {n}-player games, seat rotation: each of {args.games} dice seeds played {n} times, "
            f"every player once in every seat (seed {args.seed}); each listed agent a player of its own{': ' + players if players else ''}"
        )
        print(f"win share: a win 1, a win shared by k players 1/k each; 95% interval over the seeds; fair share 1/{n} = {1 / n:.1%}")
        _print_shares(shares)
        if args.pairwise:
            print("\npairwise: each player against each other in the same games; even = neither of the two won (a third did), or they shared the win")
            _print_pairs(pairs, n)
    result = {
        "rules": rules.name,
        "players": n,
        "games_per_matchup": args.games,
        "seed": args.seed,
        "seating": "seats swapped" if n == 2 else "seat rotation",
        "wall_seconds": wall,
        "agents": names,
        "specs": {name: spec for name, spec in table.items()},
        "command": command,
    }
    if many:
        result["shares"] = shares
    if pairs:
        result["matchups"] = pairs
    folder = OutputFolder(out, "generala tournament")
    folder.write_json("results.json", result)
    if n == 2:
        md = [f"# Tournament on `{rules.name}`: 2 players, {args.games} seeds per pair, seats swapped on the same dice", "", *_md_pairs(pairs, n)]
    else:
        md = [
            f"# Tournament on `{rules.name}`: {n} players, {args.games} seeds, seat rotation on the same dice",
            "",
            f"Win share: a win 1, a win shared by k players 1/k each; the fair share is 1/{n}. The interval is over the seeds.",
            "",
            *_md_shares(shares),
        ]
        if args.pairwise:
            md += ["", "## Pairwise: each player against each other in the same games", "", *_md_pairs(pairs, n)]
    folder.write("results.md", "\n".join(md) + "\n")
    with folder.temporary("winrates.png") as tmp:
        if many:
            plot_shares(shares, tmp, f"Win share, {rules.name}, {n} players, seat rotation")
        else:
            plot_matrix(names, matrix, tmp, f"Win rate, {rules.name}, 2 players")
    print(f"wrote {out}/results.json, results.md, winrates.png ({wall:.1f} s)")


def main(argv=None) -> int:
    from generala_agents.specs import HELP, TRUST_ZIP_HELP

    from .evaluate import default_out, name_agents
    from .options import claim_out

    p = parser("generala tournament", __doc__.split("\n\n")[0])
    p.add_argument(
        "--agents",
        required=True,
        help=f"comma-separated agents, each a player of its own; one listed twice plays twice, NAME*K is K players of NAME (win-max,optimal*2); each is {HELP}",
    )
    p.add_argument("--trust-zip", action="store_true", help=TRUST_ZIP_HELP)
    p.add_argument("--players", type=int, default=2, help="players at each table: 2 (every pair of the agents meets) to 6 (list exactly that many)")
    p.add_argument("--rules", default="classic", help=RULES_HELP)
    p.add_argument(
        "--games",
        type=positive_int,
        default=1000,
        help="dice seeds: with 2 players per pair, each played twice, the seats swapped; with more, once per seat rotation",
    )
    p.add_argument("--seed", type=seed_int, default=0, help="seed of the dice seeds")
    p.add_argument("--pairwise", action="store_true", help="with 3 to 6 players, also each pair of players' results in the same games")
    p.add_argument("--workers", type=positive_int, default=None, help="processes (default: every core)")
    p.add_argument("--out", default=None, help="output folder (default results/tournament-RULES-Pp-sSEED-HASH, HASH of the command's options and agents)")
    p.add_argument("--force", action="store_true", help="replace results that a different generala tournament command wrote in --out")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = p.parse_args(argv)
    require_outputs(args)

    from generala_env.core.rules import load_rules

    rules = load_rules(args.rules)
    specs = player_specs(args.agents)
    _check_lineup(specs, args.players)
    table = name_agents(specs, repeat=True)
    given = list(argv if argv is not None else sys.argv[1:])
    out = Path(args.out) if args.out else default_out("tournament", f"{rules.name}-{args.players}p-s{args.seed}", given, specs)
    command = "generala tournament " + " ".join(given)
    if not args.out:
        print(f"results go to {out} (--out chooses another folder)")
    claim_out(out, "generala tournament", command, ("results.json", "results.md", "winrates.png"), args.force, adopt=True)
    total = len(_lineups(list(table), args.players, args.games, args.seed))

    def body(progress: dict) -> None:
        t0 = time.time()
        plan, recs = play_tournament(table, rules, args.players, args.games, args.seed, args.workers, not args.no_progress, args.trust_zip, progress)
        progress["writing"] = True
        report(args, rules, table, plan, recs, out, time.time() - t0, command)

    return run_guarded("generala tournament", out, total, body)


if __name__ == "__main__":
    sys.exit(main())
