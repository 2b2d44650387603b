"""Generala in JAX (generala_env.jax.env) is the numba engine's game: every state that random
play reaches in JAX is checked against generala_env.core.game.Game, which is given the same dice.

Two drivers, each compiled once per rule set (a fixture) and run over a small batch with
``jit(vmap(...))``: ``step`` with keys (the env as a learner drives it), and the dice model
(``afterstate`` → ``chance_probs`` → ``land``) with the rolls drawn from ``chance_probs`` tilted
towards five alike, so that served generalas and double generalas come up. Each state is set
into a fresh ``Game`` (``set_state``) to compare the legal mask and the observation, and a second
``Game`` is driven along with the same faces (``apply``, or ``decide`` then ``land``) to compare
the state, the points of every write and the result.
"""

from __future__ import annotations

import functools
import re
import sys
from pathlib import Path

import numpy as np
import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("pgx")
stats = pytest.importorskip("scipy.stats")  # jax needs scipy: it is there wherever jax is

import jax.numpy as jnp  # noqa: E402

from generala_env.core.dice import (  # noqa: E402
    EMPTY_KEEP,
    FIVE_ALIKE,
    FULL_ROLL_PROB,
    HOLD_KEEP,
    KEEP_COUNTS,
    KEEP_ROLL_PROB,
    KEEPS_LIST,
    NUM_MASKS,
    ROLL_COUNTS,
    ROLLS,
    roll_index,
)
from generala_env.core.encoding import Encoder, observation_layout  # noqa: E402
from generala_env.core.game import Game  # noqa: E402
from generala_env.core.info import win_reward  # noqa: E402
from generala_env.core.rules import load_rules  # noqa: E402
from generala_env.jax.env import Afterstate, make  # noqa: E402

# (rules, players, reward): the presets (a served generala wins with two players or more), and
# locked holds with a served generala for points and wrapping straights
CASES = [
    ("classic", 1, "score"),
    ("double", 2, "win"),
    ("sixty", 3, "score"),
    ({"base": "double", "locked_holds": True, "served_generala": "points", "served_generala_points": 80, "straight_wraps": True}, 2, "win"),
]
GAMES = 6  # games per batch
TILT = 50.0  # how much likelier the dice model's driver makes a five alike than the dice do


def case_id(case) -> str:
    rules, players, reward = case
    name = rules if isinstance(rules, str) else "+".join(f"{k}={v}" for k, v in rules.items() if k != "base")
    return f"{name}-{players}p-{reward}"


def uniform_legal(key, mask):
    """One of the legal actions of ``mask``, uniformly."""
    k = jnp.floor(jax.random.uniform(key) * jnp.sum(mask)).astype(jnp.int32)
    return jnp.argmax(jnp.cumsum(mask) > k)


def stepped_games(env, key, steps):
    """``GAMES`` games of random legal play through ``env.step``: the states before each step
    and the actions (leading axes: game, step)."""

    def game(k):
        k0, k1 = jax.random.split(k)

        def body(s, k):
            ka, kd = jax.random.split(k)
            a = uniform_legal(ka, s.legal_action_mask)
            return env.step(s, a, kd), (s, a)

        _, out = jax.lax.scan(body, env.init(k0), jax.random.split(k1, steps))
        return out

    return jax.jit(jax.vmap(game))(jax.random.split(key, GAMES))


def modelled_games(env, key, steps):
    """``GAMES`` games through the dice model: the states, actions, afterstates, chance
    probabilities and the rolls landed (leading axes: game, step)."""
    tilt = jnp.where(jnp.asarray(FIVE_ALIKE), TILT, 1.0)

    def game(k):
        k0, k1 = jax.random.split(k)

        def body(s, k):
            ka, kr = jax.random.split(k)
            a = uniform_legal(ka, s.legal_action_mask)
            after = env.afterstate(s, a)
            probs = env.chance_probs(after)
            r = jax.random.categorical(kr, jnp.log(probs * tilt))
            return env.land(after, r), (s, a, after, probs, r)

        _, out = jax.lax.scan(body, env.init(k0), jax.random.split(k1, steps))
        return out

    return jax.jit(jax.vmap(game))(jax.random.split(key, GAMES))


