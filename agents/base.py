"""The one interface every agent has, and helpers to read a seat's state from ``info``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from generala_env.core.dice import FACES, KEEP_OF_KEY, KEY_WEIGHTS, NUM_MASKS, keep_index, roll_index
from generala_env.core.game import OPEN
from generala_env.core.rules import RulesError, RuleSet, load_rules
from generala_env.core.scoring import sheet_totals

WRITE = NUM_MASKS  # first write action
COMBOS = ("straight", "full_house", "four_of_a_kind", "generala", "double_generala")  # the lines that score only some rolls


class AgentError(ValueError):
    """An agent that cannot be built or cannot play the given rules."""


@dataclass(frozen=True)
class SeatView:
    """What a seat knows, read from an env ``info`` dict (never from inside the game)."""

    dice: np.ndarray  # sorted faces
    roll: int  # index into ROLLS
    rolls_left: int
    locked: int  # keep index of dice that may not go back
    sheet: np.ndarray  # this seat's line values, OPEN for open lines
    sheets: np.ndarray
    seat: int
    mask: np.ndarray  # legal actions, bool

    @property
    def totals(self) -> np.ndarray:
        """Every seat's total (:func:`~generala_env.core.scoring.sheet_totals`)."""
        return sheet_totals(self.sheets)

    @property
    def open_lines(self) -> np.ndarray:
        return self.sheet == OPEN

    @property
    def filled_mask(self) -> int:
        return int(sum(1 << i for i, v in enumerate(self.sheet) if v != OPEN))

    @classmethod
    def from_info(cls, info: dict) -> SeatView:
        seat = int(info.get("seat", info.get("player", 0)))
        sheets = np.asarray(info["sheets"])
        dice = np.asarray(info["dice"])
        return cls(
            dice=dice,
            roll=roll_index(dice),
            rolls_left=int(info["rolls_left"]),
            locked=locked_keep(info.get("locked", ())),
            sheet=sheets[seat],
            sheets=sheets,
            seat=seat,
            mask=np.asarray(info["action_mask"]).astype(bool),
        )


def recorded_rules(settings, where: str) -> RuleSet:
    """The rules a checkpoint or a values file recorded (its ``settings``), as this code reads
    them: a setting added since takes its default, so the file keeps playing the rules it
    learned. A :class:`AgentError` names ``where`` when they cannot be read."""
    try:
        return load_rules(settings)
    except RulesError as e:
        raise AgentError(f"{where}: its rules cannot be read: {e}") from None


def locked_keep(locked) -> int:
    """The keep index of ``info["locked"]``: the env's count of locked dice per face, or a
    list of the locked faces (what ``info`` held up to 0.2.0: at most four, never six)."""
    a = np.asarray(locked, dtype=np.int64)
    if a.shape == (FACES,):
        return int(KEEP_OF_KEY[int(a @ KEY_WEIGHTS)])
    return keep_index(a.tolist())


class Agent:
    """An agent: ``act(observation, info) -> action``, legal actions only.

    Subclasses set ``name`` and implement :meth:`act`. An agent is built for one rule
    set; one that cannot play it raises :class:`AgentError` at construction.
    """

    name = "agent"

    def __init__(self, rules="classic", seed: int | None = None):
        self.rules: RuleSet = load_rules(rules)
        self.seed = seed

    def reset(self, seed: int | None = None) -> None:
        """Called at the start of each game; ``seed`` re-seeds agents that draw randomness."""

    def act(self, observation, info) -> int:  # pragma: no cover - interface
        raise NotImplementedError

    def legal_mask(self, info) -> np.ndarray:
        """``info["action_mask"]`` as bool, checked to belong to this agent's rule set."""
        try:
            mask = np.asarray(info["action_mask"]).astype(bool)
        except (KeyError, TypeError) as e:
            raise AgentError(f"{self.name}: act() needs the env's info with 'action_mask' ({e!r})") from None
        if mask.shape != (WRITE + self.rules.num_lines,):
            raise AgentError(
                f"{self.name} was built for rules {self.rules.name!r} ({self.rules.num_lines} lines, "
                f"{WRITE + self.rules.num_lines} actions); this game has an action mask of shape {mask.shape}"
            )
        return mask

    def view(self, info) -> SeatView:
        """What this agent's seat knows, from ``info``, checked to belong to this agent's rule set."""
        self.legal_mask(info)
        return SeatView.from_info(info)

    def __call__(self, observation, info) -> int:
        return self.act(observation, info)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, rules={self.rules.name!r})"


def best_legal(values: np.ndarray, mask: np.ndarray) -> int:
    """The legal action with the highest value (lowest index on ties)."""
    v = np.where(mask, values, -np.inf)
    if not mask.any():
        raise AgentError("no legal action: the game is over or it is not this seat's move")
    return int(np.argmax(v))
