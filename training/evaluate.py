"""``generala evaluate``: one-player games, every agent on the same seeded dice.

    generala evaluate                                  # the shipped agents on classic
    generala evaluate --agents optimal,greedy,random --rules classic --games 10000 --seed 0

Prints a table (mean score with 95% CI, standard deviation, share of the optimal
expected score, generala and served rates, lines crossed out) and writes
``results.json``, ``results.md`` and ``scores.png`` into ``--out``. Ctrl-C or SIGTERM
stops the workers and writes nothing (exit status 130 or 143).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from generala_env.core.checks import is_whole
from generala_env.core.scoring import generala_scored
from generala_env.files import OutputFolder

from .harness import Interrupted, game_seed, play_many, signals_interrupt
from .options import positive_int, require_extra, seed_int
from .stats import mean_ci


def default_agents() -> list[str]:
    import generala_agents as agents

    out = ["optimal", "td-search", "turn-optimal", "rules-of-thumb", "greedy", "random"]
    for name in agents.names():
        if name not in out and _players_of(name) == 1:
            out.insert(1, name)
    return out


def _players_of(name) -> int | None:
    from generala_agents.ppo import find_checkpoint, read_metadata

    path = find_checkpoint(name) if isinstance(name, str) else None
    return int(read_metadata(path)["num_players"]) if path else None


def name_agents(agents, repeat: bool = False) -> dict:
    """``{name: spec or agent object}`` for a list of specs and objects (or such a mapping):
    a spec is its own name; an object is named by its ``name`` attribute or its class or
    function name, with ``#2``, ``#3`` … after a name already taken. A spec listed twice is
    refused, unless ``repeat``: then each listing is a player of its own (``optimal``,
    ``optimal#2``), as for an object."""
    if isinstance(agents, dict):
        out = {}
        for k, v in agents.items():
            if not isinstance(k, str) or not k:
                raise ValueError(f"agent names must be non-empty strings, got {k!r}")
            out[k] = v
        return out
    if isinstance(agents, str) or not hasattr(agents, "__iter__"):
        agents = [agents]
    out = {}
    for a in agents:
        base: str | None
        if isinstance(a, str):
            base = a.strip()
            if not base:
                raise ValueError("an empty agent name in the list of agents")
        else:
            base = getattr(a, "name", None) if isinstance(getattr(a, "name", None), str) else None
            base = base or getattr(a, "__name__", None) or type(a).__name__
        name, k = base, 2
        while name in out:
            if isinstance(a, str) and not repeat:
                raise ValueError(f"agent {a!r} is listed twice")
            name, k = f"{base}#{k}", k + 1
        out[name] = a.strip() if isinstance(a, str) else a
    return out


def check_agents(table, rules, players: int, trust_zip: bool = False) -> None:
    """Build each agent once so a bad spec or rule set fails before any game is played.

    ``table``: agent names, or ``{name: spec or agent object}``."""
    import generala_agents as agents

    table = table if isinstance(table, dict) else {n: n for n in table}
    for name, entry in table.items():
        if isinstance(entry, str) and not entry:
            raise ValueError("an empty agent name in --agents")
        agent = agents.load(entry, rules=rules, trust_zip=trust_zip)
        played = getattr(agent, "played", None)  # a run folder says which of its models plays
        if isinstance(played, str) and played:
            print(f"{name}: plays {played}")
        p = _players_of(entry) or getattr(agent, "num_players", None)
        if p is not None and p != players:
            raise ValueError(f"agent {name!r} plays {p}-player games; this program plays {players}-player games")


def play_evaluation(table: dict, rules, games: int, seed: int, workers=None, progress: bool = False, trust_zip: bool = False, counter=None):
    """Every agent of ``table`` on the same ``games`` seeded one-player games: the rows (sorted
    by mean score, best first), each agent's totals, and the optimal expected score."""
    from generala_agents.solver import load_or_solve

    check_agents(table, rules, 1, trust_zip)
    optimal = load_or_solve(rules)[0].expected_score
    seeds = [game_seed(seed, i) for i in range(games)]
    rows, scores = [], {}
    for name in table:
        recs = play_many([(name,)] * games, seeds, rules, workers=workers, progress=progress, desc=name, agents=table, trust_zip=trust_zip)
        if counter is not None:
            counter["played"] += len(recs)
        rows.append(summarize(name, recs, rules, optimal))
        scores[name] = [float(r.totals[0]) for r in recs]
    rows.sort(key=lambda r: -r["mean"])
    return rows, scores, optimal


def evaluate(
    agents=None, rules="classic", games: int = 500, seed: int = 0, workers: int | None = None, progress: bool = False, trust_zip: bool = False
) -> list[dict]:
    """One-player games of ``agents`` on the same seeded dice; the rows of ``results.json``.

    ``agents``: a list of agent specs (names, checkpoint folders, ``module:attr``,
    ``file.py:attr``, SB3 ``.zip`` files with ``trust_zip=True``) and agent objects (with
    ``act(observation, info)``), or a mapping ``{name: spec or object}``; default the
    shipped agents. Each row has the agent's name, ``games``, ``mean``, ``ci95``, ``std``,
    ``share_of_optimal``, ``generala_rate``, ``crossed_out`` and more; rows are sorted by
    mean score, best first. Results are the same for any number of ``workers``; agents
    defined in the caller's process (a notebook, ``python -c``) play in the workers too
    where the system can fork, else in this process::

        from generala_training.evaluate import evaluate
        rows = evaluate(["greedy", "optimal"], games=200, seed=0)
    """
    from generala_env.core.rules import load_rules

    if not is_whole(games) or games < 1:
        raise ValueError(f"games must be a whole number of at least 1, got {games!r}")
    if not is_whole(seed) or seed < 0:
        raise ValueError(f"seed must be a whole number of 0 or more, got {seed!r}")
    table = name_agents(default_agents() if agents is None else agents)
    rows, _, _ = play_evaluation(table, load_rules(rules), games, seed, workers, progress, trust_zip)
    return rows


def make_out(out: Path) -> list[Path]:
    """Make the output folder now, so that a bad ``--out`` fails before any game is played.

    Returns the folders it made, outermost first; changes nothing that was already there.
    """
    made: list[Path] = []
    there = out
    while not there.exists() and not there.is_symlink():
        made.insert(0, there)
        there = there.parent
    if not there.is_dir():
        raise ValueError(f"--out {out}: {there} is not a folder")
    if not os.access(there, os.W_OK | os.X_OK):
        raise ValueError(f"--out {out}: {there} is not writable")
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):  # root passes os.access; a file written tells
            pass
    except OSError as e:
        unmake_out(made)
        raise ValueError(f"--out {out}: cannot write there ({e.strerror or e})") from None
    return made  # what is in it was checked before: options.claim_out refuses links and files this program did not write


