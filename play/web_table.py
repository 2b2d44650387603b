"""One game in the browser: a table of 1 to 6 seats, each a person (hot seat: people take
turns at the same browser) or an agent, whose turns play out between the people's moves.

The game is a :class:`generala_env.core.game.Game` driven as :class:`generala_env.envs.env.GeneralaEnv`
drives it: its dice come from a :class:`generala_env.core.dice.DiceCup` on the generator of the
game's seed, and each agent's own randomness is seeded from that generator after the first
roll, in the order of the seats after the first person's. A one-person game against one agent
is therefore the env's game with the same seed, bit for bit. An agent sees what it sees in the
environments (:class:`~generala_env.core.encoding.Encoder` and :func:`~generala_env.envs.env.make_info`).
An agent that fails (raises, or plays an illegal move) stops the game: it says which one.
Every move is kept, with what the seat to move saw, so that the game's replay
(:mod:`generala_play.replay`) can judge each move once the game is over.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from generala_env.core.checks import is_whole
from generala_env.core.dice import NUM_MASKS, ROLLS, cup_for
from generala_env.core.encoding import Encoder
from generala_env.core.game import OPEN, Game, IllegalActionError
from generala_env.envs.env import make_info

from .web_guard import ECHO, bounded, shown

HOW_MOVE = '{"action": N}, {"hold": [indices of the sorted dice to keep]} or {"write": "line"}'


class GameError(ValueError):
    """A request the game cannot take; ``status`` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


@dataclass
class Seat:
    """A seat at the table: a person (``agent`` is ``None``) or an agent, and the name shown."""

    label: str
    agent_name: str | None = None  # the registered name of the agent that plays this seat
    agent: Any = None

    @property
    def person(self) -> bool:
        return self.agent_name is None


@dataclass
class Played:
    """One move as it was played: what its seat saw (``info``) and the action."""

    seat: int
    info: dict
    dice: list[int]
    held: list[bool]
    text: str
    action: int


