"""The rules of :mod:`generala_env.engine` and the encoding of :mod:`generala_env.observe`,
compiled by numba: loops over many games, and one call for one game.

They repeat no rule: each compiles the same functions (:data:`generala_env.engine.RULES`,
:data:`generala_env.observe.ENCODING`), inlined (``inline="always"``), over the games' state,
a :class:`~generala_env.engine.GameState` of arrays indexed by game, and the rule set's
:class:`~generala_env.engine.Tables` as arrays (agents that play batched, such as
:mod:`generala_agents.batched`, compile their loops the same way with :func:`cached_njit`).
:class:`generala_env.vector.GeneralaVectorEnv` owns the arrays of its games and calls the
loops; :class:`generala_env.game.Game` owns one game's and calls :func:`play_game`, whose
body is the loops' per-game bodies (:func:`decide_game`, :func:`land_game`,
:func:`mask_game`) at N = 1.

The loops take the state, the tables and the encoding tables as plain tuples
(``tuple(state)``), which numba takes faster than a NamedTuple, and name them again inside
(``GameState(*state)``): each loop takes a handful of arguments, not one per array. The
one-game call, whose cost is mostly numba's reading of its arguments, takes the tables packed
into one array each (:func:`pack_tables`, :func:`pack_encoding`) and the game's numbers as
one array (:data:`generala_env.engine.OneGame`).

Why numba: a step as NumPy operations over all games is some 70 passes over memory with
fancy indexing; a compiled loop does each game's step in one pass (what that is worth is
in ``docs/performance.md``). Without numba (or with ``GENERALA_NUMBA=0``) the same
functions run as plain Python: correct, only slow.

The loops' on-disk cache is keyed by the content of the file that defines a loop (not its
path: a clone and its install share the compiled loops), and a loop also holds the rules and
the encoding inlined from other files: :func:`cached_njit` keys it on those files too
(:data:`SOURCES_DIGEST`), so an edit of ``engine.py``, ``observe.py``, ``dice.py`` or ``dice_stream.py`` compiles
the loops anew instead of loading stale ones. Compiling them takes about
:data:`COMPILE_SECONDS`: a compile says so on stderr as it starts, one line for the compiles
that follow one another (:func:`announce_compile`); loops loaded from the cache say nothing.
"""

from __future__ import annotations

import hashlib
import os
import time
import types
import weakref
from pathlib import Path

import numpy as np

from . import dice, dice_stream, engine, observe
from .cache import notice, numba_cache_root, warn_once
from .dice import DICE, EMPTY_KEEP, NUM_MASKS
from .dice_stream import BLOCK, faces_into
from .engine import BAD_FACES, DONE, FIRST_ROLL, ILLEGAL, MOVER, OPEN, PENDING, POINTS, SERVED, SHORT, TOTALS, WON, GameState, Tables
from .observe import EncodingTables

try:
    if os.environ.get("GENERALA_NUMBA", "1") == "0":
        raise ImportError("disabled by GENERALA_NUMBA=0")
    from numba import njit

    NUMBA = True
except ImportError:  # plain Python: same results, much slower
    NUMBA = False

    def njit(*args, **kwargs):  # type: ignore[no-redef]  # numba's njit, as a no-op
        return (lambda f: f) if not args or not callable(args[0]) else args[0]


# An index numba need not check for being negative: the loops index games (g) and rows (j) by
# it. Only those: the rules do arithmetic on their numbers, and signed and unsigned must not
# mix there (the result would be a float).
U = np.uint64


def _sources_digest() -> str:
    """A digest of the other files whose code and constants the loops inline: the rules, the
    encoding and the dice tables ("" if one cannot be read)."""
    h = hashlib.sha256()
    try:
        for module in (engine, observe, dice, dice_stream):
            h.update(Path(module.__file__ or "").read_bytes())
    except OSError:
        return ""
    return h.hexdigest()


SOURCES_DIGEST = _sources_digest() if NUMBA else ""