def unmake_out(made: list[Path]) -> None:
    """Remove the folders ``make_out`` made, innermost first, as long as they are empty."""
    for d in reversed(made):
        try:
            d.rmdir()
        except OSError:
            return


def summarize(name: str, recs, rules, optimal: float) -> dict:
    totals = np.array([r.totals[0] for r in recs], dtype=float)
    sheets = np.stack([r.sheets[0] for r in recs])
    m, lo, hi = mean_ci(totals)
    out = {
        "agent": name,
        "games": len(recs),
        "mean": m,
        "ci95": [lo, hi],
        "std": float(totals.std(ddof=1)) if len(totals) > 1 else 0.0,
        "min": float(totals.min()),
        "max": float(totals.max()),
        "share_of_optimal": m / optimal,
        "crossed_out": {line: float((sheets[:, l] == 0).mean()) for l, line in enumerate(rules.lines)},
        "served_per_game": float(np.mean([r.served_bonus_writes[0] for r in recs])),
    }
    if rules.generala_line >= 0:
        out["generala_rate"] = float(generala_scored(rules, sheets).mean())
    return out


def markdown(rows: list[dict], rules, games: int, seed: int, optimal: float) -> str:
    lines = [
        f"# Evaluation on `{rules.name}` ({games} one-player games each, seed {seed}, same dice for every agent)",
        "",
        f"Optimal expected score (exact): **{optimal:.2f}**",
        "",
        "| agent | mean | 95% CI | std | % of optimal | generala rate | served/game |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['agent']} | {r['mean']:.2f} | {r['ci95'][0]:.2f} – {r['ci95'][1]:.2f} | {r['std']:.1f} | "
            f"{100 * r['share_of_optimal']:.1f}% | {r.get('generala_rate', float('nan')):.3f} | {r['served_per_game']:.2f} |"
        )
    lines += ["", "Share of games each line was crossed out (written as 0):", ""]
    lines.append("| agent | " + " | ".join(rules.lines) + " |")
    lines.append("|---|" + "---:|" * len(rules.lines))
    for r in rows:
        lines.append(f"| {r['agent']} | " + " | ".join(f"{r['crossed_out'][l]:.2f}" for l in rules.lines) + " |")
    return "\n".join(lines) + "\n"


