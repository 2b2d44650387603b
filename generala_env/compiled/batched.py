"""The rules of :mod:`generala_env.core.engine` and the encoding of :mod:`generala_env.core.observe`,
compiled by numba (:mod:`generala_env.compiled.compiling`): loops over many games, and the per-game
bodies that :mod:`generala_env.compiled.one_game` runs for one game.

They repeat no rule: each compiles the same functions (:data:`generala_env.core.engine.RULES`,
:data:`generala_env.core.observe.ENCODING`), inlined (``inline="always"``), over the games' state,
a :class:`~generala_env.core.engine.GameState` of arrays indexed by game, and the rule set's
:class:`~generala_env.core.engine.Tables` as arrays (agents that play batched, such as
:mod:`generala_agents.batched`, compile their loops the same way with :func:`cached_njit`).
:class:`generala_env.envs.vector.GeneralaVectorEnv` owns the arrays of its games and calls the
loops; :class:`generala_env.core.game.Game` owns one game's and calls :mod:`generala_env.compiled.one_game`,
whose calls are these per-game bodies (:func:`new_game`, :func:`decide_game`,
:func:`land_game`, :func:`mask_game`) at N = 1.

The loops take the state, the tables and the encoding tables as plain tuples
(``tuple(state)``), which numba takes faster than a NamedTuple, and name them again inside
(``GameState(*state)``): each loop takes a handful of arguments, not one per array.
"""

from __future__ import annotations

import numpy as np

from generala_env.compiled.compiling import (
    COMPILE_SECONDS,
    NUMBA,
    SOURCES_DIGEST,
    U,
    _compiled,
    announce_compile,
    cache_root,
    cached_njit,
    disk_cached,
    loop,
    njit,
)
from generala_env.compiled.dice_stream import cup_fill
from generala_env.core import dice, engine, observe
from generala_env.core.dice import DICE, EMPTY_KEEP, NUM_MASKS
from generala_env.core.engine import FIRST_ROLL, OPEN, GameState, Tables
from generala_env.core.observe import EncodingTables

_R = _compiled(engine.RULES + observe.ENCODING)
served_pending, blocked_line, held, dice_thrown, landed = (_R[n] for n in ("served_pending", "blocked_line", "held", "dice_thrown", "landed"))
start_turn, legal, write_points, after_write = (_R[n] for n in ("start_turn", "legal", "write_points", "after_write"))
sheets_full = _R["sheets_full"]
is_winner, outcome_points = _R["is_winner"], _R["outcome_points"]
encode_turn, encode_sheets, _encode_game = _R["encode_turn"], _R["encode_sheets"], _R["encode_game"]

DIE_KEY = dice.KEY_WEIGHTS  # [face - 1]: what a die showing that face adds to a key


@njit(inline="always", error_model="numpy")
def cup_key(faces, at, g, n):
    """The face keys of the next ``n`` faces of game ``g``'s cup (``faces[g]`` from ``at[g, 0]``:
    :mod:`generala_env.compiled.dice_stream`'s cups, or given faces: :func:`~generala_env.core.game_dice.given_cups`),
    summed; the cup moves past them."""
    key, i = 0, U(at[g, 0])
    for d in range(U(n)):
        key += DIE_KEY[faces[g, i + d] - 1]
    at[g, 0] += n
    return key


@loop
def dice_needed(games, actions, roll, rules, need):
    """How many dice each action draws into ``need`` (:func:`~generala_env.core.engine.dice_thrown`)."""
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
    """``Game.reset`` of each game: :func:`new_game` with the next five faces of the game's cup
    (which holds them: :func:`generala_env.core.game_dice.draw_new_games`, or given)."""
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
    """Whether a served generala is pending in game ``g`` (:func:`~generala_env.core.engine.served_pending`
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


@njit(inline="always", error_model="numpy")
def apply_game(st, g, t, a, n, faces, at, pcg):
    """Legal action ``a`` in game ``g`` (:func:`decide_game`, then :func:`land_game`), throwing
    ``n`` dice (:func:`~generala_env.core.engine.dice_thrown`) from the game's cup (``faces``, ``at``),
    which first draws a block from the game's stream when it holds fewer (``pcg``; empty: the
    faces were given); the points written (0 for a reroll)."""
    if len(pcg):
        cup_fill(pcg, faces, at, g, n)
    p = decide_game(st, g, t, a)
    key = cup_key(faces, at, g, n)  # a write that ends the game throws them all the same, as the single env's
    if st.throw_keep[g] >= 0:
        land_game(st, g, t, key)
    return p


@loop
def apply_actions(games, actions, faces, at, pcg, state, rules, pts, short):
    """Legal ``actions[j]`` in ``games[j]`` (:func:`decide_game`, then :func:`land_game`); the
    points written into ``pts[j]`` (0 for a reroll). The dice come from each game's cup
    (``faces``, ``at``), which draws a block from the game's stream (``pcg``) when it holds fewer
    than the action throws, as ``DiceCup.throw`` does (:mod:`generala_env.compiled.dice_stream`); with no
    streams (``pcg`` empty) they are given, and a game given fewer than it throws is left as it
    was, ``short[j]`` true. Returns how many were short."""
    st, t = GameState(*state), Tables(*rules)
    given, n_short = len(pcg) == 0, 0
    for j in range(U(len(games))):  # unsigned: see U
        g, a = U(games[j]), actions[j]
        n = dice_thrown(t, st.roll[g], a)
        if given and at[g, 1] - at[g, 0] < n:
            short[j] = True
            n_short += 1
            continue
        short[j] = False
        pts[j] = apply_game(st, g, t, a, n, faces, at, pcg)
    return n_short


@loop
def legal_masks(games, masks, state, rules):
    """The legal mask of each game into ``masks[j]`` (:func:`mask_game`)."""
    st, t = GameState(*state), Tables(*rules)
    for j in range(U(len(games))):  # unsigned: see U
        mask_game(st, U(games[j]), t, masks, j)


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


__all__ = [
    "COMPILE_SECONDS",
    "EMPTY_KEEP",
    "FIRST_ROLL",
    "NUMBA",
    "SOURCES_DIGEST",
    "U",
    "EncodingTables",
    "GameState",
    "Tables",
    "announce_compile",
    "blocked_line",
    "cache_root",
    "cached_njit",
    "disk_cached",
    "loop",
    "njit",
]
