"""``win-max``: a player for tables of 2 to 6 that plays to win, not to score.

A planner built on the one-player solver (:mod:`generala_agents.solver`), after Pawlewicz's
heuristic for multi-player Yahtzee (Computers and Games 2010), not a learner:

* every sheet on the table has a distribution of the points still to come when the rest of
  its game is played by the one-player optimal policy (:mod:`generala_agents.distributions`;
  with ``served_generala: win``, also its chance of ending the game on a served generala);
* an opponent's final total is its total now plus a draw from its sheet's distribution, the
  opponents' dice are independent, so the chance that every opponent ends at or under ``y``
  is the product of their distribution functions;
* ending this turn by writing line ``l`` for ``p`` points leaves this seat's sheet with line
  ``l`` filled; its value is the chance that the seat's total now plus ``p`` plus a draw from
  that sheet's distribution beats every opponent's final total, a tie among ``k`` best
  totals counting ``1/k`` (a win shared, as :func:`generala_env.core.game.outcome_points` counts it);
  for its own sheet the seat takes the best of a few distributions: the one-player optimal
  policy's and those of policies that play for more or less risk (:data:`RISKS`), each a
  policy it could follow from its next turn on;
* the turn's holds and writes are the exact turn expectimax of ``Solver.turn`` with those
  values in place of the solver's expected points.

The values are the seat's chance to win if the opponents played the one-player optimal
policy after this turn and the seat the best of its fixed policies: a heuristic, exact on a
game's last turn.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import numpy as np

from generala_env.core.dice import FIVE_ALIKE, NUM_ROLLS
from generala_env.core.game import OPEN
from generala_env.core.rules import RuleSet, load_rules
from generala_env.core.scoring import generala_scored
from generala_env.files import FileProblem, write_atomic
from generala_env.files.cache import cache_dir, private_cache
from generala_env.planning import planner
from generala_env.planning.planner import sheet_id

from . import shared
from .base import Agent, AgentError, best_legal
from .distributions import RemainingPoints, bin_width, build_all, layer_sheets
from .solver import Solver, cache_meta, checksum, load_or_solve, meta_problem, read_cached_arrays, read_or_replace, shared_solver

TABLE_VERSION = 1
# the risk of each table (see RemainingPoints) per 150 points of the one-player expected
# total: the first is the one-player optimal policy, which also models every opponent
RISKS = (0.0, -0.04, 0.04, 0.1)
# seconds per cell (table x sheet x bin) of a build, as measured on the shared development
# machine (3.6 to 4.5e-6 at a load average of about 7), to say beforehand when a build will take a while
_SECONDS_PER_CELL = 4e-6
# Gauss-Legendre nodes on [0, 1]: exact for polynomials of degree 5, the most that five
# opponents give (the share of a tie among k + 1 best totals is the integral of t^k)
_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(3)
_NODES, _WEIGHTS = (_NODES + 1) / 2, _WEIGHTS / 2


def risks_of(solver: Solver) -> tuple[float, ...]:
    """The tables' risks for a rule set: :data:`RISKS` scaled to its points, and small enough
    that ``exp(risk * points)`` of a whole sheet stays well inside float64."""
    scale = 150 / max(solver.expected_score, 1.0)
    most = max(1.0, float(solver.points.max(axis=(1, 2)).sum()))
    return tuple(float(np.sign(c) * min(abs(c) * scale, 40 / most)) for c in RISKS)


# -- the tables on disk -------------------------------------------------------------------
def table_path(rules: RuleSet, served_wins: bool) -> Path:
    return cache_dir() / f"win-max-{rules.fingerprint()}-{'served' if served_wins else 'points'}-v{TABLE_VERSION}.npz"


def valid_sheets(solver: Solver) -> np.ndarray:
    """Which indices ``mask * 2 + flag`` are turn-start sheets (flag 1 only where it matters)."""
    ms, fs = layer_sheets(solver, np.arange(1 << solver.L, dtype=np.int64))
    out = np.zeros(2 << solver.L, dtype=bool)
    out[ms * 2 + fs] = True
    return out


def table_problem(table: RemainingPoints, samples: int = 16) -> str | None:
    """Why ``table`` cannot be the distributions of its solver's rules and risk, or ``None``.

    A checksum is no defence against whoever rewrites the file, so the numbers are checked:
    non-negative, each sheet's adding up to 1, the full sheet's all at 0 points, the means
    equal to the (checked) solver's values for the one-player policy where no served generala
    ends a game, and the start and ``samples`` other sheets equal to what one turn gives from
    the sheets after them.
    """
    s, dist, served = table.solver, table.dist, table.served
    width, bins = bin_width(s)
    if dist.dtype != np.float64 or dist.shape != (2 << s.L, bins) or served.shape != (2 << s.L,) or table.width != width:
        return f"it holds {dist.dtype} distributions of shape {dist.shape} in bins of {table.width}, not {(2 << s.L, bins)} in bins of {width}"
    if not (np.isfinite(dist).all() and np.isfinite(served).all() and np.isfinite(table.utility).all()) or dist.min() < 0 or served.min() < 0:
        return "it holds negative or non-finite probabilities"
    ok = valid_sheets(s)
    off = np.abs(dist.sum(axis=1) + served - 1.0)[ok]
    if off.max() > 1e-9:
        return f"a sheet's probabilities add up to {1 + off.max():.9f}, not 1"
    full = (1 << s.L) - 1
    if dist[full * 2, 0] != 1.0 or table.utility[full * 2] != 1.0:
        return "the full sheet's distribution is not all at 0 points"
    if table.risk == 0.0 and not table.served_wins and np.abs(table.means() - s.V)[ok].max() > 1e-6 * (1 + np.abs(s.V).max()):
        return "its means are not the one-player solver's values"
    rng = np.random.default_rng()
    masks = np.concatenate([[0], rng.integers(0, full, size=samples)]).astype(np.int64) if full > 0 else np.zeros(0, dtype=np.int64)
    flags = np.zeros(len(masks), dtype=np.int64)
    if s.dbl >= 0:
        flags[1::2] = (masks[1::2] >> s.gen) & 1
    again, again_served, again_utility = table.layer(masks, flags)
    idx = masks * 2 + flags
    stored_utility = table.utility[idx]
    if (
        np.abs(again - dist[idx]).max() > 1e-9
        or np.abs(again_served - served[idx]).max() > 1e-9
        or (table.risk != 0.0 and (np.abs(again_utility - stored_utility) > 1e-9 * np.abs(stored_utility)).any())
    ):
        return "its distributions do not follow from one another"
    return None


def _read_tables(path: Path, solver: Solver, served_wins: bool, risks: tuple[float, ...]) -> tuple[list[RemainingPoints] | None, str | None]:
    """The tables in ``path``, or ``None`` and why not (``None``, ``None``: there is no file)."""
    width, bins = bin_width(solver)
    K, S = len(risks), 2 << solver.L
    limit = 8 * K * S * (bins + 2) + (1 << 20)
    arrays, why = read_cached_arrays(path, limit, "the win-max table")
    if arrays is None:
        return None, why
    if not {"V", "served", "utility"} <= arrays.keys():
        return None, "it lacks one of its tables"
    meta, dist, served, utility = arrays["meta"], arrays["V"], arrays["served"], arrays["utility"]
    why = meta_problem(meta, solver.rules, TABLE_VERSION, dist)
    if why is None and (meta.get("served_checksum") != checksum(served) or meta.get("utility_checksum") != checksum(utility)):
        why = "its served-generala chances or utilities do not match their checksum (damaged)"
    if why is None and (meta.get("served_wins") is not served_wins or meta.get("risks") != list(risks)):
        why = "it holds the tables of other risks or of another table size"
    if why is None and (dist.shape != (K, S, bins) or served.shape != (K, S) or utility.shape != (K, S) or utility.dtype != np.float64):
        why = f"it holds arrays of shape {dist.shape}, {served.shape} and {utility.shape}, not {(K, S, bins)}, {(K, S)} and {(K, S)}"
    if why is not None:
        return None, why
    tables = [RemainingPoints(solver, served_wins, dist[k], served[k], width, risk, utility[k]) for k, risk in enumerate(risks)]
    for table in tables:
        why = table_problem(table)
        if why is not None:
            return None, why
    return tables, None


def load_or_build(rules, served_wins: bool, use_cache: bool = True, solver: Solver | None = None) -> tuple[list[RemainingPoints], str]:
    """The tables of ``rules`` (one per risk of :func:`risks_of`) and where they came from
    (``"cache"`` or ``"built"``), cached as the solver's values are
    (:func:`generala_agents.solver.load_or_solve`): one file per rule set in a private cache
    folder, read only when it is this user's regular file, its checksums hold and
    :func:`table_problem` finds nothing in any table; otherwise a
    :class:`~generala_env.files.cache.CacheWarning` says why and the tables are built again."""
    rules = load_rules(rules)
    if solver is None:
        solver = load_or_solve(rules, use_cache=use_cache)[0]
    risks = risks_of(solver)
    path = table_path(rules, served_wins)
    folder = private_cache() if use_cache else None
    replace = True
    if folder is not None:
        tables, replace = read_or_replace(path, lambda: _read_tables(path, solver, served_wins, risks), "the win-max table", "built again", "the tables")
        if tables is not None:
            return tables, "cache"
    width, bins = bin_width(solver)
    K, S = len(risks), 2 << solver.L
    dist, served, utility = np.zeros((K, S, bins)), np.zeros((K, S)), np.ones((K, S))
    tables = [RemainingPoints(solver, served_wins, dist[k], served[k], width, risk, utility[k]) for k, risk in enumerate(risks)]
    seconds = _SECONDS_PER_CELL * dist.size
    if seconds > 5:
        where = f"cached in {path}" if folder is not None and replace else "not cached"
        print(f"win-max: building its tables for rules {rules.name!r} (about {seconds:.0f} s, once; {where})", file=sys.stderr, flush=True)
    build_all(tables)
    if folder is not None and replace:
        meta = cache_meta(
            rules,
            TABLE_VERSION,
            dist,
            tables[0].build_seconds,
            served_wins=served_wins,
            risks=list(risks),
            served_checksum=checksum(served),
            utility_checksum=checksum(utility),
            built_from="the one-player solver's values (generala_agents.solver): a planner, nothing learned",
        )
        try:
            write_atomic(path, lambda f: np.savez(f, V=dist, served=served, utility=utility, meta=np.array(json.dumps(meta))))
        except (OSError, FileProblem) as err:  # no reason to fail: the tables are in memory
            warnings.warn(f"cannot write the win-max table {path}: {err}; it is kept in memory only", RuntimeWarning, stacklevel=2)
    return tables, "built"


def shared_tables(rules, served_wins: bool) -> tuple[list[RemainingPoints], str]:
    """:func:`load_or_build`'s tables of ``rules`` as the whole process shares them: read or
    built once per rule set (:func:`generala_agents.shared.once`: callers of the same rules
    wait for that one build, others do not), on the shared one-player solver
    (:func:`generala_agents.solver.shared_solver`), every array read-only."""
    rules = load_rules(rules)

    def build() -> tuple[list[RemainingPoints], str]:
        tables, source = load_or_build(rules, served_wins, solver=shared_solver(rules)[0])
        for t in tables:
            shared.read_only(t.dist, t.served, t.utility)
        return tables, source

    got = shared.once(str(table_path(rules, served_wins)), build)
    assert got is not None  # build never gives None
    return got


# -- the player ---------------------------------------------------------------------------
class WinMaxAgent(Agent):
    """Plays to win at a table of 2-6: a planner on the one-player solver's tables (nothing learned).

    Each sheet's distribution of the points still to come under the one-player optimal
    policy gives every opponent's final total; each write is valued by the chance that this
    seat's total (under the best of a few policies of more or less risk) beats the best of
    the others, a shared win counted as its share; the turn is the exact expectimax of that
    chance. ``lookahead=2`` plays the seat's next turn by the same expectimax before those
    policies take over (slower: docs/agents.md has the times). Alone at the table it plays as
    ``optimal``.
    """

    name = "win-max"

    def __init__(self, rules="classic", seed: int | None = None, use_cache: bool = True, lookahead: int = 1):
        super().__init__(rules, seed)
        if lookahead not in (1, 2):
            raise AgentError(f"{self.name}: lookahead must be 1 or 2 turns, got {lookahead!r}")
        self.lookahead = lookahead
        self.served_wins = self.rules.served_generala_wins(2)
        if use_cache:  # the process's tables, shared by every win-max of these rules
            self.solver, self.source = shared_solver(self.rules)
            self.tables, self.table_source = shared_tables(self.rules, self.served_wins)
        else:  # tables of its own, nothing read or written
            self.solver, self.source = load_or_solve(self.rules, use_cache=False)
            self.tables, self.table_source = load_or_build(self.rules, self.served_wins, use_cache=False, solver=self.solver)
        self.table = self.tables[0]  # the one-player optimal policy's: every opponent's
        self._sheets: dict[int, tuple] = {}  # per sheet index: points, next sheet and the solver's write values, of this turn's sheets only
        self._turn: tuple | None = None  # (key, write values, turn arrays) of the turn under way
        self._tie_weight = 1e-7 / max(1.0, float(self.solver.points.max(axis=(1, 2)).sum()))

    def _sheet(self, index: int) -> tuple:
        """A sheet's writes: points, the sheet they lead to, the solver's values of them."""
        if index not in self._sheets:
            from .distributions import successors

            m, f = np.array([index // 2]), np.array([index % 2])
            points, nxt = successors(self.solver, m, f)
            self._sheets[index] = (points[0], nxt[0], self.solver.write_values(m, f, self.solver.V)[0])
        return self._sheets[index]

    def index(self, sheet: np.ndarray) -> int:
        """A sheet's index in the tables (:func:`generala_env.planning.planner.sheet_id`, as ``Solver.V``)."""
        return sheet_id(self.rules, sheet)

    def win_share(self, sheets: np.ndarray, seat: int) -> np.ndarray:
        """``H[y]``: this seat's share of the win (1 alone on top, ``1/k`` among ``k`` best)
        when its final total is ``y`` bins and no served generala ends the game, given the
        other sheets; and the share of a served generala of its own (the last entry)."""
        t = self.table
        totals = np.where(sheets == OPEN, 0, sheets).sum(axis=1)
        size = 3 * t.bins + int(totals.max()) // t.width + 2
        ends, below = [], []
        none_served = 1.0
        for j in range(len(sheets)):
            if j == seat:
                continue
            d = t.dist[self.index(sheets[j])]
            f = np.zeros(size)
            at = int(round(totals[j] / t.width))
            f[at : at + t.bins] = d
            cdf = np.cumsum(f)
            ends.append(f)
            below.append(cdf - f)
            none_served *= 1.0 - t.served[self.index(sheets[j])]
        H = np.zeros(size + 1)
        for node, weight in zip(_NODES, _WEIGHTS, strict=True):
            term = np.ones(size)
            for f, b in zip(ends, below, strict=True):
                term *= b + node * f
            H[:size] += weight * term
        H[size] = none_served + (1.0 - none_served) / 2  # a served generala of its own: a win, unless another came first
        return H

    def leaf_values(self, H: np.ndarray, after: np.ndarray, lo: int, hi: int) -> np.ndarray:
        """``U[i, y - lo]``: this seat's chance to win from the turn start of sheet ``after[i]``
        with ``y`` bins of points, for ``lo <= y < hi``: the best, over its tables, of the
        chance that its final total beats the others' (``H``, :meth:`win_share`)."""
        windows = np.ascontiguousarray(self._windows(H, hi)[lo:hi])  # (hi - lo, bins)
        best = np.full((hi - lo, len(after)), -np.inf)
        for u in self.tables:
            np.maximum(best, windows @ u.dist[after].T + u.served[after][None, :] * H[-1], out=best)
        return best.T

    def pair_values(self, H: np.ndarray, after: np.ndarray, at: np.ndarray) -> np.ndarray:
        """:meth:`leaf_values` of the pairs (``after[i]``, ``at[i]`` bins) alone."""
        rows = self._windows(H, int(at.max()) + 1)[at]  # (pairs, bins)
        best = np.full(len(after), -np.inf)
        for u in self.tables:
            np.maximum(best, np.einsum("ij,ij->i", rows, u.dist[after]) + u.served[after] * H[-1], out=best)
        return best

    def _windows(self, H: np.ndarray, hi: int) -> np.ndarray:
        """``out[y] = H[y : y + bins]`` for ``y < hi`` (past ``H``'s end: its last chance), a view."""
        size, bins = len(H) - 1, self.table.bins
        padded = np.concatenate([H[:size], np.full(bins + max(0, hi - size), H[size - 1])])
        return np.lib.stride_tricks.sliding_window_view(padded, bins)

    def write_values(self, info) -> tuple[np.ndarray, dict]:
        """``W[l, r, served]``: the chance to win after writing line ``l`` with roll ``r``, and
        ``Solver.turn``'s arrays of the turn; kept for the rest of the turn.

        The chance after a write is that of :meth:`leaf_values`; with ``lookahead=2``, the
        value of the seat's next turn played by the same expectimax with those chances after
        it. After its last turn: the chance itself."""
        v = self.view(info)
        sheets = np.asarray(v.sheets)
        key = (v.seat, sheets.tobytes())
        if self._turn is not None and self._turn[0] == key:
            return self._turn[1], self._turn[2]
        w = self.table.width
        own = self.index(sheets[v.seat])
        self._sheets = {own: self._sheets[own]} if own in self._sheets else {}  # a new turn: earlier turns' sheets never come back
        points, nxt, solver_values = self._sheet(own)
        H = self.win_share(sheets, v.seat)
        total = int(np.where(sheets[v.seat] == OPEN, 0, sheets[v.seat]).sum())
        live = nxt >= 0
        pairs, inverse = np.unique(nxt[live] * (1 << 40) + points[live], return_inverse=True)
        children, gained = np.divmod(pairs, 1 << 40)
        values = np.empty(len(pairs))
        full = (1 << self.solver.L) - 1
        last = children // 2 == full
        at = np.rint((total + gained) / w).astype(np.int64)
        if self.lookahead == 1 or last.all():
            values = self.pair_values(H, children, at)
        else:  # the seat's last turn: its total is final; before it, its next turn's expectimax
            if last.any():
                values[last] = self.pair_values(H, children[last], at[last])
            values[~last] = self._next_turn(H, children[~last], total + gained[~last])
        W = np.full(points.shape, -np.inf)
        W[live] = values[inverse.ravel()] + self._tie_weight * solver_values[live]  # the tie weight: among equal chances, the most points
        if self.served_wins and self.solver.gen >= 0 and live[self.solver.gen, 0, 0]:
            W[self.solver.gen, FIVE_ALIKE, 1] = 1.0 + self._tie_weight * solver_values[self.solver.gen, FIVE_ALIKE, 1]  # wins on the spot
        turn = self.solver.turn(W[None])
        self._turn = (key, W, turn)
        return W, turn

    def _next_turn(self, H: np.ndarray, sheets: np.ndarray, totals: np.ndarray) -> np.ndarray:
        """The chance to win from the start of a turn of each sheet with each total (points),
        by the turn's expectimax over :meth:`leaf_values`."""
        w, L = self.table.width, self.solver.L
        grand = {c: self._sheet(int(c))[:2] for c in np.unique(sheets)}
        afters = np.unique(np.concatenate([nx[nx >= 0] for _, nx in grand.values()]))
        most = max(int(pts.max()) for pts, _ in grand.values())
        lo, hi = int(totals.min()) // w, int(np.ceil((int(totals.max()) + most) / w)) + 2
        U = self.leaf_values(H, afters, lo, hi)  # (afters, totals)
        W2 = np.full((len(sheets), L, NUM_ROLLS, 2), -np.inf)
        for i, (c, y) in enumerate(zip(sheets, totals, strict=True)):
            pts, nx = grand[int(c)]
            ok = nx >= 0
            W2[i][ok] = U[np.searchsorted(afters, nx[ok]), np.rint((y + pts[ok]) / w).astype(np.int64) - lo]
            if self.served_wins and self.solver.gen >= 0 and ok[self.solver.gen, 0, 0]:
                W2[i, self.solver.gen, FIVE_ALIKE, 1] = H[-1]  # a served generala: the game ends there
        return self.solver.turn(W2)["value"]

    def action_values(self, info) -> np.ndarray:
        """The chance to win after each action (``-inf`` where not allowed); holds 0..31, then writes."""
        v = self.view(info)
        W, turn = self.write_values(info)
        return planner.turn_action_values(W, turn["K1"][0], turn["K2"][0], v.roll, v.rolls_left)

    def act(self, observation, info) -> int:
        v = self.view(info)
        if v.mask.sum() == 1:  # a served generala that wins: the one legal write
            return int(np.argmax(v.mask))
        if v.sheets.shape[0] == 1:  # alone: its best total is its best chance
            values = self.solver.action_values(v.filled_mask, generala_scored(self.rules, v.sheet), v.roll, v.rolls_left, v.locked)
            return best_legal(values, v.mask)
        return best_legal(self.action_values(info), v.mask)
