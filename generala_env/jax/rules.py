"""The rules of :mod:`generala_env.core.engine` and the encoding of :mod:`generala_env.core.observe` over
JAX arrays: what :mod:`generala_env.jax.env` steps with (the ``jax`` extra).

Nothing here states a rule of its own. The rule set's facts come from the same precomputed
tables the numba engine reads (:func:`generala_env.core.engine.tables`, a
:class:`~generala_env.core.engine.Tables` whose arrays become JAX arrays here) and the observation's
from the encoder's (:attr:`Encoder.tables <generala_env.core.encoding.Encoder.tables>`,
:data:`~generala_env.core.observe.DICE_OBS`, :data:`~generala_env.core.observe.LOCKED_OBS`). The engine's
table look-ups :func:`~generala_env.core.engine.held` and :func:`~generala_env.core.engine.sheets_full`
are called as they are (they index a flat table, which a JAX array takes as a list does);
:func:`~generala_env.core.engine.landed` is called once for every keep and throw of the dice beside
it (:func:`landing_table`), and a throw reads its roll from that table. The engine's rules that
branch (``if``, ``and``) are written once more below as the same formula with
:func:`jax.numpy.where`, each naming the engine function it mirrors; ``tests/test_jax_env.py``
checks every state JAX reaches against the numba engine.

The functions take one game's numbers (scalars, and the sheets ``(players, lines)``) and
batch with :func:`jax.vmap`. Facts of the rule set that are plain Python values in
:class:`~generala_env.core.engine.Tables` (``served_win``, ``locked_holds``, the lines) decide
at trace time what is computed.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from generala_env.extras import how_to_install

try:
    import jax
    import jax.numpy as jnp
except ImportError as e:  # the jax extra
    raise ImportError(f"generala_env.jax.rules needs jax, which is not installed; {how_to_install('jax')}") from e

from generala_env.core import engine
from generala_env.core.dice import ALL_HELD, DICE, EMPTY_KEEP, FACES, KEEP_ROLL_PROB, KEY_WEIGHTS, NUM_KEEPS, NUM_MASKS, NUM_ROLLS, ROLLS
from generala_env.core.encoding import Encoder
from generala_env.core.engine import FIRST_ROLL, OPEN, Tables, held, sheets_full
from generala_env.core.observe import DICE_OBS, LOCKED_OBS, EncodingTables
from generala_env.core.rules import RuleSet

THROWS = FACES**DICE  # the ordered throws of five dice
_ARRAYS = ("hold_keep", "keep_size", "keep_key", "roll_of_key", "keep_contains", "five_alike", "points")


class JaxTables(NamedTuple):
    """What a JAX game reads: the engine's :class:`~generala_env.core.engine.Tables` (``rules``), the
    encoder's :class:`~generala_env.core.observe.EncodingTables` (``encoding``), with their arrays as
    JAX arrays, and the dice tables of the encoding and of the dice model."""

    rules: Tables
    encoding: EncodingTables
    dice_obs: jnp.ndarray  # DICE_OBS: [roll, rolls_left] -> dice_counts ... first_roll
    locked_obs: jnp.ndarray  # LOCKED_OBS: [locked keep, served pending] -> locked_counts, served_generala
    keep_roll_prob: jnp.ndarray  # KEEP_ROLL_PROB as float32: [keep, roll]
    landing_at: jnp.ndarray  # landing_table: [keep] -> where its throws start, how many
    landing: jnp.ndarray  # landing_table: the roll of each throw beside each keep
    # the encoding's divisions, made by NumPy as observe.encode_sheets makes them (int / float in
    # float64, rounded to float32 once): compiled, XLA may divide by a constant as a product
    total_obs: jnp.ndarray  # [total] -> own_total, opponent_k_total
    round_obs: jnp.ndarray  # [lines filled] -> round
    lead_obs: jnp.ndarray  # [lead + most points] -> score_lead
    rolls: jnp.ndarray  # ROLLS: [roll] -> five sorted faces
    size: int  # the observation's length


def jax_tables(rules: RuleSet, num_players: int) -> JaxTables:
    """The tables of a rule set and player count, as JAX arrays (int32, bool, float32)."""
    t = engine.tables(rules, num_players)
    arrays: dict[str, Any] = {}
    for name in _ARRAYS:
        a = np.asarray(getattr(t, name))
        arrays[name] = jnp.asarray(a if a.dtype == bool else a.astype(np.int32))
    encoder = Encoder(rules, num_players)
    e = encoder.tables
    encoding = e._replace(
        points_now=jnp.asarray(e.points_now), points_obs=jnp.asarray(e.points_obs), opponent_at=tuple(map(tuple, np.asarray(e.opponent_at).tolist()))
    )
    _check_layout(encoding, encoder.size, num_players, rules.num_lines)
    most = int(e.total_max)  # no total is over it
    landing_at, landing = landing_table(t)
    return JaxTables(
        rules=t._replace(**arrays),
        encoding=encoding,
        dice_obs=jnp.asarray(DICE_OBS),
        locked_obs=jnp.asarray(LOCKED_OBS),
        keep_roll_prob=jnp.asarray(KEEP_ROLL_PROB.astype(np.float32)),
        landing_at=jnp.asarray(landing_at),
        landing=jnp.asarray(landing),
        total_obs=jnp.asarray((np.arange(most + 1) / e.total_max).astype(np.float32)),
        round_obs=jnp.asarray((np.arange(rules.num_lines + 1) / rules.num_lines).astype(np.float32)),
        lead_obs=jnp.asarray(np.clip(np.arange(-most, most + 1) / e.total_max, -1.0, 1.0).astype(np.float32)),
        rolls=jnp.asarray(ROLLS.astype(np.int32)),
        size=encoder.size,
    )


def landing_table(t: Tables) -> tuple[np.ndarray, np.ndarray]:
    """:func:`generala_env.core.engine.landed` of every keep and every throw of the dice beside it:
    ``at[keep] = (start, 6 ** n)`` for the ``n`` dice thrown beside ``keep``, and
    ``rolls[start + c]`` the roll thrown dice coded ``c < 6 ** n`` make (die ``d`` shows
    ``c // 6 ** d % 6 + 1``, as :func:`generala_env.compiled.batched.throw_key` reads a throw). A throw
    of five coded below ``6 ** 5`` lands with its first ``n`` dice at ``code % 6 ** n``."""
    at, rolls, start = np.zeros((NUM_KEEPS, 2), dtype=np.int32), [], 0
    for keep in range(NUM_KEEPS):
        n = DICE - int(t.keep_size[keep])
        codes = np.arange(FACES**n)
        thrown = KEY_WEIGHTS[codes[:, None] // FACES ** np.arange(n) % FACES].sum(axis=1)  # batched.throw_key of each code
        rolls.append(engine.landed(t, keep, thrown))
        at[keep] = start, FACES**n
        start += FACES**n
    return at, np.concatenate(rolls).astype(np.int32)


def _check_layout(e: EncodingTables, size: int, num_players: int, num_lines: int) -> None:
    """:func:`observe` lays its slices end to end in this order: each must start where the
    encoder's tables say it does (a layout changed without this module fails here instead of
    giving a wrong observation)."""
    L = num_lines
    pieces = [(e.dice_at, 15), (e.locked_at, 7), (e.now_at, L), (e.open_at, L), (e.points_at, L), (e.total_at, 1), (e.round_at, 1)]
    for o, p, total in e.opponent_at:
        pieces += [(o, L), (p, L), (total, 1)]
    if num_players > 1:
        pieces.append((e.lead_at, 1))
    at = 0
    for start, n in pieces:
        if start != at:
            raise ValueError(f"the observation's slices are not where generala_env.jax.rules lays them: one starts at {start}, expected {at}")
        at += n
    if at != size:
        raise ValueError(f"the observation has {size} values; generala_env.jax.rules lays out {at}")


# -- the rules: generala_env.core.engine's, over JAX arrays ------------------------------------------
def served_pending(t: Tables, rolls_left, roll, generala_value):
    """:func:`generala_env.core.engine.served_pending`."""
    if not t.served_win:
        return jnp.zeros(jnp.shape(roll), dtype=bool)
    return (rolls_left == FIRST_ROLL) & t.five_alike[roll] & (generala_value == OPEN)


def blocked_line(double_line: int, generala_value):
    """:func:`generala_env.core.engine.blocked_line`."""
    if double_line < 0:
        return jnp.full(jnp.shape(generala_value), -1, dtype=jnp.int32)
    return jnp.where(generala_value > 0, -1, double_line)


def hold_legal(t: Tables, rolls_left, roll, locked, mask):
    """:func:`generala_env.core.engine.hold_legal`."""
    ok = (rolls_left != 0) & (mask != ALL_HELD)
    if t.locked_holds:
        ok = ok & t.keep_contains[held(t, roll, mask) * NUM_KEEPS + locked]
    return ok


def legal(t: Tables, over, pending, rolls_left, roll, locked, action, line_open):
    """:func:`generala_env.core.engine.legal` (``action`` may be an array of actions, all holds or all writes)."""
    hold = hold_legal(t, rolls_left, roll, locked, jnp.minimum(action, ALL_HELD))
    return ~over & jnp.where(pending, action == NUM_MASKS + t.generala_line, jnp.where(action < NUM_MASKS, hold, line_open))


def write_points(t: Tables, line, roll, rolls_left, generala_value):
    """:func:`generala_env.core.engine.write_points`."""
    blocked = (line == t.double_line) & (line == blocked_line(t.double_line, generala_value))
    return jnp.where(blocked, 0, t.points[(line * NUM_ROLLS + roll) * 2 + (rolls_left == FIRST_ROLL)])


def after_write(t: Tables, won, writes, player):
    """:func:`generala_env.core.engine.after_write`: ``(over, player to move)``."""
    over = won | sheets_full(t, writes)
    return over, jnp.where(over, player, (player + 1) % t.num_players)


def is_winner(served_winner, seat, total, best):
    """:func:`generala_env.core.engine.is_winner`."""
    return jnp.where(served_winner >= 0, seat == served_winner, total == best)


def outcome_points(won, num_winners):
    """:func:`generala_env.core.engine.outcome_points`."""
    return jnp.where(won, 1.0 / jnp.maximum(num_winners, 1), 0.0).astype(jnp.float32)


def throw_code(key):
    """Five fair dice thrown, coded as one number below ``6 ** 5`` (as the numba vector env
    draws them): 64 random bits modulo ``6 ** 5``, uniform to within ``6 ** 5 / 2 ** 64``."""
    bits = jax.random.bits(key, (2,), jnp.uint32)
    return (((bits[0] % THROWS) * (2**32 % THROWS) + bits[1] % THROWS) % THROWS).astype(jnp.int32)


# -- one game: generala_env.compiled.batched's per-game bodies ---------------------------------------------
# A seat's row of the sheets is picked by comparing seats (elementwise work that XLA fuses), not
# by an index that differs from game to game (batched, a gather).
def seat_row(sheets, seat):
    """``sheets[seat]`` (sheets ``(players, ...)``)."""
    if sheets.shape[0] == 1:
        return sheets[0]
    pick = jnp.arange(sheets.shape[0]).reshape((-1,) + (1,) * (sheets.ndim - 1)) == seat
    return jnp.sum(jnp.where(pick, sheets, 0), axis=0)


def seat_view(sheets, seat):
    """The sheets from ``seat``: its own first, then the others in play order (``sheets[(seat + q) % P]``)."""
    P = sheets.shape[0]
    if P == 1:
        return sheets
    order = (seat + jnp.arange(P)) % P
    return jnp.sum(jnp.where(order[:, None, None] == jnp.arange(P)[None, :, None], sheets[None], 0), axis=1)


def generala_value(t: Tables, sheets, seat):
    """What ``seat``'s generala line holds (:data:`~generala_env.core.engine.OPEN` where the sheet has none)."""
    return seat_row(sheets[:, t.generala_line], seat) if t.generala_line >= 0 else jnp.full(jnp.shape(seat), OPEN, dtype=jnp.int32)


