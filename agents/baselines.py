"""Baseline agents: random, greedy, turn-optimal and rules-of-thumb."""

from __future__ import annotations

import numpy as np

from generala_env.core.dice import KEEP_COUNTS, MASK_FOR_KEEP, NUM_MASKS, ROLL_COUNTS, keep_index
from generala_env.core.engine import new_state
from generala_env.core.rules import NUMBER_LINES
from generala_env.core.scoring import generala_scored, line_max, points_table
from generala_env.planning import planner

from .base import COMBOS, WRITE, Agent, AgentError, SeatView, best_legal
from .solver import Solver

_GAME_0 = np.zeros(1, dtype=np.int64)  # the one game of a one-game state


class RandomAgent(Agent):
    """Uniform over legal actions, from its own seeded generator."""

    name = "random"

    def __init__(self, rules="classic", seed: int | None = None):
        super().__init__(rules, seed)
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def act(self, observation, info) -> int:
        legal = np.flatnonzero(self.legal_mask(info))
        if len(legal) == 0:
            raise AgentError("no legal action")
        return int(legal[self.rng.integers(len(legal))])


class _Scored(Agent):
    """Shared helpers: points of each line for the current dice."""

    def __init__(self, rules="classic", seed: int | None = None):
        super().__init__(rules, seed)
        self.points = points_table(self.rules)
        self.line_max = line_max(self.rules)
        self.lines = self.rules.lines

    def points_now(self, v: SeatView) -> np.ndarray:
        return planner.points_now(self.rules, v.sheet, v.roll, v.rolls_left).astype(float)

    def hold(self, v: SeatView, faces) -> int:
        """A hold mask keeping these faces (a sub-multiset of the dice), plus any locked dice."""
        k = keep_index(faces)
        if self.rules.locked_holds:
            both = np.maximum(KEEP_COUNTS[k], KEEP_COUNTS[v.locked])
            k = keep_index([f + 1 for f in range(6) for _ in range(int(both[f]))])
        return int(MASK_FOR_KEEP[v.roll, k])


class GreedyAgent(_Scored):
    """Writes the open line worth the most points now.

    Reroll rule: while rolls are left and no open combination line (straight … double
    generala) scores with the dice, hold every die of the most common face (the higher
    face on ties) and reroll the rest. Ties between lines go to the line with the
    smallest possible worth, so a zero crosses out the cheapest line.
    """

    name = "greedy"
    _greedy: tuple | None = None  # the compiled rule's tables for these rules (agents.greedy)

    def act(self, observation, info) -> int:
        from .greedy import greedy_actions, greedy_tables  # numba: compiled (and cached) on a first move

        v = self.view(info)
        if self._greedy is None:
            self._greedy = greedy_tables(self.rules)
        st = new_state(1, 1, self.rules.num_lines)  # the mover's view as a one-game state: its own sheet as seat 0
        st.roll[0], st.rolls_left[0], st.locked[0] = v.roll, v.rolls_left, v.locked
        st.sheets[0, 0] = v.sheet
        return int(greedy_actions(_GAME_0, np.asarray(v.mask, dtype=bool)[None, :], tuple(st), self._greedy)[0])


class TurnOptimalAgent(Agent):
    """Maximises the expected points of the current turn alone (exact, blind to the rest of the sheet)."""

    name = "turn-optimal"

    def __init__(self, rules="classic", seed: int | None = None):
        super().__init__(rules, seed)
        # future worth zero everywhere: the turn's own points are all that count
        self.solver = Solver(self.rules, values=np.zeros(2 * (1 << self.rules.num_lines)))
        self.tiebreak = -line_max(self.rules) / 1000.0

    def act(self, observation, info) -> int:
        v = self.view(info)
        vals = self.solver.action_values(v.filled_mask, generala_scored(self.rules, v.sheet), v.roll, v.rolls_left, v.locked)
        vals = vals.copy()
        vals[WRITE:] += self.tiebreak  # cross out the cheapest line on ties
        return best_legal(vals, v.mask)


