"""The dice model: Generala with its chance made explicit, for planning and search.

A game alternates decision states (a player holds or writes) and chance states (dice
in the cup). :class:`Model` is the public face of the engine over an immutable
:class:`ModelState`:

* :meth:`Model.legal_actions` — the decisions of a decision state (the env's actions);
* :meth:`Model.decide` — a decision applied without throwing: the afterstate, a chance
  state (or the end of the game), with the :class:`~generala_env.core.game.Outcome`;
* :meth:`Model.chance_outcomes` — the distinct rolls a chance state can end on, each
  as ``(sorted faces, probability)``, the probabilities exact multinomial counts over
  ``6 ** k`` ordered throws of the ``k`` dice in the cup (:meth:`Model.chance_counts`
  gives the integer counts);
* :meth:`Model.land` — a chosen roll applied to a chance state;
* :meth:`Model.state_of` / :meth:`Model.load` — the state of a :class:`~generala_env.core.game.Game`
  (an env's ``env.unwrapped.game``) and back. A state is a tuple: a copy for search costs nothing.

Every transition runs :class:`~generala_env.core.game.Game`'s own code (``Game.decide`` and
``Game.land``, which ``Game.step`` is made of), so the model and the env play the same
rules; there is no second implementation of them here.
"""

from __future__ import annotations

from math import factorial
from typing import NamedTuple

import numpy as np

from generala_env.core.checks import is_whole
from generala_env.core.dice import DICE, EMPTY_KEEP, FACES, KEEP_COUNTS, KEEP_SIZE, NUM_ROLLS, ROLL_CONTAINS_KEEP, ROLL_COUNTS, ROLLS, roll_index
from generala_env.core.game import OPEN, Game, IllegalActionError, Outcome
from generala_env.core.scoring import sheet_totals

_ROLL_TUPLES = [tuple(int(f) for f in r) for r in ROLLS]


def _throw_counts(keep: int) -> list[tuple[int, int]]:
    """``(roll index, ordered throws)`` for each roll a throw from ``keep`` can end on."""
    n = DICE - int(KEEP_SIZE[keep])
    out = []
    for r in np.flatnonzero(ROLL_CONTAINS_KEEP[:, keep]).tolist():
        missing = (ROLL_COUNTS[r] - KEEP_COUNTS[keep]).tolist()
        ways = factorial(n)
        for c in missing:
            ways //= factorial(c)
        out.append((r, ways))
    return out


_THROW_COUNTS: dict[int, list[tuple[int, int]]] = {}


class Chance(NamedTuple):
    """One outcome of a chance state: the roll it ends on (sorted faces) and its probability."""

    roll: tuple[int, ...]
    probability: float


class ModelState(NamedTuple):
    """A game state, immutable (hashable: usable as a search table's key).

    ``sheets``: per seat, per line, points or :data:`~generala_env.core.game.OPEN`;
    ``roll``: index into ``ROLLS`` of the dice (``-1`` in a chance state);
    ``rolls_left``, ``player``, ``locked`` (keep index of the dice that may not go back
    under ``locked_holds``) as in :class:`~generala_env.core.game.Game`; ``throw_keep``: in a
    chance state the keep index of the dice staying on the table, ``-1`` in a decision
    state; ``starts_turn``: the pending throw is a turn's first roll (after a write);
    ``served_generala_winner``: the seat whose served generala ended the game, or ``-1``;
    ``over``: the game has ended.
    """

    sheets: tuple[tuple[int, ...], ...]
    roll: int
    rolls_left: int
    player: int
    locked: int
    throw_keep: int
    starts_turn: bool
    served_generala_winner: int
    over: bool

    @property
    def is_chance(self) -> bool:
        return self.throw_keep >= 0

    @property
    def is_terminal(self) -> bool:
        return self.over

    @property
    def dice(self) -> tuple[int, ...]:
        """The five sorted faces of a decision state (the hold bits refer to this order)."""
        if self.roll < 0:
            raise IllegalActionError("a chance state has no dice yet: its throw is pending")
        return _ROLL_TUPLES[self.roll]

    def totals(self) -> tuple[int, ...]:
        """Each seat's total."""
        return tuple(int(t) for t in sheet_totals(self.sheets))


