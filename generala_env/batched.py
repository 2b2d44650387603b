"""The rules of :mod:`generala_env.game` and the encoding of :mod:`generala_env.encoding`,
for many games at once: loops over games, compiled by numba.

Each function reads like the single-game code it mirrors (``Game._apply``,
``Game.legal_mask``, ``Encoder.encode``), one game per loop iteration, over state arrays
indexed by game (agents that play batched, such as :mod:`agents.batched`, compile their
loops the same way with :func:`njit`). :class:`generala_env.vector.GeneralaVectorEnv`
owns the arrays and calls these.

Why numba: a step as NumPy operations over all games is some 70 passes over memory with
fancy indexing; a compiled loop does each game's step in one pass (what that is worth is
in ``docs/performance.md``). Without numba (or with ``GENERALA_NUMBA=0``) the same
functions run as plain Python: correct, only slow.

Four rules keep the loops fast: no array views or calls with array arguments per game
(each costs about as much as the game's whole step); unsigned indices in the hot loops
(numba then skips its fix-up of negative indices); small integer tables; and NumPy's
error model (no zero-division checks around every division; no divisor here is ever zero).

The rules come in as data (the points table, the generala and double generala lines,
whether a served generala wins), as :class:`~generala_env.rules.RuleSet` and
:mod:`~generala_env.scoring` give them. The one rule the loops decide themselves, that a
double generala needs a scored generala, is :func:`blocked_line`, which mirrors
:func:`generala_env.scoring.blocked_line`.

The float arithmetic is the encoder's, operation for operation (``int / float32`` is
done in float64 and rounded to float32, as NumPy does), so observations agree bit for bit.
"""

from __future__ import annotations

import os

import numpy as np

from .dice import (
    ALL_HELD,
    DICE,
    EMPTY_KEEP,
    HOLD_KEEP,
    KEEP_CONTAINS,
    KEEP_COUNTS,
    KEEP_SIZE,
    KEY_WEIGHTS,
    NUM_MASKS,
    ROLL_COUNTS,
    ROLL_OF_KEY,
    ROLLS,
)
from .game import OPEN, ROLLS_PER_TURN

try:
    if os.environ.get("GENERALA_NUMBA", "1") == "0":
        raise ImportError("disabled by GENERALA_NUMBA=0")
    from numba import njit

    NUMBA = True
except ImportError:  # plain Python: same results, much slower
    NUMBA = False

    def njit(*args, **kwargs):  # type: ignore[no-redef]  # numba's njit, as a no-op
        return (lambda f: f) if not args or not callable(args[0]) else args[0]


FIRST_ROLL = ROLLS_PER_TURN - 1  # rolls_left right after a turn's first roll
U = np.uint64  # an index numba need not check for being negative

# dice tables as the loops index them (small integer types: fewer cache misses)
HOLD_KEEP_I = HOLD_KEEP.astype(np.int16)
KEEP_SIZE_I = KEEP_SIZE.astype(np.int8)
KEEP_KEY = (KEEP_COUNTS.astype(np.int64) @ KEY_WEIGHTS).astype(np.int32)  # base-6 key of a keep's face counts
ROLL_OF_KEY_I = ROLL_OF_KEY.astype(np.int16)
DIE_KEY = np.array([6**i for i in range(6)], dtype=np.int32)  # what a die showing face i + 1 adds to a key
FIVE_ALIKE = ROLL_COUNTS.max(axis=1) == DICE
DICE_OBS = np.concatenate([ROLL_COUNTS / 5.0, ROLLS / 6.0], axis=1).astype(np.float32)  # dice_counts, dice_sorted
LOCKED_OBS = (KEEP_COUNTS / 5.0).astype(np.float32)  # locked_counts


@njit(cache=True, error_model="numpy")
def served_pending(served_win, rolls_left, roll, generala_line):
    """``Game.served_generala_pending``, from one game's ``rolls_left``, ``roll`` and the
    mover's generala line. (The loops below pass scalars: a call with array arguments
    costs more than the rest of a game's step; they test ``served_win`` first so as not
    to read the sheet when served generalas never win.)"""
    return served_win and rolls_left == FIRST_ROLL and FIVE_ALIKE[roll] and generala_line == OPEN


@njit(cache=True, error_model="numpy")
def blocked_line(dbl, generala_points):
    """:func:`generala_env.scoring.blocked_line` for the loops: the line on which a write
    scores 0 whatever the dice (-1: none), from the double generala line ``dbl`` (-1 if the
    sheet has none) and what the seat's generala line holds (``OPEN`` when open). The one
    place the loops say that a double generala needs a scored generala."""
    return dbl if dbl >= 0 and not generala_points > 0 else -1