def cache_root() -> Path:
    """Where numba's on-disk cache of this project's loops goes: ``numba/`` in the project's
    cache folder (:func:`generala_env.cache.cache_dir`, where the solvers keep their tables),
    or ``NUMBA_CACHE_DIR`` if the user set it; used only while it is private
    (:func:`generala_env.numba_cache.with_disk_cache`)."""
    root, parts = numba_cache_root()
    return root.joinpath(*parts)


# About how long this process waits for numba to compile the loops a first game and the
# batched env use, the first time (about 30 s of one core; measured in docs/install.md).
COMPILE_SECONDS = 30
# A compile that starts this long (seconds) after the last one ended is a new wait, announced
# again: the loops compile as they are first called, and a program can do other work between.
COMPILE_GAP = 2.0

# the project's compiled loops: their compiles are announced
_LOOPS: weakref.WeakSet = weakref.WeakSet()


def announce_compile(dispatcher, waits: int = 0) -> None:
    """One line on stderr (:func:`generala_env.cache.notice`) as numba starts compiling one of
    the project's loops: what is happening, about how long it takes, and where the result is
    kept. ``waits``: how many compiles this process announced before (0: this is the first)."""
    if getattr(getattr(dispatcher, "_cache", None), "on_disk", False):
        where = f"cached in {cache_root()} afterwards"
        what = "compiling the game engine for first use" if not waits else "compiling more of the game engine for first use"
    else:
        where = "its cache is not used, so each process compiles it again"
        what = "compiling the game engine" if not waits else "compiling more of the game engine"
    notice(f"compile {waits}", f"{what} ({'about' if not waits else 'up to about'} {COMPILE_SECONDS} s; {where})")


def _listen_for_compiles() -> None:
    """Have numba call :func:`announce_compile` when it starts compiling one of :data:`_LOOPS`
    and no compile of them ran in the last :data:`COMPILE_GAP` seconds (a loop read from the
    disk cache is not compiled: numba says nothing then)."""
    try:
        from numba.core import event
    except ImportError:  # a numba without events: it compiles in silence
        return

    class Compiles(event.Listener):
        def __init__(self) -> None:
            self.running = 0  # compiles of the loops under way (one can start another)
            self.ended = -float("inf")  # when the last one ended (time.monotonic)
            self.waits = 0

        def on_start(self, ev):
            if not self._ours(ev):
                return
            if not self.running and time.monotonic() - self.ended > COMPILE_GAP:
                announce_compile(ev.data["dispatcher"], self.waits)
                self.waits += 1
            self.running += 1

        def on_end(self, ev):
            if self._ours(ev):
                self.running = max(self.running - 1, 0)
                self.ended = time.monotonic()

        @staticmethod
        def _ours(ev) -> bool:
            dispatcher = ev.data.get("dispatcher") if isinstance(ev.data, dict) else None
            return dispatcher is not None and dispatcher in _LOOPS

    event.register("numba:compile", Compiles())


if NUMBA:
    _listen_for_compiles()


def disk_cached(dispatcher, digest: str = ""):
    """``dispatcher`` (a numba function) with the project's on-disk cache
    (:func:`generala_env.numba_cache.with_disk_cache`); compiled in memory, with one warning,
    where this numba lacks the classes that cache builds on. Its first compile in a process
    is announced (:func:`announce_compile`)."""
    _LOOPS.add(dispatcher)
    try:
        from .numba_cache import with_disk_cache
    except (ImportError, AttributeError) as e:  # another numba, without the classes the project's cache builds on
        warn_once("numba", f"numba's cache cannot be used with this numba ({type(e).__name__}: {e}): the loops are compiled without it")
        return dispatcher
    return with_disk_cache(dispatcher, digest)


def cached_njit(**options):
    """``njit(**options)`` with the project's on-disk cache
    (:func:`generala_env.numba_cache.with_disk_cache`): in :func:`cache_root`, never beside the
    sources (in ``site-packages`` pip would never remove the files, and others may write
    there), each file checked before numba unpickles it, and keyed on
    :data:`SOURCES_DIGEST` too: numba keys it on the defining file alone, so after an edit of
    the rules it would load the loops compiled from the old ones. Where the sources cannot be
    read the loop is compiled without the on-disk cache: slower to start, never stale. Agents
    that inline the rules into loops of their own (:mod:`generala_agents.batched`) use it too."""
    if not NUMBA:
        return njit

    def decorate(f):
        dispatcher = njit(**options)(f)
        if SOURCES_DIGEST:
            return disk_cached(dispatcher, SOURCES_DIGEST)
        _LOOPS.add(dispatcher)  # compiled in memory, and announced all the same
        return dispatcher

    return decorate