class Model:
    """The dice model of a game of ``num_players`` under ``rules`` (a preset name, a YAML
    path, a mapping or a :class:`~generala_env.core.rules.RuleSet`).

    The model owns one :class:`~generala_env.core.game.Game` that it loads each state into;
    the states themselves are plain tuples, so a search copies them for free. Not
    thread-safe (one model per thread).
    """

    def __init__(self, rules="classic", num_players: int = 1):
        self.game = Game(rules, num_players)
        self.rules = self.game.rules
        self.num_players = self.game.num_players
        self.num_lines = self.game.num_lines
        self.num_actions = self.game.num_actions

    # -- states -----------------------------------------------------------------
    def initial_state(self) -> ModelState:
        """Empty sheets, player 0's five dice in the cup (a chance state)."""
        sheets = ((OPEN,) * self.num_lines,) * self.num_players
        return ModelState(sheets, -1, 0, 0, EMPTY_KEEP, EMPTY_KEEP, True, -1, False)

    def state_of(self, game: Game) -> ModelState:
        """The state of a game (a decision state, a chance state after ``game.decide``, or the end)."""
        g = game
        pending = g.throw_keep >= 0
        return ModelState(
            tuple(map(tuple, g.sheets.tolist())),
            -1 if pending else int(g.roll),
            int(g.rolls_left),
            int(g.player),
            int(g.locked),
            int(g.throw_keep),
            bool(g._throw_starts_turn) if pending else False,
            -1 if g.served_generala_winner is None else int(g.served_generala_winner),
            bool(g.over),
        )

    def load(self, game: Game, state: ModelState) -> Game:
        """Put ``game`` (one of this model's rules and players) in ``state``; returns it."""
        if game.rules != self.rules or game.num_players != self.num_players:
            raise ValueError(
                f"this model plays {self.rules.name!r} with {self.num_players} player(s); the game has {game.rules.name!r} with {game.num_players}"
            )
        game.sheets = state.sheets
        game.roll = state.roll if state.roll >= 0 else 0
        game.rolls_left = state.rolls_left
        game.player = state.player
        game.locked = state.locked
        game.throw_keep = state.throw_keep
        game._throw_starts_turn = state.starts_turn
        game.served_generala_winner = None if state.served_generala_winner < 0 else state.served_generala_winner
        game.over = state.over  # the writes and the sheets' facts follow the sheets (a look of the game's)
        return game

    def _at(self, state: ModelState) -> Game:
        if not isinstance(state, ModelState):
            raise TypeError(f"a model state is a ModelState, got {type(state).__name__}")
        return self.load(self.game, state)

    # -- decisions --------------------------------------------------------------
    def legal_actions(self, state: ModelState) -> list[int]:
        """The legal actions of a decision state (empty in a chance state or at the end)."""
        if state.is_chance or state.over:
            return []
        return self._at(state).legal_actions()

    def legal_mask(self, state: ModelState) -> np.ndarray:
        """Boolean mask over all actions (all False in a chance state or at the end)."""
        if state.is_chance or state.over:
            return np.zeros(self.num_actions, dtype=bool)
        return self._at(state).legal_mask()

    def decide(self, state: ModelState, action: int) -> tuple[ModelState, Outcome]:
        """The afterstate of a legal decision (no dice thrown) and what the decision did.

        A hold: the kept dice stay, the rest wait in the cup. A write: the line is filled
        and the next player's five dice wait in the cup, unless the game ended (then the
        afterstate is terminal). Raises :class:`~generala_env.core.game.IllegalActionError`
        for an action the state does not allow.
        """
        if state.is_chance:
            raise IllegalActionError("a chance state takes a roll (land), not a decision")
        g = self._at(state)
        out = g.decide(action)
        return self.state_of(g), out

    def afterstate(self, state: ModelState, action: int) -> ModelState:
        """:meth:`decide` without the outcome."""
        return self.decide(state, action)[0]

    # -- chance -----------------------------------------------------------------
    def chance_counts(self, state: ModelState) -> list[tuple[tuple[int, ...], int]]:
        """``(sorted faces, ordered throws)`` for each distinct roll of a chance state:
        the counts sum to ``6 ** k`` for the ``k`` dice in the cup."""
        return [(_ROLL_TUPLES[r], c) for r, c in self._counts(state)[1]]

    @staticmethod
    def _counts(state: ModelState):
        """The keep of a chance state and its rolls' ordered-throw counts (made once per keep)."""
        if not state.is_chance:
            raise IllegalActionError("only a chance state has outcomes: decide first")
        keep = state.throw_keep
        counts = _THROW_COUNTS.get(keep)
        if counts is None:
            counts = _THROW_COUNTS[keep] = _throw_counts(keep)
        return keep, counts

    def chance_outcomes(self, state: ModelState) -> list[Chance]:
        """``Chance(roll, probability)`` for each distinct roll of a chance state, in roll
        order; each probability is an exact count over ``6 ** k`` (one division)."""
        total = FACES ** (DICE - int(KEEP_SIZE[state.throw_keep])) if state.is_chance else 1
        return [Chance(roll, count / total) for roll, count in self.chance_counts(state)]

    def chance_indices(self, state: ModelState) -> list[tuple[int, float]]:
        """:meth:`chance_outcomes` with each roll as its index into ``ROLLS`` (OpenSpiel's chance actions)."""
        keep, counts = self._counts(state)
        total = FACES ** (DICE - int(KEEP_SIZE[keep]))
        return [(r, c / total) for r, c in counts]

    def land(self, state: ModelState, roll) -> ModelState:
        """A chance state with its throw ending on ``roll``: five faces in any order (or an
        index into ``ROLLS``) that hold the dice kept on the table."""
        if not state.is_chance:
            raise IllegalActionError("only a chance state takes a roll: decide first")
        if is_whole(roll):
            if not 0 <= roll < NUM_ROLLS:
                raise ValueError(f"a roll index runs from 0 to {NUM_ROLLS - 1}, got {roll}")
            r = int(roll)
        else:
            r = roll_index(list(roll))
        keep = state.throw_keep
        if not ROLL_CONTAINS_KEEP[r, keep]:
            raise ValueError(f"roll {list(_ROLL_TUPLES[r])} does not hold the dice kept on the table {self.kept_dice(state)}")
        thrown = (ROLL_COUNTS[r] - KEEP_COUNTS[keep]).tolist()
        faces = [f + 1 for f, c in enumerate(thrown) for _ in range(c)]
        g = self._at(state)
        g.land(faces)
        return self.state_of(g)

    def kept_dice(self, state: ModelState) -> list[int]:
        """The faces on the table while the rest are in the cup (a chance state)."""
        return [f + 1 for f, c in enumerate(KEEP_COUNTS[state.throw_keep].tolist()) for _ in range(c)] if state.is_chance else []

    def sample(self, state: ModelState, rng) -> ModelState:
        """A chance state landed on a roll drawn from ``rng`` (a numpy ``Generator``)."""
        n = DICE - int(KEEP_SIZE[state.throw_keep]) if state.is_chance else 0
        g = self._at(state)
        g.land(rng.integers(1, FACES + 1, size=n).tolist())
        return self.state_of(g)

    # -- the end ----------------------------------------------------------------
    def winners(self, state: ModelState) -> tuple[int, ...]:
        """Seats that won a finished game (empty while it is on)."""
        if not state.over:
            return ()
        return self._at(state).winners()


__all__ = ["Chance", "Model", "ModelState"]
