"""What a game derives from its state, read: the dice, the round, the totals, the lines
filled, the legal mask, a served generala pending, the winners, and why an action is not legal.

:class:`GameFacts` is the reading half of :class:`~generala_env.core.game.Game`: the compiled
call that made the state also left its legal mask (``_mask``) and its facts (``_facts``,
:func:`~generala_env.core.engine.facts_size`'s layout), and these read them; read-only views are
made once per state."""

from __future__ import annotations

import numpy as np

from generala_env.core.checks import is_whole, not_an_action
from generala_env.core.dice import ALL_HELD, NUM_MASKS, ROLLS
from generala_env.core.engine import FIRST_ROLL, OVER, PENDING, PLAYER, TOTALS, WINNER, is_winner
from generala_env.core.rules import RuleSet
from generala_env.core.scoring import generala_scored


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


class GameFacts:
    """The reading half of :class:`~generala_env.core.game.Game` (see the module docstring)."""

    # set by Game
    num_players: int
    num_actions: int
    rules: RuleSet
    roll: int
    rolls_left: int
    over: bool
    throw_keep: int
    sheets: np.ndarray
    _numbers: np.ndarray
    _mask: np.ndarray
    _facts: np.ndarray
    _totals_now: np.ndarray
    _mask_i8: np.ndarray
    _made: tuple | None

    @property
    def dice(self) -> np.ndarray:
        """The five faces, sorted: the order the hold bits refer to."""
        return ROLLS[self.roll]

    @property
    def first_roll(self) -> bool:
        return self.rolls_left == FIRST_ROLL

    @property
    def turn(self) -> int:
        """The round being played, from 0: lines the current player has filled."""
        return int(self._facts[TOTALS + self.num_players + self._numbers[PLAYER, 0]])

    def totals(self) -> np.ndarray:
        """Each player's total (a new array)."""
        return self.totals_view.copy()

    def _views_now(self) -> tuple:
        """Read-only arrays of what the game derives in this state, made once per state:
        the legal mask as booleans and as int8, the totals, the lines filled (an array and a
        tuple of ints), and whether a served generala is pending."""
        made = self._made
        if made is None:
            P = self.num_players
            legal = _frozen(self._mask[0].copy())
            totals = _frozen(self._totals_now.copy())
            filled = tuple(self._facts[TOTALS + P : TOTALS + 2 * P].tolist())
            made = self._made = (legal, legal.view(np.int8), totals, _frozen(np.array(filled)), filled, bool(self._facts[PENDING]))
        return made

    @property
    def totals_view(self) -> np.ndarray:
        """Each player's total, read-only (int64; made once per state)."""
        return self._views_now()[2]

    @property
    def filled_lines(self) -> np.ndarray:
        """Lines each player has filled, read-only (int64; made once per state)."""
        return self._views_now()[3]

    @property
    def legal_view(self) -> np.ndarray:
        """:meth:`legal_mask` without the copy: read-only, made once per state."""
        return self._views_now()[0]

    @property
    def legal_int8_view(self) -> np.ndarray:
        """:attr:`legal_view` as int8."""
        return self._views_now()[1]

    def views(self) -> tuple[np.ndarray, np.ndarray, tuple[int, ...], bool]:
        """:attr:`legal_int8_view`, :attr:`totals_view`, the lines each player has filled
        (a tuple of ints) and :meth:`served_generala_pending`, in one call."""
        made = self._views_now()
        return made[1], made[2], made[4], made[5]

    def numbers(self) -> tuple[list[int], list[int], np.ndarray, np.ndarray]:
        """The state's numbers and the game's facts as ints (:data:`~generala_env.core.engine.NUMBERS`
        and :func:`~generala_env.core.engine.facts_size`'s layout: the last move, the served generala
        pending, every seat's total and lines filled), the legal mask as int8 and the totals as
        int64, for an observer that reads them all at every step (the env's ``info``). The two
        arrays are read-only views of the game's own, which its next call overwrites: copy them
        to keep them."""
        return self._numbers[:, 0].tolist(), self._facts.tolist(), self._mask_i8, self._totals_now

    def generala_scored(self, player: int) -> bool:
        """Whether ``player``'s generala line holds points (:func:`~generala_env.core.scoring.generala_scored`)."""
        return bool(generala_scored(self.rules, self.sheets[player]))

    def served_generala_pending(self) -> bool:
        """Five alike on the first roll with the generala line open, in a game where it wins
        (:func:`~generala_env.core.engine.served_pending`, as the last compiled call found it)."""
        return self._facts.item(PENDING) == 1

    def winners(self) -> tuple[int, ...]:
        """Seats that won (several on a shared win); empty while the game is on. A seat's
        result as points: :func:`outcome_points`."""
        if not self._numbers[OVER, 0]:
            return ()
        t = self._facts[TOTALS : TOTALS + self.num_players].tolist()
        best, w = max(t), int(self._numbers[WINNER, 0])
        return tuple(i for i, v in enumerate(t) if is_winner(w, i, v, best))

    def legal_mask(self) -> np.ndarray:
        """Boolean array over all actions: True where :meth:`apply` accepts the action."""
        return self._mask[0].copy()

    def legal_actions(self) -> list[int]:
        return np.flatnonzero(self._mask[0]).tolist()

    def why_illegal(self, action) -> str | None:
        """``None`` if the action is legal, else a sentence saying why not."""
        if not is_whole(action):
            return not_an_action(action, self.num_actions)
        a = int(action)
        if not 0 <= a < self.num_actions:
            return f"action {a} is out of range 0..{self.num_actions - 1}"
        if self.throw_keep >= 0:
            return "a throw is pending after decide(): land its faces first"
        if self.over:
            return "the game is over"
        if self._mask[0, a]:
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