@njit(cache=True, error_model="numpy")
def dice_needed(games, actions, roll):
    """How many dice each action draws: the dice not held, or 5 for a write (the next first roll)."""
    need = np.empty(len(games), dtype=np.int64)
    for j in range(len(games)):
        a = actions[j]
        need[j] = DICE - KEEP_SIZE_I[HOLD_KEEP_I[roll[games[j]], a]] if a < NUM_MASKS else DICE
    return need


@njit(cache=True, error_model="numpy")
def throw_key(throw, n, key):
    """``key`` plus the first ``n`` dice of a throw.

    A throw is five dice coded as one number below ``6 ** 5``: die ``d`` shows
    ``throw // 6 ** d % 6 + 1``.
    """
    for _ in range(n):
        key += DIE_KEY[throw % 6]
        throw //= 6
    return key


@njit(cache=True, error_model="numpy")
def new_games(games, throws, roll, rolls_left, locked, player, writes, over, winner, sheets, sheets_seen):
    """``Game.reset`` of each game: empty sheets, player 0 rolls the five dice of ``throws[j]``."""
    for j in range(len(games)):
        g = games[j]
        sheets[g] = OPEN
        sheets_seen[g] = -1
        player[g] = 0
        writes[g] = 0
        over[g] = False
        winner[g] = -1
        roll[g] = ROLL_OF_KEY_I[throw_key(throws[j], DICE, 0)]
        rolls_left[g] = FIRST_ROLL
        locked[g] = EMPTY_KEEP


# long argument list: each state array apart (the typed state of the one-engine work replaces it)
@njit(cache=True, error_model="numpy")
def apply_actions(games, actions, throws, roll, rolls_left, locked, player, writes, over, winner, sheets, points, gen, dbl, served_win):
    """``Game._apply`` for each game: legal ``actions[j]`` in ``games[j]``, dice from ``throws[j]``.

    Returns the points written (0 for a reroll). ``winner`` is the served generala winner (-1: none).
    """
    num_players, num_lines = sheets.shape[1], sheets.shape[2]
    pts = np.zeros(len(games), dtype=np.int64)
    for j in range(U(len(games))):  # unsigned indices: see encode()
        g, a = U(games[j]), U(actions[j])
        if a < NUM_MASKS:  # keep the held dice, throw the rest
            keep = U(HOLD_KEEP_I[U(roll[g]), a])
            roll[g] = ROLL_OF_KEY_I[U(throw_key(throws[j], DICE - KEEP_SIZE_I[keep], KEEP_KEY[keep]))]
            rolls_left[g] -= 1
            locked[g] = keep
            continue
        line, me = a - U(NUM_MASKS), U(player[g])
        p = points[line, U(roll[g]), U(1) if rolls_left[g] == FIRST_ROLL else U(0)]
        if line == dbl and line == blocked_line(dbl, sheets[g, me, gen]):
            p = 0  # blocked_line names this line or none: a write elsewhere need not read the sheet
        won = served_win and served_pending(served_win, rolls_left[g], roll[g], sheets[g, me, gen])
        sheets[g, me, line] = p
        writes[g] += 1
        pts[j] = p
        if won:
            winner[g] = me
            over[g] = True
        elif writes[g] == num_players * num_lines:
            over[g] = True
        else:  # the next player's first roll
            player[g] = (me + U(1)) % U(num_players)
            roll[g] = ROLL_OF_KEY_I[throw_key(throws[j], DICE, 0)]
            rolls_left[g] = FIRST_ROLL
            locked[g] = EMPTY_KEEP
    return pts


@njit(cache=True, error_model="numpy")
def legal_masks(games, masks, roll, rolls_left, locked, player, over, sheets, gen, served_win, locked_holds):
    """``Game.legal_mask`` of each game into ``masks[j]`` (rows must start all false)."""
    num_lines = U(sheets.shape[2])
    for j in range(U(len(games))):  # unsigned indices: see encode()
        g = U(games[j])
        if over[g]:
            continue
        me, r = U(player[g]), U(roll[g])
        if served_win and served_pending(served_win, rolls_left[g], r, sheets[g, me, gen]):
            masks[j, NUM_MASKS + gen] = True
            continue
        for l in range(num_lines):
            masks[j, U(NUM_MASKS) + l] = sheets[g, me, l] == OPEN
        if rolls_left[g] > 0:
            k = U(locked[g])
            for m in range(U(ALL_HELD)):
                masks[j, m] = not locked_holds or KEEP_CONTAINS[U(HOLD_KEEP_I[r, m]), k]