# The loops over games allocate nothing (their outputs come in) and run without numba's
# reference counts: with them, each call of a rule inlined in a loop counts every array of
# the tables it is given, in and out, which costs more than the rest of the game's step.
loop = cached_njit(error_model="numpy", _nrt=False)  # _nrt: numba's own option


def _compiled(functions) -> dict:
    """The rule functions, each compiled to be inlined where it is called, and calling the
    compiled others (a copy of each function whose globals name them)."""
    if not NUMBA:
        return {f.__name__: f for f in functions}
    out: dict = {}
    scopes = []
    for f in functions:
        scope = dict(f.__globals__)
        copy = types.FunctionType(f.__code__, scope, f.__name__, f.__defaults__, f.__closure__)
        copy.__qualname__ = f.__qualname__
        out[f.__name__] = njit(inline="always", error_model="numpy")(copy)
        scopes.append(scope)
    for scope in scopes:
        scope.update(out)
    return out


_R = _compiled(engine.RULES + observe.ENCODING)
served_pending, blocked_line, held, dice_thrown, landed = (_R[n] for n in ("served_pending", "blocked_line", "held", "dice_thrown", "landed"))
start_turn, legal, write_points, after_write = (_R[n] for n in ("start_turn", "legal", "write_points", "after_write"))
sheets_full = _R["sheets_full"]
is_winner, outcome_points = _R["is_winner"], _R["outcome_points"]
encode_turn, encode_sheets, _encode_game = _R["encode_turn"], _R["encode_sheets"], _R["encode_game"]

DIE_KEY = dice.KEY_WEIGHTS  # [face - 1]: what a die showing that face adds to a key


@njit(inline="always", error_model="numpy")
def cup_key(faces, at, g, n):
    """The face keys of the next ``n`` faces of game ``g``'s cup (``faces[g]`` from ``at[g, 0]``),
    summed; the cup moves past them (:mod:`generala_env.game_dice`)."""
    key, i = 0, U(at[g, 0])
    for d in range(U(n)):
        key += DIE_KEY[faces[g, i + d] - 1]
    at[g, 0] += n
    return key


@loop
def dice_needed(games, actions, roll, rules, need):
    """How many dice each action draws into ``need`` (:func:`~generala_env.engine.dice_thrown`)."""
    t = Tables(*rules)
    for j in range(len(games)):
        need[j] = dice_thrown(t, roll[games[j]], actions[j])


@njit(inline="always", error_model="numpy")
def new_game(st, g, t, key):
    """A new game ``g``: empty sheets, player 0 rolls five dice whose face keys sum to ``key``."""
    for p in range(t.num_players):
        for l in range(t.num_lines):
            st.sheets[g, p, l] = OPEN
    st.player[g] = 0
    st.writes[g] = 0
    st.over[g] = 0
    st.winner[g] = -1
    st.throw_keep[g] = -1
    st.roll[g], st.rolls_left[g], st.locked[g] = start_turn(t, key)


@loop
def new_games(games, faces, at, state, rules):
    """``Game.reset`` of each game: :func:`new_game` with five dice from the game's cup (which
    holds them: :meth:`generala_env.game_dice.GameDice.ensure`)."""
    st, t = GameState(*state), Tables(*rules)
    for j in range(U(len(games))):  # unsigned: see U
        g = U(games[j])
        new_game(st, g, t, cup_key(faces, at, g, DICE))


