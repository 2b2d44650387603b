"""``generala replay``: games as one self-contained HTML page, with the optimum's judgement of every move.

    generala replay ppo-classic --games 3 --out ppo.html         # one player: regret of every move
    generala replay greedy optimal --seed 7 --out duel.html      # two players: each seat's moves

Every roll, hold and write of each game is a row: the dice (those held back at the last
reroll on gold), what the agent did, and the sheets at the end. In one-player games each
decision is judged by the exact one-player solver, as ``python -m generala_training.diagnose`` judges
it (:func:`generala_training.diagnose.judged_values`): the expected final total after the move,
the optimum's choice and its total beside it, and the regret (the points the move cost
in expectation), so the costly moves stand out at a glance. In two-player games each move
shows the mover's chance to win (P(win) + 1/2 P(draw)) before and after it, from
``optimal-2p``, where that table is already in the cache (``generala solve --players 2``
makes it; ``--solve-2p`` here solves it first, which takes minutes for the presets).

The games are played on the shared seeded dice of :mod:`generala_training.harness`, as
``generala evaluate`` plays them. The page needs no network and no server. An existing
``--out`` file is never overwritten (``--force`` replaces a page this program wrote there, never another file); the page is written whole
or not at all.
"""

from __future__ import annotations

import argparse
import html
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from generala_env.core.dice import NUM_MASKS
from generala_env.core.game import OPEN, Game
from generala_env.core.rules import RuleSet, load_rules
from generala_env.rendering.render import PIPS
from generala_training.diagnose import Watched, judged_values
from generala_training.harness import game_seed, play_game
from generala_training.options import HelpFormatter, positive_int, seed_int

from .hints import two_player_table
from .moves import describe as words


def game_from_info(rules, info) -> Game:
    """The game a seat sees in its ``info`` (every fact the game needs is there)."""
    sheets = np.asarray(info["sheets"])
    g = Game(rules, sheets.shape[0])
    locked = [f + 1 for f, n in enumerate(np.asarray(info["locked"]).tolist()) for _ in range(int(n))]
    g.set_state(sheets=sheets, dice=np.asarray(info["dice"]).tolist(), rolls_left=int(info["rolls_left"]), player=int(info["player"]), locked=locked)
    return g


def describe(game: Game, action: int) -> str:
    """An action before it is played, in words (the terminal game's wording: ``keep 4 4 4,
    reroll 2``, ``write 12 on fours``, ``cross out ones``)."""
    return words(game, int(action))


@dataclass
class Move:
    """One decision of one seat, and what it was worth."""

    seat: int
    turn: int  # lines the seat had filled
    dice: list[int]
    held: list[bool]  # held back at the last reroll
    rolls_left: int
    action: int
    text: str
    totals: list[int]  # before the move
    best_text: str = ""
    value: float | None = None  # one player: expected final total after the move
    best_value: float | None = None
    regret: float | None = None
    win_before: float | None = None  # two players: the mover's chance to win before and after
    win_after: float | None = None
    points: int | None = None  # a write's points (filled in from the final sheets)


@dataclass
class Replay:
    seed: int
    seats: tuple[str, ...]
    rules: RuleSet
    moves: list[Move] = field(default_factory=list)
    sheets: np.ndarray | None = None
    totals: list[int] = field(default_factory=list)
    winners: tuple[int, ...] = ()
    served_generala_win: bool = False


