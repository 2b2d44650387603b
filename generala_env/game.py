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
from itertools import combinations_with_replacement
from typing import NamedTuple

import numpy as np

from .dice import ALL_HELD, DICE, EMPTY_KEEP, FACE_KEY, KEEP_SIZE, NUM_MASKS, ROLLS, keep_index, roll_index, throw
from .engine import (
    FIRST_ROLL,
    OPEN,
    ROLLS_PER_TURN,
    after_write,
    dice_thrown,
    held,
    is_winner,
    landed,
    legal,
    served_pending,
    sheets_full,
    start_turn,
    tables,
    write_points,
)
from .engine import outcome_points as _outcome_points
from .rules import RuleSet, load_rules
from .scoring import blocked_line, generala_scored, points_table, served_bonus

MAX_PLAYERS = 6

# A roll's index is found from the base-6 key of its face counts, FACE_KEY of each die
# (engine.landed); the rules read the rule set's tables as Python lists (engine.tables).
_KEEP_SIZE = KEEP_SIZE.tolist()
_MASK_CACHE_SIZE = 1 << 16  # legal masks kept per rule set and player count


class _Lookups:
    """What the games of one rule set and player count look up, made once and shared: the
    rules' tables (:func:`~generala_env.engine.tables`, as lists), the rules' answers a step
    reads (:func:`_step_tables`, made here once), facts of the rule set, and the legal masks
    seen so far.

    A game holds it as one attribute: CPython keeps an object's attributes in a compact
    table shared by its class only up to 30 names, and past that every attribute read of
    the game costs more (``Game`` had 37: its identical code ran about 12% slower).
    """

    __slots__ = (
        "key",
        "t",
        "held",
        "thrown",
        "first_roll",
        "landed",
        "after_write",
        "generala",
        "double",
        "served_win",
        "masks",
        "mask_parts",
        "bonus",
    )

    def __init__(self, rules: RuleSet, num_players: int):
        self.key = (rules, num_players)
        self.t = tables(rules, num_players, lists=True)
        self.held, self.thrown, self.first_roll, self.landed, self.after_write = _step_tables(rules, num_players)
        self.generala = rules.generala_line  # -1 where the sheet lacks the line
        self.double = rules.double_generala_line
        self.served_win = rules.served_generala_wins(num_players)
        self.masks: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}  # legal masks by what they depend on (Game._compute_legal_mask)
        self.mask_parts: dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}  # their parts without the open lines (Game._new_legal_mask)
        self.bonus = [served_bonus(rules, line, True) for line in rules.lines]  # [line]: a served write's bonus

    def __reduce__(self):  # a pickled game names its rule set's look-ups, rather than carrying them
        return _lookups, self.key


@lru_cache(maxsize=64)
def _lookups(rules: RuleSet, num_players: int) -> _Lookups:
    return _Lookups(rules, num_players)


def _step_tables(rules: RuleSet, num_players: int) -> tuple[list[int], list[int], dict[int, tuple[int, int, int]], list[dict[int, int]], list]:
    """What a step looks up, made by the rules over all their inputs once per rule set (a
    look-up costs a fraction of a Python call): :func:`~generala_env.engine.held` by
    ``roll * NUM_MASKS + mask``, :func:`~generala_env.engine.dice_thrown` by
    ``roll * actions + action``, :func:`~generala_env.engine.start_turn` by the face key of
    every five-dice roll, :func:`~generala_env.engine.landed` by keep, then by the face key of
    every throw of the other dice, and :func:`~generala_env.engine.after_write` by
    ``[won][writes][player]``."""
    t = tables(rules, num_players, lists=True)
    actions = NUM_MASKS + rules.num_lines
    keeps = [held(t, r, m) for r in range(len(ROLLS)) for m in range(NUM_MASKS)]
    thrown = [dice_thrown(t, r, a) for r in range(len(ROLLS)) for a in range(actions)]
    first = {}
    for faces in ROLLS.tolist():
        key = sum(map(FACE_KEY.__getitem__, faces))
        first[key] = start_turn(t, key)
    lands = [
        {sum(map(FACE_KEY.__getitem__, fs)): landed(t, k, sum(map(FACE_KEY.__getitem__, fs))) for fs in combinations_with_replacement(range(1, 7), DICE - size)}
        for k, size in enumerate(_KEEP_SIZE)
    ]
    writes = num_players * rules.num_lines
    after = [[[after_write(t, won, w, p) for p in range(num_players)] for w in range(writes + 1)] for won in (False, True)]
    return keeps, thrown, first, lands, after