@njit(inline="always", error_model="numpy")
def decide_game(st, g, t, a):
    """The decision of legal action ``a`` in game ``g``, without its throw (``Game.decide``): a
    hold keeps its dice, a write fills the line and passes the turn; the state's ``throw_keep``
    is then the keep of the dice staying on the table while the rest are in the cup (-1 when
    the game ended: nothing is thrown) and ``throw_turn`` 1 if that throw is the next player's
    first roll. Returns the points written (0 for a hold)."""
    roll, rolls_left = st.roll[g], st.rolls_left[g]
    if a < NUM_MASKS:  # keep the held dice, throw the rest
        keep = held(t, roll, a)
        st.rolls_left[g] = rolls_left - 1
        st.locked[g] = keep
        st.throw_keep[g], st.throw_turn[g] = keep, 0
        return 0
    line, me = a - NUM_MASKS, st.player[g]
    generala_value = st.sheets[g, me, t.generala_line] if t.generala_line >= 0 else OPEN  # -1 would read the last line
    p = write_points(t, line, roll, rolls_left, generala_value)
    won = served_pending(t, rolls_left, roll, generala_value)
    st.sheets[g, me, line] = p
    st.writes[g] += 1
    over, st.player[g] = after_write(t, won, st.writes[g], me)
    st.over[g] = over
    if won:
        st.winner[g] = me
    st.throw_keep[g], st.throw_turn[g] = (-1 if over else EMPTY_KEEP), 1  # else the next player's first roll
    return p


@njit(inline="always", error_model="numpy")
def land_game(st, g, t, key):
    """The throw after :func:`decide_game` (``Game.land``): thrown dice whose face keys sum to
    ``key`` land beside the dice kept, or make the next player's first roll."""
    if st.throw_turn[g]:
        st.roll[g], st.rolls_left[g], st.locked[g] = start_turn(t, key)
    else:
        st.roll[g] = landed(t, st.throw_keep[g], key)
    st.throw_keep[g] = -1


@njit(inline="always", error_model="numpy")
def pending_in_game(st, g, t):
    """Whether a served generala is pending in game ``g`` (:func:`~generala_env.engine.served_pending`
    of its mover; the sheet is read only where a served generala can win)."""
    return t.served_win and served_pending(t, st.rolls_left[g], st.roll[g], st.sheets[g, st.player[g], t.generala_line])


@njit(inline="always", error_model="numpy")
def legal_in_game(st, g, t, a):
    """Whether action ``a`` (in range) is legal in game ``g``: one entry of :func:`mask_game`."""
    line_open = a >= NUM_MASKS and st.sheets[g, st.player[g], a - NUM_MASKS] == OPEN
    return legal(t, st.over[g], pending_in_game(st, g, t), st.rolls_left[g], st.roll[g], st.locked[g], a, line_open)


@njit(inline="always", error_model="numpy")
def mask_game(st, g, t, masks, j):
    """The legal mask of game ``g`` into ``masks[j]`` (every entry written)."""
    me, roll, rolls_left, locked, over = st.player[g], st.roll[g], st.rolls_left[g], st.locked[g], st.over[g]
    pending = pending_in_game(st, g, t)
    for a in range(NUM_MASKS):
        masks[j, a] = legal(t, over, pending, rolls_left, roll, locked, a, False)
    for l in range(t.num_lines):
        masks[j, NUM_MASKS + l] = legal(t, over, pending, rolls_left, roll, locked, NUM_MASKS + l, st.sheets[g, me, l] == OPEN)


@loop
def apply_actions(games, actions, faces, at, pcg, state, rules, pts, short):
    """Legal ``actions[j]`` in ``games[j]`` (:func:`decide_game`, then :func:`land_game`), the
    dice from each game's cup; the points written into ``pts[j]`` (0 for a reroll). A cup that
    holds fewer faces than the action throws draws a block from the game's stream (``pcg``:
    :mod:`generala_env.dice_stream`), as ``DiceCup.refill`` does; with no streams (an empty
    ``pcg``: given dice) the game is left as it was, ``short[j]`` true. Returns how many were short."""
    st, t = GameState(*state), Tables(*rules)
    n_short = 0
    for j in range(U(len(games))):  # unsigned: see U
        g, a = U(games[j]), actions[j]
        n = dice_thrown(t, st.roll[g], a)
        i, end = at[g, 0], at[g, 1]
        if end - i < n:
            if len(pcg) == 0:
                short[j] = True
                n_short += 1
                continue
            left = end - i  # the cup keeps what is left and draws a block
            for d in range(left):
                faces[g, d] = faces[g, i + d]
            faces_into(pcg, g, faces[g], left, BLOCK)
            at[g, 0], at[g, 1] = 0, left + BLOCK
        short[j] = False
        pts[j] = decide_game(st, g, t, a)
        if st.throw_keep[g] >= 0:
            land_game(st, g, t, cup_key(faces, at, g, n))
        else:
            at[g, 0] += n  # a write that ends the game throws the dice all the same, as the single env's
    return n_short


