"""An env's step over N games, compiled: what :class:`generala_env.envs.env_core.EnvCore` does around
the rules, in one call.

A step of game ``g`` (:func:`env_step`): the agent's action, checked against the game's legal
mask (an illegal one changes nothing, gives the penalty and adds to the streak; a streak of the
cap truncates the episode); a legal one decided and its dice thrown (:mod:`generala_env.compiled.batched`'s
per-game bodies), its points the reward under ``reward="score"``; then, unless an opponent has
the move (the game ``waiting``: the driver plays the opponents and calls :func:`observe_games`),
the end of the game (``terminated``, and the win reward under ``reward="win"``) and what the
agent sees: the observation into ``obs[g]``, the legal mask into ``masks[g]`` and the game's
facts into ``facts[g]`` (:func:`generala_env.core.engine.facts_size`'s layout, what
:class:`~generala_env.core.game.Game` reads; kept for a single env and where moves are recorded).
One compiled call, so that a single env (N = 1) pays numba's reading of its arguments once a
step; inside it three passes over the games (the moves, the ends and observations, the masks),
which over many games run faster than one pass doing all three.

The env's own numbers are rows of one int64 array ``env`` ``(len(ENV_ROWS), N)``: the agent's
seat, its streak of illegal actions, whether an opponent's served generala ended the game before
the agent's first move (``early_end``), what the last step found (``illegal``, ``terminated``,
``truncated``, ``waiting``) and, with the facts, the agent's last move played (``action`` and the
roll it was played on). The step's settings are a float64 array
(:data:`SETTINGS`), its summary an int64 array (:data:`FOUND`). One game's step
(:func:`env_step`) takes the state, rules and encoding packed as :mod:`generala_env.compiled.one_game`
takes them; many games' (:func:`env_step_many`) as tuples, as :mod:`generala_env.compiled.batched` does.
"""

from __future__ import annotations

from generala_env.compiled.batched import (
    U,
    apply_game,
    dice_thrown,
    encode_sheets,
    encode_turn,
    is_winner,
    loop,
    mask_game,
    njit,
    outcome_points,
    pending_in_game,
)
from generala_env.compiled.one_game import state_of, unpack_encoding, unpack_tables
from generala_env.core.engine import FIRST_ROLL, MOVER, OPEN, PENDING, POINTS, SERVED, TOTALS, WON, GameState, Tables
from generala_env.core.observe import EncodingTables

# action, roll_before: the agent's last move played, with the dice it was played on (-1: none yet), kept with the facts
ENV_ROWS = ("seat", "streak", "early_end", "illegal", "terminated", "truncated", "waiting", "action", "roll_before")
SEAT, STREAK, EARLY_END, ILLEGAL, TERMINATED, TRUNCATED, WAITING, ACTION, ROLL_BEFORE = range(len(ENV_ROWS))
# cap: -1 for none; every_sheet: no sheet cache; mover: the agent is whoever has the move (no
# opponents); facts: keep each game's facts (a Game reads them; a vector env's step need not)
SETTINGS = ("penalty", "score", "win", "cap", "raise", "every_sheet", "mover", "facts")
PENALTY, SCORE, WIN, CAP, RAISE, EVERY_SHEET, MOVER_SEAT, KEEP_FACTS = range(len(SETTINGS))
# counts, the first illegal game (-1: none), then from ENDED_AT the games that ended, in the order found
FOUND = ("illegal", "ended", "waiting", "first_illegal")
N_ILLEGAL, N_ENDED, N_WAITING, FIRST_ILLEGAL = range(len(FOUND))
ENDED_AT = len(FOUND)
LOOK, FINISH, STARTED = range(3)  # what observe_games does besides looking at each game


@njit(inline="always", error_model="numpy")
def seat_total(st, g, t, p):
    """Seat ``p``'s total in game ``g``."""
    total = 0
    for l in range(t.num_lines):
        v = st.sheets[g, p, l]
        if v != OPEN:
            total += v
    return total


@njit(inline="always", error_model="numpy")
def end_of_game(st, g, t, seat, final, over):
    """Ended game ``g`` (``over``; else truncated) into row ``g`` of ``final``: every seat's total,
    then its sole winner + 1 (0: a shared win, or a truncated game), then 1 if a served generala
    won it. Returns ``seat``'s reward under ``reward="win"``: +1 sole win, 0 shared, -1 loss."""
    P = t.num_players
    best = -1
    for p in range(P):
        total = seat_total(st, g, t, p)
        final[g, p] = total
        best = max(best, total)
    if not over:
        final[g, P], final[g, P + 1] = 0, 0
        return 0.0
    n, w, mine = 0, -1, False
    for p in range(P):
        if is_winner(st.winner[g], p, final[g, p], best):
            n += 1
            w = p
            mine = mine or p == seat
    final[g, P] = w + 1 if n == 1 else 0
    final[g, P + 1] = st.winner[g] >= 0
    return 2.0 * outcome_points(mine, n) - 1.0


