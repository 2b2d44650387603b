"""What a seat may read besides its observation: the ``info`` dict every env gives, and the
rewards and move lists derived from a game (shared by the single, vector and PettingZoo envs
and by the training programs)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from generala_env.core import engine
from generala_env.core.dice import KEEP_COUNTS, ROLLS
from generala_env.core.game import ROLLS_PER_TURN, Game, outcome_points

_ROLL_ROWS = list(ROLLS)  # one array per roll: a list look-up is cheaper than numpy indexing
_LOCKED_ROWS = list(KEEP_COUNTS)  # the dice of each keep, counted per face
_NO_MOVES: dict[int, np.ndarray] = {}  # players -> info["opponent_moves"] with no move: -1 rows
_ROLL, _ROLLS_LEFT, _LOCKED, _PLAYER, _OVER, _WINNER = engine.ROLL, engine.ROLLS_LEFT, engine.LOCKED, engine.PLAYER, engine.OVER, engine.WINNER
_PENDING, _TOTALS = engine.PENDING, engine.TOTALS  # in a game's facts: then each seat's total, then its lines filled


def win_reward(winners: tuple[int, ...], seat: int) -> float:
    """The reward of ``reward="win"`` at the end of a game: +1 for a sole win, ``2/k - 1`` for a
    win shared by ``k`` players (0 at two), -1 for a loss (:func:`~generala_env.core.game.outcome_points`
    mapped onto -1 … 1)."""
    return 2.0 * outcome_points(winners, seat) - 1.0


def opponent_move_rows(num_players: int) -> int:
    """Rows of ``info["opponent_moves"]``: the most moves the others make between two of a
    seat's moves (each plays one turn of at most three actions)."""
    return ROLLS_PER_TURN * (num_players - 1)


@lru_cache(maxsize=8)
def _preset(name: str):
    from generala_env.core.rules import load_rules

    return load_rules(name)


def _rule_set(rules: Any):
    """``rules`` as a :class:`~generala_env.core.rules.RuleSet`: a preset's name read once (reading
    its file takes milliseconds, too long for each move), anything else as ``load_rules`` reads it."""
    from generala_env.core.rules import RuleSet, load_rules, preset_names

    if isinstance(rules, RuleSet):
        return rules
    if isinstance(rules, str) and rules in preset_names():
        return _preset(rules)
    return load_rules(rules)


def points_now(info: dict, rules: Any = "classic") -> dict[str, int]:
    """The lines the seat of ``info`` may write on now, each with the points its dice would
    take there: ``{"ones": 0, "fours": 16, "four_of_a_kind": 45, ...}`` in the rules' order
    (0 crosses the line out). Right after a turn's first roll the points are the served ones
    (the served bonus, a served generala); double generala takes 0 while the generala line
    holds none. Empty when it is not the seat's move or the game is over. ``rules``: the env's
    rule set, or its name (``env.unwrapped.rules``, ``"classic"``)."""
    from generala_env.core.dice import NUM_MASKS, roll_index
    from generala_env.planning import planner

    rules = _rule_set(rules)
    mask = np.asarray(info["action_mask"]).astype(bool)
    if mask.shape != (NUM_MASKS + rules.num_lines,):
        raise ValueError(
            f"info['action_mask'] has {mask.size} actions but rules {rules.name!r} have {NUM_MASKS + rules.num_lines} (32 holds and {rules.num_lines} lines): pass the env's rules"
        )
    if info["game_over"]:
        return {}
    sheet = np.asarray(info["sheets"])[int(info["seat"])]
    points = planner.points_now(rules, sheet, roll_index(info["dice"]), int(info["rolls_left"]))
    return {line: int(points[l]) for l, line in enumerate(rules.lines) if mask[NUM_MASKS + l]}


def opponent_moves(info: dict) -> list[tuple[int, int, int]]:
    """The ``(seat, action, points)`` moves in ``info["opponent_moves"]``, without the padding rows."""
    return [(int(s), int(a), int(p)) for s, a, p in np.asarray(info["opponent_moves"]).reshape(-1, 3) if s >= 0]


def make_info(game: Game, seat: int, illegal: bool = False, opponent_moves: list | None = None) -> dict[str, Any]:
    """The ``info`` dict of a seat (what agents may read besides the observation).

    Every key is there at every step, each with the same type and shape (replay buffers
    store them), and every value is a number, a bool or an array, never text (TorchRL and
    replay buffers make tensors of them; why an action was illegal is
    ``GeneralaEnv.illegal_reason()``): ``locked`` counts the locked dice of each face,
    ``opponent_moves`` is padded with ``-1`` rows, ``winners`` flags seats, ``winner`` is ``-1``
    unless one seat has won.
    Every array in it is the caller's own copy. An env step builds one of these, so it
    reads the game's numbers in one call (:meth:`Game.numbers`: the mask and the sheets'
    facts its last compiled call left) and makes the dict in one go (a dict grown key by key
    costs more).
    """
    n, facts, legal, totals = game.numbers()
    players, player, over = game.num_players, n[_PLAYER], n[_OVER]
    blank = _NO_MOVES.get(players)
    if blank is None:
        blank = _NO_MOVES[players] = np.full((opponent_move_rows(players), 3), -1, dtype=np.int64)
    moves = blank.copy()
    if opponent_moves:
        moves[: len(opponent_moves)] = opponent_moves
    winners = np.zeros(players, dtype=bool)
    winner = -1
    if over:
        won = game.winners()
        winners[list(won)] = True
        winner = won[0] if len(won) == 1 else -1
    return {
        "action_mask": legal.copy() if player == seat else np.zeros(game.num_actions, dtype=np.int8),
        "dice": _ROLL_ROWS[n[_ROLL]].copy(),
        "rolls_left": n[_ROLLS_LEFT],
        "locked": _LOCKED_ROWS[n[_LOCKED]].copy(),
        "sheets": game.sheets.copy(),
        "totals": totals.copy(),
        "turn": facts[_TOTALS + players + player],
        "player": player,
        "seat": int(seat),
        "served_generala_pending": facts[_PENDING] == 1,
        "illegal_action": illegal,
        "opponent_moves": moves,
        "game_over": over != 0,
        "winners": winners,
        "winner": int(winner),
        "served_generala_win": n[_WINNER] >= 0,
    }
