"""Every action input has one answer, the same in every env (``Generala-v0``, the vector env,
the PettingZoo env, the JAX env): one table of inputs played in each.

Any integer, however large, is an illegal action exactly as ``42`` is (the illegal action's
handling: the penalty, ``IllegalActionError`` under ``illegal_action="raise"``, Pgx's
termination in the JAX env); anything that is not an integer, bools included, is
``NotAnActionError`` with one line naming it, the game as it was."""

from __future__ import annotations

import math

import numpy as np
import pytest

from generala_env import IllegalActionError, NotAnActionError
from generala_env.envs.env import GeneralaEnv
from generala_env.envs.vector import GeneralaVectorEnv

N_ACTIONS = 42  # classic: 32 hold masks and 10 lines

# integers outside 0 … 41, each an illegal action as 42 is
INTEGERS = [42, -1, 2**63, -(2**70), 10**30, np.int64(2**63 - 1), np.int64(-(2**63)), np.uint64(2**64 - 1), np.array(2**40)]
# what is not an integer, and how the one line names it
NOT_INTEGERS = [
    (3.7, "3.7"),
    (math.nan, "nan"),
    (math.inf, "inf"),
    (-math.inf, "-inf"),
    (np.float64(3.0), "np.float64(3.0)"),
    ("a", "'a'"),
    (None, "None"),
    (True, "True"),  # a bool is no action number: True is not action 1
    (False, "False"),
    (np.bool_(True), "np.True_"),
    ([3], "[3]"),
]
LEGAL = 3  # a hold, legal after every first roll


def _one_line(action_shown: str) -> str:
    return f"an action is an integer from 0 to {N_ACTIONS - 1}, got {action_shown}"


def _out_of_range(x) -> str:
    return f"action {int(np.asarray(x))} is out of range 0..{N_ACTIONS - 1}"


# -- Generala-v0 ----------------------------------------------------------------------------------
@pytest.mark.parametrize("x", INTEGERS)
def test_single_env_takes_any_integer_as_an_illegal_action_as_it_takes_42(x):
    env, ref = GeneralaEnv(illegal_penalty=-2.0), GeneralaEnv(illegal_penalty=-2.0)
    obs0, _ = env.reset(seed=5)
    ref.reset(seed=5)
    obs, reward, terminated, truncated, info = env.step(x)
    _, ref_reward, _, _, ref_info = ref.step(42)
    assert (reward, terminated, truncated, info["illegal_action"]) == (ref_reward, False, False, True) == (-2.0, False, False, ref_info["illegal_action"])
    assert env.illegal_reason() == _out_of_range(x) and np.array_equal(obs, obs0)
    strict = GeneralaEnv(illegal_action="raise")
    strict.reset(seed=5)
    with pytest.raises(IllegalActionError) as e:
        strict.step(x)
    assert str(e.value) == _out_of_range(x)


@pytest.mark.parametrize("x, shown", NOT_INTEGERS)
@pytest.mark.parametrize("mode", ["penalize", "raise"])
def test_single_env_refuses_what_is_not_an_integer_in_one_line_and_plays_on(x, shown, mode):
    env, ref = GeneralaEnv(illegal_action=mode), GeneralaEnv(illegal_action=mode)
    env.reset(seed=5)
    ref.reset(seed=5)
    with pytest.raises(NotAnActionError) as e:
        env.step(x)
    assert str(e.value) == _one_line(shown)
    after, want = env.step(LEGAL), ref.step(LEGAL)  # the game as it was
    assert np.array_equal(after[0], want[0]) and after[1:4] == want[1:4]


# -- the vector env --------------------------------------------------------------------------------
@pytest.mark.parametrize("x", INTEGERS)
@pytest.mark.parametrize("as_array", [False, True])
def test_vector_env_takes_any_integer_as_an_illegal_action_as_it_takes_42(x, as_array):
    venv = GeneralaVectorEnv(2, illegal_penalty=-2.0)
    venv.reset(seed=5)
    actions = [x, LEGAL] if not as_array else np.array([x, LEGAL], dtype=object)
    _, rewards, terminated, truncated, info = venv.step(actions)
    assert rewards[0] == -2.0 and info["illegal_action"].tolist() == [True, False] and not terminated.any() and not truncated.any()
    strict = GeneralaVectorEnv(2, illegal_action="raise")
    strict.reset(seed=5)
    with pytest.raises(IllegalActionError) as e:
        strict.step([LEGAL, x])
    assert str(e.value) == f"game 1: {_out_of_range(x)}"


def test_vector_env_takes_integer_arrays_of_any_type_and_refuses_the_others():
    venv = GeneralaVectorEnv(2, illegal_penalty=-2.0)
    venv.reset(seed=5)
    for actions in (np.array([2**64 - 1, LEGAL], dtype=np.uint64), np.array([42, LEGAL], dtype=np.int8), np.array([-(2**63), LEGAL])):
        venv.reset(seed=5)
        assert venv.step(actions)[4]["illegal_action"].tolist() == [True, False]
    venv.reset(seed=5)
    for actions, shown in ((np.array([LEGAL, 3.5]), "3.0"), (np.array([True, False]), "True"), (np.array(["3", "4"]), "'3'")):
        with pytest.raises(NotAnActionError) as e:  # an array of floats holds no integer: game 0's 3.0 is named
            venv.step(actions)
        assert str(e.value) == f"game 0: {_one_line(shown)}"
    with pytest.raises(ValueError, match=r"actions must have shape \(2,\), got \(3,\)"):
        venv.step([LEGAL, LEGAL, LEGAL])