@loop
def legal_masks(games, masks, state, rules):
    """The legal mask of each game into ``masks[j]`` (:func:`mask_game`)."""
    st, t = GameState(*state), Tables(*rules)
    for j in range(U(len(games))):  # unsigned: see U
        mask_game(st, U(games[j]), t, masks, j)


# -- one game ---------------------------------------------------------------------------------
# numba reads a tuple of many arrays slowly at every call (a third of a microsecond for the
# rules' tables), one array fast: a one-game call takes the tables packed, each packed array a
# header of numbers (where each table starts, or its shape) and the tables after it.
_TABLES = 7  # Tables' array fields, in order
MOST = 6  # header: the six numbers of Tables, the most points a line holds, then where each of its arrays starts and where the last ends
_TABLES_AT = MOST + 1


def pack_tables(t: Tables) -> np.ndarray:
    """A rule set's :class:`~generala_env.engine.Tables` (arrays) as one int32 array, for :func:`play_game`
    (which also reads the most points a line holds, ``p[MOST]``, to check a state set by hand)."""
    arrays = [np.asarray(a).astype(np.int32).ravel() for a in t[:_TABLES]]
    head = [t.num_players, t.num_lines, t.generala_line, t.double_line, int(t.served_win), int(t.locked_holds), int(np.max(t.points))]
    at = _TABLES_AT + _TABLES + 1 + np.cumsum([0] + [len(a) for a in arrays])
    return np.concatenate([np.array(head + at.tolist(), dtype=np.int32), *arrays])


@njit(inline="always", error_model="numpy")
def unpack_tables(p):
    """:func:`pack_tables` read back: the :class:`~generala_env.engine.Tables`, views of ``p``."""
    a = _TABLES_AT
    return Tables(
        p[p[a] : p[a + 1]],
        p[p[a + 1] : p[a + 2]],
        p[p[a + 2] : p[a + 3]],
        p[p[a + 3] : p[a + 4]],
        p[p[a + 4] : p[a + 5]],
        p[p[a + 5] : p[a + 6]],
        p[p[a + 6] : p[a + 7]],
        np.int64(p[0]),
        np.int64(p[1]),
        np.int64(p[2]),
        np.int64(p[3]),
        p[4] != 0,
        p[5] != 0,
    )


BAD_OBSERVE = 4  # step_game's status for an observation that does not fit the game (nothing changed)
_NUMBERS = 13  # EncodingTables' int fields, dice_at ... lead_at, then generala_line and double_line


def pack_encoding(e: EncodingTables, size: int) -> tuple[np.ndarray, np.ndarray]:
    """:class:`~generala_env.observe.EncodingTables` of observations of ``size`` values as an
    int32 array (its numbers, the shapes of its tables, ``size``, then ``opponent_at``) and a
    float32 one (``total_max``, then ``points_now`` and ``points_obs``), for
    :func:`play_game_observed`: read them, never write them."""
    numbers = [v for k, v in e._asdict().items() if k not in ("points_now", "points_obs", "total_max", "opponent_at")]
    shapes = [*e.points_now.shape, *e.points_obs.shape, e.opponent_at.shape[0], size]
    ints = np.array(numbers + shapes + e.opponent_at.ravel().tolist(), dtype=np.int32)
    floats = np.concatenate([np.array([e.total_max], dtype=np.float32), e.points_now.ravel(), e.points_obs.ravel()]).astype(np.float32)
    # where the call writes into out: read-only (a read-only argument costs numba a few
    # hundredths of a µs a call, so only this one is)
    ints.flags.writeable = False
    return ints, floats