def plot(rows: list[dict], scores: dict, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5))
    bins = np.arange(0, max(max(v) for v in scores.values()) + 10, 5)
    for r in rows:
        ax.hist(scores[r["agent"]], bins=bins.tolist(), histtype="step", linewidth=1.6, label=f"{r['agent']} (mean {r['mean']:.1f})")
    ax.set_xlabel("final score")
    ax.set_ylabel("games")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def report(args, rules, rows: list[dict], scores: dict, optimal: float, out: Path, wall: float, command: str) -> None:
    """Print the table and write ``results.json``, ``results.md`` and ``scores.png`` into ``out``."""
    print(
        f"rules {rules.name}: {args.games} games per agent, seed {args.seed}, same dice for every agent; "
        f"optimal expected score {optimal:.2f}; sorted by mean score"
    )
    w = max([16] + [len(r["agent"]) + 2 for r in rows])  # the agent column fits the longest name
    print(f"{'agent':<{w}}{'mean':>8}  {'95% CI':<17}{'std':>6}{'% opt':>8}{'generala':>10}{'served':>8}  most crossed out")
    for r in rows:
        worst = max(r["crossed_out"].items(), key=lambda kv: kv[1])
        print(
            f"{r['agent']:<{w}}{r['mean']:>8.2f}  {r['ci95'][0]:>7.2f}–{r['ci95'][1]:<8.2f}{r['std']:>6.1f}{100 * r['share_of_optimal']:>7.1f}%"
            f"{r.get('generala_rate', float('nan')):>10.3f}{r['served_per_game']:>8.2f}  {worst[0]} {worst[1]:.0%}"
        )
    result = {
        "rules": rules.name,
        "rules_settings": rules.settings(),
        "games": args.games,
        "seed": args.seed,
        "optimal_expected": optimal,
        "wall_seconds": wall,
        "agents": rows,
        "command": command,
    }
    folder = OutputFolder(out, "generala evaluate")
    folder.write_json("results.json", result)
    folder.write("results.md", markdown(rows, rules, args.games, args.seed, optimal))
    with folder.temporary("scores.png") as tmp:
        plot(rows, scores, tmp, f"Final scores on {rules.name} ({args.games} games, same dice)")
    print(f"wrote {out}/results.json, results.md, scores.png ({wall:.1f} s)")


REPLAY_NAME_CHARS = 80  # of an agent's spec in its page's file name; longer specs are cut (and get the hash)


def replay_file(spec: str) -> str:
    """The file name of ``spec``'s replay page: ``replays-SPEC.html`` where the spec is a plain
    name (letters, digits, ``-``, ``_``, ``.``; ``replays-greedy.html``), else its last path part
    with other characters as ``_``, cut to 80 characters, and the first 8 hex digits of the
    spec's SHA-256 (``replays-model_zip-1a2b3c4d.html``), so that two specs never share a page."""
    import hashlib

    base = Path(spec).name or spec
    safe = "".join(c if (c.isascii() and c.isalnum()) or c in "-_." else "_" for c in base)[:REPLAY_NAME_CHARS].strip(".") or "agent"
    if safe == spec:
        return f"replays-{safe}.html"
    return f"replays-{safe}-{hashlib.sha256(spec.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}.html"


def write_replays(folder: OutputFolder, names: list[str], rules, games: int, seed: int, trust_zip: bool = False) -> list[Path]:
    """``--replays N``: each agent's page of its first ``games`` games of the evaluation (the
    same seeds, so the same dice and totals), named by :func:`replay_file`, written into
    ``folder`` (whose record of outputs refuses a link or a file of the user's at that name)."""
    from generala_play.replay import page, record

    paths = []
    for name in names:
        replays, notes = record([name], rules, min(games, 100), seed, trust_zip=trust_zip)
        paths.append(folder.write(replay_file(name), page(replays, notes, title=f"Generala replay: {name}")))
    print(f"wrote {len(paths)} replay page(s) in {folder.folder}: {', '.join(p.name for p in paths)}")
    return paths


