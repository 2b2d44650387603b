"""A game of Generala at one table in the terminal: the seats (people and agents), the screen,
and the loop that asks each seat for its move.

People's moves are read by :func:`generala_play.moves.parse_move`; agents see exactly what they
see in the environments (:class:`~generala_env.core.encoding.Encoder` and
:func:`~generala_env.envs.env.make_info`). The sheets are drawn here rather than by
:func:`generala_env.rendering.render.render_text`: in colour, with the mover's points on each open
line, and the seats by name.
"""

from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING

import numpy as np

from generala_env.core.dice import NUM_MASKS
from generala_env.core.encoding import Encoder
from generala_env.core.game import OPEN, Game
from generala_env.core.rules import RuleSet
from generala_env.envs.env import make_info
from generala_env.rendering.render import PIPS, line_label

from .hints import Moves, moves_help, optimal_advice, two_player_table, win_advice
from .moves import MoveError, faces_text, locked_faces, parse_move, points_if_written

if TYPE_CHECKING:
    from generala_agents.base import Agent

HUMAN = "human"
YES = ("y", "yes", "yeah", "yep", "sure", "ok", "si", "sí")
NO = ("n", "no", "nope", "cancel")


class Style:
    """ANSI colour, or none."""

    def __init__(self, on: bool):
        self.on = on

    def _w(self, code: str, s: str) -> str:
        return f"\033[{code}m{s}\033[0m" if self.on else s

    def bold(self, s):
        return self._w("1", s)

    def dim(self, s):
        return self._w("2", s)

    def red(self, s):
        return self._w("31", s)

    def green(self, s):
        return self._w("32", s)

    def yellow(self, s):
        return self._w("33", s)

    def cyan(self, s):
        return self._w("36", s)

    def die(self, s):
        return self._w("1;30;47", s)


def _pad(s: str, width: int, style_fn=None, left=False) -> str:
    body = s.ljust(width) if left else s.rjust(width)
    return style_fn(body) if style_fn else body