@njit(inline="always", error_model="numpy")
def unpack_encoding(ints, floats):
    """:func:`pack_encoding` read back: the :class:`~generala_env.observe.EncodingTables`, views of the two arrays."""
    n, i = ints, np.int64
    r, f, lines, ol, ow, opponents = i(n[_NUMBERS]), i(n[_NUMBERS + 1]), i(n[_NUMBERS + 2]), i(n[_NUMBERS + 3]), i(n[_NUMBERS + 4]), i(n[_NUMBERS + 5])
    now = 1 + r * f * lines
    points_now = floats[1:now].reshape((r, f, lines))
    points_obs = floats[now : now + ol * ow].reshape((ol, ow))
    at = _NUMBERS + 7
    opponent_at = n[at : at + 3 * opponents].reshape((opponents, i(3)))
    return EncodingTables(
        points_now, points_obs, np.float64(floats[0]), n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7], n[8], n[9], n[10], opponent_at, n[11], n[12]
    )


@njit(inline="always", error_model="numpy")
def state_of(numbers, sheets):
    """:func:`generala_env.engine.state_of` compiled: the state whose numbers are the rows of ``numbers``."""
    n = numbers
    return GameState(n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7], n[8], sheets)


# A Game holds one game's numbers ``(len(NUMBERS), 1)`` and sheets ``(1, players, lines)``
# (engine.state_of names them), its legal mask ``(1, actions)`` and its facts
# (engine.facts_size); each call below changes the state by the loops' bodies at N = 1 (a game is
# the engine at N = 1), then leaves the mask and the facts of the new state (:func:`look_one`).
# The state is checked in Python before it gets here (Game's setters, set_state): these calls
# trust it. The dice come from a DiceCup's faces, from ``at[0]`` up to ``at[1]``.
@njit(inline="always", error_model="numpy")
def faces_short(faces, at, n):
    """SHORT if fewer than ``n`` faces are left in ``faces`` from ``at[0]``, BAD_FACES if the
    cup's position is outside its faces or one of those ``n`` is not 1 to 6, else DONE (a
    DiceCup is the caller's: its numbers are checked before a face is read)."""
    if not 0 <= at[0] <= at[1] <= len(faces):
        return BAD_FACES
    if at[1] - at[0] < n:
        return SHORT
    i = U(at[0])
    for d in range(U(n)):  # noqa: SIM110  # a loop, not all() of a generator: compiled by numba
        if not 1 <= faces[i + d] <= 6:
            return BAD_FACES
    return DONE


@njit(inline="always", error_model="numpy")
def faces_key(faces, at, n):
    """The face keys of the next ``n`` faces of ``faces`` (from ``at[0]``) summed; ``at[0]`` moves past them."""
    key, i = 0, U(at[0])
    for d in range(U(n)):
        key += DIE_KEY[faces[i + d] - 1]
    at[0] += n
    return key


@njit(inline="always", error_model="numpy")
def look_one(st, t, mask, facts):
    """What the state decides, into the game's mask and facts: the lines written (full sheets
    end the game), every seat's total and lines filled, a served generala pending, and the legal
    mask (none while a throw is pending after a decision)."""
    writes = 0
    for p in range(t.num_players):
        total, filled = 0, 0
        for l in range(t.num_lines):
            if st.sheets[0, p, l] != OPEN:
                total += st.sheets[0, p, l]
                filled += 1
        facts[TOTALS + p], facts[TOTALS + t.num_players + p] = total, filled
        writes += filled
    st.writes[0] = writes
    if sheets_full(t, writes):
        st.over[0] = 1
    facts[PENDING] = pending_in_game(st, 0, t)
    if st.throw_keep[0] >= 0:
        for a in range(mask.shape[1]):
            mask[0, a] = False
    else:
        mask_game(st, 0, t, mask, 0)


