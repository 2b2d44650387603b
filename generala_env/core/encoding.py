"""Observation encoding: a game state as one flat float32 vector, from a seat's view.

The layout depends only on the rule set (its ``L`` lines) and the number of players.
:func:`observation_layout` names every slice; :data:`LAYOUT_VERSION` changes whenever
the layout does, so checkpoints can refuse an encoding they were not trained on.

Slices, in order (all values lie in ``[-1, 1]``):

=========================  =====  ===================================================
name                       size   meaning
=========================  =====  ===================================================
``dice_counts``            6      how many dice show each face, / 5
``dice_sorted``            5      the five faces, sorted (hold-bit order), / 6
``rolls_left``             3      one-hot: 0, 1 or 2 rolls left
``first_roll``             1      1 right after the turn's first roll (served rolls)
``locked_counts``          6      faces that may not go back in the cup, / 5
``served_generala``        1      1 when a served generala wins on the spot now
``points_now``             L      points each open line would take now, / line max
``own_open``               L      1 where the seat's line is open
``own_points``             L      points on the seat's lines, / line max
``own_total``              1      the seat's total, / most points possible
``round``                  1      lines the seat has filled, / L
``opponent_k_open``        L      (k = 1 … P-1, in play order after the seat)
``opponent_k_points``      L
``opponent_k_total``       1
``score_lead``             1      seat total − best opponent total, / most possible
=========================  =====  ===================================================

The opponent slices and ``score_lead`` exist only with two or more players.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from generala_env.compiled.compiling import mark_read_only, restore_read_only
from generala_env.core import engine
from generala_env.core.checks import is_whole
from generala_env.core.game import Game
from generala_env.core.observe import EncodingTables
from generala_env.core.rules import RuleSet, load_rules
from generala_env.core.scoring import line_max, points_table

_ROLL, _ROLLS_LEFT, _LOCKED, _PENDING = engine.ROLL, engine.ROLLS_LEFT, engine.LOCKED, engine.PENDING  # PENDING: in a game's facts

LAYOUT_VERSION = 1


def observation_layout(rules: RuleSet | str, num_players: int = 1) -> dict[str, slice]:
    """Name → slice of the observation vector, in order; ``rules`` a rule set or anything
    :func:`~generala_env.core.rules.load_rules` takes (``"classic"``)."""
    rules = load_rules(rules)
    L = rules.num_lines
    sizes = [
        ("dice_counts", 6),
        ("dice_sorted", 5),
        ("rolls_left", 3),
        ("first_roll", 1),
        ("locked_counts", 6),
        ("served_generala", 1),
        ("points_now", L),
        ("own_open", L),
        ("own_points", L),
        ("own_total", 1),
        ("round", 1),
    ]
    for k in range(1, num_players):
        sizes += [(f"opponent_{k}_open", L), (f"opponent_{k}_points", L), (f"opponent_{k}_total", 1)]
    if num_players > 1:
        sizes.append(("score_lead", 1))
    layout, start = {}, 0
    for name, n in sizes:
        layout[name] = slice(start, start + n)
        start += n
    return layout


def observation_size(rules: RuleSet, num_players: int = 1) -> int:
    return list(observation_layout(rules, num_players).values())[-1].stop


class Encoder:
    """Turns a :class:`Game` into observations for any seat.

    :attr:`tables` are the :class:`EncodingTables` the batched env encodes with too:
    ``points_now[roll, first, line]`` (points the line would take now / line max) and
    ``points_obs[line, v]`` (``v`` points written / line max; the last column is 0, so an
    open line's ``-1`` reads 0).
    """

    def __init__(self, rules: RuleSet, num_players: int):
        self.rules = rules
        self.num_players = num_players
        self.layout = observation_layout(rules, num_players)
        self.size = observation_size(rules, num_players)
        self.line_max = line_max(rules)
        self.total_max = float(self.line_max.sum())
        points = points_table(rules)
        self.points_now = np.ascontiguousarray((points.astype(np.float32) / self.line_max[:, None, None]).transpose(1, 2, 0))
        written = np.arange(max(int(points.max()), 0) + 2)
        written[-1] = 0
        self.points_obs = (written[None, :] / self.line_max[:, None].astype(np.float64)).astype(np.float32)  # as int / float32 rounds
        s = self.layout
        assert s["dice_sorted"].start == s["dice_counts"].stop  # they are written from one table row
        names = (
            "dice_counts",
            "rolls_left",
            "first_roll",
            "locked_counts",
            "served_generala",
            "points_now",
            "own_open",
            "own_points",
            "own_total",
            "round",
            "score_lead",
        )
        self.starts = np.array([s[k].start if k in s else -1 for k in names], dtype=np.int64)
        self.opponent_starts = np.array(
            [[s[f"opponent_{k}_{part}"].start for part in ("open", "points", "total")] for k in range(1, num_players)], dtype=np.int64
        ).reshape(num_players - 1, 3)
        self.tables = EncodingTables(
            points_now=self.points_now,
            points_obs=self.points_obs,
            total_max=self.total_max,
            **{
                f"{k}_at": int(v)
                for k, v in zip(
                    ("dice", "rolls_left", "first", "locked", "served", "now", "open", "points", "total", "round", "lead"), self.starts, strict=True
                )
            },
            opponent_at=self.opponent_starts,
            generala_line=rules.generala_line,
            double_line=rules.double_generala_line,
        )
        from generala_env.compiled import one_game  # numba, when it is there (loaded on first use: importing the package stays light)

        self._kernel: Callable[..., None] = one_game.encode_game  # plain Python without numba
        self.observe_tables = one_game.pack_encoding(self.tables, self.size)  # the tables as encode() and Game.step(observe=...) take them
        for table in (self.points_now, self.points_obs, self.opponent_starts):
            table.flags.writeable = False  # the compiled encoding indexes by them

    def __getstate__(self) -> dict:
        """Pickling and ``copy.deepcopy``: the tables keep their read-only flags (a writable copy
        would be another signature of the compiled encoding, compiled again)."""
        return mark_read_only(self.__dict__)

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(restore_read_only(state))

    def encode(self, game: Game, seat: int, pending: bool | None = None) -> np.ndarray:
        """The observation of ``game`` from ``seat`` (:func:`~generala_env.core.observe.encode_game`, compiled when numba
        is there); ``pending``: :meth:`Game.served_generala_pending`, if the caller has it. The
        game's numbers are read at once (:meth:`Game.numbers`)."""
        if game.num_players != self.num_players or game.num_lines != len(self.line_max):
            raise ValueError(
                f"this encoder is for {self.num_players} player(s) and {len(self.line_max)} lines; the game has {game.num_players} and {game.num_lines}"
            )
        if not is_whole(seat) or not 0 <= seat < self.num_players:
            raise ValueError(f"seat must be a seat from 0 to {self.num_players - 1}, got {seat!r}")
        out = np.empty(self.size, dtype=np.float32)
        n, facts = game.numbers()[:2]
        if pending is None:
            pending = facts[_PENDING] == 1
        self._kernel(out, *self.observe_tables, n[_ROLL], n[_ROLLS_LEFT], n[_LOCKED], pending, game.sheets, seat)
        return out