class Recorder(Watched):
    """Wraps an agent: plays its moves and records each with the judgement asked for."""

    def __init__(self, agent, replay: Replay, rules, solver=None, two_player=None):
        super().__init__(agent)
        self.replay, self.rules = replay, rules
        self.solver, self.two_player = solver, two_player

    def record(self, a: int, obs, info) -> None:
        from generala_env.rendering.picture import held_dice

        g = game_from_info(self.rules, info)
        seat = int(info["player"])
        totals = np.asarray(info["totals"]).tolist()
        m = Move(seat, int(info["turn"]), g.dice.tolist(), held_dice(g), int(g.rolls_left), a, describe(g, a), totals)
        if self.solver is not None:
            vals = judged_values(self.solver, info)
            best = int(np.argmax(vals))
            m.value, m.best_value = totals[seat] + float(vals[a]), totals[seat] + float(vals[best])
            m.regret = float(vals[best] - vals[a])
            m.best_text = describe(g, best) if m.regret > 1e-9 else m.text
        if self.two_player is not None:
            vals = np.where(np.asarray(info["action_mask"]).astype(bool), self.two_player.action_values(info), -np.inf)
            best = int(np.argmax(vals))
            m.win_before, m.win_after = float(vals[best]), float(vals[a])
            if not m.best_text:
                m.best_text = describe(g, best) if vals[best] - vals[a] > 1e-9 else m.text
        self.replay.moves.append(m)


def record(specs: list[str], rules="classic", games: int = 1, seed: int = 0, solve_2p: bool = False, trust_zip: bool = False) -> tuple[list[Replay], list[str]]:
    """Play ``games`` games of the agents ``specs`` (one per seat) on the shared dice of
    ``seed``; every move recorded and judged. Also the notes the page should carry. An SB3
    ``.zip`` (bare or in ``pool:DIR``) is opened only with ``trust_zip``."""
    from generala_training.diagnose import load_agent

    rules = load_rules(rules)
    if not 1 <= len(specs) <= 6:
        raise ValueError(f"a game has 1 to 6 seats, got {len(specs)} agent(s)")
    notes: list[str] = []
    solver = two = None
    if len(specs) == 1:
        from generala_agents.solver import load_or_solve

        solver = load_or_solve(rules)[0]
        notes.append(
            f"Each move is judged by the exact one-player solver (optimal expected score {solver.expected_score:.2f}): "
            "the expected final total after the move, the optimum's choice and its total, and the regret, "
            "the points the move cost in expectation."
        )
    elif len(specs) == 2:
        got = two_player_table(rules, solve_2p)
        if isinstance(got, str):
            notes.append(f"The chance to win is not shown: {got}, or pass --solve-2p here.")
        else:
            two = got
            notes.append(
                "Each move shows the mover's chance to win (P(win) + 1/2 P(draw), both playing to win from there) before and after it, from optimal-2p."
            )
    else:
        notes.append("Games of three or more players are shown without a judgement: no exact solver covers them.")
    out = []
    players = [load_agent(spec, rules, trust_zip) for spec in specs]  # play_game resets each with the game's seed
    for i in range(games):
        s = game_seed(seed, i)
        rep = Replay(seed=s, seats=tuple(specs), rules=rules)
        seats = [Recorder(agent, rep, rules, solver, two) for agent in players]
        result = play_game(seats, rules, s, names=specs)
        rep.sheets, rep.totals, rep.winners = result.sheets, result.totals.tolist(), result.winners
        rep.served_generala_win = result.served_generala_win
        for m in rep.moves:
            if m.action >= NUM_MASKS:
                m.points = max(int(result.sheets[m.seat, m.action - NUM_MASKS]), 0)
        out.append(rep)
    return out, notes