def pending_in_game(t: Tables, rolls_left, roll, player, sheets):
    """:func:`generala_env.compiled.batched.pending_in_game`: a served generala of the player to move."""
    return served_pending(t, rolls_left, roll, generala_value(t, sheets, player))


def legal_mask(t: Tables, over, rolls_left, roll, locked, player, sheets):
    """:func:`generala_env.compiled.batched.mask_game`: ``(32 + L,)`` bool."""
    pending = pending_in_game(t, rolls_left, roll, player, sheets)
    holds = legal(t, over, pending, rolls_left, roll, locked, jnp.arange(NUM_MASKS), False)
    writes = legal(t, over, pending, rolls_left, roll, locked, NUM_MASKS + jnp.arange(t.num_lines), seat_row(sheets, player) == OPEN)
    return jnp.concatenate([holds, writes])


class Decision(NamedTuple):
    """What :func:`decide` did: the game's new numbers (``winner`` set by a write that won with a
    served generala), the points written (0 for a hold), the keep of the dice staying on the
    table while the rest are thrown (-1: nothing is thrown, the game ended) and whether that
    throw starts a turn."""

    rolls_left: jnp.ndarray
    locked: jnp.ndarray
    player: jnp.ndarray
    writes: jnp.ndarray
    over: jnp.ndarray
    winner: jnp.ndarray
    sheets: jnp.ndarray
    points: jnp.ndarray
    keep: jnp.ndarray
    starts_turn: jnp.ndarray