# long: one pass over each game writes every slice (a call per slice costs more than the slice)
@njit(cache=True, error_model="numpy")
def encode(
    games,
    seat,
    out,
    obs,
    sheets_seen,
    roll,
    rolls_left,
    locked,
    player,
    writes,
    sheets,
    points_now,
    points_obs,
    total_max,
    at,
    opponent_at,
    gen,
    dbl,
    served_win,
):
    """``Encoder.encode(game, seat)`` of each game into ``out[j]`` (every entry written).

    The slices the sheets alone decide (``own_open`` to the end) are kept in row ``g`` of
    ``obs`` and recomputed only when the game's ``writes`` differs from ``sheets_seen``
    (set it to -1 to force it); each call writes the dice slices and ``points_now`` and
    copies those. ``points_now[roll, first, line]``: points / line max (float32);
    ``points_obs[line, v]``: ``v`` points written / line max, rounded to float32 as the
    encoder does; ``at``: the starts of the slices (see ``GeneralaVectorEnv``);
    ``opponent_at[k - 1]``: opponent ``k``'s open, points and total starts.

    Indices are unsigned (``U``) where they can be: numba then skips the fix-up of
    negative indices (``docs/performance.md``). Signed and unsigned
    must not mix in index arithmetic (the result would be a float).
    """
    num_players, num_lines, size = U(sheets.shape[1]), U(sheets.shape[2]), U(obs.shape[1])
    dice_at, rolls_left_at, first_at, locked_at, served_at = U(at[0]), U(at[1]), U(at[2]), U(at[3]), U(at[4])
    now_at, open_at, points_at, total_at, round_at, lead_at = U(at[5]), U(at[6]), U(at[7]), U(at[8]), U(at[9]), U(at[10])
    for j in range(U(len(games))):
        g = U(games[j])
        r, me, rl, k = U(roll[g]), U(seat[g]), U(rolls_left[g]), U(locked[g])
        first = U(1) if rl == FIRST_ROLL else U(0)
        for i in range(U(11)):
            out[j, dice_at + i] = DICE_OBS[r, i]
        for i in range(U(3)):
            out[j, rolls_left_at + i] = 1.0 if i == rl else 0.0
        out[j, first_at] = first
        for i in range(U(6)):
            out[j, locked_at + i] = LOCKED_OBS[k, i]
        out[j, served_at] = 1.0 if served_win and served_pending(served_win, rl, r, sheets[g, player[g], gen]) else 0.0
        for l in range(num_lines):  # without branches: open lines are unpredictable
            out[j, now_at + l] = points_now[r, first, l] * np.float32(sheets[g, me, l] == OPEN)
        blocked = blocked_line(dbl, sheets[g, me, gen])
        if blocked >= 0:
            out[j, now_at + U(blocked)] = 0.0

        if writes[g] != sheets_seen[g]:  # a line was written since: the sheet slices anew
            sheets_seen[g] = writes[g]
            own = 0
            filled = 0
            for l in range(num_lines):
                v = sheets[g, me, l]
                if v == OPEN:
                    obs[g, open_at + l] = 1.0
                    obs[g, points_at + l] = 0.0
                else:
                    obs[g, open_at + l] = 0.0
                    obs[g, points_at + l] = points_obs[l, U(v)]
                    own += v
                    filled += 1
            obs[g, total_at] = np.float32(own / total_max)
            obs[g, round_at] = np.float32(filled / num_lines)
            if num_players > 1:
                best = -np.inf
                for q in range(U(1), num_players):
                    other = (me + q) % num_players
                    open_q, points_q, total_q = U(opponent_at[q - U(1), 0]), U(opponent_at[q - U(1), 1]), U(opponent_at[q - U(1), 2])
                    t = 0
                    for l in range(num_lines):
                        v = sheets[g, other, l]
                        if v == OPEN:
                            obs[g, open_q + l] = 1.0
                            obs[g, points_q + l] = 0.0
                        else:
                            obs[g, open_q + l] = 0.0
                            obs[g, points_q + l] = points_obs[l, U(v)]
                            t += v
                    obs[g, total_q] = np.float32(t / total_max)
                    best = max(best, float(t))
                obs[g, lead_at] = np.float32(min(max((own - best) / total_max, -1.0), 1.0))
        for i in range(open_at, size):
            out[j, i] = obs[g, i]


