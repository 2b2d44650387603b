"""The dice model: its chance outcomes are exact, and it plays the env's game."""

from __future__ import annotations

import hashlib
import itertools
import math
import re
from collections import Counter
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import generala_env  # noqa: F401  (registers Generala-v0)
from generala_env.core.dice import DICE, KEEP_SIZE, KEEPS_LIST, NUM_KEEPS, NUM_MASKS
from generala_env.core.game import Game, IllegalActionError
from generala_env.planning.model import Model, ModelState

ROOT = Path(__file__).resolve().parents[1]


def test_chance_outcomes_match_the_enumeration_of_ordered_throws():
    model = Model("classic")
    state = model.initial_state()
    for keep in range(NUM_KEEPS):
        k = DICE - int(KEEP_SIZE[keep])
        if k == 0:
            continue
        chance = state._replace(throw_keep=keep)
        kept = list(KEEPS_LIST[keep])
        enumerated = Counter(tuple(sorted(kept + list(t))) for t in itertools.product(range(1, 7), repeat=k))
        counts = dict(model.chance_counts(chance))
        assert counts == dict(enumerated), keep
        outcomes = model.chance_outcomes(chance)
        assert len(outcomes) == len(enumerated) == len({r for r, _ in outcomes})
        assert math.isclose(math.fsum(p for _, p in outcomes), 1.0, rel_tol=0, abs_tol=1e-12)
        for roll, p in outcomes:
            assert p == enumerated[roll] / 6**k


@pytest.mark.parametrize("rules,players", [("classic", 1), ("double", 2), ({"locked_holds": True}, 3)])
def test_the_model_replays_the_games_of_game_step(rules, players):
    """Every step of a seeded game is the model's decide then land on the dice it drew."""
    game, model = Game(rules, players), Model(rules, players)
    rng, pick = np.random.default_rng(3), np.random.default_rng(4)
    game.reset(rng)
    state = model.land(model.initial_state(), game.dice.tolist())
    assert state == model.state_of(game)
    while not game.over:
        legal = game.legal_actions()
        assert model.legal_actions(state) == legal
        a = int(pick.choice(legal))
        out = game.step(a, rng)
        after, out2 = model.decide(state, a)
        assert out2 == out
        state = after if after.over else model.land(after, game.dice.tolist())
        assert state == model.state_of(game)
    assert model.winners(state) == game.winners()


def test_scripted_turns_by_their_literal_numbers():
    """Two turns of a two-player game on ``double`` (full house 30, served +5; a served
    generala wins), every number read off the rules, not off another implementation."""
    model = Model("double", 2)
    lines = model.rules.lines
    state = model.land(model.initial_state(), (2, 2, 3, 5, 6))
    assert (state.player, state.rolls_left, state.dice) == (0, 2, (2, 2, 3, 5, 6))
    after, out = model.decide(state, 0b00011)  # keep the two twos
    assert after.is_chance and model.kept_dice(after) == [2, 2] and not out.wrote
    state = model.land(after, (2, 2, 2, 5, 5))
    assert state.rolls_left == 1 and state.dice == (2, 2, 2, 5, 5)
    state, out = model.decide(state, NUM_MASKS + lines.index("full_house"))  # rolled, not served: 30
    assert (out.points, out.served, out.bonus) == (30, False, 0)
    assert state.sheets[0][lines.index("full_house")] == 30 and sum(v for v in state.sheets[0] if v > 0) == 30
    state = model.land(state, (4, 4, 4, 4, 4))  # seat 1 throws a generala at once: served
    assert state.player == 1 and state.rolls_left == 2
    assert model.legal_actions(state) == [NUM_MASKS + lines.index("generala")]  # it must be claimed, and wins
    state, out = model.decide(state, NUM_MASKS + lines.index("generala"))
    assert out.served_generala_win and state.over and model.winners(state) == (1,)


def test_states_are_set_and_got_and_searches_do_not_disturb_them():
    model = Model("classic", 2)
    state = model.land(model.initial_state(), (2, 2, 3, 5, 6))
    after = model.afterstate(state, 0b00011)  # keep the twos
    assert model.kept_dice(after) == [2, 2] and after.rolls_left == 1
    for roll, _ in model.chance_outcomes(after):
        model.land(after, roll)  # a search explores every branch ...
    assert model.land(after, (2, 2, 2, 2, 2)).dice == (2, 2, 2, 2, 2)  # ... and the state is unchanged
    game = model.load(Game("classic", 2), state)
    assert game.dice.tolist() == [2, 2, 3, 5, 6] and model.state_of(game) == state


def test_bad_requests_raise_one_clear_error():
    model = Model("classic")
    chance = model.initial_state()
    with pytest.raises(IllegalActionError, match="chance state takes a roll"):
        model.decide(chance, 0)
    state = model.land(chance, (1, 2, 3, 4, 6))
    with pytest.raises(IllegalActionError, match="decide first"):
        model.land(state, (1, 1, 1, 1, 1))
    after = model.afterstate(state, 0b00001)  # keep the 1
    with pytest.raises(ValueError, match="does not hold the dice kept"):
        model.land(after, (2, 2, 2, 2, 2))
    with pytest.raises(IllegalActionError, match="holding all five"):
        model.decide(state, 31)
    game = Game("classic")
    game.reset(np.random.default_rng(0))
    game.decide(0)
    with pytest.raises(IllegalActionError, match="throw is pending"):
        game.step(0, np.random.default_rng(0))


# The env's seeded games, hashed before Game.step was split into decide and land: the
# split must leave them bit for bit the same.
EPISODES_BEFORE_THE_SPLIT = {
    ("classic", 1): "74083dce1a7f0eb6",
    ("double", 1): "f5d750cbdc54378c",
    ("sixty", 1): "af70c3bd3d57183c",
    ("classic", 2): "51f3590bad62cec6",
    ("double", 3): "6f496d4ce7de1ae9",
    ("locked", 1): "7b7c1e581118baf3",
    ("double-locked", 2): "f0c2bba8b22ae1c0",
}
_RULES = {"locked": {"locked_holds": True}, "double-locked": {"base": "double", "locked_holds": True}}


def _episode_hash(rules, num_players: int, seed: int) -> str:
    env = gym.make("Generala-v0", rules=rules, num_players=num_players).unwrapped
    pick = np.random.default_rng(seed + 1000)
    h = hashlib.sha256()
    obs, info = env.reset(seed=seed)
    done = False
    while True:
        for a in (obs, info["action_mask"], info["sheets"], info["dice"]):
            h.update(np.asarray(a).tobytes())
        if done:
            return h.hexdigest()[:16]
        a = int(pick.choice(np.flatnonzero(info["action_mask"])))
        obs, r, term, trunc, info = env.step(a)
        h.update(repr((float(r), term, trunc)).encode())
        done = term or trunc


@pytest.mark.parametrize("key", sorted(EPISODES_BEFORE_THE_SPLIT))
def test_env_games_are_bit_for_bit_what_they_were(key):
    name, players = key
    assert _episode_hash(_RULES.get(name, name), players, 7) == EPISODES_BEFORE_THE_SPLIT[key]


def test_the_docs_snippet_runs():
    text = (ROOT / "docs" / "model.md").read_text()
    snippet = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    namespace: dict = {}
    exec(compile(snippet, "docs/model.md", "exec"), namespace)
    assert isinstance(namespace["snapshot"], ModelState)