def at(tree, *index):
    """One element of a batch of states (NumPy arrays)."""
    return jax.tree_util.tree_map(lambda x: x[index], tree)


def faces_of(counts) -> list[int]:
    return [f + 1 for f, c in enumerate(np.asarray(counts).tolist()) for _ in range(c)]


def thrown_faces(roll_before: int, action: int, roll_after: int) -> list[int]:
    """The faces thrown by ``action`` that made ``roll_after``: beside the held dice for a
    hold, the next player's five for a write."""
    if action >= NUM_MASKS:
        return faces_of(ROLL_COUNTS[roll_after])
    rest = ROLL_COUNTS[roll_after] - KEEP_COUNTS[HOLD_KEEP[roll_before, action]]
    assert (rest >= 0).all(), "a hold's dice went back into the cup"
    return faces_of(rest)


def game_of(rules, players, s) -> Game:
    """A numba ``Game`` set (``set_state``) to JAX state ``s``."""
    g = Game(rules, players)
    winner = int(s.winner)
    g.set_state(
        sheets=s.sheets,
        dice=ROLLS[int(s.roll)].tolist(),
        rolls_left=int(s.rolls_left),
        player=int(s.player),
        locked=list(KEEPS_LIST[int(s.locked)]),
        served_generala_winner=None if winner < 0 else winner,
    )
    return g


def assert_same_game(s, g: Game) -> None:
    """JAX state ``s`` holds the numbers of numba game ``g``."""
    numbers = (int(s.roll), int(s.rolls_left), int(s.locked), int(s.player), int(s.writes), bool(s.over), int(s.winner))
    winner = -1 if g.served_generala_winner is None else g.served_generala_winner
    assert numbers == (g.roll, g.rolls_left, g.locked, g.player, g.writes, g.over, winner)
    assert np.array_equal(s.sheets, g.sheets)
    assert s.dice.tolist() == ROLLS[g.roll].tolist()


def assert_seen_as_numba_sees_it(rules, players, encoder: Encoder, s) -> None:
    """The legal mask and the observation of JAX state ``s`` are those of a ``Game`` set to it."""
    g = game_of(rules, players, s)
    assert g.over == bool(s.over)
    if s.over:
        assert s.terminated and s.legal_action_mask.all()  # Pgx's mask at the end: every action
    else:
        assert np.array_equal(s.legal_action_mask, g.legal_mask())
    assert s.observation.dtype == np.float32
    assert np.array_equal(s.observation, encoder.encode(g, int(s.player)))  # bit for bit


def assert_rewards(reward: str, s_next, mover: int, points: int, g: Game, players: int) -> None:
    if reward == "score":
        want = np.zeros(players, dtype=np.float32)
        want[mover] = points
    elif g.over:
        want = np.array([win_reward(g.winners(), seat) for seat in range(players)], dtype=np.float32)
    else:
        want = np.zeros(players, dtype=np.float32)
    assert np.array_equal(s_next.rewards, want)


@pytest.fixture(scope="module", params=CASES, ids=case_id)
def case(request):
    rules, players, reward = request.param
    env = make(rules, players, reward)
    steps = 3 * env.rules.num_lines * players
    played = jax.device_get(stepped_games(env, jax.random.key(1), steps))  # NumPy: read state by state below
    modelled = jax.device_get(modelled_games(env, jax.random.key(2), steps))
    return request.param, env, Encoder(load_rules(rules), players), played, modelled


def test_step_plays_the_numba_engines_game(case):
    (rules, players, reward), env, encoder, played, _ = case
    states, actions = played
    checked = 0
    for b in range(GAMES):
        g = Game(rules, players)
        first = at(states, b, 0)
        g.set_state(sheets=first.sheets, dice=first.dice.tolist(), rolls_left=2, player=0)
        for i in range(actions.shape[1]):
            s = at(states, b, i)
            assert_same_game(s, g)
            assert_seen_as_numba_sees_it(rules, players, encoder, s)
            checked += 1
            if s.terminated:
                break
            a, s_next = int(actions[b, i]), at(states, b, i + 1)
            out = g.apply(a, thrown_faces(int(s.roll), a, int(s_next.roll)) if not s_next.over else [])
            assert_rewards(reward, s_next, int(s.player), out.points, g, players)
        else:
            raise AssertionError(f"game {b} did not end in {actions.shape[1]} steps")
    assert checked >= GAMES * env.rules.num_lines  # every game played to its end (the loop's else)


