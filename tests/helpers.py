"""Helpers the tests share: dice given in advance, and naming actions the way the game does.

Imported as ``from helpers import ...`` (pytest puts ``tests/`` on ``sys.path``); fixtures
and hooks, if any, belong in ``conftest.py``, which tests should not import.
"""

from __future__ import annotations

import base64
import json
import pickle
import zipfile
from pathlib import Path

import numpy as np
from hypothesis import settings

from generala_env.core.dice import NUM_MASKS

ROOT = Path(__file__).resolve().parent.parent  # the clone the tests belong to, whatever the working folder
TINY_CONFIG = str(ROOT / "configs" / "ppo_tiny.yaml")  # the smallest training config, by its path in the clone

# property tests: few examples, no per-example deadline (the suite must stay fast on 2 cores)
QUICK = settings(max_examples=15, deadline=None)


class ScriptedDice:
    """A stand-in for ``numpy.random.Generator`` that deals the faces it was given.

    ``Game.reset``/``Game.step`` and the env draw dice with ``integers(1, 7, size=n)``;
    each such call takes the next ``n`` faces. A call without ``size`` (the env seeding
    its opponents) gets 0. Running out of faces is an error: a script says every die,
    including the next first roll that ``Game.step`` draws even for the game's last write.
    """

    def __init__(self, *faces):
        self.faces = [int(f) for group in faces for f in str(group) if f.isdigit()] if faces else []

    def push(self, *faces) -> ScriptedDice:
        self.faces += [int(f) for group in faces for f in str(group) if f.isdigit()]
        return self

    def integers(self, low, high=None, size=None, dtype=None):
        if size is None:
            return 0
        n = int(np.prod(size))
        if n > len(self.faces):
            raise AssertionError(f"script ran out of dice: {n} wanted, {len(self.faces)} left")
        out, self.faces = self.faces[:n], self.faces[n:]
        assert all(low <= f < high for f in out)
        return np.array(out, dtype=dtype or np.int64)


class LoadedDice:
    """A seeded generator whose throws are often all one face (to reach generala states)."""

    def __init__(self, seed: int, p_alike: float = 0.15):
        self.rng = np.random.default_rng(seed)
        self.p = p_alike

    def integers(self, low, high=None, size=None, dtype=None):
        if size is not None and self.rng.random() < self.p:
            return np.full(size, self.rng.integers(low, high), dtype=dtype or np.int64)
        return self.rng.integers(low, high, size=size, dtype=dtype or np.int64)


def faces(text) -> list[int]:
    """``"44426"`` → ``[4, 4, 4, 2, 6]``."""
    return [int(c) for c in str(text) if c.isdigit()]


def write(game_or_rules, line: str) -> int:
    """The action that writes the dice on ``line``."""
    rules = getattr(game_or_rules, "rules", game_or_rules)
    return NUM_MASKS + rules.lines.index(line)


def hold(game, kept) -> int:
    """The hold mask keeping the faces ``kept`` (leftmost matching dice of the sorted roll)."""
    want = faces(kept)
    mask = 0
    for i, f in enumerate(game.dice):
        if int(f) in want:
            want.remove(int(f))
            mask |= 1 << i
    assert not want, f"{kept} is not among the dice {list(game.dice)}"
    return mask


# -- a hostile SB3 zip: what the zip opt-in guards against ---------------------------------------
class _OpensForWriting:
    """Unpickled, it creates the file ``path``: what a hostile zip's pickle could do."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def forged_zip(path: Path, marker: Path) -> Path:
    """An SB3-shaped zip whose pickled fields create ``marker`` when SB3 unpickles them."""
    blob = base64.b64encode(pickle.dumps(_OpensForWriting(str(marker)))).decode()
    data = {"policy_class": {":type:": "x", ":serialized:": blob}, "observation_space": {":type:": "x", ":serialized:": blob}}
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("data", json.dumps(data))
        z.writestr("_stable_baselines3_version", "2.0.0")
    return path