@pytest.mark.parametrize("x, shown", NOT_INTEGERS)
def test_vector_env_refuses_what_is_not_an_integer_in_one_line_naming_the_game(x, shown):
    venv, ref = GeneralaVectorEnv(2), GeneralaVectorEnv(2)
    venv.reset(seed=5)
    ref.reset(seed=5)
    with pytest.raises(NotAnActionError) as e:
        venv.step([LEGAL, x])
    assert str(e.value) == f"game 1: {_one_line(shown)}"
    after, want = venv.step([LEGAL, LEGAL]), ref.step([LEGAL, LEGAL])
    assert np.array_equal(after[0], want[0]) and np.array_equal(after[1], want[1])


# -- the PettingZoo env ----------------------------------------------------------------------------
@pytest.mark.parametrize("x", INTEGERS)
def test_pettingzoo_env_takes_any_integer_as_an_illegal_action_as_it_takes_42(x):
    pytest.importorskip("pettingzoo")
    from generala_env.envs.multiagent import env, raw_env

    raw = raw_env(num_players=2)
    raw.reset(seed=5)
    with pytest.raises(IllegalActionError) as e:
        raw.step(x)
    assert str(e.value) == f"player_0: {_out_of_range(x)}"
    wrapped = env(num_players=2)  # PettingZoo's wrappers: an action outside the space is an assertion, 42 as 2**63
    for y in (42, x):
        wrapped.reset(seed=5)
        with pytest.raises(AssertionError, match="action is not in action space"):
            wrapped.step(y)


@pytest.mark.parametrize("x, shown", NOT_INTEGERS)
@pytest.mark.parametrize("wrapped", [False, True])
def test_pettingzoo_env_refuses_what_is_not_an_integer_in_one_line(x, shown, wrapped):
    pytest.importorskip("pettingzoo")
    from generala_env.envs.multiagent import env, raw_env

    make = env if wrapped else raw_env
    e, ref = make(num_players=2), make(num_players=2)
    e.reset(seed=5)
    ref.reset(seed=5)
    with pytest.raises(NotAnActionError) as err:
        e.step(x)
    assert str(err.value) == _one_line(shown)
    e.step(LEGAL)
    ref.step(LEGAL)
    assert np.array_equal(e.observe("player_0")["observation"], ref.observe("player_0")["observation"])


# -- the JAX env -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def jax_env():
    pytest.importorskip("jax")
    pytest.importorskip("pgx")
    import jax

    from generala_env.jax.env import make

    env = make("classic", 1, "score")
    return env, env.init(jax.random.key(0)), jax.random.key(1)


def test_jax_env_takes_any_integer_on_the_host_as_an_illegal_action_as_it_takes_42(jax_env):
    env, state, key = jax_env
    import jax

    ref = env.step(state, 42, key)
    assert bool(ref.terminated) and float(ref.rewards[0]) == -1.0  # Pgx's illegal action: the episode ends, -1
    for x in INTEGERS:
        assert int(env.checked_action(x)) == 31  # hold all five, never legal: what step plays
    for x in (2**63, np.uint64(2**64 - 1)):  # each step on the host takes seconds: two of them played
        got = env.step(state, x, key)
        assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(ref), strict=True)), x
    assert int(env.checked_action(np.int64(2**32 + LEGAL))) == 31  # not LEGAL, as int32 would wrap it


@pytest.mark.parametrize("x, shown", NOT_INTEGERS)
def test_jax_env_refuses_what_is_not_an_integer_in_one_line_on_the_host(jax_env, x, shown):
    env, state, key = jax_env
    for call in (lambda: env.step(state, x, key), lambda: env.afterstate(state, x), lambda: env.checked_action(x)):
        with pytest.raises(NotAnActionError) as e:
            call()
        assert str(e.value) == _one_line(shown)


def test_jax_env_under_jit_refuses_a_float_or_a_bool_action_when_traced_and_plays_integers(jax_env):
    env, state, key = jax_env
    import jax
    import jax.numpy as jnp

    step = jax.jit(env.step)
    for x, dtype in ((3.7, "float32"), (jnp.float32(math.nan), "float32"), (True, "bool")):
        with pytest.raises(NotAnActionError) as e:
            step(state, x, key)
        assert str(e.value) == _one_line(f"a traced {dtype} value")
    ref = env.step(state, 42, key)
    for x in (42, -1, jnp.int32(2**31 - 1)):
        got = step(state, x, key)
        assert bool(got.terminated) and float(got.rewards[0]) == float(ref.rewards[0]) == -1.0
