"""Which (mover sheet, opponent sheet) pairs the two-player table holds, and where each one's
values lie: :class:`Layout` (see :mod:`generala_agents.solver2p` for ``V(a, b, d)``).

Only score differences that can still matter are kept. With ``M(s)`` the most points a
sheet can still gain and ``F(s)`` the most its filled lines can hold:

* ``d > M(b)``: the opponent cannot catch up on points, and ``V`` no longer depends on
  ``d`` (only a served generala can change the result); likewise ``d < −M(a) − 1``.
* ``−F(b) ≤ d ≤ F(a)``: no other difference can be reached.

So each pair of sheets stores ``V`` for ``d`` from ``max(−M(a) − 1, −F(b))`` to
``min(M(b) + 1, F(a))``, and a look-up outside that range takes its nearest end.
"""

from __future__ import annotations

import numpy as np

from generala_env.core.rules import RuleSet
from generala_env.core.scoring import points_table


def _sheets(rules: RuleSet) -> tuple[list[list[int]], np.ndarray, np.ndarray]:
    """The sheet ids by number of filled lines, and per sheet id the most points it can still
    gain (a blocked double generala gains nothing) and the most its filled lines can hold."""
    L = rules.num_lines
    gen, dbl = rules.generala_line, rules.double_generala_line
    line_max = points_table(rules).max(axis=(1, 2)).astype(np.int64)
    sheets: list[list[int]] = [[] for _ in range(L + 1)]
    gain = np.zeros(2 << L, dtype=np.int64)
    held = np.zeros(2 << L, dtype=np.int64)
    for m in range(1 << L):
        for flag in (0, 1) if dbl >= 0 and (m >> gen) & 1 else (0,):
            s = 2 * m + flag
            sheets[bin(m).count("1")].append(s)
            for l in range(L):
                if (m >> l) & 1:
                    held[s] += line_max[l]
                elif not (l == dbl and (m >> gen) & 1 and not flag):
                    gain[s] += line_max[l]
    return sheets, gain, held


class Layout:
    """Which (mover sheet, opponent sheet) pairs exist, and where each one's values lie.

    Pairs come a layer at a time, the last layer first (the order they are solved in), so
    a solve writes its table front to back and holds only two layers in memory."""

    def __init__(self, rules: RuleSet):
        L = rules.num_lines
        self.L = L
        self.full = (1 << L) - 1
        S = 2 << L  # sheet id = filled mask * 2 + flag (generala holds points, double_generala only)
        sheets, gain, held = _sheets(rules)
        self.gain, self.held, self.sheets = gain, held, sheets
        # pairs, a layer (filled lines of both) at a time; the mover is seat 0 when both
        # have filled as many lines, seat 1 when the opponent has filled one more
        layers: list[tuple[np.ndarray, np.ndarray]] = [None] * (2 * L)  # type: ignore[list-item]
        for nA in range(L):
            for nB in (nA, nA + 1):
                A = np.repeat(np.array(sheets[nA], dtype=np.int64), len(sheets[nB]))
                B = np.tile(np.array(sheets[nB], dtype=np.int64), len(sheets[nA]))
                layers[nA + nB] = (A, B)
        order = list(range(2 * L - 1, -1, -1))
        self.pair_a = np.concatenate([layers[n][0] for n in order]).astype(np.int32)
        self.pair_b = np.concatenate([layers[n][1] for n in order]).astype(np.int32)
        bounds = np.cumsum([0] + [len(layers[n][0]) for n in order])
        self.layers: list[np.ndarray] = [np.zeros(0, dtype=np.int64)] * (2 * L)
        for i, n in enumerate(order):
            self.layers[n] = np.arange(bounds[i], bounds[i + 1], dtype=np.int64)
        a, b = self.pair_a.astype(np.int64), self.pair_b.astype(np.int64)
        self.lo = np.maximum(-gain[a] - 1, -held[b])
        hi = np.minimum(gain[b] + 1, held[a])
        self.size = hi - self.lo + 1
        self.off = np.concatenate([[0], np.cumsum(self.size)[:-1]]).astype(np.int64)
        self.num_values = int(self.size.sum())
        self.num_pairs = len(self.pair_a)
        self.S = S
        # per layer, where its values start in the table and how many there are
        self.layer_start = np.array([int(self.off[p[0]]) for p in self.layers], dtype=np.int64)
        self.layer_values = np.array([int(self.size[p].sum()) for p in self.layers], dtype=np.int64)

    @staticmethod
    def counts(rules: RuleSet) -> tuple[list[int], int]:
        """The number of values of each layer and the number of pairs, counted from the rule
        set alone (no pair is listed)."""
        from collections import Counter

        L = rules.num_lines
        sheets, gain, held = _sheets(rules)
        # per filled count, the number of sheets of each (gain, held): enough to count pairs and values
        per_n = [Counter(zip(gain[ids].tolist(), held[ids].tolist(), strict=True)) for ids in map(np.array, sheets)]
        layer_values = [0] * (2 * L)
        pairs = 0
        for nA in range(L):
            for nB in (nA, nA + 1):
                ga, ha, ca = (np.array(x) for x in zip(*[(g, h, c) for (g, h), c in per_n[nA].items()], strict=True))
                gb, hb, cb = (np.array(x) for x in zip(*[(g, h, c) for (g, h), c in per_n[nB].items()], strict=True))
                lo = np.maximum(-ga[:, None] - 1, -hb[None, :])
                hi = np.minimum(gb[None, :] + 1, ha[:, None])
                w = ca[:, None] * cb[None, :]
                layer_values[nA + nB] = int(((hi - lo + 1) * w).sum())
                pairs += int(w.sum())
        return layer_values, pairs

    @staticmethod
    def bytes_needed(rules: RuleSet) -> int:
        """What a solve holds in memory (two layers of float32 values, the pair index and
        the per-pair arrays; the table itself goes to a file a layer at a time), counted
        from the rule set alone before anything big is allocated."""
        layer_values, pairs = Layout.counts(rules)
        two_layers = max(x + y for x, y in zip(layer_values, [*layer_values[1:], 0], strict=True))
        S = 2 << rules.num_lines
        return two_layers * 4 + pairs * (4 + 4 + 8 + 8 + 8) + S * S * 4

    def index_pairs(self) -> None:
        self.pair_of = np.full((self.S, self.S), -1, dtype=np.int32)
        self.pair_of[self.pair_a, self.pair_b] = np.arange(self.num_pairs, dtype=np.int32)
