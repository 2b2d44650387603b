"""The game of Generala: state, legal actions and transitions, with no framework imports.

Actions are integers, the same as the environment's:

* ``0 … 31``: a hold mask. Bit ``i`` keeps ``dice[i]`` (the dice are always sorted);
  the others are rerolled. Legal only while rolls are left; ``31`` (keep all five) is
  never legal. Under ``locked_holds`` a mask that would put back a die kept earlier in
  the turn is illegal.
* ``32 + l``: write the dice on line ``l`` (rule-set order). Legal iff the line is
  open; dice that do not qualify write 0 there (crossing it out).

Chance is explicit: every die comes from the ``rng`` passed to :meth:`Game.step` and
:meth:`Game.reset` (anything with ``integers(low, high, size=...)``, e.g. a seeded
``numpy.random.Generator``), or from faces given directly to :meth:`Game.apply`.

Served generala (project reading of the rules README): with ``served_generala: win``,
two or more players and the generala line open, five alike on a turn's first roll wins
on the spot. The player's only legal action is then to write it on the generala line,
which ends the game with that player the winner. With one player, or with the generala
line already filled, it is an ordinary roll.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .dice import (
    ALL_HELD,
    DICE,
    HOLD_KEEP,
    KEEP_CONTAINS,
    KEEP_SIZE,
    NUM_MASKS,
    ROLL_COUNTS,
    ROLLS,
    keep_index,
    reroll,
    roll_dice,
    roll_index,
)
from .rules import RuleSet, load_rules
from .scoring import points_table

SERVED_LINES = ("straight", "full_house", "four_of_a_kind")
OPEN = -1  # marker of an open line on a sheet
ROLLS_PER_TURN = 3
MAX_PLAYERS = 6


class IllegalActionError(ValueError):
    """An action the game does not accept in the current state."""


@dataclass
class Outcome:
    """What one action did."""

    player: int
    action: int
    points: int = 0  # points written (0 for a reroll or a crossed-out line)
    wrote: bool = False
    served: bool = False  # written right after the turn's first roll
    bonus: int = 0  # served bonus included in points
    served_generala_win: bool = False


class Game:
    """A game of Generala for 1–6 players under one rule set.

    State (read it, don't write it): ``sheets`` ``(players, lines)`` int array with
    :data:`OPEN` for open lines, ``roll`` (index into ``ROLLS``), ``rolls_left``
    (2 after a turn's first roll, 0 after its third), ``player`` (whose move), ``locked``
    (keep index of the dice that may not go back under ``locked_holds``), ``over``,
    ``served_generala_winner`` (seat or ``None``).
    """

    def __init__(self, rules="classic", num_players: int = 1):
        self.rules: RuleSet = load_rules(rules)
        if isinstance(num_players, bool) or not isinstance(num_players, (int, np.integer)) or not 1 <= num_players <= MAX_PLAYERS:
            raise ValueError(f"num_players must be an integer from 1 to {MAX_PLAYERS}, got {num_players!r}")
        self.num_players = int(num_players)
        self.num_lines = self.rules.num_lines
        self.num_actions = NUM_MASKS + self.num_lines
        self.points = points_table(self.rules)
        self._generala = self.rules.lines.index("generala") if "generala" in self.rules.lines else -1
        self._double = self.rules.lines.index("double_generala") if "double_generala" in self.rules.lines else -1
        # without a generala line there is nothing to claim (and index -1 would be another line)
        self._served_win = self.rules.served_generala == "win" and self.num_players >= 2 and self._generala >= 0
        self.sheets = np.full((self.num_players, self.num_lines), OPEN, dtype=np.int32)
        self.roll = 0
        self.rolls_left = 0
        self.player = 0
        self.locked = keep_index([])
        self.over = True
        self.served_generala_winner: int | None = None
        self.writes = 0

    # -- setting up -------------------------------------------------------------
    def reset(self, rng) -> None:
        """A new game: empty sheets, player 0 rolls all five dice."""
        self.sheets.fill(OPEN)
        self.player = 0
        self.over = False
        self.served_generala_winner = None
        self.writes = 0
        self._start_turn(roll_dice(rng, DICE))

    def _start_turn(self, faces) -> None:
        self.roll = roll_index(faces)
        self.rolls_left = ROLLS_PER_TURN - 1
        self.locked = keep_index([])

    # -- reading ----------------------------------------------------------------
    @property
    def dice(self) -> np.ndarray:
        """The five faces, sorted: the order the hold bits refer to."""
        return ROLLS[self.roll]

    @property
    def first_roll(self) -> bool:
        return self.rolls_left == ROLLS_PER_TURN - 1

    @property
    def turn(self) -> int:
        """The round being played, from 0: lines the current player has filled."""
        return int((self.sheets[self.player] != OPEN).sum())

    def totals(self) -> np.ndarray:
        return np.where(self.sheets == OPEN, 0, self.sheets).sum(axis=1)

    def generala_scored(self, player: int) -> bool:
        return self._generala >= 0 and self.sheets[player, self._generala] > 0

    def served_generala_pending(self) -> bool:
        """Five alike on the first roll with the generala line open, in a game where it wins."""
        return (
            self._served_win
            and self.first_roll
            and int(ROLL_COUNTS[self.roll].max()) == 5
            and self.sheets[self.player, self._generala] == OPEN
        )

    def winners(self) -> tuple[int, ...]:
        """Seats that won (several on a shared win); empty while the game is on."""
        if not self.over:
            return ()
        if self.served_generala_winner is not None:
            return (self.served_generala_winner,)
        t = self.totals()
        return tuple(int(i) for i in np.flatnonzero(t == t.max()))

    def legal_mask(self) -> np.ndarray:
        """Boolean array over all actions: True where :meth:`apply` accepts the action."""
        mask = np.zeros(self.num_actions, dtype=bool)
        if self.over:
            return mask
        if self.served_generala_pending():
            mask[NUM_MASKS + self._generala] = True
            return mask
        mask[NUM_MASKS:] = self.sheets[self.player] == OPEN
        if self.rolls_left > 0:
            if self.rules.locked_holds and KEEP_SIZE[self.locked] > 0:
                mask[:ALL_HELD] = KEEP_CONTAINS[HOLD_KEEP[self.roll, :ALL_HELD], self.locked]
            else:
                mask[:ALL_HELD] = True
        return mask

    def legal_actions(self) -> list[int]:
        return [int(a) for a in np.flatnonzero(self.legal_mask())]

    def why_illegal(self, action) -> str | None:
        """``None`` if the action is legal, else a sentence saying why not."""
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
            return f"an action is an integer from 0 to {self.num_actions - 1}, got {action!r}"
        a = int(action)
        if not 0 <= a < self.num_actions:
            return f"action {a} is out of range 0..{self.num_actions - 1}"
        if self.over:
            return "the game is over"
        if self.legal_mask()[a]:
            return None
        if self.served_generala_pending():
            return "a served generala must be written on the generala line: it wins the game"
        if a < NUM_MASKS:
            if a == ALL_HELD:
                return "holding all five dice is not a reroll; write the dice on a line instead"
            if self.rolls_left == 0:
                return "no rolls left this turn: write the dice on an open line"
            return "locked_holds: a die kept earlier this turn cannot go back in the cup"
        return f"line {self.rules.lines[a - NUM_MASKS]!r} is already filled"

    # -- acting -----------------------------------------------------------------
    def step(self, action: int, rng) -> Outcome:
        """Apply a legal action, drawing any dice it needs from ``rng``."""
        why = self.why_illegal(action)
        if why is not None:
            raise IllegalActionError(why)
        a = int(action)
        if a < NUM_MASKS:
            faces = roll_dice(rng, DICE - int(KEEP_SIZE[HOLD_KEEP[self.roll, a]]))
        else:
            faces = roll_dice(rng, DICE)
        return self._apply(a, faces)

    def apply(self, action: int, faces) -> Outcome:
        """Apply a legal action with the dice it needs given explicitly.

        For a hold mask, ``faces`` are the rerolled dice (as many as were not held);
        for a write, the next player's first roll (ignored when the game ends).
        """
        why = self.why_illegal(action)
        if why is not None:
            raise IllegalActionError(why)
        a = int(action)
        faces = [int(f) for f in faces]
        # check the dice before anything changes: a bad face would count as another face,
        # and a short next roll would fail after the line is already written
        if any(not 1 <= f <= 6 for f in faces):
            raise ValueError(f"faces run from 1 to 6, got {faces}")
        ends = self.served_generala_pending() or self.writes + 1 == self.num_players * self.num_lines
        if a >= NUM_MASKS and not ends and len(faces) != DICE:
            raise ValueError(f"a write needs the next player's five-dice first roll, got {len(faces)} faces")
        return self._apply(a, faces)

    def _apply(self, a: int, faces) -> Outcome:
        me = self.player
        if a < NUM_MASKS:
            keep = int(HOLD_KEEP[self.roll, a])
            if len(faces) != DICE - int(KEEP_SIZE[keep]):
                raise ValueError(f"hold {a} rerolls {DICE - int(KEEP_SIZE[keep])} dice, got {len(faces)} faces")
            self.roll = reroll(keep, faces)
            self.rolls_left -= 1
            self.locked = keep
            return Outcome(player=me, action=a)

        line = a - NUM_MASKS
        served = self.first_roll
        pts = int(self.points[line, self.roll, int(served)])
        if line == self._double and not self.generala_scored(me):
            pts = 0
        served_win = self.served_generala_pending()
        self.sheets[me, line] = pts
        self.writes += 1
        bonus = self.rules.served_bonus if served and pts > 0 and self.rules.lines[line] in SERVED_LINES else 0
        out = Outcome(player=me, action=a, points=pts, wrote=True, served=served, bonus=bonus, served_generala_win=served_win)
        if served_win:
            self.served_generala_winner = me
            self.over = True
        elif self.writes == self.num_players * self.num_lines:
            self.over = True
        else:
            self.player = (me + 1) % self.num_players
            self._start_turn(faces)
        return out

    # -- copying ----------------------------------------------------------------
    def clone(self) -> "Game":
        g = Game.__new__(Game)
        g.__dict__.update(self.__dict__)
        g.sheets = self.sheets.copy()
        return g