def test_the_dice_model_plays_the_numba_engines_game(case):
    """``afterstate`` is ``Game.decide``, ``land`` is ``Game.land``, ``chance_probs`` the exact rows."""
    (rules, players, reward), env, encoder, _, modelled = case
    states, actions, afters, probs, rolls = modelled
    served_wins = 0
    for b in range(GAMES):
        first = at(states, b, 0)
        g = Game(rules, players)
        g.set_state(sheets=first.sheets, dice=first.dice.tolist(), rolls_left=2, player=0)
        for i in range(actions.shape[1]):
            s = at(states, b, i)
            assert_same_game(s, g)
            assert_seen_as_numba_sees_it(rules, players, encoder, s)
            if s.terminated:
                break
            a, after, p, r = int(actions[b, i]), at(afters, b, i), probs[b, i], int(rolls[b, i])
            out = g.decide(a)
            assert_same_game(after.state, g)  # the roll and its dice as they were: nothing is thrown yet
            assert int(after.keep) == g.throw_keep
            assert g.throw_keep < 0 or bool(after.starts_turn) == g._throw_starts_turn
            assert_rewards(reward, after.state, int(s.player), out.points, g, players)
            if g.throw_keep >= 0:
                assert np.array_equal(p, KEEP_ROLL_PROB[g.throw_keep].astype(np.float32))
                g.land(faces_of(ROLL_COUNTS[r] - KEEP_COUNTS[g.throw_keep]))
            else:
                assert p.tolist() == (np.arange(len(ROLLS)) == int(s.roll)).tolist()  # nothing thrown
                served_wins += g.served_generala_winner is not None
    if env.tables.rules.served_win:
        assert served_wins > 0, "the tilted dice made no served generala win"


# -- the step is the dice model's decision, throw and landing; Pgx's handling of the end and of illegal actions
@pytest.fixture(scope="module")
def double2():
    return make("double", 2, "score")


def test_step_is_land_after_afterstate_and_its_throw_illegal_and_finished_steps_included(double2):
    env = double2
    states, _ = jax.device_get(stepped_games(env, jax.random.key(5), 3 * 11 * 2))
    flat = jax.tree_util.tree_map(lambda x: x.reshape((-1,) + x.shape[2:]), states)  # every state of every game
    n = len(flat.roll)
    rng = np.random.default_rng(0)
    actions = rng.integers(-2, env.num_actions + 2, size=n).astype(np.int32)  # legal, illegal and outside the action space
    keys = jax.random.split(jax.random.key(6), n)

    def both(s, a, k):
        after = env.afterstate(s, a)
        return env.step(s, a, k), env.land(after, env.throw(after, k))

    stepped, modelled = jax.device_get(jax.jit(jax.vmap(both))(flat, jnp.asarray(actions), keys))
    for name, x in vars(stepped).items():
        assert np.array_equal(x, getattr(modelled, name)), name

    legal = np.array([0 <= a < env.num_actions and flat.legal_action_mask[i, a] for i, a in enumerate(actions)])
    done, illegal = flat.terminated, ~legal & ~flat.terminated
    assert done.any() and illegal.any() and (legal & ~done).any()
    game = ("roll", "rolls_left", "locked", "player", "writes", "over", "winner", "sheets", "dice")
    for name in game:  # an illegal action, or any action after the end, changes nothing of the game
        before, after = getattr(flat, name), getattr(stepped, name)
        assert np.array_equal(before[done | illegal], after[done | illegal]), name
    assert stepped.terminated[illegal].all() and stepped.legal_action_mask[illegal].all()
    mover = flat.current_player[illegal]
    want = np.where(np.arange(2)[None, :] == mover[:, None], -1.0, 1.0)  # Pgx: -1 for the mover, +1 for each other seat (of 2)
    assert np.array_equal(stepped.rewards[illegal], want)
    assert not stepped.rewards[done].any()  # after the end: zero rewards
    assert np.array_equal(stepped._step_count, flat._step_count + ~done)


@functools.cache
def compiled(env):
    """``env``'s init, afterstate and land, jitted (once per env)."""
    return jax.jit(env.init), jax.jit(env.afterstate), jax.jit(env.land)


