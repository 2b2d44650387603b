"""The game of Generala: state, legal actions and transitions, with no framework imports.

Actions are integers, the same as the environment's:

* ``0 … 31``: a hold mask. Bit ``i`` keeps ``dice[i]`` (the dice are always sorted);
  the others are rerolled. Legal only while rolls are left; ``31`` (keep all five) is
  never legal. Under ``locked_holds`` a mask that would put back a die kept earlier in
  the turn is illegal.
* ``32 + l``: write the dice on line ``l`` (rule-set order). Legal iff the line is
  open; dice that do not qualify write 0 there (crossing it out).

Chance is explicit: every die comes from the ``rng`` passed to :meth:`Game.step` and
:meth:`Game.reset` (a :class:`~generala_env.core.dice.DiceCup`, or anything with
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

import numpy as np

from generala_env.core import engine
from generala_env.core.checks import is_whole
from generala_env.core.dice import DICE, KEEP_SIZE, NUM_KEEPS, NUM_MASKS, NUM_ROLLS, DiceCup, checked_faces, keep_index, roll_index, throw
from generala_env.core.engine import (
    BAD_FACES,
    DONE,
    FIRST_ROLL,
    ILLEGAL,
    MOVER,
    POINTS,
    SERVED,
    SHORT,
    TOTALS,
    WON,
    GameState,
    dice_thrown,
    facts_size,
    new_state,
    numbers_of,
    sheets_full,
    tables,
)
from generala_env.core.engine import OPEN as OPEN  # re-exported: the mark of an open line, read from here across the project
from generala_env.core.engine import ROLLS_PER_TURN as ROLLS_PER_TURN
from generala_env.core.game_facts import GameFacts
from generala_env.core.game_states import checked_sheets, checked_state, whole_number
from generala_env.core.game_states import prefilled_sheets as prefilled_sheets
from generala_env.core.outcome import MAX_PLAYERS as MAX_PLAYERS
from generala_env.core.outcome import REROLLED as _REROLLED
from generala_env.core.outcome import IllegalActionError as IllegalActionError
from generala_env.core.outcome import Outcome as Outcome
from generala_env.core.outcome import outcome_points as outcome_points
from generala_env.core.rules import RuleSet, load_rules
from generala_env.core.scoring import points_table, served_bonus

_KEEP_SIZE = KEEP_SIZE.tolist()
_ROLL, _ROLLS_LEFT, _LOCKED, _PLAYER, _OVER, _WINNER, _THROW_KEEP, _THROW_TURN = (
    getattr(engine, n) for n in ("ROLL", "ROLLS_LEFT", "LOCKED", "PLAYER", "OVER", "WINNER", "THROW_KEEP", "THROW_TURN")
)


class _Lookups:
    """What the games of one rule set and player count share, made once: the rules' tables as
    arrays packed for the compiled calls (:func:`generala_env.compiled.one_game.pack_tables`) and as lists
    for the few rules a game asks in Python (:func:`~generala_env.core.engine.tables`), the compiled
    calls themselves, and facts of the rule set. A pickled game names it rather than carrying it."""

    __slots__ = ("key", "t", "arrays", "k", "bonus")

    def __init__(self, rules: RuleSet, num_players: int):
        from generala_env.compiled import one_game  # numba, when it is there (loaded on a first game: importing the package stays light)

        self.key = (rules, num_players)
        self.t = tables(rules, num_players, lists=True)
        self.arrays = one_game.pack_tables(tables(rules, num_players))
        self.k = one_game
        self.bonus = [served_bonus(rules, line, True) for line in rules.lines]  # [line]: a served write's bonus

    def __reduce__(self):
        return _lookups, self.key


@lru_cache(maxsize=64)
def _lookups(rules: RuleSet, num_players: int) -> _Lookups:
    return _Lookups(rules, num_players)


_NO_FACES = np.zeros(0, dtype=np.int8)
_NO_INTS = np.zeros(0, dtype=np.int32)
_NO_INTS.flags.writeable = False  # as pack_encoding's (one compiled version of step_game)
_NO_FLOATS = np.zeros(0, dtype=np.float32)
_NO_OUT = np.zeros(0, dtype=np.float32)


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def _number(i: int, name: str, doc: str, low, high=None, kind=int) -> property:
    """A property for row ``i`` of a game's numbers (:data:`~generala_env.core.engine.NUMBERS`): read
    as an int (``kind=bool``: true or false); set only to a value in range (``low`` .. ``high``,
    a callable of the game for a bound that depends on it), checked here, at the boundary, so
    the compiled calls never see a number out of range."""

    def get(self):
        return kind(self._numbers[i, 0])

    def put(self, value) -> None:
        if kind is bool:
            if not isinstance(value, (bool, np.bool_, int, np.integer)):
                raise TypeError(f"{name} must be true or false, got {value!r}")
            v = 1 if value else 0
        else:
            v = whole_number(name, value)
            lo, hi = low, (high(self) if callable(high) else high)
            if not lo <= v <= hi:
                raise ValueError(f"{name} must be from {lo} to {hi}, got {v}")
        self._numbers[i, 0] = v
        self._look()  # what the game derives follows

    return property(get, put, doc=doc)


class Game(GameFacts):
    """A game of Generala for 1–6 players under one rule set: the engine at N = 1.

    State: a one-game :class:`~generala_env.core.engine.GameState` (:attr:`state`): ``sheets``
    ``(players, lines)`` int32 with :data:`OPEN` for open lines, ``roll`` (index into
    ``ROLLS``), ``rolls_left`` (2 after a turn's first roll, 0 after its third), ``player``
    (whose move), ``locked`` (keep index of the dice that may not go back under
    ``locked_holds``), ``over``, ``served_generala_winner`` (seat or ``None``), ``writes``
    (lines filled, all players together) and, after :meth:`decide`, the throw pending
    (``throw_keep``). Each step, decision, throw and new game is one compiled call over that
    state (:mod:`generala_env.compiled.batched`: the loops' bodies at N = 1), which also leaves the
    legal mask and the sheets' facts. A state is set with :meth:`set_state`, which checks it
    whole, or attribute by attribute (``roll``, ``rolls_left``, ``player``, ``locked``,
    ``over``, ``served_generala_winner``, ``sheets``), each checked for its range as it is
    set; the sheets are read-only in place. What the game derives follows every change
    (``writes`` is counted from the sheets, and full sheets end the game), but only
    :meth:`set_state` checks that the state is one the game could reach. Read-only views of
    what it derives: :attr:`totals_view`, :attr:`filled_lines`, :attr:`legal_view`,
    :attr:`legal_int8_view`, and :meth:`views` for what an observer reads at every step.
    """

    roll = _number(_ROLL, "roll", "Index into ``ROLLS`` of the dice (sorted).", 0, NUM_ROLLS - 1)
    rolls_left = _number(_ROLLS_LEFT, "rolls_left", "2 after a turn's first roll, 0 after its third.", 0, FIRST_ROLL)
    locked = _number(_LOCKED, "locked", "Keep index of the dice that may not go back under ``locked_holds``.", 0, NUM_KEEPS - 1)
    player = _number(_PLAYER, "player", "Whose move.", 0, lambda g: g.num_players - 1)
    over = _number(_OVER, "over", "Whether the game is over.", 0, kind=bool)
    throw_keep = _number(
        _THROW_KEEP,
        "throw_keep",
        "After :meth:`decide`: the keep of the dice on the table while the rest are in the cup; -1: no throw pending.",
        -1,
        NUM_KEEPS - 1,
    )
    _throw_starts_turn = _number(_THROW_TURN, "_throw_starts_turn", "The pending throw is the next player's first roll.", 0, kind=bool)

    def __init__(self, rules="classic", num_players: int = 1):
        rules = load_rules(rules)
        if not is_whole(num_players) or not 1 <= num_players <= MAX_PLAYERS:
            raise ValueError(f"num_players must be an integer from 1 to {MAX_PLAYERS}, got {num_players!r}")
        self._setup(rules, int(num_players))
        self._look()

    def _setup(self, rules: RuleSet, num_players: int) -> None:
        """The game's arrays (a game not started, as the batched env's are) and facts of its rules."""
        self.rules = rules
        self.num_players = num_players
        self.num_lines = rules.num_lines
        self.num_actions = NUM_MASKS + self.num_lines
        self.points = points_table(rules)
        self._r = _lookups(rules, num_players)
        self._state = new_state(1, num_players, self.num_lines)
        self._numbers = numbers_of(self._state)  # (len(NUMBERS), 1) int64: the state's numbers
        self._board = self._state.sheets  # (1, players, lines)
        self._state_view = GameState(*(_frozen(a.view()) for a in self._state))  # what :attr:`state` hands out
        self._sheets = _frozen(self._board[0].view())  # read-only: a change of the sheets goes through the setter
        self._mask = np.zeros((1, self.num_actions), dtype=bool)  # the legal mask, left by every compiled call
        self._mask_i8 = _frozen(self._mask[0].view(np.int8))  # read-only views: views() hands them out
        self._facts = np.zeros(facts_size(num_players), dtype=np.int64)  # engine.facts_size: what the last call found
        self._totals_now = _frozen(self._facts[TOTALS : TOTALS + num_players])
        self._at = np.zeros(2, dtype=np.int64)  # given faces: [next, end]
        self._made: tuple | None = None  # read-only copies of what the game derives in this state

    # -- the compiled engine ----------------------------------------------------
    def _look(self) -> None:
        """What the state decides, made anew (after a change set by hand)."""
        self._r.k.look_game(self._numbers, self._board, self._r.arrays, self._mask, self._facts)
        self._made = None

    def _faces(self, rng, n: int) -> tuple[np.ndarray, np.ndarray]:
        """``n`` faces thrown by a generator-like ``rng`` that is not a cup, checked, and their ``at``."""
        fs = checked_faces("the dice thrown", throw(rng, n), n)
        self._at[:] = 0, n
        return np.array(fs, dtype=np.int8), self._at

    def _cup_call(self, call, rng, n: int, *args) -> int:
        """``call(faces, at, *args)`` with the dice from ``rng``: a cup's faces straight in (refilled
        when it reports too few left, as a cup's throw does), others thrown here first."""
        if rng.__class__ is DiceCup and rng.block:
            status = call(rng.faces, rng.at, *args)
            if status == SHORT:
                rng.refill()
                status = call(rng.faces, rng.at, *args)
                if status == SHORT:
                    raise ValueError(f"the cup's block of {rng.block} faces does not hold a throw of {n}")
            return status
        faces, at = self._faces(rng, n)
        return call(faces, at, *args)

    # -- setting up -------------------------------------------------------------
    def reset(self, rng) -> None:
        """A new game: empty sheets, player 0 rolls all five dice."""
        r = self._r

        def new_game(faces, at):
            return r.k.new_game_one(self._numbers, self._board, r.arrays, faces, at, self._mask, self._facts)

        status = self._cup_call(new_game, rng, DICE)
        self._made = None
        if status != DONE:
            self._failed(status, 0)

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
        new_sheets, faces, rl, seat, kept, winner, full = checked_state(self, sheets, dice, rolls_left, player, locked, served_generala_winner)
        # -- set it
        self._board[0] = new_sheets
        v = self._numbers[:, 0]
        v[_ROLL], v[_ROLLS_LEFT], v[_PLAYER], v[_LOCKED] = roll_index(faces), rl, seat, keep_index(kept)
        v[_WINNER], v[_THROW_KEEP], v[_THROW_TURN] = -1 if winner is None else winner, -1, 0
        v[_OVER] = full or winner is not None
        self._look()  # recounts the writes and the facts from the sheets

    # -- reading ----------------------------------------------------------------
    @property
    def state(self) -> GameState:
        """The state as a one-game :class:`~generala_env.core.engine.GameState`: read-only views of the
        game's own arrays (a change goes through the setters or :meth:`set_state`, which check it)."""
        return self._state_view

    @property
    def sheets(self) -> np.ndarray:
        """``(players, lines)`` int32, :data:`OPEN` for an open line: a read-only view of the
        game's own array (assigning checks the values and copies them in)."""
        return self._sheets

    @sheets.setter
    def sheets(self, value) -> None:
        self._board[0] = checked_sheets(self.rules, self.num_players, value)
        self._look()

    @property
    def writes(self) -> int:
        """Lines filled, all players together (counted from the sheets)."""
        return int(self._numbers[engine.WRITES, 0])

    @writes.setter
    def writes(self, value: int) -> None:  # a copy of a batched game sets it; the sheets decide it all the same
        whole_number("writes", value)

    @property
    def served_generala_winner(self) -> int | None:
        """The seat whose served generala ended the game, or ``None``."""
        w = int(self._numbers[_WINNER, 0])
        return None if w < 0 else w

    @served_generala_winner.setter
    def served_generala_winner(self, value: int | None) -> None:
        w = -1 if value is None else whole_number("served_generala_winner", value)
        if not -1 <= w < self.num_players:
            raise ValueError(f"served_generala_winner must be None or a seat from 0 to {self.num_players - 1}, got {value!r}")
        self._numbers[_WINNER, 0] = w
        self._look()

    # -- acting -----------------------------------------------------------------
    def step(self, action: int, rng, observe: tuple | None = None) -> Outcome:
        """Apply a legal action, drawing any dice it needs from ``rng``.

        ``observe``: ``(*encoding tables, seat, out)`` to have the same compiled call write the
        observation of the new state from ``seat`` into ``out`` (what the single env does; the
        tables: :attr:`Encoder.observe_tables <generala_env.core.encoding.Encoder.observe_tables>`)."""
        a = action
        if not (a.__class__ is int and 0 <= a < self.num_actions):
            why = self.why_illegal(action)  # the slow path names the problem (or accepts a numpy integer)
            if why is not None:
                raise IllegalActionError(why)
            a = int(action)
        r = self._r
        ints, floats, seat, out = observe if observe is not None else (_NO_INTS, _NO_FLOATS, 0, _NO_OUT)
        if rng.__class__ is DiceCup and rng.block:  # the hot path: _cup_call's, spelled out
            status = r.k.step_game(self._numbers, self._board, r.arrays, rng.faces, rng.at, self._mask, self._facts, a, ints, floats, seat, out)
            if status == SHORT:
                rng.refill()
                status = r.k.step_game(self._numbers, self._board, r.arrays, rng.faces, rng.at, self._mask, self._facts, a, ints, floats, seat, out)
                if status == SHORT:
                    raise ValueError(f"the cup's block of {rng.block} faces does not hold a throw of {dice_thrown(r.t, self.roll, a)}")
        else:  # the dice are asked for only once the action is known to be legal
            why = self.why_illegal(a)
            if why is not None:
                raise IllegalActionError(why)
            faces, at = self._faces(rng, dice_thrown(r.t, self.roll, a))
            status = r.k.step_game(self._numbers, self._board, r.arrays, faces, at, self._mask, self._facts, a, ints, floats, seat, out)
        self._made = None
        if status != DONE:
            self._failed(status, a)
        return self._outcome(a)

    def _failed(self, status: int, a: int) -> None:
        if status == ILLEGAL:
            raise IllegalActionError(self.why_illegal(a) or f"action {a} is not legal now")
        if status == SHORT:
            raise ValueError("the cup's block of faces does not hold a throw")
        if status == BAD_FACES:
            raise ValueError("the dice given to the game are not faces 1 to 6 (or the cup's position is outside its faces)")
        raise ValueError(
            f"observe must be (*Encoder.observe_tables, seat, out) of an encoder of this game's {self.num_players} player(s) and "
            f"{self.num_lines} lines, a seat from 0 to {self.num_players - 1} and out of the encoder's size"
        )

    def _outcome(self, a: int) -> Outcome:
        f = self._facts
        if a < NUM_MASKS:
            return _REROLLED[f.item(MOVER)][a]
        pts, served = f.item(POINTS), f.item(SERVED) == 1
        bonus = self._r.bonus[a - NUM_MASKS] if served and pts > 0 else 0  # scoring.served_bonus, in the points of a line that qualifies
        return Outcome(f.item(MOVER), a, pts, True, served, bonus, f.item(WON) == 1)

    def apply(self, action: int, faces) -> Outcome:
        """Apply a legal action with the dice it needs given explicitly.

        For a hold mask, ``faces`` are the rerolled dice (as many as were not held);
        for a write, the next player's first roll (ignored when the game ends).
        """
        why = self.why_illegal(action)
        if why is not None:
            raise IllegalActionError(why)
        a = int(action)
        # check the dice before anything changes: a bad face would count as another face,
        # and a short next roll would fail after the line is already written
        faces = checked_faces("faces", faces)
        t = self._r.t
        if a < NUM_MASKS and len(faces) != dice_thrown(t, self.roll, a):
            raise ValueError(f"hold {a} rerolls {dice_thrown(t, self.roll, a)} dice, got {len(faces)} faces")
        ends = self.served_generala_pending() or sheets_full(t, self.writes + 1)
        if a >= NUM_MASKS and not ends and len(faces) != DICE:
            raise ValueError(f"a write needs the next player's five-dice first roll, got {len(faces)} faces")
        out = self._decide(a)
        if self.throw_keep >= 0:
            self._land(np.array(faces, dtype=np.int8))
        return out

    # -- a decision and its throw apart (the dice model: generala_env.planning.model) ------
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
        r = self._r
        status = r.k.decide_one(self._numbers, self._board, r.arrays, self._mask, self._facts, a)
        self._made = None
        if status != DONE:
            self._failed(status, a)
        return self._outcome(a)

    def land(self, faces) -> None:
        """The faces thrown after :meth:`decide` (as many as were in the cup)."""
        if self.throw_keep < 0:
            raise IllegalActionError("no throw is pending: land follows decide")
        n = DICE if self._throw_starts_turn else DICE - _KEEP_SIZE[self.throw_keep]
        self._land(np.array(checked_faces("the throw", faces, n), dtype=np.int8))

    def _land(self, faces: np.ndarray) -> None:
        r = self._r
        self._at[:] = 0, len(faces)
        status = r.k.land_one(self._numbers, self._board, r.arrays, faces, self._at, self._mask, self._facts)
        self._made = None
        if status != DONE:
            self._failed(status, 0)

    # -- copying ----------------------------------------------------------------
    def __getstate__(self) -> dict:
        """Pickling: the rules, the players and the state (what the game derives is made anew)."""
        return {"rules": self.rules, "num_players": self.num_players, "numbers": self._numbers[:, 0].tolist(), "sheets": self._sheets.copy()}

    def __setstate__(self, state: dict) -> None:
        """Unpickling, the state checked as :meth:`set_state`'s values are; a game pickled when
        its state was attributes of its own (``roll``, ``rolls_left``, ...) is read too."""
        self._setup(state["rules"], state["num_players"])
        self._board[0] = checked_sheets(self.rules, self.num_players, state["sheets"])
        if "numbers" in state:
            numbers = [int(v) for v in state["numbers"]][: len(engine.NUMBERS)]
        else:
            w = state.get("served_generala_winner")
            numbers = [int(state[k]) for k in ("roll", "rolls_left", "locked", "player", "writes", "over")]
            numbers += [-1 if w is None else int(w), int(state.get("throw_keep", -1)), int(bool(state.get("_throw_starts_turn", False)))]
        names = ("roll", "rolls_left", "locked", "player", "writes", "over", "served_generala_winner", "throw_keep", "_throw_starts_turn")
        for name, v in zip(names, numbers, strict=False):
            if name != "writes":
                setattr(self, name, None if name == "served_generala_winner" and v < 0 else v)
        self._look()

    def clone(self) -> Game:
        g = Game.__new__(Game)
        g.__dict__.update(self.__dict__)
        numbers, board = self._numbers.copy(), self._board.copy()
        g._state = engine.state_of(numbers, board)
        g._state_view = GameState(*(_frozen(a.view()) for a in g._state))
        g._numbers, g._board, g._mask, g._facts = numbers, board, self._mask.copy(), self._facts.copy()
        g._sheets, g._mask_i8, g._at = _frozen(board[0].view()), _frozen(g._mask[0].view(np.int8)), np.zeros(2, dtype=np.int64)
        g._totals_now = _frozen(g._facts[TOTALS : TOTALS + g.num_players])
        return g