class WebTable:
    """One game in the browser: the seats, the game, its lock, its log and its moves."""

    def __init__(self, rules, seats: list[Seat], seed: int):
        self.rules = rules
        self.seats = seats
        self.n = len(seats)
        self.seed = seed
        self.game = Game(rules, self.n)
        self.encoder = Encoder(rules, self.n)
        self.lock = threading.Lock()
        self.log: list[str] = []
        self.moves: list[Played] = []
        self.stopped: str | None = None  # why the game cannot go on: an agent failed
        self.two_player: Any = None  # optimal-2p for the hints, or why there is none
        rng = np.random.default_rng(seed)  # what GeneralaEnv.reset(seed=seed) makes
        self._cup = cup_for(None, rng)
        self.game.reset(self._cup)
        first = next((s for s in range(self.n) if self.seats[s].person), 0)
        for k in range(1, self.n + 1):  # the env's order: the seats after its own
            agent = self.seats[(first + k) % self.n].agent
            if agent is not None and hasattr(agent, "reset"):
                agent.reset(seed=int(rng.integers(2**63)))
        self._play_agents()
        if self.stopped:
            raise GameError(f"the game cannot start: {self.stopped}", 409)

    # -- playing ---------------------------------------------------------------------
    @property
    def mover(self) -> int | None:
        """The seat of the person to move, or ``None`` (the game is over or stopped)."""
        g = self.game
        if g.over or self.stopped or not self.seats[g.player].person:
            return None
        return int(g.player)

    def action_of(self, move: dict) -> int:
        """The action of a move request: ``action``, ``hold`` (indices of the sorted dice) or ``write`` (a line)."""
        unknown = set(move) - {"action", "hold", "write"}
        if unknown:
            raise GameError(f"a move is one of {HOW_MOVE}, not {bounded(', '.join(sorted(unknown)), ECHO)}")
        given = [k for k in ("action", "hold", "write") if move.get(k) is not None]
        if len(given) != 1:
            raise GameError(f"a move is one of {HOW_MOVE}")
        if given[0] == "action":
            a = move["action"]
            if not is_whole(a):
                raise GameError(f"action must be an integer, got {shown(a)}")
            return int(a)
        if given[0] == "hold":
            held = move["hold"]
            if not isinstance(held, list) or len(held) > 5 or any(not is_whole(i) or not 0 <= i < 5 for i in held) or len(set(held)) != len(held):
                raise GameError(f"hold must be a list of distinct dice indices from 0 to 4, got {shown(held)}")
            return sum(1 << i for i in held)
        line = move["write"]
        lines = self.rules.lines
        key = line.strip().lower().replace(" ", "_") if isinstance(line, str) else None
        if key not in lines:
            raise GameError(f"write must name a line of the sheet ({', '.join(lines)}), got {shown(line)}")
        return NUM_MASKS + lines.index(key)

    def play(self, move: dict) -> None:
        """The move of the person to move; then the agents' turns up to the next person's move."""
        if self.stopped:
            raise GameError(f"the game cannot go on: {self.stopped}; start a new one", 409)
        if self.game.over:
            raise GameError("the game is over: start a new one", 409)
        a = self.action_of(move)
        why = self.game.why_illegal(a)
        if why is not None:  # nothing changed
            raise GameError(bounded(f"illegal move: {why}"))
        self._step(a)
        self._play_agents()
        if self.stopped:
            raise GameError(f"the game cannot go on: {self.stopped}; start a new one", 409)

    def _step(self, action: int) -> None:
        """Play ``action`` for the seat to move (legal: checked before), logged and kept for the replay."""
        from generala_env.rendering.picture import describe_move, held_dice

        from .moves import describe, faces_text

        g = self.game
        seat = int(g.player)
        info = make_info(g, seat)
        roll_before = int(g.roll)
        self.moves.append(Played(seat, info, g.dice.tolist(), held_dice(g), describe(g, action), action))
        out = g.step(action, self._cup)
        text = describe_move(self.rules, seat, out.action, out.points, roll_before).split(" ", 1)[1]
        if action < NUM_MASKS:
            text += f" → {faces_text(ROLLS[g.roll])}"
        self.log.append(f"{self.seats[seat].label}: {text}")

    def _play_agents(self) -> None:
        """Agents move until a person has the move or the game is over; one that fails stops
        the game. A game that ends lets its agents go (their scratch arrays with them)."""
        g = self.game
        while not g.over and not self.stopped and not self.seats[g.player].person:
            seat = self.seats[g.player]
            try:
                act = getattr(seat.agent, "act", seat.agent)  # an agent, or a plain function of (observation, info)
                a = act(self.encoder.encode(g, g.player), make_info(g, g.player))
                why = g.why_illegal(a)
                if why is None:
                    self._step(int(a))
                    continue
                problem: BaseException = IllegalActionError(why)
            except Exception as e:  # an agent's own fault must not bring down the server
                problem = e
            self.stopped = bounded(f"the opponent {seat.agent_name} failed: {type(problem).__name__}: {problem}", 300)
        if g.over or self.stopped:
            for chair in self.seats:
                chair.agent = None  # its name stays on the seat

    # -- what the page shows -----------------------------------------------------------
    def names(self) -> list[str]:
        return [s.label for s in self.seats]

    def state(self) -> dict[str, Any]:
        from generala_env.rendering.picture import held_dice

        from .moves import points_if_written

        g = self.game
        mover = self.mover
        legal = g.legal_mask() if mover is not None else np.zeros(g.num_actions, bool)
        preview = {}
        if mover is not None:
            for line_no, line in enumerate(self.rules.lines):
                if legal[NUM_MASKS + line_no]:
                    preview[line] = points_if_written(g, line_no)[0]
        people = [s for s in range(self.n) if self.seats[s].person]
        return {
            "rules": self.rules.name,
            "lines": list(self.rules.lines),
            "players": self.names(),
            "seats": [{"name": s.label, "person": s.person, "agent": s.agent_name} for s in self.seats],
            "seat": mover if mover is not None else (people[0] if people else 0),
            "player": int(g.player),
            "to_move": None if mover is None else self.seats[mover].label,
            "seed": self.seed,
            "dice": g.dice.tolist(),
            "held": held_dice(g),
            "rolls_left": int(g.rolls_left),
            "your_move": mover is not None,
            "can_reroll": bool(mover is not None and legal[:NUM_MASKS].any()),
            "sheets": [[None if v == OPEN else int(v) for v in row] for row in g.sheets.tolist()],
            "totals": g.totals().tolist(),
            "open_points": preview,
            "over": bool(g.over),
            "winners": list(g.winners()),
            "served_generala_win": g.served_generala_winner is not None,
            "stopped": self.stopped,
            "log": list(self.log),
        }

    def hint(self, one_player_solver) -> dict[str, Any]:
        """For the person to move: the distinct legal moves with their expected final total
        (the exact one-player solver), best first, and with one opponent their chance to win
        where the two-player table is cached (never solved here); with more, why none is shown."""
        from generala_training.diagnose import judged_values

        from .hints import two_player_table
        from .moves import describe

        g = self.game
        if self.mover is None:
            raise GameError("no hint: it is not a person's move", 409)
        info = make_info(g, g.player)
        vals = judged_values(one_player_solver, info)
        total = int(g.totals()[g.player])
        distinct: dict[tuple, int] = {}  # masks that keep the same dice are one move
        for a in map(int, np.flatnonzero(np.isfinite(vals))):
            key = ("keep", tuple(sorted(int(d) for i, d in enumerate(g.dice) if a >> i & 1))) if a < NUM_MASKS else ("write", a)
            if key not in distinct or vals[a] > vals[distinct[key]]:
                distinct[key] = a
        ranked = sorted(distinct.values(), key=lambda a: (-vals[a], a))
        options = [{"move": describe(g, a), "action": a, "expected_total": round(total + float(vals[a]), 2)} for a in ranked]
        best = ranked[0]
        out: dict[str, Any] = {"player": self.seats[g.player].label, "move": options[0]["move"], "action": best, "expected_total": options[0]["expected_total"]}
        if self.n == 2:
            if self.two_player is None or isinstance(self.two_player, str):
                self.two_player = self._two_player_table(two_player_table)
            two = self.two_player
            if isinstance(two, str):
                out["win_note"] = f"chance to win not available: {two}"
            else:
                w = np.where(np.asarray(info["action_mask"]).astype(bool), two.action_values(info), -np.inf)
                for o, a in zip(options, ranked, strict=True):
                    o["win_chance"] = round(float(w[a]), 4)
                b = int(np.argmax(w))
                out.update(win_move=describe(g, b), win_action=b, win_chance=round(float(w[b]), 4))
        elif self.n > 2:
            out["win_note"] = f"chance to win not shown: no exact solver covers {self.n} players; the options are ranked by expected final total"
        out["options"] = options
        return out

    def _two_player_table(self, two_player_table):
        from generala_agents.solver2p import SolveTooBigError

        try:
            return two_player_table(self.rules)  # never solves: the cached table, or why there is none
        except SolveTooBigError as e:
            return str(e)

    def replay(self, one_player_solver) -> str:
        """The finished game as :mod:`generala_play.replay`'s page: every move judged by the
        one-player solver (its expected final total and regret) and, with two seats and the
        two-player table cached, the mover's chance to win before and after it."""
        from generala_training.diagnose import judged_values

        from .hints import two_player_table
        from .replay import Move, Replay, page

        g = self.game
        if not g.over:
            raise GameError("the replay is ready once the game is over", 409)
        two = self._two_player_table(two_player_table) if self.n == 2 else None
        rep = Replay(seed=self.seed, seats=tuple(self.names()), rules=self.rules)
        for p in self.moves:
            totals = np.asarray(p.info["totals"]).tolist()
            m = Move(p.seat, int(p.info["turn"]), p.dice, p.held, int(p.info["rolls_left"]), p.action, p.text, totals)
            vals = judged_values(one_player_solver, p.info)
            best = int(np.argmax(vals))
            m.value, m.best_value = totals[p.seat] + float(vals[p.action]), totals[p.seat] + float(vals[best])
            m.regret = float(vals[best] - vals[p.action])
            m.best_text = m.text if m.regret <= 1e-9 else self._described(p, best)
            if two is not None and not isinstance(two, str):
                w = np.where(np.asarray(p.info["action_mask"]).astype(bool), two.action_values(p.info), -np.inf)
                m.win_before, m.win_after = float(w.max()), float(w[p.action])
            if p.action >= NUM_MASKS:
                m.points = max(int(g.sheets[p.seat, p.action - NUM_MASKS]), 0)
            rep.moves.append(m)
        rep.sheets, rep.totals, rep.winners = g.sheets.copy(), g.totals().tolist(), tuple(g.winners())
        rep.served_generala_win = g.served_generala_winner is not None
        notes = [f"A game played in the browser: {', '.join(self.names())}."]
        notes.append(
            "Each move is judged by the exact one-player solver: the expected final total after it, "
            "the optimum's choice (the best for the mover's own total, as if alone) and its total, and the regret."
        )
        if self.n == 2:
            notes.append(
                "Each move shows the mover's chance to win (P(win) + 1/2 P(draw)) before and after it, from optimal-2p."
                if not isinstance(two, str)
                else f"The chance to win is not shown: {two}."
            )
        elif self.n > 2:
            notes.append(f"No chance to win is shown: no exact solver covers {self.n} players.")
        return page([rep], notes, title="Generala: the game's replay")

    def _described(self, p: Played, action: int) -> str:
        from .moves import describe
        from .replay import game_from_info

        return describe(game_from_info(self.rules, p.info), action)


class Session(WebTable):
    """A game of one person ("you", at ``seat``) against ``agent`` (shown as ``opponent``), or
    alone (``agent`` ``None``): the browser game's first form."""

    def __init__(self, opponent: str | None, agent, rules, seed: int, seat: int = 0):
        if agent is None:
            seats = [Seat("you")]
        else:
            them = Seat(opponent or "opponent", opponent or "opponent", agent)
            seats = [Seat("you"), them] if seat == 0 else [them, Seat("you")]
        super().__init__(rules, seats, seed)