# many parameters: one game's numbers, as batched.decide_game reads them from its state
def decide(t: Tables, roll, rolls_left, locked, player, writes, over, winner, sheets, a) -> Decision:
    """:func:`generala_env.compiled.batched.decide_game` of legal action ``a``: a hold keeps its dice, a
    write fills the line and passes the turn."""
    is_hold = a < NUM_MASKS
    mask: Any = jnp.where(is_hold, a, 0)  # a hold's mask (a write reads hold 0 and drops it)
    keep = held(t, roll, mask)
    line = jnp.where(is_hold, 0, a - NUM_MASKS)
    value = generala_value(t, sheets, player)
    p = write_points(t, line, roll, rolls_left, value)
    won = served_pending(t, rolls_left, roll, value) & ~is_hold
    ended, nxt = after_write(t, won, writes + 1, player)
    cell = (jnp.arange(t.num_players)[:, None] == player) & (jnp.arange(t.num_lines)[None, :] == line)
    return Decision(
        rolls_left=jnp.where(is_hold, rolls_left - 1, rolls_left),
        locked=jnp.where(is_hold, keep, locked),
        player=jnp.where(is_hold, player, nxt),
        writes=jnp.where(is_hold, writes, writes + 1),
        over=jnp.where(is_hold, over, ended),
        winner=jnp.where(won, player, winner),
        sheets=jnp.where(cell & ~is_hold, p, sheets),
        points=jnp.where(is_hold, 0, p),
        keep=jnp.where(is_hold, keep, jnp.where(ended, -1, EMPTY_KEEP)),
        starts_turn=~is_hold,
    )