# -- the page ----------------------------------------------------------------------------
CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; background: #fafaf7; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 2em; }
table { border-collapse: collapse; margin: .6em 0; }
td, th { border: 1px solid #ccc; padding: 2px 8px; text-align: right; }
th { background: #eee; } td.l, th.l { text-align: left; white-space: nowrap; }
.die { font-size: 1.6em; line-height: 1; padding: 0 1px; }
.held { background: #f2c430; border-radius: 3px; }
.crossed { color: #c81e1e; background: #f6d6d6; }
.open { color: #aaa; }
.write td { border-bottom: 2px solid #888; }
.best { color: #555; }
.note { color: #555; max-width: 60em; }
.sum td { font-weight: bold; }
"""


def _dice(m: Move) -> str:
    return "".join(
        f'<span class="die{" held" if h else ""}" title="{d}{" (held)" if h else ""}">{PIPS[d - 1]}</span>' for d, h in zip(m.dice, m.held, strict=True)
    )


def _regret_style(r: float | None) -> str:
    if r is None or r <= 1e-9:
        return ""
    a = min(1.0, 0.15 + r / 8.0)
    return f' style="background: rgba(220, 40, 40, {a:.2f})"'


def _sheets(rep: Replay, rules) -> str:
    rows = [
        "<table><tr><th class=l>line</th>"
        + "".join(f"<th>P{p} {html.escape(n)}{' (won)' if p in rep.winners and len(rep.seats) > 1 else ''}</th>" for p, n in enumerate(rep.seats))
        + "</tr>"
    ]
    sheets = rep.sheets
    assert sheets is not None  # a played replay holds its final sheets
    for line_no, line in enumerate(rules.lines):
        cells = []
        for p in range(len(rep.seats)):
            v = int(sheets[p, line_no])
            cells.append("<td class=open>·</td>" if v == OPEN else ("<td class=crossed>✗</td>" if v == 0 else f"<td>{v}</td>"))
        rows.append(f"<tr><td class=l>{html.escape(line.replace('_', ' '))}</td>{''.join(cells)}</tr>")
    rows.append("<tr class=sum><td class=l>total</td>" + "".join(f"<td>{t}</td>" for t in rep.totals) + "</tr></table>")
    return "\n".join(rows)


def _game(k: int, rep: Replay, rules) -> str:
    one = len(rep.seats) == 1
    judged = bool(rep.moves) and all(m.regret is not None for m in rep.moves)  # by the one-player solver: every one-seat game, a browser table's
    two = any(m.win_before is not None for m in rep.moves)
    who = " vs ".join(f"P{p} {html.escape(n)}" for p, n in enumerate(rep.seats))
    won = ", ".join(f"P{w}" for w in rep.winners)
    head = f'<h2 id="game{k + 1}">Game {k + 1}: {who} (seed {rep.seed})</h2>'
    summary = f"<p>Final total{'s' if not one else ''}: {', '.join(map(str, rep.totals))}"
    if not one:
        summary += f"; {'winner' if len(rep.winners) == 1 else 'shared win'}: {won}" + (" (served generala)" if rep.served_generala_win else "")
    if one:
        total_regret = sum(m.regret or 0.0 for m in rep.moves)
        worst = sorted(range(len(rep.moves)), key=lambda i: -(rep.moves[i].regret or 0.0))[:3]
        worst = [i for i in worst if (rep.moves[i].regret or 0) > 1e-9]
        summary += f"; regret {total_regret:.2f} points over {len(rep.moves)} decisions"
        if worst:
            summary += "; costliest: " + ", ".join(f'<a href="#g{k + 1}m{i + 1}">move {i + 1} ({rep.moves[i].regret:.2f})</a>' for i in worst)
    summary += ".</p>"
    cols = ["#", "seat", "turn", "dice", "rolls left", "move", "points"]
    if judged:
        cols += ["expected total after", "optimum's choice", "optimum's total", "regret"]
    if two:
        cols += ["chance to win before", "after", "the two-player optimum's choice"]
    left = {"dice", "move", "optimum's choice", "the two-player optimum's choice"}
    rows = ["<table class=moves><tr>" + "".join(f"<th{' class=l' if c in left else ''}>{html.escape(c)}</th>" for c in cols) + "</tr>"]
    for i, m in enumerate(rep.moves):
        cells = [
            f"<td>{i + 1}</td>",
            f"<td>P{m.seat}</td>",
            f"<td>{m.turn + 1}</td>",
            f"<td class=l>{_dice(m)}</td>",
            f"<td>{m.rolls_left}</td>",
            f"<td class=l>{html.escape(m.text)}</td>",
            f"<td>{'' if m.points is None else m.points}</td>",
        ]
        if judged:
            assert m.regret is not None  # every move of a judged replay is
            cells += [
                f"<td>{m.value:.2f}</td>",
                f"<td class='l best'>{html.escape(m.best_text) if m.regret > 1e-9 else '(the same)'}</td>",
                f"<td>{m.best_value:.2f}</td>",
                f"<td{_regret_style(m.regret)}>{m.regret:.2f}</td>",
            ]
        if two:
            drop = (m.win_before or 0) - (m.win_after or 0)
            cells += [
                f"<td>{m.win_before:.1%}</td>",
                f"<td{_regret_style(drop * 100)}>{m.win_after:.1%}</td>",
                f"<td class='l best'>{html.escape(m.best_text) if drop > 1e-9 else '(the same)'}</td>",
            ]
        cls = ' class="write"' if m.action >= NUM_MASKS else ""
        rows.append(f'<tr id="g{k + 1}m{i + 1}"{cls}>' + "".join(cells) + "</tr>")
    rows.append("</table>")
    return "\n".join([head, summary, *rows, "<h3>The sheets at the end</h3>", _sheets(rep, rules)])


def page(replays: list[Replay], notes: list[str], title: str = "Generala replay") -> str:
    """The whole page: no script, no image, no link outside it."""
    rules = replays[0].rules if replays else None
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p class=note>Rules: {html.escape(rules.name if rules else '')}. Dice held back at the last reroll are on gold; "
        "a thick line closes each turn. " + " ".join(html.escape(n) for n in notes) + "</p>",
    ]
    if len(replays) > 1:
        parts.append("<p>" + " · ".join(f'<a href="#game{k + 1}">game {k + 1}</a>' for k in range(len(replays))) + "</p>")
    parts += [_game(k, r, rules) for k, r in enumerate(replays)]
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_page(path: Path, text: str, force: bool = False) -> None:
    """Write the page to ``path`` atomically: a file already there only with ``force``, and
    then only a page this program wrote there (never a file of the user's, never a link)."""
    from generala_env.files import OutputFolder, lstat_or_none

    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        raise ValueError(f"{path} is a folder: --out names the HTML file to write")
    if lstat_or_none(path) is not None and not force:
        raise ValueError(f"{path} exists: pass --force to replace it, or another --out")
    OutputFolder(path.parent, "generala replay").write(path.name, text.encode("utf-8"))


def build_parser() -> argparse.ArgumentParser:
    from generala_agents.specs import HELP, TRUST_ZIP_HELP

    p = argparse.ArgumentParser(allow_abbrev=False, prog="generala replay", description=__doc__.split("\n\n")[0], formatter_class=HelpFormatter)
    p.add_argument("agents", nargs="+", help=f"one agent per seat: {HELP}")
    p.add_argument("--rules", default="classic", help="a preset name or a rules YAML file (default: classic)")
    p.add_argument("--games", type=positive_int, default=1, help="games to play, each on its own seeded dice (default: 1)")
    p.add_argument("--seed", type=seed_int, default=0, help="the first game's dice seed (default: 0)")
    p.add_argument("--out", default="replay.html", help="the HTML file to write (default replay.html; never overwritten without --force)")
    p.add_argument("--force", action="store_true", help="replace --out if it is a page generala replay wrote there (never a file of yours)")
    p.add_argument("--solve-2p", action="store_true", help="two players: solve the two-player table first if it is not cached (minutes)")
    p.add_argument("--trust-zip", action="store_true", help=TRUST_ZIP_HELP)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    out = Path(args.out)
    if out.exists() and not args.force:
        raise ValueError(f"{out} exists: pass --force to replace it, or another --out")
    if args.games > 100:
        raise ValueError(f"--games {args.games}: a page of more than 100 games is too long to read; write several pages")
    replays, notes = record(args.agents, args.rules, args.games, args.seed, args.solve_2p, args.trust_zip)
    write_page(out, page(replays, notes), force=args.force)
    print(f"wrote {out}: {args.games} game(s), {sum(len(r.moves) for r in replays)} moves")
    return 0


if __name__ == "__main__":
    sys.exit(main())