# long argument list: each state array apart (the typed state of the one-engine work replaces it)
@njit(cache=True, error_model="numpy")
def encode_game(out, roll, rolls_left, locked, player, sheets, seat, points_now, points_obs, total_max, at, opponent_at, gen, dbl, served_win):
    """``Encoder.encode(game, seat)`` of one game into ``out`` (every entry written).

    What the single env calls when numba is on, in place of ``Encoder.encode_numpy``
    (a dozen NumPy operations on rows of ten); most of its time is numba's dispatch of
    its arguments.

    ``player``: the seat to move; ``gen``, ``dbl``: the generala and double generala
    lines (-1 where the sheet has none); ``served_win``: whether a served generala wins in
    this game (:meth:`~generala_env.rules.RuleSet.served_generala_wins`). Same arithmetic
    as :func:`encode`.
    """
    num_players, num_lines = sheets.shape[0], sheets.shape[1]
    first = 1 if rolls_left == FIRST_ROLL else 0
    for i in range(11):
        out[at[0] + i] = DICE_OBS[roll, i]
    for i in range(3):
        out[at[1] + i] = 1.0 if i == rolls_left else 0.0
    out[at[2]] = first
    for i in range(6):
        out[at[3] + i] = LOCKED_OBS[locked, i]
    out[at[4]] = 1.0 if served_win and served_pending(served_win, rolls_left, roll, sheets[player, gen]) else 0.0
    for l in range(num_lines):  # points_now: 0 where the line is closed
        out[at[5] + l] = points_now[roll, first, l] if sheets[seat, l] == OPEN else 0.0
    blocked = blocked_line(dbl, sheets[seat, gen])
    if blocked >= 0:
        out[at[5] + blocked] = 0.0
    own, filled = sheet_slices(out, at[6], at[7], sheets, seat, points_obs)
    out[at[8]] = np.float32(own / total_max)
    out[at[9]] = np.float32(filled / num_lines)
    if num_players > 1:
        best = -np.inf
        for q in range(1, num_players):
            t, _ = sheet_slices(out, opponent_at[q - 1, 0], opponent_at[q - 1, 1], sheets, (seat + q) % num_players, points_obs)
            out[opponent_at[q - 1, 2]] = np.float32(t / total_max)
            best = max(best, float(t))
        out[at[10]] = np.float32(min(max((own - best) / total_max, -1.0), 1.0))


@njit(cache=True, error_model="numpy")
def sheet_slices(out, open_at, points_at, sheets, who, points_obs):
    """Seat ``who``'s open and points slices into ``out``; its total and filled lines."""
    total, filled = 0, 0
    for l in range(sheets.shape[1]):
        v = sheets[who, l]
        if v == OPEN:
            out[open_at + l] = 1.0
            out[points_at + l] = 0.0
        else:
            out[open_at + l] = 0.0
            out[points_at + l] = points_obs[l, v]
            total += v
            filled += 1
    return total, filled


@njit(cache=True, error_model="numpy")
def accepted(actions, masks):
    """Whether each game's action is in range and legal."""
    out = np.empty(len(actions), dtype=np.bool_)
    for i in range(len(actions)):
        a = actions[i]
        out[i] = 0 <= a < masks.shape[1] and masks[i, a]
    return out


@njit(cache=True, error_model="numpy")
def results(games, seat, sheets, served_winner, totals, winner, win_reward):
    """Final totals, the winner (-1 on a shared win) and the agent's win reward of ended games.

    A loop that mirrors two functions: the winners are those of ``Game.winners``, the reward
    is :func:`generala_env.env.win_reward` (+1 / 0 / -1); ``tests/test_vector.py`` checks
    that they agree.
    """
    num_players, num_lines = sheets.shape[1], sheets.shape[2]
    for j in range(len(games)):
        g = games[j]
        best, n_best = -1, 0
        for p in range(num_players):
            t = 0
            for l in range(num_lines):
                if sheets[g, p, l] != OPEN:
                    t += sheets[g, p, l]
            totals[j, p] = t
            if t > best:
                best, n_best, winner[j] = t, 1, p
            elif t == best:
                n_best += 1
        if served_winner[g] >= 0:
            winner[j] = served_winner[g]
            win_reward[j] = 1.0 if served_winner[g] == seat[g] else -1.0
        else:
            if n_best > 1:
                winner[j] = -1
            win_reward[j] = -1.0 if totals[j, seat[g]] < best else (1.0 if n_best == 1 else 0.0)


@njit(cache=True, error_model="numpy")
def uniform_legal(masks, u):
    """The ``floor(u[i] * n_legal)``-th legal action of each row (``u`` uniform in [0, 1)).

    Branch-free: the chosen index is the number of actions before which fewer than
    ``k + 1`` legal ones have been seen.
    """
    rows, num_actions = U(masks.shape[0]), U(masks.shape[1])  # unsigned indices: see encode()
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