class Table:
    """A game at one table: seats, the game, reading moves and printing what happens."""

    def __init__(self, rules: RuleSet, seats: list[str], seed: int, color: bool, unicode: bool, out=None):
        self.rules = rules
        self.seats = seats
        self.n = len(seats)
        self.game = Game(rules, self.n)
        self.encoder = Encoder(rules, self.n)
        ss = np.random.SeedSequence(seed)
        dice_ss, *agent_ss = ss.spawn(1 + self.n)
        self.rng = np.random.default_rng(dice_ss)
        self.agent_seeds = [int(s.generate_state(1)[0]) for s in agent_ss]
        self.seed = seed
        self.style = Style(color)
        self.unicode = unicode
        self._out = out
        humans = [s for s, who in enumerate(seats) if who == HUMAN]
        self.labels = []
        for s, who in enumerate(seats):
            if who == HUMAN:
                self.labels.append("you" if len(humans) == 1 else f"human {humans.index(s) + 1}")
            else:
                self.labels.append(who)
        self.agents: dict[int, Agent] = {}
        self._optimal = None
        self._optimal_2p: Agent | str | None = None  # the win-maximiser, loaded at the first hint of a two-player game

    # -- output ---------------------------------------------------------------------
    @property
    def out(self):
        return self._out or sys.stdout

    def say(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    def who(self, seat: int) -> str:
        return f"P{seat} {self.labels[seat]}"

    def dice_text(self, faces=None) -> str:
        faces = self.game.dice if faces is None else faces
        if self.unicode:
            return "  ".join(self.style.die(f" {PIPS[int(d) - 1]} {int(d)} ") for d in faces)
        return "  ".join(self.style.die(f"[{int(d)}]") for d in faces)

    def status(self) -> str:
        g = self.game
        rolls_done = 3 - g.rolls_left
        left = {2: "2 rerolls left", 1: "1 reroll left", 0: "no rerolls left: write"}[g.rolls_left]
        head = self.style.bold(f"{self.who(g.player)} · round {g.turn + 1}/{g.num_lines} · roll {rolls_done} of 3 ({left})")
        lines = [head, f"  dice: {self.dice_text()}"]
        locked = locked_faces(g)
        if g.rules.locked_holds and locked:
            lines[-1] += self.style.dim(f"   held for good: {faces_text(locked)}")
        if g.served_generala_pending():
            lines.append(self.style.yellow(self.style.bold("  SERVED GENERALA! Write it on generala: it wins the game.")))
        return "\n".join(lines)

    def sheets(self, preview: bool = False) -> str:
        """Every sheet side by side; with ``preview``, what the mover's dice score on each open line now."""
        g, st = self.game, self.style
        width = max(len(line_label(l)) for l in g.rules.lines) + 2
        cols = [self.who(s) for s in range(self.n)]
        cw = [max(7, len(c) + 2) for c in cols]
        mover = None if g.over else g.player
        legal = g.legal_mask() if preview and mover is not None else None
        head = " " * width + ("   now" if preview else "")
        for s, c in enumerate(cols):
            head += _pad(c, cw[s], st.bold if s == mover else None)
        rows = [head]
        for l, line in enumerate(g.rules.lines):
            row = _pad(line_label(line), width, left=True)
            if preview:
                if legal is not None and legal[NUM_MASKS + l]:
                    pts, bonus = points_if_written(g, l)
                    row += _pad(f"{pts}", 6, st.green if pts else st.dim)
                else:
                    row += " " * 6
            for s in range(self.n):
                v = int(g.sheets[s, l])
                if v == OPEN:
                    cell = _pad(".", cw[s], st.dim)
                elif v == 0:
                    cell = _pad("x", cw[s], st.red)
                else:
                    cell = _pad(str(v), cw[s], st.bold if s == mover else None)
                row += cell
            rows.append(row)
        totals = g.totals()
        row = _pad("total", width, left=True) + (" " * 6 if preview else "")
        best = totals.max()
        for s in range(self.n):
            row += _pad(str(int(totals[s])), cw[s], st.yellow if totals[s] == best and best > 0 else st.bold)
        rows.append(row)
        return "\n".join(rows)

    def show(self, preview: bool) -> None:
        self.say(self.sheets(preview))
        if not self.game.over:
            self.say(self.status())

    def done(self, action: int, before_dice, outcome) -> str:
        """What a move did, in words, once played: ``kept 6 6, rerolled 3 → 2 6 6 6 6``."""
        if action < NUM_MASKS:
            held = [int(d) for i, d in enumerate(before_dice) if action >> i & 1]
            what = f"kept {faces_text(held)}, rerolled {5 - len(held)}" if held else "rerolled all five"
            return f"{what} {'→' if self.unicode else '->'} {faces_text(self.game.dice)}"
        name = line_label(self.rules.lines[action - NUM_MASKS])
        if outcome.points == 0:
            return f"crossed out {name}"
        served = f" (served, +{outcome.bonus})" if outcome.bonus else ""
        if outcome.served_generala_win:
            served = " (served generala: wins the game)"
        return f"wrote {outcome.points} on {name}{served}"

    # -- agents ---------------------------------------------------------------------
    trust_zip = False  # SB3 .zip seats load only when the command says --trust-zip

    def load_agents(self) -> None:
        """Build every agent seat; raises ``ValueError`` naming the seat that cannot be built."""
        import generala_agents as agents

        for s, who in enumerate(self.seats):
            if who == HUMAN:
                continue
            try:
                self.agents[s] = agents.load(who, rules=self.rules, seed=self.agent_seeds[s], trust_zip=self.trust_zip)
            except agents.AgentError as e:  # an unknown name or spec, a checkpoint for other rules
                raise ValueError(f"seat {s}: {e}") from None

    def optimal(self):
        if self._optimal is None:
            import generala_agents as agents

            self._optimal = agents.load("optimal", rules=self.rules)
        return self._optimal

    def agent_action(self, seat: int) -> int:
        g = self.game
        agent = self.agents[seat]
        try:
            a = agent.act(self.encoder.encode(g, seat), make_info(g, seat))
            why = g.why_illegal(a)
            if why is None:
                return int(a)
            problem = f"played an illegal move ({why})"
        except Exception as e:  # an agent that fails must not end the people's game
            problem = f"failed: {type(e).__name__}: {e}"
        import generala_agents as agents

        self.say(self.style.red(f"{self.who(seat)} {problem}; greedy plays this seat from now on"))
        self.agents[seat] = agents.load("greedy", rules=self.rules)
        self.labels[seat] += "→greedy"
        return int(self.agents[seat].act(self.encoder.encode(g, seat), make_info(g, seat)))

    # -- hints and help -------------------------------------------------------------
    def hint(self) -> str:
        g = self.game
        if g.served_generala_pending():
            return "write generala: a served generala wins the game on the spot"
        msg, moves = optimal_advice(g, self.optimal().solver, self.style)
        if self.n == 2:
            msg.extend(self.win_hint(moves))
        return "\n  ".join(msg)

    def win_hint(self, moves: Moves) -> list[str]:
        """The best of the distinct legal ``moves`` by the chance to win, from the exact
        two-player solution (loaded at the first hint, from the cache only)."""
        from generala_agents.solver2p import SolveTooBigError

        if self._optimal_2p is None or isinstance(self._optimal_2p, str) and "not in the cache" in self._optimal_2p:
            try:  # only a cached table: a hint never blocks the game on a solve of minutes
                self._optimal_2p = two_player_table(self.rules)
            except SolveTooBigError as e:
                self._optimal_2p = str(e)
        return win_advice(self.game, self._optimal_2p, moves, self.style)

    def help(self) -> str:
        """The legal moves now, in the words the parser takes."""
        return moves_help(self.game)

    # -- playing --------------------------------------------------------------------
    def read(self, prompt: str) -> str:
        """One typed line; ``EOFError`` at the end of input."""
        stdin = sys.stdin
        if isatty(stdin) and isatty(self.out):
            with contextlib.suppress(ImportError):
                import readline  # noqa: F401  (line editing and history for input())
            try:
                return input(prompt)
            except EOFError:  # Ctrl-D: end the prompt's line
                self.say()
                raise
        self.out.write(prompt)
        self.out.flush()
        line = stdin.readline()
        if not line:
            self.say()
            raise EOFError
        self.out.write(line if line.endswith("\n") else line + "\n")  # echo: a transcript reads like the screen
        return line

    def human_move(self, seat: int) -> int | None:
        """Ask until a legal move is typed; ``None`` to quit."""
        prompt = f"{self.who(seat)} > "
        text = None
        while True:
            if text is None:
                text = self.read(prompt)
            try:
                got = parse_move(text, self.game)
            except MoveError as e:
                self.say(self.style.yellow(f"  {'✗' if self.unicode else '!'} {e}"))
                text = None
                continue
            except Exception as e:  # a reading bug must not cost the game: say so, ask again
                self.say(self.style.red(f"  could not read {text.strip()!r} ({type(e).__name__}: {e}); please say it another way"))
                text = None
                continue
            text = None
            if got == "quit":
                return None
            if got == "help":
                self.say(self.help())
                continue
            if got == "hint":
                self.say("  hint: " + self.hint())
                continue
            if got == "show":
                self.show(preview=True)
                continue
            assert not isinstance(got, str), got  # parse_move's only command names are handled above
            if got.confirm:
                answer = self.read(f"  {got.confirm} ").strip()
                if answer.lower() not in YES:
                    if answer.lower() in NO or not answer:
                        self.say("  not written; your move")
                    else:
                        text = answer  # another move typed instead of an answer
                    continue
            if got.note:
                self.say(self.style.dim(f"  ({got.note})"))
            return got.action

    def play(self) -> int:
        g = self.game
        g.reset(self.rng)
        for agent in self.agents.values():
            if hasattr(agent, "reset"):
                agent.reset()
        humans = HUMAN in self.seats
        turn_start = True
        try:
            while not g.over:
                seat = g.player
                human = self.seats[seat] == HUMAN
                if turn_start:
                    if human:
                        self.say()
                        self.show(preview=True)
                    else:
                        self.say(f"{self.who(seat)} rolls {faces_text(g.dice)}")
                        if g.served_generala_pending():
                            self.say(self.style.yellow("  served generala!"))
                before = g.dice.copy()
                action = self.human_move(seat) if human else self.agent_action(seat)
                if action is None:
                    self.say(f"{'You' if self.labels[seat] == 'you' else self.who(seat)} quit. The sheets as they stand:")
                    self.say(self.sheets())
                    return 0
                outcome = g.step(action, self.rng)
                text = f"  {self.who(seat)}: {self.done(action, before, outcome)}"
                if action < NUM_MASKS:
                    self.say(text)
                    turn_start = False
                    if human:
                        self.say(self.status())
                else:
                    self.say(self.style.cyan(text))
                    turn_start = True
                    if not humans and seat == self.n - 1 and not g.over:
                        self.say(self.sheets())
        except (EOFError, KeyboardInterrupt) as e:
            why = "Input ended" if isinstance(e, EOFError) else "\nInterrupted"
            self.say(f"{why}: the game stops here. The sheets as they stand:")
            self.say(self.sheets())
            return 0
        self.say()
        self.say(self.style.bold("Game over."))
        self.say(self.sheets())
        self.say(self.result())
        if self.n > 1:
            order = sorted(range(self.n), key=lambda s: -int(self.game.totals()[s]))
            self.say("Final: " + ", ".join(f"{self.who(s)} {int(self.game.totals()[s])}" for s in order))
        return 0

    def result(self) -> str:
        g, st = self.game, self.style
        totals = g.totals()
        you = [s for s in range(self.n) if self.labels[s] == "you"]

        def name(s: int) -> str:
            return "You" if s in you else self.who(s)

        if g.served_generala_winner is not None:
            w = g.served_generala_winner
            return st.green(st.bold(f"{name(w)} win{'' if w in you else 's'} with a served generala!"))
        if self.n == 1:
            return st.bold(f"{'Your' if you else self.who(0) + chr(39) + 's'} final score: {int(totals[0])}")
        winners = g.winners()
        if len(winners) == 1:
            w = winners[0]
            return st.green(st.bold(f"{name(w)} win{'' if w in you else 's'} with {int(totals[w])} points!"))
        return st.green(st.bold(f"Shared win at {int(totals[winners[0]])} points: {', '.join(self.who(w) for w in winners)}."))


def isatty(stream) -> bool:
    """Whether ``stream`` is a terminal (``False`` for one without ``isatty`` or closed)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