def start(env, faces):
    """A new game whose first roll is ``faces`` (the throw of a new game landed by hand)."""
    init, _, land = compiled(env)
    return land(Afterstate(init(jax.random.key(0)), jnp.int32(EMPTY_KEEP), jnp.bool_(True)), roll_index(faces))


def decide_and_land(env, s, action, faces=None):
    _, afterstate, land = compiled(env)
    after = afterstate(s, jnp.int32(action))
    return after, land(after, roll_index(faces) if faces else 0)


def test_a_scripted_game_with_literal_dice(double2):
    env = double2
    L = env.rules.line_index
    s = start(env, [6, 2, 6, 3, 6])
    assert s.dice.tolist() == [2, 3, 6, 6, 6] and int(s.rolls_left) == 2
    after, s = decide_and_land(env, s, 0b11100, [6, 6, 6, 6, 6])  # hold the three sixes (bits of the sorted dice)
    assert int(after.keep) == KEEPS_LIST.index((6, 6, 6))
    probs = np.asarray(env.chance_probs(after))
    assert np.count_nonzero(probs) == 21 and probs[roll_index([6] * 5)] == np.float32(1 / 36)
    assert s.dice.tolist() == [6] * 5 and int(s.rolls_left) == 1 and int(s.player) == 0
    after, s = decide_and_land(env, s, 32 + L("generala"), [1, 1, 1, 1, 1])  # seat 1's first roll: five ones
    assert s.rewards.tolist() == [50.0, 0.0] and int(s.sheets[0, L("generala")]) == 50
    assert int(s.player) == 1 and int(s.current_player) == 1 and int(s.rolls_left) == 2
    assert np.flatnonzero(s.legal_action_mask).tolist() == [32 + L("generala")]  # a served generala wins: only its line
    after, s = decide_and_land(env, s, 32 + L("generala"))
    assert int(after.keep) == -1 and env.chance_probs(after).tolist() == (np.arange(len(ROLLS)) == int(s.roll)).tolist()
    assert s.rewards.tolist() == [0.0, 50.0] and bool(s.over) and bool(s.terminated) and int(s.winner) == 1
    assert s.legal_action_mask.all()  # Pgx: every action at the end


def test_a_double_generala_needs_a_scored_generala(double2):
    env = double2
    L = env.rules.line_index
    s = start(env, [2, 2, 2, 3, 4])
    _, s = decide_and_land(env, s, 0b00111, [2, 2, 2, 2, 2])  # not served: no served generala pending
    _, s = decide_and_land(env, s, 32 + L("double_generala"), [1, 2, 3, 4, 5])
    assert s.rewards.tolist() == [0.0, 0.0] and int(s.sheets[0, L("double_generala")]) == 0  # the generala line is open: blocked


# -- the dice --------------------------------------------------------------------------------
def test_chance_probs_are_the_rows_of_keep_roll_prob_for_every_keep(double2):
    env = double2
    s = compiled(env)[0](jax.random.key(0))
    keeps = jnp.arange(len(KEEPS_LIST), dtype=jnp.int32)
    probs = np.asarray(jax.jit(jax.vmap(lambda k: env.chance_probs(Afterstate(s, k, jnp.bool_(False)))))(keeps))
    assert probs.shape == (len(KEEPS_LIST), len(ROLLS)) and probs.dtype == np.float32
    assert np.array_equal(probs, KEEP_ROLL_PROB.astype(np.float32))
    assert np.allclose(probs.sum(axis=1), 1.0, rtol=0, atol=1e-6)