@njit(inline="always", error_model="numpy")
def act_one(st, t, faces, at, a, facts, throw):
    """Legal action ``a`` decided (and, with ``throw``, its dice thrown from ``faces``); the
    move's facts. ILLEGAL or SHORT (too few faces left) change nothing."""
    if st.throw_keep[0] >= 0 or not (0 <= a < NUM_MASKS + t.num_lines) or not legal_in_game(st, 0, t, a):
        return ILLEGAL
    n = dice_thrown(t, st.roll[0], a)
    if throw:
        status = faces_short(faces, at, n)
        if status != DONE:
            return status
    facts[MOVER], facts[SERVED] = st.player[0], st.rolls_left[0] == FIRST_ROLL
    facts[POINTS] = decide_game(st, 0, t, a)
    facts[WON] = st.winner[0] >= 0  # the game was on: its winner is this write's
    if throw:
        if st.throw_keep[0] >= 0:
            land_game(st, 0, t, faces_key(faces, at, n))
        else:
            at[0] += n  # a write that ends the game throws the dice all the same (the faces are handed out in order)
    return DONE


@loop
def look_game(numbers, sheets, rules, mask, facts):
    """:func:`look_one` of a game (after its state was set)."""
    look_one(state_of(numbers, sheets), unpack_tables(rules), mask, facts)


@loop
def step_game(numbers, sheets, rules, faces, at, mask, facts, action, ints, floats, seat, out):
    """One game's step: legal ``action`` decided and its dice thrown (:func:`act_one`), then
    :func:`look_one`; and, unless ``out`` is empty, the observation from ``seat`` into ``out``,
    the encoding's tables packed in ``ints`` and ``floats`` (:func:`pack_encoding`; they must be
    of this game's players and lines, ``out`` of the encoding's size and ``seat`` a seat, or
    nothing happens: BAD_OBSERVE). Returns the status."""
    n = ints  # the encoding must be of this game's players and lines, seen from a seat, into out
    if len(out) and not (0 <= seat < rules[0] and n[_NUMBERS + 5] + 1 == rules[0] and n[_NUMBERS + 2] == rules[1] and len(out) == n[_NUMBERS + 6]):
        return BAD_OBSERVE
    st, t = state_of(numbers, sheets), unpack_tables(rules)
    status = act_one(st, t, faces, at, action, facts, True)
    if status == SHORT or status == BAD_FACES:  # noqa: SIM109  # compiled by numba: two comparisons
        return status
    look_one(st, t, mask, facts)
    if len(out):
        _encode_game(out, unpack_encoding(ints, floats), st.roll[0], st.rolls_left[0], st.locked[0], facts[PENDING] != 0, sheets[0], seat)
    return status


@loop
def decide_one(numbers, sheets, rules, mask, facts, action):
    """One game's decision of legal ``action`` without its throw (the dice model's afterstate),
    then :func:`look_one`. Returns the status."""
    st, t = state_of(numbers, sheets), unpack_tables(rules)
    status = act_one(st, t, numbers[0], numbers[0], action, facts, False)  # no faces: nothing is thrown
    look_one(st, t, mask, facts)
    return status


@loop
def land_one(numbers, sheets, rules, faces, at, mask, facts):
    """The throw pending after :func:`decide_one`, from ``faces``; then :func:`look_one`.
    Returns the status (ILLEGAL: no throw pending)."""
    st, t = state_of(numbers, sheets), unpack_tables(rules)
    keep = st.throw_keep[0]
    if keep < 0:
        return ILLEGAL
    n = DICE if st.throw_turn[0] else DICE - t.keep_size[keep]
    status = faces_short(faces, at, n)
    if status != DONE:
        return status
    land_game(st, 0, t, faces_key(faces, at, n))
    look_one(st, t, mask, facts)
    return DONE


@loop
def new_game_one(numbers, sheets, rules, faces, at, mask, facts):
    """A new game (:func:`new_game`) on five faces of ``faces``; then :func:`look_one`."""
    status = faces_short(faces, at, DICE)
    if status != DONE:
        return status
    st, t = state_of(numbers, sheets), unpack_tables(rules)
    new_game(st, 0, t, faces_key(faces, at, DICE))
    look_one(st, t, mask, facts)
    return DONE


