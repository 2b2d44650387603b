"""One game's compiled calls: the loops' per-game bodies of :mod:`generala_env.compiled.batched` at N = 1.

A :class:`~generala_env.core.game.Game` holds one game's numbers ``(len(NUMBERS), 1)`` and sheets
``(1, players, lines)`` (:func:`generala_env.core.engine.state_of` names them), its legal mask
``(1, actions)`` and its facts (:func:`generala_env.core.engine.facts_size`); each call below changes
the state by those bodies, then leaves the mask and the facts of the new state
(:func:`look_one`). The state is checked in Python before it gets here (Game's setters,
``set_state``): these calls trust it. The dice come from a DiceCup's faces, from ``at[0]`` up
to ``at[1]``, checked here (the cup is the caller's object).

numba reads a tuple of many arrays slowly at every call (a third of a microsecond for the
rules' tables), one array fast: these calls take the tables packed, each packed array a header
of numbers (where each table starts, or its shape) and the tables after it
(:func:`pack_tables`, :func:`pack_encoding`).
"""

from __future__ import annotations

import numpy as np

from generala_env.compiled.batched import (
    DIE_KEY,
    U,
    _encode_game,
    decide_game,
    dice_thrown,
    land_game,
    legal_in_game,
    loop,
    mask_game,
    new_game,
    njit,
    pending_in_game,
    sheets_full,
)
from generala_env.core.dice import DICE, NUM_MASKS
from generala_env.core.engine import BAD_FACES, DONE, FIRST_ROLL, ILLEGAL, MOVER, OPEN, PENDING, POINTS, SERVED, SHORT, TOTALS, WON, GameState, Tables
from generala_env.core.observe import EncodingTables

_TABLES = 7  # Tables' array fields, in order
MOST = 6  # header: the six numbers of Tables, the most points a line holds, then where each of its arrays starts and where the last ends
_TABLES_AT = MOST + 1


def pack_tables(t: Tables) -> np.ndarray:
    """A rule set's :class:`~generala_env.core.engine.Tables` (arrays) as one int32 array, for the calls
    below (its header also holds the most points a line holds, ``p[MOST]``)."""
    arrays = [np.asarray(a).astype(np.int32).ravel() for a in t[:_TABLES]]
    head = [t.num_players, t.num_lines, t.generala_line, t.double_line, int(t.served_win), int(t.locked_holds), int(np.max(t.points))]
    at = _TABLES_AT + _TABLES + 1 + np.cumsum([0] + [len(a) for a in arrays])
    return np.concatenate([np.array(head + at.tolist(), dtype=np.int32), *arrays])


@njit(inline="always", error_model="numpy")
def unpack_tables(p):
    """:func:`pack_tables` read back: the :class:`~generala_env.core.engine.Tables`, views of ``p``."""
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
    """:class:`~generala_env.core.observe.EncodingTables` of observations of ``size`` values as an
    int32 array (its numbers, the shapes of its tables, ``size``, then ``opponent_at``) and a
    float32 one (``total_max``, then ``points_now`` and ``points_obs``), for
    :func:`step_game`: read them, never write them."""
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
    """:func:`pack_encoding` read back: the :class:`~generala_env.core.observe.EncodingTables`, views of the two arrays."""
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
    """:func:`generala_env.core.engine.state_of` compiled: the state whose numbers are the rows of ``numbers``."""
    n = numbers
    return GameState(n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7], n[8], sheets)


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
def encode_game(out, ints, floats, roll, rolls_left, locked, pending, sheets, seat):
    """:func:`generala_env.core.observe.encode_game` compiled, with the encoding's tables packed as
    :func:`step_game` takes them (:func:`pack_encoding`): what
    :meth:`Encoder.encode <generala_env.core.encoding.Encoder.encode>` calls. Numba reads a few arrays
    faster than a tuple of many values, and this call's cost is mostly that reading."""
    _encode_game(out, unpack_encoding(ints, floats), roll, rolls_left, locked, pending, sheets, seat)


__all__ = ["BAD_OBSERVE", "decide_one", "encode_game", "land_one", "look_game", "new_game_one", "pack_encoding", "pack_tables", "step_game", "unpack_tables"]