@njit(inline="always", error_model="numpy")
def agent_move(st, t, g, a, faces, at, pcg, facts, keep_facts):
    """Legal action ``a`` in game ``g`` (:func:`~generala_env.compiled.batched.apply_game`, its dice from
    the game's cup); the move's facts into ``facts[g]`` (with ``keep_facts``); the points written."""
    if keep_facts:
        facts[g, MOVER], facts[g, SERVED] = st.player[g], st.rolls_left[g] == FIRST_ROLL
    p = apply_game(st, g, t, a, dice_thrown(t, st.roll[g], a), faces, at, pcg)
    if keep_facts:
        facts[g, POINTS], facts[g, WON] = p, st.winner[g] >= 0
    return p


@njit(inline="always", error_model="numpy")
def look_game(st, t, e, g, seat, facts, obs, sheet_obs, sheets_seen, every_sheet, keep_facts):
    """What ``seat`` sees of game ``g`` but its mask: the observation into ``obs[g]`` and the facts
    into ``facts[g]`` (with ``keep_facts``). The sheets' slices and facts are made anew when a line
    was written since the last look (``sheets_seen[g]``, -1 forces it), or at every look with
    ``every_sheet`` (a game whose sheets may be set by hand)."""
    pending = pending_in_game(st, g, t)
    encode_turn(obs, g, e, st.roll[g], st.rolls_left[g], st.locked[g], pending, st.sheets, g, seat)
    fresh = every_sheet or st.writes[g] != sheets_seen[g]
    if every_sheet:
        encode_sheets(obs, g, e, st.sheets, g, seat)
    else:
        if fresh:
            encode_sheets(sheet_obs, g, e, st.sheets, g, seat)
        for i in range(U(e.open_at), U(obs.shape[1])):
            obs[g, i] = sheet_obs[g, i]
    if fresh:
        sheets_seen[g] = st.writes[g]
    if keep_facts:
        if fresh:
            P = t.num_players
            for p in range(P):
                total, filled = 0, 0
                for l in range(t.num_lines):
                    v = st.sheets[g, p, l]
                    if v != OPEN:
                        total += v
                        filled += 1
                facts[g, TOTALS + p], facts[g, TOTALS + P + p] = total, filled
        facts[g, PENDING] = pending


# many parameters: the state, tables and arrays of the games, each its own array (numba reads a few arrays fast)
@njit(inline="always", error_model="numpy")
def finish_game(st, t, e, g, env, win, rewards, found, final, facts, obs, sheet_obs, sheets_seen, every_sheet, keep_facts):
    """The end of game ``g``'s step: ``terminated`` and the win reward if it is over; an ended game
    (over or truncated) listed in ``found`` and its end written into ``final``
    (:func:`end_of_game`); then :func:`look_game` from the agent's seat."""
    over = st.over[g] != 0
    if over or env[TRUNCATED, g] != 0:
        if over:
            env[TERMINATED, g], env[TRUNCATED, g] = 1, 0
        found[ENDED_AT + found[N_ENDED]] = g
        found[N_ENDED] += 1
        reward = end_of_game(st, g, t, env[SEAT, g], final, over)
        if over and win:
            rewards[g] = reward
    look_game(st, t, e, g, env[SEAT, g], facts, obs, sheet_obs, sheets_seen, every_sheet, keep_facts)


# many parameters: the state, tables and arrays of the games, each its own array (numba reads a few arrays fast)
@njit(inline="always", error_model="numpy")
def step_games(st, t, e, actions, faces, at, pcg, env, settings, masks, facts, obs, sheet_obs, sheets_seen, rewards, found, final):
    """One step of every game (see the module docstring): ``actions[g]`` in game ``g``, the reward
    into ``rewards[g]``, the rows of ``env`` and the summary ``found`` set. With the ``raise``
    setting, an illegal action anywhere changes nothing: ``found`` names the first such game.
    Three passes over the games (the moves; the ends and observations; the masks): over many
    games each pass holds fewer arrays at once, and the three run faster than one (measured:
    ``benchmarks/engine_ab.py``)."""
    penalty, score, win, cap, every_sheet = settings[PENALTY], settings[SCORE] != 0, settings[WIN] != 0, settings[CAP], settings[EVERY_SHEET] != 0
    num_actions, mover, keep_facts = masks.shape[1], settings[MOVER_SEAT] != 0, settings[KEEP_FACTS] != 0
    for k in range(ENDED_AT):
        found[k] = 0
    found[FIRST_ILLEGAL] = -1
    if settings[RAISE] != 0:
        for g in range(len(actions)):
            a = actions[g]
            if env[EARLY_END, g] == 0 and not (0 <= a < num_actions and masks[g, a]):
                found[N_ILLEGAL], found[FIRST_ILLEGAL] = 1, g
                return
    for row in (ILLEGAL, TERMINATED, TRUNCATED, WAITING):
        env[row, :] = 0
    for g in range(U(len(actions))):  # unsigned: see U
        a = actions[g]
        rewards[g] = 0.0
        if env[EARLY_END, g] != 0:  # the game ended before the agent's move: this step ends the episode
            env[STREAK, g] = 0
            continue
        if 0 <= a < num_actions and masks[g, a]:
            env[STREAK, g] = 0
            if keep_facts:
                env[ACTION, g], env[ROLL_BEFORE, g] = a, st.roll[g]
            p = agent_move(st, t, g, a, faces, at, pcg, facts, keep_facts)
            if score:
                rewards[g] = p
        else:
            env[ILLEGAL, g] = 1
            env[STREAK, g] += 1
            rewards[g] = penalty
            found[N_ILLEGAL] += 1
            if found[FIRST_ILLEGAL] < 0:
                found[FIRST_ILLEGAL] = g
            if cap >= 0 and env[STREAK, g] >= cap:
                env[TRUNCATED, g] = 1
        if mover:
            env[SEAT, g] = st.player[g]
        elif st.over[g] == 0 and st.player[g] != env[SEAT, g]:  # the opponents move first
            env[WAITING, g] = 1
            found[N_WAITING] += 1
    for g in range(U(len(actions))):
        if env[WAITING, g] == 0:
            finish_game(st, t, e, g, env, win, rewards, found, final, facts, obs, sheet_obs, sheets_seen, every_sheet, keep_facts)
    for g in range(U(len(actions))):
        if env[WAITING, g] == 0:
            mask_game(st, g, t, masks, g)