def main(argv=None) -> int:
    from generala_agents.specs import HELP, TRUST_ZIP_HELP

    from .options import RULES_HELP, claim_out, parser

    p = parser("generala evaluate", __doc__.split("\n\n")[0])
    p.add_argument("--agents", help=f"comma-separated agents (default: the shipped agents); each is {HELP}")
    p.add_argument("--trust-zip", action="store_true", help=TRUST_ZIP_HELP)
    p.add_argument("--rules", default="classic", help=RULES_HELP)
    p.add_argument("--games", type=positive_int, default=500, help="one-player games of each agent, every agent on the same dice")
    p.add_argument("--seed", type=seed_int, default=0, help="seed of the games' dice")
    p.add_argument("--workers", type=positive_int, default=None, help="processes (default: every core)")
    p.add_argument(
        "--out", default=None, help="output folder (default results/evaluate-RULES-sSEED-HASH, HASH of the command's options and agents: its own per command)"
    )
    p.add_argument("--force", action="store_true", help="replace results that a different generala evaluate command wrote in --out")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--replays",
        type=seed_int,
        default=0,
        metavar="N",
        help="also write replays-AGENT.html: each agent's first N games, every move judged (generala replay); "
        "an agent that is not a plain name gets a hash in its page's name (default: %(default)s, none)",
    )
    args = p.parse_args(argv)
    require_outputs(args)

    from generala_env.core.rules import load_rules

    rules = load_rules(args.rules)
    names = [n.strip() for n in args.agents.split(",")] if args.agents else default_agents()
    given = list(argv if argv is not None else sys.argv[1:])
    out = Path(args.out) if args.out else default_out("evaluate", f"{rules.name}-s{args.seed}", given, names)
    command = "generala evaluate " + " ".join(given)
    if not args.out:
        print(f"results go to {out} (--out chooses another folder)")
    pages = [replay_file(n) for n in names] if args.replays else []
    claim_out(out, "generala evaluate", command, ("results.json", "results.md", "scores.png", *pages), args.force, adopt=True)

    def body(progress: dict) -> None:
        table = name_agents(names)
        t0 = time.time()
        rows, scores, optimal = play_evaluation(table, rules, args.games, args.seed, args.workers, not args.no_progress, args.trust_zip, progress)
        progress["writing"] = True
        report(args, rules, rows, scores, optimal, out, time.time() - t0, command)
        if args.replays:
            write_replays(OutputFolder(out, "generala evaluate"), names, rules, min(args.replays, args.games), args.seed, trust_zip=args.trust_zip)

    return run_guarded("generala evaluate", out, args.games * len(names), body)


def default_out(program: str, label: str, argv: list[str], agents: list[str]) -> Path:
    """The output folder of a command given no ``--out``: ``results/PROGRAM-LABEL-HASH``, where
    ``LABEL`` says the rules, players and seed and ``HASH`` is the first 8 hex digits of the
    SHA-256 of the command's arguments (``--force`` left out) and the agents it plays. A
    different command, or the default agents changing, gets its own folder; the same command
    again gets the same folder, whose results it replaces as with ``--out``."""
    import hashlib
    import json

    key = json.dumps([program, [a for a in argv if a != "--force"], list(agents)])
    return Path("results") / f"{program}-{label}-{hashlib.sha256(key.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"


def require_outputs(args) -> None:
    """Check, before any game, that the plot and the progress bar can be made (the ``eval`` extra)."""
    require_extra("eval", ("matplotlib",), "the plot")
    if not args.no_progress:
        require_extra("eval", ("tqdm",), "the progress bar (or --no-progress)")


def run_guarded(prog: str, out: Path, total: int, body) -> int:
    """Make ``out``, then run ``body(progress)`` with SIGINT and SIGTERM turned into a clean stop.

    ``body`` counts the games it has collected in ``progress["played"]`` and sets
    ``progress["writing"]`` before it writes. On a signal the workers are stopped, one line
    says how far it got, the folders this run made are removed while empty, and the exit
    status is 128 + the signal; any other error removes them too and goes on.
    """
    made: list[Path] = []
    progress = {"played": 0, "writing": False}
    try:
        with signals_interrupt():
            made = make_out(out)
            body(progress)
    except Interrupted as e:
        unmake_out(made)
        if progress["writing"]:
            print(f"{prog}: interrupted while writing {out}; its files may be incomplete", file=sys.stderr)
        else:
            print(f"{prog}: interrupted, {progress['played'] + e.played} of {total} games played; nothing written", file=sys.stderr)
        return e.exit_status
    except BaseException:
        unmake_out(made)  # only folders still empty
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main())