class RulesOfThumbAgent(_Scored):
    """Plays like a careful human, after the tips of the how-to-play page (source 001).

    * Writes: points now, minus what the line is usually worth later ("par"): don't
      spend sixes on a few sixes; cross out ones before the rest; a combination line is
      crossed out only when nothing cheaper is left.
    * Rerolls: write a made straight, full house, four of a kind or generala; chase a
      straight with four in a row, a full house with two pairs (or three alike when four
      of a kind is filled), otherwise keep the most common face (three or more chase
      four of a kind / generala, but not every turn: with two alike and generala the
      only open combination, it keeps the pair of the best open number line instead).
    * Near the end (last three rounds), when behind the best opponent by more than the
      open lines can normally bring, it chases generala with any pair.
    """

    name = "rules-of-thumb"

    PAR_NUMBER = 3.0  # dice of a face one expects on its line
    PAR_COMBO = {"straight": 0.6, "full_house": 0.55, "four_of_a_kind": 0.45, "generala": 0.25, "double_generala": 0.1, "three_of_a_kind": 0.6}

    def _par(self, line: str, l: int) -> float:
        if line in NUMBER_LINES:
            return (NUMBER_LINES.index(line) + 1) * self.PAR_NUMBER
        if line == "three_of_a_kind":
            return 10.0
        return self.PAR_COMBO[line] * self.rules.value(line)

    def act(self, observation, info) -> int:
        v = self.view(info)
        pts = self.points_now(v)
        open_ = v.open_lines
        lines = self.lines
        open_names = {lines[l] for l in range(len(lines)) if open_[l]}
        counts = ROLL_COUNTS[v.roll]
        dice = [int(d) for d in v.dice]

        made = [l for l in range(len(lines)) if open_[l] and pts[l] > 0 and lines[l] in COMBOS]
        if v.rolls_left > 0 and not made:
            keep = self._choose_keep(v, counts, dice, open_names)
            if keep is not None:
                mask = self.hold(v, keep)
                if 0 <= mask < NUM_MASKS - 1 and v.mask[mask]:
                    return mask

        values = np.full(NUM_MASKS + len(lines), -np.inf)
        for l, line in enumerate(lines):
            values[WRITE + l] = pts[l] - self._par(line, l)
            if line in NUMBER_LINES and pts[l] == 0:
                values[WRITE + l] -= 0.5 * (NUMBER_LINES.index(line) + 1)  # cross out ones first
        return best_legal(values, v.mask)

    def _behind(self, v: SeatView) -> bool:
        if v.sheets.shape[0] < 2:
            return False
        totals = v.totals
        best_other = max(totals[p] for p in range(len(totals)) if p != v.seat)
        left = int(v.open_lines.sum())
        return left <= 3 and best_other - totals[v.seat] > 12 * left

    def _choose_keep(self, v: SeatView, counts, dice, open_names):
        top = max(range(6), key=lambda f: (counts[f], f))
        n_top = int(counts[top])
        if ("generala" in open_names or "double_generala" in open_names) and self._behind(v) and n_top >= 2:
            return [top + 1] * n_top
        if "straight" in open_names:
            for run in ({1, 2, 3, 4}, {2, 3, 4, 5}, {3, 4, 5, 6}):
                if run <= set(dice):
                    return sorted(run)
        pairs = [f for f in range(6) if counts[f] >= 2]
        if "full_house" in open_names and len(pairs) == 2:
            return [f + 1 for f in pairs for _ in range(2)]
        if "full_house" in open_names and n_top == 3 and "four_of_a_kind" not in open_names and "generala" not in open_names:
            return [top + 1] * 3
        if n_top >= 3:
            return [top + 1] * n_top
        if n_top == 2:
            # two alike: keep the pair whose number line is open and worth most
            best = max(pairs, key=lambda f: (NUMBER_LINES[f] in open_names, f))
            return [best + 1] * 2
        if "straight" in open_names:
            distinct = sorted(set(dice))
            return distinct[-4:] if len(distinct) >= 4 else distinct
        # nothing: keep the highest die whose number line is open
        for f in range(5, -1, -1):
            if counts[f] and NUMBER_LINES[f] in open_names:
                return [f + 1]
        return []