def landed_roll(j: JaxTables, keep, code):
    """The roll a throw coded ``code`` (:func:`throw_code`) makes beside ``keep``, read from
    :func:`landing_table` (a turn's first roll is the throw beside the empty keep:
    :func:`generala_env.core.engine.start_turn`)."""
    k = jnp.maximum(keep, 0)
    return j.landing[j.landing_at[k, 0] + code % j.landing_at[k, 1]]


def chance_probs(j: JaxTables, keep, roll):
    """The probability of each of the 252 rolls after a throw beside ``keep`` (a row of
    :data:`~generala_env.core.dice.KEEP_ROLL_PROB`); with nothing thrown (``keep`` -1), 1 on ``roll``."""
    return jnp.where(keep >= 0, j.keep_roll_prob[jnp.maximum(keep, 0)], jnp.arange(NUM_ROLLS) == roll).astype(jnp.float32)


# -- the observation: generala_env.core.observe's, over JAX arrays ---------------------------------------
# many parameters: one game's numbers, as observe.encode_game reads them
def observe(j: JaxTables, roll, rolls_left, locked, player, sheets, seat):
    """:func:`generala_env.core.observe.encode_game` from ``seat`` (float32 ``(size,)``): the turn's
    slices (:func:`~generala_env.core.observe.encode_turn`), then the sheets'
    (:func:`~generala_env.core.observe.encode_sheets`), seat first and the others in play order."""
    t, e = j.rules, j.encoding
    P, L = t.num_players, t.num_lines
    view = seat_view(sheets, seat)  # (P, L)
    pending = pending_in_game(t, rolls_left, roll, player, sheets)
    first = (rolls_left == FIRST_ROLL).astype(jnp.int32)
    now = e.points_now[roll, first] * (view[0] == OPEN).astype(jnp.float32)
    if e.double_line >= 0:
        now = jnp.where(jnp.arange(L) == blocked_line(e.double_line, view[0, e.generala_line]), 0.0, now)
    filled = view != OPEN
    totals = jnp.sum(jnp.where(filled, view, 0), axis=1)
    open_obs = jnp.where(filled, 0.0, 1.0).astype(jnp.float32)
    points_obs = jnp.where(filled, e.points_obs[jnp.arange(L), jnp.maximum(view, 0)], 0.0)
    total_obs = j.total_obs[totals]
    parts = [
        j.dice_obs[roll, rolls_left],
        j.locked_obs[locked, pending.astype(jnp.int32)],
        now,
        open_obs[0],
        points_obs[0],
        total_obs[:1],
        j.round_obs[jnp.sum(filled[0])][None],
    ]
    for q in range(1, P):
        parts += [open_obs[q], points_obs[q], total_obs[q : q + 1]]
    if P > 1:
        parts.append(j.lead_obs[totals[0] - jnp.max(totals[1:]) + int(e.total_max)][None])
    return jnp.concatenate(parts)
