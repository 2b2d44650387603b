"""The rules of :mod:`generala_env.game` and the encoding of :mod:`generala_env.encoding`,
for many games at once: loops over games, compiled by numba.

Each function reads like the single-game code it mirrors (``Game._apply``,
``Game.legal_mask``, ``Encoder.encode``, ``GreedyAgent.act``), one game per loop
iteration, over state arrays indexed by game. :class:`generala_env.vector.GeneralaVectorEnv`
owns the arrays and calls these.

Why numba: at N = 4096 games, a step written as NumPy array operations over all games
took about 14 ms (some 70 operations, each a pass over memory with fancy indexing); the
same step as these compiled loops takes well under 1 ms (figures in
``benchmarks/env_speed.py``). Without numba (or with ``GENERALA_NUMBA=0``) the same
functions run as plain Python: correct, only slow.

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
    KEEP_OF_KEY,
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

    def njit(*args, **kwargs):
        return (lambda f: f) if not args or not callable(args[0]) else args[0]


FIRST_ROLL = ROLLS_PER_TURN - 1  # rolls_left right after a turn's first roll

# dice tables as the loops index them
HOLD_KEEP_I = HOLD_KEEP.astype(np.int64)
KEEP_SIZE_I = KEEP_SIZE.astype(np.int64)
KEEP_KEY = KEEP_COUNTS.astype(np.int64) @ KEY_WEIGHTS  # base-6 key of a keep's face counts
ROLL_OF_KEY_I = ROLL_OF_KEY.astype(np.int64)
FACE_KEY = np.array([0] + [6 ** (f - 1) for f in range(1, 7)], dtype=np.int64)  # what one die adds to a key
FIVE_ALIKE = ROLL_COUNTS.max(axis=1) == DICE
DICE_OBS = np.concatenate([ROLL_COUNTS / 5.0, ROLLS / 6.0], axis=1).astype(np.float32)  # dice_counts, dice_sorted
LOCKED_OBS = (KEEP_COUNTS / 5.0).astype(np.float32)  # locked_counts
KEEP_COUNTS_I = KEEP_COUNTS.astype(np.int64)
KEY_WEIGHTS_I = KEY_WEIGHTS.astype(np.int64)
KEEP_OF_KEY_I = KEEP_OF_KEY.astype(np.int64)


@njit(cache=True)
def served_pending(g, roll, rolls_left, player, sheets, gen, served_win):
    """``Game.served_generala_pending`` of game ``g``."""
    return served_win and rolls_left[g] == FIRST_ROLL and FIVE_ALIKE[roll[g]] and sheets[g, player[g], gen] == OPEN


@njit(cache=True)
def roll_of(faces_row, n, keep):
    """The roll made by ``keep`` plus the first ``n`` faces of ``faces_row``."""
    key = KEEP_KEY[keep]
    for d in range(n):
        key += FACE_KEY[faces_row[d]]
    return ROLL_OF_KEY_I[key]


@njit(cache=True)
def dice_needed(games, actions, roll):
    """How many dice each action draws: the dice not held, or 5 for a write (the next first roll)."""
    need = np.empty(len(games), dtype=np.int64)
    for j in range(len(games)):
        a = actions[j]
        need[j] = DICE - KEEP_SIZE_I[HOLD_KEEP_I[roll[games[j]], a]] if a < NUM_MASKS else DICE
    return need


@njit(cache=True)
def start_turns(games, faces, roll, rolls_left, locked):
    for j in range(len(games)):
        g = games[j]
        roll[g] = roll_of(faces[j], DICE, EMPTY_KEEP)
        rolls_left[g] = FIRST_ROLL
        locked[g] = EMPTY_KEEP


@njit(cache=True)
def apply_actions(games, actions, faces, roll, rolls_left, locked, player, writes, over, winner, sheets, points, gen, dbl, served_win):
    """``Game._apply`` for each game: legal ``actions[j]`` in ``games[j]`` with ``faces[j]``.

    Returns the points written (0 for a reroll). ``winner`` is the served generala winner (-1: none).
    """
    num_players, num_lines = sheets.shape[1], sheets.shape[2]
    pts = np.zeros(len(games), dtype=np.int64)
    for j in range(len(games)):
        g, a = games[j], actions[j]
        if a < NUM_MASKS:
            keep = HOLD_KEEP_I[roll[g], a]
            roll[g] = roll_of(faces[j], DICE - KEEP_SIZE_I[keep], keep)
            rolls_left[g] -= 1
            locked[g] = keep
            continue
        line, me = a - NUM_MASKS, player[g]
        p = points[line, roll[g], 1 if rolls_left[g] == FIRST_ROLL else 0]
        if line == dbl and not (gen >= 0 and sheets[g, me, gen] > 0):
            p = 0  # double generala needs points on the generala line
        won = served_pending(g, roll, rolls_left, player, sheets, gen, served_win)
        sheets[g, me, line] = p
        writes[g] += 1
        pts[j] = p
        if won:
            winner[g] = me
            over[g] = True
        elif writes[g] == num_players * num_lines:
            over[g] = True
        else:
            player[g] = (me + 1) % num_players
            roll[g] = roll_of(faces[j], DICE, EMPTY_KEEP)
            rolls_left[g] = FIRST_ROLL
            locked[g] = EMPTY_KEEP
    return pts


@njit(cache=True)
def legal_masks(games, masks, roll, rolls_left, locked, player, over, sheets, gen, served_win, locked_holds):
    """``Game.legal_mask`` of each game into ``masks[j]`` (rows must start all false)."""
    num_lines = sheets.shape[2]
    for j in range(len(games)):
        g = games[j]
        if over[g]:
            continue
        if served_pending(g, roll, rolls_left, player, sheets, gen, served_win):
            masks[j, NUM_MASKS + gen] = True
            continue
        for l in range(num_lines):
            masks[j, NUM_MASKS + l] = sheets[g, player[g], l] == OPEN
        if rolls_left[g] > 0:
            for m in range(ALL_HELD):
                masks[j, m] = not locked_holds or KEEP_CONTAINS[HOLD_KEEP_I[roll[g], m], locked[g]]


@njit(cache=True)
def encode(games, seat, obs, roll, rolls_left, locked, player, sheets, points_now, line_max, total_max, at, opponent_at, gen, dbl, served_win):
    """``Encoder.encode(game, seat)`` of each game into ``obs[j]`` (rows must start all zero).

    ``points_now[roll, first, line]``: points / line max (float32); ``at``: the starts of
    the slices (see ``GeneralaVectorEnv``); ``opponent_at[k - 1]``: opponent ``k``'s open,
    points and total starts.
    """
    num_players, num_lines = sheets.shape[1], sheets.shape[2]
    lm = line_max.astype(np.float64)
    for j in range(len(games)):
        g = games[j]
        r, me = roll[g], seat[g]
        first = rolls_left[g] == FIRST_ROLL
        o = obs[j]
        for i in range(11):
            o[at[0] + i] = DICE_OBS[r, i]
        o[at[1] + rolls_left[g]] = 1.0
        o[at[2]] = 1.0 if first else 0.0
        for i in range(6):
            o[at[3] + i] = LOCKED_OBS[locked[g], i]
        o[at[4]] = 1.0 if served_pending(g, roll, rolls_left, player, sheets, gen, served_win) else 0.0
        scored = sheets[g, me, gen] > 0
        own = 0
        filled = 0
        for l in range(num_lines):
            v = sheets[g, me, l]
            if v == OPEN:
                if l != dbl or scored:
                    o[at[5] + l] = points_now[r, 1 if first else 0, l]
                o[at[6] + l] = 1.0
            else:
                o[at[7] + l] = np.float32(v / lm[l])
                own += v
                filled += 1
        o[at[8]] = np.float32(own / total_max)
        o[at[9]] = np.float32(filled / num_lines)
        if num_players > 1:
            best = -np.inf
            for k in range(1, num_players):
                other = (me + k) % num_players
                t = 0
                for l in range(num_lines):
                    v = sheets[g, other, l]
                    if v == OPEN:
                        o[opponent_at[k - 1, 0] + l] = 1.0
                    else:
                        o[opponent_at[k - 1, 1] + l] = np.float32(v / lm[l])
                        t += v
                o[opponent_at[k - 1, 2]] = np.float32(t / total_max)
                best = max(best, float(t))
            o[at[10]] = np.float32(min(max((own - best) / total_max, -1.0), 1.0))


@njit(cache=True)
def uniform_legal(masks, u):
    """The ``floor(u[i] * n_legal)``-th legal action of each row (``u`` uniform in [0, 1))."""
    out = np.empty(masks.shape[0], dtype=np.int64)
    for i in range(masks.shape[0]):
        n = 0
        for a in range(masks.shape[1]):
            n += masks[i, a]
        k = int(u[i] * n)
        for a in range(masks.shape[1]):
            if masks[i, a]:
                if k == 0:
                    out[i] = a
                    break
                k -= 1
    return out


@njit(cache=True)
def greedy_actions(games, masks, roll, rolls_left, locked, player, sheets, points, tiebreak, combo, top_keep, mask_for_keep, gen, dbl, locked_holds):
    """``GreedyAgent.act`` for each game (legal ``masks[j]``, the mover's view)."""
    num_lines = sheets.shape[2]
    out = np.empty(len(games), dtype=np.int64)
    pts = np.empty(num_lines)
    for j in range(len(games)):
        g = games[j]
        r, me = roll[g], player[g]
        served = 1 if rolls_left[g] == FIRST_ROLL else 0
        combo_scores = False
        for l in range(num_lines):
            pts[l] = points[l, r, served]
            if l == dbl and not sheets[g, me, gen] > 0:
                pts[l] = 0.0
            if combo[l] and sheets[g, me, l] == OPEN and pts[l] > 0:
                combo_scores = True
        if rolls_left[g] > 0 and not combo_scores:
            keep = top_keep[r]  # every die of the most common face (the higher on ties)
            if locked_holds:  # plus the locked dice
                key = 0
                for f in range(6):
                    key += max(KEEP_COUNTS_I[keep, f], KEEP_COUNTS_I[locked[g], f]) * KEY_WEIGHTS_I[f]
                keep = KEEP_OF_KEY_I[key]
            hold = mask_for_keep[r, keep]
            if masks[j, hold]:
                out[j] = hold
                continue
        best, best_v = -1, -np.inf
        for l in range(num_lines):
            v = pts[l] - tiebreak[l]
            if masks[j, NUM_MASKS + l] and (best < 0 or v > best_v):
                best, best_v = l, v
        out[j] = NUM_MASKS + best
    return out