def test_thrown_dice_are_uniform_and_held_dice_stay(double2):
    """A chi-square over 20,000 throws of three dice beside two held sixes (fixed keys): the faces,
    and the rolls against their exact probabilities; and 60,000 first rolls against theirs."""
    env = double2
    s = start(env, [6, 1, 6, 2, 3])
    after = compiled(env)[1](s, jnp.int32(0b11000))  # hold the two sixes
    keep = int(after.keep)
    assert keep == KEEPS_LIST.index((6, 6))
    rolls = np.asarray(jax.jit(jax.vmap(env.throw, in_axes=(None, 0)))(after, jax.random.split(jax.random.key(7), 20_000)))
    thrown = ROLL_COUNTS[rolls] - KEEP_COUNTS[keep]
    assert (thrown >= 0).all() and (thrown.sum(axis=1) == 3).all()  # the sixes stayed; three dice were thrown
    faces = thrown.sum(axis=0)
    assert stats.chisquare(faces).pvalue > 1e-3, faces
    expected = KEEP_ROLL_PROB[keep] * len(rolls)
    seen = np.bincount(rolls, minlength=len(ROLLS))
    assert not seen[expected == 0].any()
    assert stats.chisquare(seen[expected > 0], expected[expected > 0]).pvalue > 1e-3
    first = np.asarray(jax.jit(jax.vmap(env.init))(jax.random.split(jax.random.key(8), 60_000)).roll)
    assert stats.chisquare(np.bincount(first, minlength=len(ROLLS)), FULL_ROLL_PROB * len(first)).pvalue > 1e-3


def test_the_same_key_throws_the_same_dice(double2):
    env = double2
    init = compiled(env)[0]
    a, b = init(jax.random.key(3)), init(jax.random.key(3))
    assert int(a.roll) == int(b.roll) and np.array_equal(a.observation, b.observation)
    assert len({int(init(jax.random.key(k)).roll) for k in range(20)}) > 10


# -- the API ---------------------------------------------------------------------------------
def test_batched_states_have_pgx_dtypes_and_the_observation_of_one_game(double2):
    env = double2
    states = jax.jit(jax.vmap(env.init))(jax.random.split(jax.random.key(9), 8))
    assert states.observation.shape == (8, env.observation_shape[0]) and states.observation.dtype == jnp.float32
    assert states.legal_action_mask.shape == (8, env.num_actions) and states.legal_action_mask.dtype == jnp.bool_
    assert states.rewards.shape == (8, 2) and states.rewards.dtype == jnp.float32
    assert states.current_player.dtype == jnp.int32 and states.terminated.dtype == jnp.bool_
    assert states.sheets.shape == (8, 2, 11) and (states.sheets == -1).all() and states.dice.shape == (8, 5)
    one = jax.tree_util.tree_map(lambda x: x[3], states)
    assert np.array_equal(env.observe(one), states.observation[3])
    assert env.num_players == 2 and env.num_actions == 32 + 11 and env.id == "generala" and one.env_id == "generala"
    assert env.layout == observation_layout("double", 2)
    assert env.layout["score_lead"].stop == env.observation_shape[0]


def test_step_needs_a_key(double2):
    s = compiled(double2)[0](jax.random.key(0))
    with pytest.raises(ValueError, match="step needs a key"):
        double2.step(s, jnp.int32(0))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_players": 7}, "num_players must be an integer from 1 to 6, got 7"),
        ({"num_players": True}, "num_players must be an integer from 1 to 6, got True"),
        ({"reward": "points"}, "reward must be one of score, win, got 'points'"),
        ({"rules": "nope"}, "unknown rule set 'nope'"),
    ],
)
def test_make_names_a_bad_argument(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make(**kwargs)


def test_the_speed_benchmark_picks_the_legal_action_the_numba_env_would():
    """benchmarks/jax_speed.py's uniform choice is ``generala_env.envs.vector.uniform_legal``'s:
    the ``floor(u * n_legal)``-th legal action (checked against a loop over the mask)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    try:
        from jax_speed import uniform_legal as pick
    finally:
        sys.path.pop(0)
    rng = np.random.default_rng(1)
    masks = rng.random((500, 43)) < rng.random((500, 1))  # from nearly empty to nearly full rows
    masks[np.arange(500), rng.integers(0, 43, 500)] = True  # every row has a legal action
    u = rng.random(500).astype(np.float32)
    want = [np.flatnonzero(m)[int(np.floor(x * m.sum()))] for m, x in zip(masks, u, strict=True)]
    assert np.asarray(jax.jit(pick)(jnp.asarray(masks), jnp.asarray(u))).tolist() == want


def test_the_docs_examples_run():
    """docs/jax.md's examples, as written (each asserts what it shows)."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "jax.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 4  # random play, a picture, the dice model, the PPO learner
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "docs/jax.md", "exec"), namespace)
    assert namespace["state"].terminated.shape == (256,)