@lru_cache(maxsize=64)
def _line_values(rules: RuleSet) -> tuple[frozenset, ...]:
    """The points each line can hold (0, crossed out, included)."""
    return tuple(frozenset(np.unique(t).tolist()) | {0} for t in points_table(rules))


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


def _frozen(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mask.flags.writeable = False
    return mask, mask.view(np.int8)


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
    """A game of Generala for 1–6 players under one rule set.

    State: ``sheets`` ``(players, lines)`` int array with :data:`OPEN` for open lines,
    ``roll`` (index into ``ROLLS``), ``rolls_left`` (2 after a turn's first roll, 0 after
    its third), ``player`` (whose move), ``locked`` (keep index of the dice that may not
    go back under ``locked_holds``), ``over``, ``served_generala_winner`` (seat or
    ``None``). Set a state with :meth:`set_state`, which checks every value and
    recomputes what the game derives. These attributes may also be assigned directly
    (a copy of a batched game does): what the game derives follows them, since the
    legal mask and the sheet facts are recomputed when their inputs change, but nothing
    checks that the state is one the game could reach. Read-only views of what it
    derives: :attr:`totals_view`, :attr:`filled_lines`, :attr:`legal_view`,
    :attr:`legal_int8_view`, and :meth:`views` for what an observer reads at every step.
    """

    throw_keep = -1  # class defaults for games pickled before the dice model (see __init__)
    _throw_starts_turn = False

    def __init__(self, rules="classic", num_players: int = 1):
        self.rules: RuleSet = load_rules(rules)
        if isinstance(num_players, bool) or not isinstance(num_players, (int, np.integer)) or not 1 <= num_players <= MAX_PLAYERS:
            raise ValueError(f"num_players must be an integer from 1 to {MAX_PLAYERS}, got {num_players!r}")
        self.num_players = int(num_players)
        self.num_lines = self.rules.num_lines
        self.num_actions = NUM_MASKS + self.num_lines
        self.points = points_table(self.rules)
        self._r = r = _lookups(self.rules, self.num_players)
        self._held, self._thrown, self._landed = r.held, r.thrown, r.landed  # read at every hold: one attribute away
        self.sheets = np.full((self.num_players, self.num_lines), OPEN, dtype=np.int32)
        self.roll = 0
        self.rolls_left = 0
        self.player = 0
        self.locked = EMPTY_KEEP
        self.over = True
        self.served_generala_winner: int | None = None
        self.writes = 0
        self.throw_keep = -1  # after decide(): the keep of the dice on the table while the rest are in the cup; -1: no throw pending
        self._throw_starts_turn = False  # the pending throw is the next player's first roll
        # legal_mask() and the sheet sums, kept until the state they were computed from changes
        # (None keys: nothing computed yet; the empty values stand for nothing)
        self._legal_key: tuple | None = None
        self._legal: np.ndarray = np.zeros(0, dtype=bool)
        self._legal_i8: np.ndarray = np.zeros(0, dtype=np.int8)
        self._pending = False  # served_generala_pending() of the state _legal_key names
        self._sheets_key: bytes | None = None
        self._facts: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]] = ((), (), ())
        self._totals: tuple[tuple | None, np.ndarray] = (None, np.zeros(0, dtype=np.int64))  # (the totals it was made from, the array)
        self._filled: tuple[tuple | None, np.ndarray] = (None, np.zeros(0, dtype=np.int64))

    # -- setting up -------------------------------------------------------------
    def reset(self, rng) -> None:
        """A new game: empty sheets, player 0 rolls all five dice."""
        self.sheets.fill(OPEN)
        zeros = (0,) * self.num_players
        self._facts = (zeros, zeros, ((1 << self.num_lines) - 1,) * self.num_players)
        self._sheets_key = self.sheets.tobytes()
        self.player = 0
        self.over = False
        self.served_generala_winner = None
        self.writes = 0
        self.throw_keep = -1
        self._start_turn(throw(rng, DICE))

    def _start_turn(self, faces) -> None:
        fs = faces.tolist() if isinstance(faces, np.ndarray) else faces
        if not (len(fs) == DICE and min(fs) >= 1 and max(fs) <= 6):
            roll_index(faces)  # raises the error that names the bad faces
        self.roll, self.rolls_left, self.locked = self._r.first_roll[sum(map(FACE_KEY.__getitem__, fs))]  # engine.start_turn

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
            allowed = _line_values(self.rules)
            for (p, l), v in np.ndenumerate(arr):
                if v != OPEN and int(v) not in allowed[l]:
                    raise ValueError(
                        f"sheets[{p}, {l}] ({self.rules.lines[l]}) must be {OPEN} (open) or points the line can hold "
                        f"({', '.join(map(str, sorted(allowed[l])))}), got {int(v)}"
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
            if not self._r.served_win:
                raise ValueError(
                    "served_generala_winner needs served_generala: win, two or more players and a generala line; "
                    f"this game has served_generala: {self.rules.served_generala} and {P} player(s)"
                )
            if not 0 <= winner < P:
                raise ValueError(f"served_generala_winner must be None or a seat from 0 to {P - 1}, got {winner}")
            if not new_sheets[winner, self._r.generala] > 0:
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
        self.sheets[...] = new_sheets
        self.roll = roll_index(faces)
        self.rolls_left = rl
        self.player = seat
        self.locked = keep_index(kept)
        self.served_generala_winner = winner
        self.throw_keep = -1
        self.over = full or winner is not None
        self._sheets_key = None  # recount the facts and writes from the sheets
        self._legal_key = None
        self._sheet_facts()

    # -- reading ----------------------------------------------------------------
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
        return int(self._sheet_facts()[1][self.player])

    def totals(self) -> np.ndarray:
        """Each player's total (a new array; the int64 array behind it is made once per write)."""
        return self.totals_view.copy()

    @property
    def totals_view(self) -> np.ndarray:
        """Each player's total, read-only (int64; made once per write)."""
        totals = self._sheet_facts()[0]
        of, array = self._totals
        return array if of is totals else self._totals_array(totals)

    @property
    def filled_lines(self) -> np.ndarray:
        """Lines each player has filled, read-only (int64; made once per write)."""
        filled = self._sheet_facts()[1]
        of, array = self._filled
        if of is not filled:
            array = np.array(filled)
            array.flags.writeable = False
            self._filled = (filled, array)
        return array

    @property
    def legal_view(self) -> np.ndarray:
        """:meth:`legal_mask` without the copy: read-only, computed once per state."""
        return self._legal_now()

    @property
    def legal_int8_view(self) -> np.ndarray:
        """:attr:`legal_view` as int8 (what the env's ``info["action_mask"]`` copies)."""
        self._legal_now()
        return self._legal_i8

    def views(self) -> tuple[np.ndarray, np.ndarray, tuple[int, ...], bool]:
        """:attr:`legal_int8_view`, :attr:`totals_view`, the lines each player has filled
        (a tuple of ints) and :meth:`served_generala_pending`, in one call: what an observer
        reads at every step (the env's ``info`` and observation), without a call's cost for
        each."""
        self._legal_now()
        if self._sheets_key != self._legal_key[-1]:  # type: ignore[index]  # the facts follow other sheets (written by hand)
            self._sheet_facts()
        facts, pending = self._facts, self._pending
        of, totals = self._totals
        if of is not facts[0]:
            totals = self._totals_array(facts[0])
        return self._legal_i8, totals, facts[1], pending

    def _totals_array(self, totals: tuple[int, ...]) -> np.ndarray:
        array = np.array(totals)  # int64 (NumPy 2's default integer)
        array.flags.writeable = False
        self._totals = (totals, array)
        return array

    def _sheet_facts(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """Each player's total, filled lines and open lines (bit ``l`` set: line ``l`` open).

        Kept up to date by every write; recomputed when the sheets changed any other way
        (written by hand), together with the other facts the sheets decide: ``writes``
        (the lines filled, which tell when the game ends) and ``over`` once every line is
        filled. Use :meth:`set_state` to set a state with every value checked.
        """
        key = self.sheets.tobytes()
        if key != self._sheets_key:
            is_open = self.sheets == OPEN
            bits = tuple(int(b) for b in is_open @ (1 << np.arange(self.num_lines, dtype=np.int64)))
            filled = tuple((~is_open).sum(axis=1).tolist())
            self._facts = (tuple(np.maximum(self.sheets, 0).sum(axis=1).tolist()), filled, bits)
            self._sheets_key = key
            self.writes = sum(filled)
            if sheets_full(self._r.t, self.writes):
                self.over = True
        return self._facts

    def generala_scored(self, player: int) -> bool:
        """Whether ``player``'s generala line holds points (:func:`~generala_env.scoring.generala_scored`)."""
        return bool(generala_scored(self.rules, self.sheets[player]))

    def served_generala_pending(self) -> bool:
        """Five alike on the first roll with the generala line open, in a game where it wins."""
        r = self._r
        if not r.served_win:  # the sheet need not be read
            return False
        return served_pending(r.t, self.rolls_left, self.roll, int(self.sheets[self.player, r.generala]))

    def winners(self) -> tuple[int, ...]:
        """Seats that won (several on a shared win); empty while the game is on. A seat's
        result as points: :func:`outcome_points`."""
        t = self._sheet_facts()[0]  # first: sheets written by hand may end the game
        if not self.over:
            return ()
        best, w = max(t), self.served_generala_winner
        return tuple(i for i, v in enumerate(t) if is_winner(-1 if w is None else w, i, v, best))

    def legal_mask(self) -> np.ndarray:
        """Boolean array over all actions: True where :meth:`apply` accepts the action."""
        return self._legal_now().copy()

    def _legal_now(self) -> np.ndarray:
        """:meth:`legal_mask`, computed once per state (read-only: callers must not modify it).

        The key holds every input of the mask, the sheets' bytes included, so a state
        set by hand is never served a stale mask.
        """
        key = (self.roll, self.rolls_left, self.locked, self.player, self.over, self.sheets.tobytes())
        if key != self._legal_key:
            self._legal, self._legal_i8 = self._compute_legal_mask()
            self._legal_key = key
        return self._legal

    def _compute_legal_mask(self) -> tuple[np.ndarray, np.ndarray]:
        """The legal mask (:func:`~generala_env.engine.legal` of every action), read-only, as
        booleans and as an int8 view of them.

        Looked up by what it depends on: over, a served generala pending, the rolls left, the
        mover's open lines, and, only under ``locked_holds`` with dice locked and rolls left,
        the roll and the locked dice (elsewhere :func:`~generala_env.engine.hold_legal` reads
        neither: what it reads and this key go together, and ``tests/test_vector.py``, whose
        batched env asks the rule for every action, catches a difference). A mask not seen yet
        is computed by the rules themselves.
        """
        open_bits = self._sheet_facts()[2][self.player]  # first: sheets written by hand may end the game
        over, rl = self.over, self.rolls_left
        r = self._r
        self._pending = r.served_win and self.served_generala_pending()
        pending = self._pending and not over
        lock = (self.roll, self.locked) if r.t.locked_holds and rl > 0 and self.locked != EMPTY_KEEP else None
        key = (over, pending, rl, open_bits, lock)
        masks = r.masks.get(key)
        if masks is None:
            masks = self._new_legal_mask(key)
        return masks

    def _new_legal_mask(self, key: tuple) -> tuple[np.ndarray, np.ndarray]:
        """A mask not in the cache yet, from the rules' answers for its key without the open
        lines (:func:`~generala_env.engine.legal` of every hold, and of every write with its
        line open and filled), kept too: those are 43 rule calls, the mask itself a choice
        between them by the open lines."""
        over, pending, rl, open_bits, lock = key
        part_key = (over, pending, rl, lock)
        r = self._r
        parts = r.mask_parts.get(part_key)
        if parts is None:
            t, rl, roll, locked = r.t, self.rolls_left, self.roll, self.locked
            holds = np.array([legal(t, over, pending, rl, roll, locked, a, False) for a in range(NUM_MASKS)], dtype=bool)
            writes = range(NUM_MASKS, self.num_actions)
            if_open = np.array([legal(t, over, pending, rl, roll, locked, a, True) for a in writes], dtype=bool)
            if_filled = np.array([legal(t, over, pending, rl, roll, locked, a, False) for a in writes], dtype=bool)
            if len(r.mask_parts) >= _MASK_CACHE_SIZE:
                r.mask_parts.clear()
            parts = r.mask_parts[part_key] = (holds, if_open, if_filled)
        holds, if_open, if_filled = parts
        is_open = (open_bits >> np.arange(self.num_lines)) & 1 == 1
        mask = np.concatenate((holds, np.where(is_open, if_open, if_filled)))
        cache = r.masks
        if len(cache) >= _MASK_CACHE_SIZE:
            cache.clear()
        masks = cache[key] = _frozen(mask)
        return masks

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
    def step(self, action: int, rng) -> Outcome:
        """Apply a legal action, drawing any dice it needs from ``rng``."""
        a = action
        if not (a.__class__ is int and 0 <= a < self.num_actions and not self.over and self.throw_keep < 0 and self._legal_now()[a]):
            why = self.why_illegal(action)  # the slow path names the problem (or accepts a numpy integer)
            if why is not None:
                raise IllegalActionError(why)
            a = int(action)
        n = self._thrown[self.roll * self.num_actions + a]  # engine.dice_thrown
        faces = throw(rng, n)
        if a < NUM_MASKS and len(faces) != n:  # _apply's check, without counting the dice a second time
            raise ValueError(f"hold {a} rerolls {n} dice, got {len(faces)} faces")
        out = self._decide(a)
        if self.throw_keep >= 0:
            self._land(faces)
        return out

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
        ends = self.served_generala_pending() or sheets_full(self._r.t, sum(self._sheet_facts()[1]) + 1)
        if a >= NUM_MASKS and not ends and len(faces) != DICE:
            raise ValueError(f"a write needs the next player's five-dice first roll, got {len(faces)} faces")
        return self._apply(a, faces)

    def _apply(self, a: int, faces) -> Outcome:
        if a < NUM_MASKS and len(faces) != dice_thrown(self._r.t, self.roll, a):
            raise ValueError(f"hold {a} rerolls {dice_thrown(self._r.t, self.roll, a)} dice, got {len(faces)} faces")
        out = self._decide(a)
        if self.throw_keep >= 0:
            self._land(faces)
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

    def land(self, faces) -> None:
        """The faces thrown after :meth:`decide` (as many as were in the cup)."""
        if self.throw_keep < 0:
            raise IllegalActionError("no throw is pending: land follows decide")
        fs = [int(f) for f in faces]
        if len(fs) != DICE - _KEEP_SIZE[self.throw_keep] or any(not 1 <= f <= 6 for f in fs):
            raise ValueError(f"the throw is {DICE - _KEEP_SIZE[self.throw_keep]} faces from 1 to 6, got {fs}")
        self._land(fs)

    def _land(self, faces) -> None:
        keep, self.throw_keep = self.throw_keep, -1
        if self._throw_starts_turn:
            self._start_turn(faces)
        else:
            fs = faces.tolist() if isinstance(faces, np.ndarray) else faces
            self.roll = self._landed[keep][sum(map(FACE_KEY.__getitem__, fs))]  # engine.landed

    def _decide(self, a: int) -> Outcome:
        me = self.player
        if a < NUM_MASKS:
            keep = self._held[self.roll * NUM_MASKS + a]  # engine.held
            self.rolls_left -= 1
            self.locked = keep
            self.throw_keep, self._throw_starts_turn = keep, False
            return _REROLLED[me][a]

        line = a - NUM_MASKS
        r, roll, rolls_left = self._r, self.roll, self.rolls_left
        t = r.t
        generala_value = int(self.sheets[me, r.generala]) if r.generala >= 0 else OPEN
        pts = write_points(t, line, roll, rolls_left, generala_value)
        served_win = r.served_win and served_pending(t, rolls_left, roll, generala_value)  # else never pending
        if self._sheets_key != self.sheets.tobytes():
            self._sheet_facts()  # the sheets were written by hand: recount the facts and writes first
        self.sheets[me, line] = pts
        self.writes += 1
        totals, filled, bits = map(list, self._facts)  # bring the sheet facts along
        totals[me] += pts
        filled[me] += 1
        bits[me] &= ~(1 << line)
        self._facts, self._sheets_key = (tuple(totals), tuple(filled), tuple(bits)), self.sheets.tobytes()
        served = rolls_left == FIRST_ROLL
        bonus = r.bonus[line] if served and pts > 0 else 0  # scoring.served_bonus, in the points of a line that qualifies
        out = Outcome(me, a, pts, True, served, bonus, served_win)
        self.over, self.player = r.after_write[served_win][self.writes][me]  # engine.after_write
        if served_win:
            self.served_generala_winner = me
        elif not self.over:
            self.throw_keep, self._throw_starts_turn = EMPTY_KEEP, True
        return out

    # -- copying ----------------------------------------------------------------
    def __getstate__(self) -> dict:
        """Pickling: the state and what the game derived, not the rule set's tables (its
        ``_Lookups`` pickles as its name; the hold tables and ``points`` come from the rules)."""
        return {k: v for k, v in self.__dict__.items() if k not in ("_held", "_thrown", "_landed", "points")}

    def __setstate__(self, state: dict) -> None:
        """Unpickling. A game pickled before the rule set's look-ups were grouped into one
        attribute (see ``_Lookups``) gets them anew, its old copies of them dropped."""
        if "_r" not in state:
            old = ("_t", "_first_roll", "_after_write", "_generala", "_double", "_served_win", "_reads_generala", "_masks", "_mask_parts")
            state = {k: v for k, v in state.items() if k not in old and k not in ("_totals_of", "_filled_of", "_totals", "_filled")}
            empty = np.zeros(0, dtype=np.int64)
            state.update(_r=_lookups(state["rules"], state["num_players"]), _totals=(None, empty), _filled=(None, empty))
        for k, v in state.items():
            setattr(self, k, v)
        if "_pending" not in state:  # pickled before it was kept with the mask
            self._legal_key = None
        r = self._r
        self._held, self._thrown, self._landed = r.held, r.thrown, r.landed
        self.points = points_table(self.rules)

    def clone(self) -> Game:
        g = Game.__new__(Game)
        g.__dict__.update(self.__dict__)
        g.sheets = self.sheets.copy()
        return g