@loop
def encode(games, seat, out, sheet_obs, sheets_seen, state, rules, enc):
    """``Encoder.encode(game, seat[g])`` of each game ``g`` of ``games`` into ``out[j]``.

    The slices the sheets alone decide (``own_open`` to the end) are kept in row ``g`` of
    ``sheet_obs`` and encoded anew only when the game's ``writes`` differs from
    ``sheets_seen[g]`` (set it to -1 to force it); the turn's slices are encoded at every call.
    """
    st, t, e = GameState(*state), Tables(*rules), EncodingTables(*enc)
    own_open, size = U(e.open_at), U(out.shape[1])
    for j in range(U(len(games))):  # unsigned: see U
        g = U(games[j])
        me, roll, rolls_left = seat[g], st.roll[g], st.rolls_left[g]
        encode_turn(out, j, e, roll, rolls_left, st.locked[g], pending_in_game(st, g, t), st.sheets, g, me)
        if st.writes[g] != sheets_seen[g]:  # a line was written since: the sheet slices anew
            sheets_seen[g] = st.writes[g]
            encode_sheets(sheet_obs, g, e, st.sheets, g, me)
        for i in range(own_open, size):
            out[j, i] = sheet_obs[g, i]


@loop
def encode_game(out, ints, floats, roll, rolls_left, locked, pending, sheets, seat):
    """:func:`generala_env.observe.encode_game` compiled, with the encoding's tables packed as
    :func:`play_game_observed` takes them (:func:`pack_encoding`): what
    :meth:`Encoder.encode <generala_env.encoding.Encoder.encode>` calls. Numba reads a few arrays
    faster than a tuple of many values, and this call's cost is mostly that reading."""
    _encode_game(out, unpack_encoding(ints, floats), roll, rolls_left, locked, pending, sheets, seat)


@loop
def results(games, seat, state, rules, totals, winner, win_reward):
    """Final totals, the winner (-1 on a shared win) and the agent's win reward (+1 / 0 / -1) of
    ended games, by the rules' :func:`~generala_env.engine.is_winner` and
    :func:`~generala_env.engine.outcome_points`."""
    st, t = GameState(*state), Tables(*rules)
    for j in range(U(len(games))):  # unsigned: see U
        g = U(games[j])
        best = -1
        for p in range(t.num_players):
            total = 0
            for l in range(t.num_lines):
                if st.sheets[g, p, l] != OPEN:
                    total += st.sheets[g, p, l]
            totals[j, p] = total
            best = max(best, total)
        served_winner, n, w = st.winner[g], 0, -1
        for p in range(t.num_players):
            if is_winner(served_winner, p, totals[j, p], best):
                n += 1
                w = p
        s = seat[g]
        winner[j] = w if n == 1 else -1
        win_reward[j] = 2.0 * outcome_points(is_winner(served_winner, s, totals[j, s], best), n) - 1.0


@cached_njit(error_model="numpy")
def accepted(actions, masks):
    """Whether each game's action is in range and legal."""
    out = np.empty(len(actions), dtype=np.bool_)
    for i in range(len(actions)):
        a = actions[i]
        out[i] = 0 <= a < masks.shape[1] and masks[i, a]
    return out


@cached_njit(error_model="numpy")
def uniform_legal(masks, u):
    """The ``floor(u[i] * n_legal)``-th legal action of each row (``u`` uniform in [0, 1)).

    Branch-free: the chosen index is the number of actions before which fewer than
    ``k + 1`` legal ones have been seen.
    """
    rows, num_actions = U(masks.shape[0]), U(masks.shape[1])  # unsigned indices: no fix-up of negative ones
    m = masks.view(np.uint8)
    out = np.empty(rows, dtype=np.int64)
    for i in range(rows):
        n = np.uint32(0)
        for a in range(num_actions):
            n += m[i, a]
        k = np.uint32(u[i] * n)
        seen = np.uint32(0)
        index = np.uint32(0)
        for a in range(num_actions):
            seen += m[i, a]
            index += seen <= k
        out[i] = index
    return out


__all__ = ["NUMBA", "FIRST_ROLL", "U", "njit", "cached_njit", "cache_root", "blocked_line", "GameState", "Tables", "EMPTY_KEEP"]
