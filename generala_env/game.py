"""The game of Generala: state, legal actions and transitions, with no framework imports.

Actions are integers, the same as the environment's:

* ``0 … 31``: a hold mask. Bit ``i`` keeps ``dice[i]`` (the dice are always sorted);
  the others are rerolled. Legal only while rolls are left; ``31`` (keep all five) is
  never legal. Under ``locked_holds`` a mask that would put back a die kept earlier in
  the turn is illegal.
* ``32 + l``: write the dice on line ``l`` (rule-set order). Legal iff the line is
  open; dice that do not qualify write 0 there (crossing it out).

Chance is explicit: every die comes from the ``rng`` passed to :meth:`Game.step` and
:meth:`Game.reset` (a :class:`~generala_env.dice.DiceCup`, or anything with
``integers(low, high, size=..., dtype=...)``, e.g. a seeded ``numpy.random.Generator``), or from
faces given directly to :meth:`Game.apply`.

Served generala (project reading of the rules README): with ``served_generala: win``,
two or more players and the generala line open, five alike on a turn's first roll wins
on the spot. The player's only legal action is then to write it on the generala line,
which ends the game with that player the winner. With one player, or with the generala
line already filled, it is an ordinary roll.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

import numpy as np

from .dice import ALL_HELD, DICE, KEEP_SIZE, NUM_KEEPS, NUM_MASKS, NUM_ROLLS, ROLLS, DiceCup, keep_index, roll_index, throw
from .engine import (
    FIRST_ROLL,
    OPEN,
    ROLLS_PER_TURN,
    GameState,
    OneGame,
    dice_thrown,
    is_winner,
    new_state,
    one_game_size,
    sheets_full,
    tables,
)
from .engine import outcome_points as _outcome_points
from .rules import RuleSet, load_rules
from .scoring import blocked_line, generala_scored, points_table, served_bonus

MAX_PLAYERS = 6

_KEEP_SIZE = KEEP_SIZE.tolist()
G = OneGame  # where a game's numbers sit in its array
_STATE, _OVER, _WINNER, _PLAYER, _TOTALS = G.STATE, G.OVER, G.WINNER, G.PLAYER, G.TOTALS
_STEP, _DONE, _ILLEGAL, _NEED_FACES, _BAD_STATE, _BAD_FACES, _BAD_OBSERVE = G.STEP, G.DONE, G.ILLEGAL, G.NEED_FACES, G.BAD_STATE, G.BAD_FACES, G.BAD_OBSERVE


class _Lookups:
    """What the games of one rule set and player count share, made once: the rules' tables as
    arrays for the compiled step (:func:`generala_env.batched.play_game`) and as lists for the
    few rules a game asks in Python (:func:`~generala_env.engine.tables`), the compiled step
    itself, and facts of the rule set. A pickled game names it rather than carrying it."""

    __slots__ = ("key", "t", "arrays", "play", "play_observed", "bonus")

    def __init__(self, rules: RuleSet, num_players: int):
        from . import batched  # numba, when it is there (loaded on a first game: importing the package stays light)

        self.key = (rules, num_players)
        self.t = tables(rules, num_players, lists=True)
        self.arrays = batched.pack_tables(tables(rules, num_players))
        self.play, self.play_observed = batched.play_game, batched.play_game_observed
        self.bonus = [served_bonus(rules, line, True) for line in rules.lines]  # [line]: a served write's bonus

    def __reduce__(self):
        return _lookups, self.key


@lru_cache(maxsize=64)
def _lookups(rules: RuleSet, num_players: int) -> _Lookups:
    return _Lookups(rules, num_players)


_NO_FACES = np.zeros(0, dtype=np.int8)


def _field(i: int, name: str, doc: str, kind=int) -> property:
    """A property for number ``i`` of a game's numbers (:data:`~generala_env.engine.OneGame`): a
    whole number (``kind=bool``: true or false), set as given or refused with ``TypeError``."""

    def get(self):
        return kind(self._v.item(i))

    def put(self, value) -> None:
        if kind is bool:
            if not isinstance(value, (bool, np.bool_, int, np.integer)):
                raise TypeError(f"{name} must be true or false, got {value!r}")
            self._v[i] = 1 if value else 0
        else:
            self._v[i] = _whole_number(name, value)
        self._seen = None  # what the game derives is looked at anew

    return property(get, put, doc=doc)


@lru_cache(maxsize=64)
def _line_values(rules: RuleSet) -> tuple[frozenset, ...]:
    """The points each line can hold (0, crossed out, included)."""
    return tuple(frozenset(np.unique(t).tolist()) | {0} for t in points_table(rules))


def _off_sheet(rules: RuleSet, sheets) -> tuple[int, int, int] | None:
    """The first ``(seat, line, value)`` of ``sheets`` that is neither :data:`OPEN` nor points
    the line can hold, or ``None``."""
    allowed = _line_values(rules)
    for (p, l), v in np.ndenumerate(sheets):
        if v != OPEN and int(v) not in allowed[l]:
            return p, l, int(v)
    return None


def prefilled_sheets(rules: RuleSet, num_players: int, rng) -> np.ndarray:
    """Legal sheets of a game some turns in, for exploring starts: ``(num_players, L)``.

    Every player has the same number ``k`` of lines filled, drawn uniformly from 1 to
    ``L - 1`` (so player 0 is to move and the game is not over); which lines is drawn per
    player. A filled line holds the points of one fresh roll of five dice on it, 0 (crossed
    out) when the roll does not qualify or the line is blocked (:func:`~generala_env.scoring.blocked_line`).
    All draws come from ``rng`` (a numpy ``Generator``), in a fixed order.
    """
    L = rules.num_lines
    table = points_table(rules)  # (L, 252, 2)
    sheets = np.full((num_players, L), OPEN, dtype=np.int64)
    k = int(rng.integers(1, L))
    for p in range(num_players):
        lines = np.sort(rng.permutation(L)[:k])  # generala is written before double generala
        faces = rng.integers(1, 7, size=(k, 5))
        for line, face in zip(lines, faces, strict=True):
            r = roll_index(np.sort(face))
            pts = int(table[line, r, 0])
            if line == blocked_line(rules, generala_scored(rules, sheets[p])):
                pts = 0
            sheets[p, line] = pts
    return sheets


def _whole_number(name: str, v) -> int:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{name} must be a whole number, got {v!r}")
    return int(v)


def _whole_numbers(name: str, values) -> list[int]:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise TypeError(f"{name} must be a sequence of faces, got {values!r}")
    vs = values.ravel().tolist() if isinstance(values, np.ndarray) else list(values)
    if any(isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) for v in vs):
        raise TypeError(f"{name} must be whole numbers, got {vs}")
    return [int(v) for v in vs]


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def outcome_points(winners: tuple[int, ...], seat: int) -> float:
    """A seat's result of a finished game from its :meth:`Game.winners`: 1 for a sole win,
    0.5 for a shared win, 0 for a loss (the points of a win rate; :func:`~generala_env.engine.outcome_points`)."""
    return _outcome_points(seat in winners, len(winners))


class IllegalActionError(ValueError):
    """An action the game does not accept in the current state."""


class Outcome(NamedTuple):
    """What one action did (a tuple: immutable, so a reroll's outcome is shared)."""

    player: int
    action: int
    points: int = 0  # points written (0 for a reroll or a crossed-out line)
    wrote: bool = False
    served: bool = False  # written right after the turn's first roll
    bonus: int = 0  # served bonus included in points
    served_generala_win: bool = False


_REROLLED = [[Outcome(player=p, action=a) for a in range(NUM_MASKS)] for p in range(MAX_PLAYERS)]  # shared: immutable


class Game:
    """A game of Generala for 1–6 players under one rule set: the engine's one game.

    State: ``sheets`` ``(players, lines)`` int array with :data:`OPEN` for open lines,
    ``roll`` (index into ``ROLLS``), ``rolls_left`` (2 after a turn's first roll, 0 after
    its third), ``player`` (whose move), ``locked`` (keep index of the dice that may not
    go back under ``locked_holds``), ``over``, ``served_generala_winner`` (seat or
    ``None``), ``writes`` (lines filled, all players together). They live in one int64 array
    and the sheets' array (:attr:`state` names them as a one-game
    :class:`~generala_env.engine.GameState`), which every step, decision, throw and new game
    hands to one compiled call of the engine (:func:`generala_env.batched.play_game`, the
    rules the batched env runs over many games); that call also leaves the legal mask and
    the sheets' facts. Set a state with :meth:`set_state`, which checks every value and
    recomputes what the game derives. These attributes may also be assigned directly, and
    the sheets written in place (a copy of a batched game does): what the game derives
    follows them (``writes`` is counted from the sheets, and full sheets end the game), a
    number out of range raises ``ValueError`` at the next look, but nothing checks that the
    state is one the game could reach. Read-only
    views of what it derives: :attr:`totals_view`, :attr:`filled_lines`, :attr:`legal_view`,
    :attr:`legal_int8_view`, and :meth:`views` for what an observer reads at every step.
    """

    roll = _field(G.ROLL, "roll", "Index into ``ROLLS`` of the dice (sorted).")
    rolls_left = _field(G.ROLLS_LEFT, "rolls_left", "2 after a turn's first roll, 0 after its third.")
    locked = _field(G.LOCKED, "locked", "Keep index of the dice that may not go back under ``locked_holds``.")
    player = _field(G.PLAYER, "player", "Whose move.")

    @property
    def writes(self) -> int:
        """Lines filled, all players together (counted from the sheets)."""
        return self._fresh()[G.WRITES]

    @writes.setter
    def writes(self, value: int) -> None:  # a copy of a batched game sets it; the sheets decide it all the same
        self._v[G.WRITES] = _whole_number("writes", value)

    over = _field(G.OVER, "over", "Whether the game is over.", bool)
    throw_keep = _field(
        G.THROW_KEEP, "throw_keep", "After :meth:`decide`: the keep of the dice on the table while the rest are in the cup; -1: no throw pending."
    )
    _throw_starts_turn = _field(G.STARTS_TURN, "_throw_starts_turn", "The pending throw is the next player's first roll.", bool)

    def __init__(self, rules="classic", num_players: int = 1):
        rules = load_rules(rules)
        if isinstance(num_players, bool) or not isinstance(num_players, (int, np.integer)) or not 1 <= num_players <= MAX_PLAYERS:
            raise ValueError(f"num_players must be an integer from 1 to {MAX_PLAYERS}, got {num_players!r}")
        self._setup(rules, int(num_players))
        blank = new_state(1, self.num_players, self.num_lines)  # a game not started, as the batched env's are
        self._v[: G.WINNER + 1] = [int(field[0]) for field in blank[: G.WINNER + 1]]
        self._v[G.THROW_KEEP] = -1

    def _setup(self, rules: RuleSet, num_players: int) -> None:
        """The game's arrays and facts of its rules (its state all zeros and its sheets open)."""
        self.rules = rules
        self.num_players = num_players
        self.num_lines = rules.num_lines
        self.num_actions = NUM_MASKS + self.num_lines
        self.points = points_table(rules)
        self._r = _lookups(rules, num_players)
        self._v = np.zeros(one_game_size(num_players), dtype=np.int64)  # the game's numbers (engine.OneGame)
        self._board = np.full((1, num_players, self.num_lines), OPEN, dtype=np.int32)  # one game's sheets, game first
        self._sheets = self._board[0]
        self._mask = np.zeros((1, self.num_actions), dtype=bool)  # the legal mask, left by every compiled call
        self._mask_i8 = _frozen(self._mask[0].view(np.int8))  # read-only views: numbers() hands them out
        self._totals_now = _frozen(self._v[_TOTALS : _TOTALS + num_players])
        self._at = np.zeros(2, dtype=np.int64)  # given faces: [next, end]
        self._seen: bytes | None = None  # the numbers' and the sheets' bytes after the last compiled call; None: look anew
        self._made: tuple | None = None  # read-only views of what the game derives in this state

    # -- the compiled engine ----------------------------------------------------
    def _run(self, op: int, action: int = 0, faces=_NO_FACES, at=None, observe=None) -> int:
        """One compiled call of op ``op`` (:data:`~generala_env.engine.OneGame`); its status."""
        if at is None:
            at = self._at
            at[:] = 0, len(faces)
        r = self._r
        if observe is None:
            status = r.play(self._v, self._board, r.arrays, faces, at, self._mask, op, action)
        else:
            status = r.play_observed(self._v, self._board, r.arrays, faces, at, self._mask, op, action, *observe)
        if status == _DONE:
            self._seen, self._made = self._v.tobytes() + self._sheets.tobytes(), None
        else:
            self._failed(status)
        return status

    def _failed(self, status: int) -> None:
        """After a compiled call that did not go through: what the game derives is looked at
        anew, and a state out of range (set by hand) raises ``ValueError`` naming the number."""
        self._seen = None
        if status == _BAD_FACES:
            raise ValueError("the dice given to the game are not faces 1 to 6 (or the cup's position is outside its faces)")
        if status == _BAD_OBSERVE:
            raise ValueError(
                f"observe must be (*Encoder.observe_tables, seat, out) of an encoder of this game's {self.num_players} player(s) and "
                f"{self.num_lines} lines, a seat from 0 to {self.num_players - 1} and out of the encoder's size"
            )
        if status != _BAD_STATE:
            return
        v, P = self._v.tolist(), self.num_players
        for name, i, low, high in (
            ("roll", G.ROLL, 0, NUM_ROLLS - 1),
            ("rolls_left", G.ROLLS_LEFT, 0, FIRST_ROLL),
            ("locked", G.LOCKED, 0, NUM_KEEPS - 1),
            ("player", G.PLAYER, 0, P - 1),
            ("served_generala_winner", G.WINNER, -1, P - 1),
            ("throw_keep", G.THROW_KEEP, -1, NUM_KEEPS - 1),
        ):
            if not low <= v[i] <= high:
                raise ValueError(f"the game's {name} is {v[i]}, outside {low}..{high} (a state set by hand; set_state() checks one)")
        bad = _off_sheet(self.rules, self._sheets)
        if bad is not None:
            p, l, x = bad
            raise ValueError(f"sheets[{p}, {l}] ({self.rules.lines[l]}) is {x}, not points the line can hold (a state set by hand; set_state() checks one)")
        raise ValueError("the game's state is out of range (a state set by hand; set_state() checks one)")

    def _run_with_dice(self, op: int, action: int, rng, n: int, observe=None) -> int:
        """A step or a new game whose ``n`` dice come from ``rng``: a cup's faces straight into the
        compiled call (which asks for a refill when too few are left), others thrown here first."""
        if rng.__class__ is DiceCup and rng.block:
            status = self._run(op, action, rng.faces, rng.at, observe)
            if status == _NEED_FACES:
                status = self._refilled(op, action, rng, observe)
            return status
        fs = _whole_numbers("the dice thrown", throw(rng, n))
        if len(fs) != n or any(not 1 <= f <= 6 for f in fs):
            raise ValueError(f"the dice thrown must be {n} faces from 1 to 6, got {fs}")
        return self._run(op, action, np.array(fs, dtype=np.int8), None, observe)

    def _refilled(self, op: int, action: int, cup: DiceCup, observe) -> int:
        """The call again after the cup drew a new block of faces (its block holds a throw)."""
        cup.refill()
        status = self._run(op, action, cup.faces, cup.at, observe)
        if status == _NEED_FACES:
            raise ValueError(f"the cup's block of {cup.block} faces does not hold a throw of {self._v.item(G.NEED)}")
        return status

    def _look(self) -> None:
        """A compiled look at the state when it was set, or written by hand (its numbers, the
        sheets, :attr:`state`), since the last compiled call: what the game derives follows the
        state as it is now."""
        if self._seen != self._v.tobytes() + self._sheets.tobytes():
            self._run(G.LOOK)

    def _fresh(self) -> list[int]:
        """The game's numbers as ints, after :meth:`_look`."""
        self._look()
        return self._v.tolist()

    # -- setting up -------------------------------------------------------------
    def reset(self, rng) -> None:
        """A new game: empty sheets, player 0 rolls all five dice."""
        self._run_with_dice(G.RESET, 0, rng, DICE)

    # long: every check of a state, each with its own message, before anything changes
    def set_state(self, *, sheets=None, dice=None, rolls_left=None, player=None, locked=(), served_generala_winner=None) -> None:
        """Put the game in a given state (tests, analysis, search), as OpenSpiel's ``SetState``.

        ``sheets``: ``(players, lines)`` whole numbers, :data:`OPEN` or points the line can
        hold under the rules; ``dice``: five faces 1–6 in any order (kept sorted: the hold
        bits refer to the sorted dice); ``rolls_left``: 0, 1 or 2; ``player``: the seat to
        move. Each of these keeps its current value when omitted. ``locked``: the faces
        kept earlier this turn (the dice that may not go back under ``locked_holds``),
        none by default; ``served_generala_winner``: the seat whose served generala ended
        the game, ``None`` by default.

        The sheets must be reachable: players fill one line a turn in seat order, and a
        double generala holds points only over a scored generala. Everything the game
        derives is recomputed: totals, filled and open lines, ``writes``, the legal mask,
        and ``over`` (every line filled, or a served generala winner). The round
        (:attr:`turn`) is the lines the player to move has filled, so it is not set
        apart. A bad value raises ``ValueError`` (``TypeError`` for a value of the wrong
        kind) naming it, and the game is left unchanged.
        """
        P, L = self.num_players, self.num_lines
        # -- check everything first: an error leaves the game as it was
        if sheets is None:
            new_sheets = self.sheets.copy()
        else:
            arr = np.asarray(sheets)
            if arr.shape != (P, L):
                raise ValueError(f"sheets must have shape ({P}, {L}) (players, lines), got {arr.shape}")
            if arr.dtype.kind not in "iu":
                if arr.dtype.kind == "f" and np.isfinite(arr).all() and (arr == np.round(arr)).all():
                    arr = arr.astype(np.int64)
                else:
                    raise TypeError(f"sheets must hold whole numbers ({OPEN} for an open line), got dtype {arr.dtype}")
            bad = _off_sheet(self.rules, arr)
            if bad is not None:
                p, l, value = bad
                raise ValueError(
                    f"sheets[{p}, {l}] ({self.rules.lines[l]}) must be {OPEN} (open) or points the line can hold "
                    f"({', '.join(map(str, sorted(_line_values(self.rules)[l])))}), got {value}"
                )
            new_sheets = arr.astype(np.int32)
        for p in range(P):
            blocked = blocked_line(self.rules, generala_scored(self.rules, new_sheets[p]))
            if blocked >= 0 and new_sheets[p, blocked] > 0:
                raise ValueError(
                    f"sheets: seat {p}'s {self.rules.lines[blocked]} holds points but its generala line does not; a double generala needs a scored generala line"
                )
        if dice is None:
            faces = ROLLS[self.roll].tolist()
        else:
            faces = _whole_numbers("dice", dice)
            if len(faces) != DICE or any(not 1 <= f <= 6 for f in faces):
                raise ValueError(f"dice must be five faces from 1 to 6, got {faces}")
        rl = self.rolls_left if rolls_left is None else _whole_number("rolls_left", rolls_left)
        if not 0 <= rl < ROLLS_PER_TURN:
            raise ValueError(f"rolls_left must be 0, 1 or 2, got {rl}")
        winner = served_generala_winner
        if winner is not None:
            winner = _whole_number("served_generala_winner", winner)
            if not self._r.t.served_win:
                raise ValueError(
                    "served_generala_winner needs served_generala: win, two or more players and a generala line; "
                    f"this game has served_generala: {self.rules.served_generala} and {P} player(s)"
                )
            if not 0 <= winner < P:
                raise ValueError(f"served_generala_winner must be None or a seat from 0 to {P - 1}, got {winner}")
            if not new_sheets[winner, self._r.t.generala_line] > 0:
                raise ValueError(f"served_generala_winner {winner} must have points on its generala line")
        if player is None:
            seat = winner if winner is not None else self.player
        else:
            seat = _whole_number("player", player)
            if not 0 <= seat < P:
                raise ValueError(f"player must be a seat from 0 to {P - 1}, got {seat}")
            if winner is not None and seat != winner:
                raise ValueError(f"player must be the served generala winner ({winner}), got {seat}")
        kept = _whole_numbers("locked", locked)
        if kept:
            if rl == FIRST_ROLL:
                raise ValueError(f"locked must be empty right after the turn's first roll (rolls_left=2), got {kept}")
            if len(kept) > DICE - 1:
                raise ValueError(f"locked holds at most 4 dice (a hold rerolls at least one), got {kept}")
            rest = list(faces)
            for f in kept:
                if f not in rest:
                    raise ValueError(f"locked faces {kept} are not among the dice {sorted(faces)}")
                rest.remove(f)
        filled = (new_sheets != OPEN).sum(axis=1).tolist()
        full = sheets_full(self._r.t, sum(filled))
        if not full:
            # a line a turn in seat order: seats before the one who moves (or, after a
            # served generala, up to its winner, who wrote it) have one line more
            mover, last = (seat, seat - 1) if winner is None else (winner + 1, winner)
            n = filled[last] - 1 if last >= 0 else filled[0]
            want = [n + 1 if s < mover else n for s in range(P)]
            if filled != want or n < 0:
                raise ValueError(
                    f"sheets: players fill one line a turn in seat order, so with seat {seat} to move the seats before it "
                    f"have filled one line more than the others; filled lines per seat: {filled}"
                )
        # -- set it
        self._sheets[...] = new_sheets
        v = self._v
        v[G.ROLL], v[G.ROLLS_LEFT], v[G.PLAYER], v[G.LOCKED] = roll_index(faces), rl, seat, keep_index(kept)
        v[G.WINNER], v[G.THROW_KEEP], v[G.STARTS_TURN] = -1 if winner is None else winner, -1, 0
        v[G.OVER] = full or winner is not None
        self._run(G.LOOK)  # recounts the writes and the facts from the sheets

    # -- reading ----------------------------------------------------------------
    @property
    def state(self) -> GameState:
        """The state as a one-game :class:`~generala_env.engine.GameState` (views of the game's
        arrays, ``over`` an int64 there); writes to it are writes to the game."""
        v = self._v
        return GameState(v[0:1], v[1:2], v[2:3], v[3:4], v[4:5], v[5:6], v[6:7], self._board)

    @property
    def sheets(self) -> np.ndarray:
        """``(players, lines)`` int32, :data:`OPEN` for an open line: the game's own array (may be
        written in place; assigning copies into it)."""
        return self._sheets

    @sheets.setter
    def sheets(self, value) -> None:
        a = np.asarray(value)
        if a.shape != self._sheets.shape or a.dtype.kind not in "iu":
            raise TypeError(f"sheets must be whole numbers of shape {self._sheets.shape}, got {a.dtype} of shape {a.shape}")
        if a.size and not (a.min() >= OPEN and a.max() <= np.iinfo(np.int32).max):
            raise ValueError(f"sheets hold {OPEN} (open) or points, got values from {a.min()} to {a.max()}")
        self._sheets[...] = a
        self._seen = None

    @property
    def served_generala_winner(self) -> int | None:
        """The seat whose served generala ended the game, or ``None``."""
        w = self._v.item(G.WINNER)
        return None if w < 0 else w

    @served_generala_winner.setter
    def served_generala_winner(self, value: int | None) -> None:
        self._v[G.WINNER] = -1 if value is None else _whole_number("served_generala_winner", value)
        self._seen = None

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
        n = self._fresh()
        return n[_TOTALS + self.num_players + n[_PLAYER]]

    def totals(self) -> np.ndarray:
        """Each player's total (a new array)."""
        return self.totals_view.copy()

    def _views_now(self) -> tuple:
        """Read-only arrays of what the game derives in this state, made once per state:
        the legal mask as booleans and as int8, the totals, the lines filled (an array and a
        tuple of ints), and whether a served generala is pending."""
        n = self._fresh()
        made = self._made
        if made is None:
            P = self.num_players
            legal = _frozen(self._mask[0].copy())
            totals = _frozen(self._totals_now.copy())
            filled = tuple(n[_TOTALS + P : _TOTALS + 2 * P])
            made = self._made = (legal, legal.view(np.int8), totals, _frozen(np.array(filled)), filled, bool(n[G.PENDING]))
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

    def numbers(self) -> tuple[list[int], np.ndarray, np.ndarray]:
        """The game's numbers as ints (:data:`~generala_env.engine.OneGame`: the state, then the
        served generala pending, every seat's total and lines filled), the legal mask as int8 and
        the totals as int64, for an observer that reads them all at every step (the env's
        ``info``). The two arrays are read-only views of the game's own, which its next call
        overwrites: copy them to keep them."""
        return self._fresh(), self._mask_i8, self._totals_now

    def generala_scored(self, player: int) -> bool:
        """Whether ``player``'s generala line holds points (:func:`~generala_env.scoring.generala_scored`)."""
        return bool(generala_scored(self.rules, self.sheets[player]))

    def served_generala_pending(self) -> bool:
        """Five alike on the first roll with the generala line open, in a game where it wins
        (:func:`~generala_env.engine.served_pending`, as the last compiled call found it)."""
        return self._fresh()[G.PENDING] == 1

    def winners(self) -> tuple[int, ...]:
        """Seats that won (several on a shared win); empty while the game is on. A seat's
        result as points: :func:`outcome_points`."""
        n = self._fresh()  # first: sheets written by hand may end the game
        if not n[_OVER]:
            return ()
        t = n[_TOTALS : _TOTALS + self.num_players]
        best, w = max(t), n[_WINNER]
        return tuple(i for i, v in enumerate(t) if is_winner(w, i, v, best))

    def legal_mask(self) -> np.ndarray:
        """Boolean array over all actions: True where :meth:`apply` accepts the action."""
        return self._legal_now().copy()

    def _legal_now(self) -> np.ndarray:
        """The legal mask the last compiled call left (the game's own array: read, don't keep)."""
        self._look()
        return self._mask[0]

    def legal_actions(self) -> list[int]:
        return np.flatnonzero(self._legal_now()).tolist()

    def why_illegal(self, action) -> str | None:
        """``None`` if the action is legal, else a sentence saying why not."""
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
            return f"an action is an integer from 0 to {self.num_actions - 1}, got {action!r}"
        a = int(action)
        if not 0 <= a < self.num_actions:
            return f"action {a} is out of range 0..{self.num_actions - 1}"
        if self.throw_keep >= 0:
            return "a throw is pending after decide(): land its faces first"
        legal = self._legal_now()[a]  # first: sheets written by hand may end the game
        if self.over:
            return "the game is over"
        if legal:
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
    def step(self, action: int, rng, observe: tuple | None = None) -> Outcome:
        """Apply a legal action, drawing any dice it needs from ``rng``.

        ``observe``: ``(*encoding tables, seat, out)`` to have the same compiled call write the
        observation of the new state from ``seat`` into ``out`` (what the single env does; the
        tables: :attr:`Encoder.observe_tables <generala_env.encoding.Encoder.observe_tables>`)."""
        a = action
        if not (a.__class__ is int and 0 <= a < self.num_actions):
            why = self.why_illegal(action)  # the slow path names the problem (or accepts a numpy integer)
            if why is not None:
                raise IllegalActionError(why)
            a = int(action)
        if rng.__class__ is DiceCup and rng.block:  # the hot path: _run_with_dice's, spelled out
            r = self._r
            if observe is None:
                status = r.play(self._v, self._board, r.arrays, rng.faces, rng.at, self._mask, _STEP, a)
            else:
                status = r.play_observed(self._v, self._board, r.arrays, rng.faces, rng.at, self._mask, _STEP, a, *observe)
            if status == _DONE:
                self._seen, self._made = self._v.tobytes() + self._sheets.tobytes(), None
            else:
                self._failed(status)
                if status == _NEED_FACES:
                    status = self._refilled(_STEP, a, rng, observe)
        else:  # the dice are asked for only once the action is known to be legal
            why = self.why_illegal(a)
            if why is not None:
                raise IllegalActionError(why)
            status = self._run_with_dice(_STEP, a, rng, dice_thrown(self._r.t, self.roll, a), observe)
        if status == _ILLEGAL:
            raise IllegalActionError(self.why_illegal(a) or f"action {a} is not legal now")
        return self._outcome(a)

    def _outcome(self, a: int) -> Outcome:
        v = self._v
        if a < NUM_MASKS:
            return _REROLLED[v.item(G.MOVER)][a]
        pts, served = v.item(G.POINTS), v.item(G.SERVED) == 1
        bonus = self._r.bonus[a - NUM_MASKS] if served and pts > 0 else 0  # scoring.served_bonus, in the points of a line that qualifies
        return Outcome(v.item(G.MOVER), a, pts, True, served, bonus, v.item(G.WON) == 1)

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
        t = self._r.t
        if a < NUM_MASKS and len(faces) != dice_thrown(t, self.roll, a):
            raise ValueError(f"hold {a} rerolls {dice_thrown(t, self.roll, a)} dice, got {len(faces)} faces")
        ends = self.served_generala_pending() or sheets_full(t, self.writes + 1)
        if a >= NUM_MASKS and not ends and len(faces) != DICE:
            raise ValueError(f"a write needs the next player's five-dice first roll, got {len(faces)} faces")
        out = self._decide(a)
        if self.throw_keep >= 0:
            self._run(G.LAND, 0, np.array(faces, dtype=np.int8))
        return out

    # -- a decision and its throw apart (the dice model: generala_env.model) ------
    def decide(self, action: int) -> Outcome:
        """Apply a legal action without throwing: the afterstate.

        A hold keeps its dice and puts the others in the cup; a write fills the line and
        passes the turn, the next player's five dice in the cup. Unless the game ended,
        :attr:`throw_keep` is then the keep index of the dice staying on the table, and
        :meth:`land` must follow with the thrown faces before anything else. ``step``
        and ``apply`` are ``decide`` then ``land``, so the model plays the env's rules.
        """
        why = self.why_illegal(action)
        if why is not None:
            raise IllegalActionError(why)
        return self._decide(int(action))

    def _decide(self, a: int) -> Outcome:
        if self._run(G.DECIDE, a) == _ILLEGAL:
            raise IllegalActionError(self.why_illegal(a) or f"action {a} is not legal now")
        return self._outcome(a)

    def land(self, faces) -> None:
        """The faces thrown after :meth:`decide` (as many as were in the cup)."""
        self._look()  # first: a state set by hand is checked
        if self.throw_keep < 0:
            raise IllegalActionError("no throw is pending: land follows decide")
        fs = [int(f) for f in faces]
        if len(fs) != DICE - _KEEP_SIZE[self.throw_keep] or any(not 1 <= f <= 6 for f in fs):
            raise ValueError(f"the throw is {DICE - _KEEP_SIZE[self.throw_keep]} faces from 1 to 6, got {fs}")
        self._run(G.LAND, 0, np.array(fs, dtype=np.int8))

    # -- copying ----------------------------------------------------------------
    def __getstate__(self) -> dict:
        """Pickling: the rules, the players and the state (what the game derives is made anew)."""
        return {"rules": self.rules, "num_players": self.num_players, "numbers": self._v[:_STATE].tolist(), "sheets": self._sheets.copy()}

    def __setstate__(self, state: dict) -> None:
        """Unpickling; a game pickled when its state was attributes of its own (``roll``,
        ``rolls_left``, ...) is read too."""
        self._setup(state["rules"], state["num_players"])
        self._sheets[...] = state["sheets"]
        if "numbers" in state:
            self._v[:_STATE] = state["numbers"]
        else:
            w = state.get("served_generala_winner")
            numbers = ("roll", "rolls_left", "locked", "player", "writes", "over")
            self._v[:_WINNER] = [int(state[k]) for k in numbers]
            self._v[_WINNER] = -1 if w is None else w
            self._v[G.THROW_KEEP] = state.get("throw_keep", -1)
            self._v[G.STARTS_TURN] = bool(state.get("_throw_starts_turn", False))

    def clone(self) -> Game:
        g = Game.__new__(Game)
        g.__dict__.update(self.__dict__)
        g._v, g._board, g._mask = self._v.copy(), self._board.copy(), self._mask.copy()
        g._sheets, g._mask_i8, g._at = g._board[0], _frozen(g._mask[0].view(np.int8)), np.zeros(2, dtype=np.int64)
        g._totals_now = _frozen(g._v[_TOTALS : _TOTALS + g.num_players])
        return g