# many parameters: the state, tables and arrays of the games, each its own array (numba reads a few arrays fast)
@loop
def env_step(actions, numbers, sheets, rules, faces, at, pcg, env, settings, masks, facts, obs, sheet_obs, sheets_seen, ints, floats, rewards, found, final):
    """:func:`step_games` with the tables packed (:mod:`generala_env.compiled.one_game`): what one game's
    step takes, since numba reads one packed array faster than a tuple of many."""
    st, t, e = state_of(numbers, sheets), unpack_tables(rules), unpack_encoding(ints, floats)
    step_games(st, t, e, actions, faces, at, pcg, env, settings, masks, facts, obs, sheet_obs, sheets_seen, rewards, found, final)


# many parameters: the state, tables and arrays of the games, each its own array (numba reads a few arrays fast)
@loop
def env_step_many(actions, state, rules, enc, faces, at, pcg, env, settings, masks, facts, obs, sheet_obs, sheets_seen, rewards, found, final):
    """:func:`step_games` with the state and tables as tuples of their own arrays, as the loops of
    :mod:`generala_env.compiled.batched` take them: what many games' step takes (the tables in their own
    narrow types are lighter on the cache than packed)."""
    step_games(
        GameState(*state),
        Tables(*rules),
        EncodingTables(*enc),
        actions,
        faces,
        at,
        pcg,
        env,
        settings,
        masks,
        facts,
        obs,
        sheet_obs,
        sheets_seen,
        rewards,
        found,
        final,
    )


# many parameters: the state, tables and arrays of the games, each its own array (numba reads a few arrays fast)
@loop
def observe_games(games, mode, numbers, sheets, rules, env, settings, masks, facts, obs, sheet_obs, sheets_seen, ints, floats, rewards, found, final):
    """For each of ``games``, by ``mode``: :data:`FINISH` (the end of a step whose opponents have
    moved: :func:`finish_game`, ``found`` counts on), :data:`STARTED` (a game just started: its
    streak and last move cleared, ``early_end`` if it is already over, its sheets seen anew, then
    :func:`look_game`) or :data:`LOOK` (:func:`look_game` alone); then its legal mask into
    ``masks[g]``."""
    st, t, e = state_of(numbers, sheets), unpack_tables(rules), unpack_encoding(ints, floats)
    win, every_sheet, keep_facts = settings[WIN] != 0, settings[EVERY_SHEET] != 0, settings[KEEP_FACTS] != 0
    for j in range(U(len(games))):  # unsigned: see U
        g = U(games[j])
        if mode == FINISH:
            finish_game(st, t, e, g, env, win, rewards, found, final, facts, obs, sheet_obs, sheets_seen, every_sheet, keep_facts)
        else:
            if mode == STARTED:
                env[STREAK, g], env[ACTION, g], env[EARLY_END, g] = 0, -1, st.over[g] != 0
                sheets_seen[g] = -1
            look_game(st, t, e, g, env[SEAT, g], facts, obs, sheet_obs, sheets_seen, every_sheet, keep_facts)
        mask_game(st, g, t, masks, g)


@loop
def results(games, seat, state, rules, final, rewards):
    """:func:`end_of_game` of each of ``games``, over: its row of ``final`` and the win reward of
    ``seat[g]`` into ``rewards[j]`` (the outcome rules over ended games, for tests and tables)."""
    st, t = GameState(*state), Tables(*rules)
    for j in range(U(len(games))):
        g = U(games[j])
        rewards[j] = end_of_game(st, g, t, seat[g], final, True)


__all__ = ["ENDED_AT", "ENV_ROWS", "FOUND", "SETTINGS", "env_step", "env_step_many", "observe_games", "results"]
