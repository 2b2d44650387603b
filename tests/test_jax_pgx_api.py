"""Pgx's own API test (``pgx.api_test``) passes on Generala's JAX env, unmodified but for the
env-id whitelist: Pgx checks ``state.env_id`` against its own games (``pgx.core.EnvId``), which
a game outside Pgx cannot join, so the test's module sees ``"generala"`` added to that list and
nothing else. Everything else is Pgx's: random legal play from ``init`` to the end, single and
batched, the state's dtypes, the legal mask at the end, the game's own fields private
(``_roll`` …; ``roll`` … are read-only properties), and ``save_svg`` of a finished state.

The picture is the game's one picture: the frame ``generala_env.rendering.picture`` draws
(``render_mode="rgb_array"``), inside the SVG as a PNG.
"""

from __future__ import annotations

import base64
import re
import typing
import zlib
from pathlib import Path

import numpy as np
import pytest

jax = pytest.importorskip("jax")
pgx = pytest.importorskip("pgx")

import pgx._src.api_test as pgx_api_test  # noqa: E402

from generala_env.core.dice import ROLLS  # noqa: E402
from generala_env.core.game import Game  # noqa: E402
from generala_env.jax.env import make  # noqa: E402
from generala_env.rendering.picture import render_rgb  # noqa: E402


@pytest.fixture
def generala_listed(monkeypatch):
    """Pgx's env-id whitelist, with "generala" on it, as its api_test reads it (and nothing else changed)."""
    listed = typing.get_args(pgx_api_test.EnvId)
    monkeypatch.setattr(pgx_api_test, "EnvId", typing.Literal[(*listed, "generala")])


def pgx_api_test_single(env, num: int) -> None:
    """Pgx's ``api_test_single``, its checks called as it calls them, with one change: its random
    action is Pgx's ``act_randomly`` on a batch of one game. Pgx 2.6's ``act_randomly`` draws
    along ``axis=1``, so on one game's mask (one axis) it raises ``IndexError``, for Pgx's own
    games too (:func:`test_pgx_api_test_single_fails_on_pgx_own_game_too`)."""
    init, step = jax.jit(env.init), jax.jit(env.step)
    rng = jax.random.PRNGKey(849020)
    for _ in range(num):
        rng, subkey = jax.random.split(rng)
        state = init(subkey)
        assert state.env_id == env.id
        assert state.legal_action_mask.sum() != 0
        assert state._step_count == 0
        curr_steps = state._step_count
        pgx_api_test._validate_state(state)
        pgx_api_test._validate_init_reward(state)
        pgx_api_test._validate_current_player(state)
        pgx_api_test._validate_legal_actions(state)
        while True:
            rng, subkey = jax.random.split(rng)
            action = pgx_api_test.act_randomly(subkey, state.legal_action_mask[None])[0]
            rng, subkey = jax.random.split(rng)
            state = step(state, action, subkey)
            assert state._step_count == curr_steps + 1
            curr_steps += 1
            pgx_api_test._validate_state(state)
            pgx_api_test._validate_current_player(state)
            pgx_api_test._validate_legal_actions(state)
            if state.terminated:
                break
    state.save_svg("/tmp/tmp.svg")  # as Pgx's test does, its file removed after
    Path("/tmp/tmp.svg").unlink(missing_ok=True)


@pytest.mark.parametrize(("rules", "players"), [("classic", 1), ("double", 2)])
def test_pgx_api_test_passes(generala_listed, rules, players):
    env = make(rules, num_players=players, reward="win" if players > 1 else "score")
    pgx_api_test_single(env, num=2)
    pgx_api_test.api_test_batch(env, num=2, use_key=True)  # Pgx's own, whole


def test_pgx_api_test_single_fails_on_pgx_own_game_too():
    """Why the single-game part is called check by check: Pgx 2.6's ``api_test`` stops at its
    first random action on one game, on Pgx's own tic-tac-toe as on every game. When a Pgx
    release fixes it this test fails: then call ``pgx.api_test(env)`` whole above."""
    with pytest.raises(IndexError):
        pgx.api_test(pgx.make("tic_tac_toe"), num=1)


def test_the_whitelist_is_all_that_is_bypassed():
    """Without "generala" on Pgx's list its test stops at the env id, at nothing else."""
    env = make("classic")
    state = jax.jit(env.init)(jax.random.key(0))
    with pytest.raises(AssertionError):
        pgx_api_test._validate_state(state)
    assert state.env_id == env.id == "generala"


def test_the_games_fields_are_private_and_read_by_their_names():
    env = make("classic", num_players=2)
    state = jax.jit(env.init)(jax.random.key(3))
    public = {k for k in vars(state) if not k.startswith("_")}
    assert public == {"current_player", "observation", "rewards", "terminated", "truncated", "legal_action_mask"}
    for name in ("roll", "rolls_left", "locked", "player", "writes", "over", "winner", "sheets", "dice"):
        assert getattr(state, name) is getattr(state, f"_{name}")
        with pytest.raises(AttributeError):
            setattr(state, name, 0)
    assert state.sheets.shape == (2, 10) and (np.asarray(state.dice) == ROLLS[int(state.roll)]).all()


def _png_pixels(svg: str) -> np.ndarray:
    """The RGB pixels of the PNG inside ``svg`` (8-bit RGB, unfiltered rows, as picture.png_bytes writes)."""
    data = base64.b64decode(re.search(r'href="data:image/png;base64,([^"]+)"', svg).group(1))
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    w, h = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    idat = data.index(b"IDAT")
    size = int.from_bytes(data[idat - 4 : idat], "big")
    rows = np.frombuffer(zlib.decompress(data[idat + 4 : idat + 4 + size]), dtype=np.uint8).reshape(h, 1 + 3 * w)
    assert (rows[:, 0] == 0).all()
    return rows[:, 1:].reshape(h, w, 3)


def test_save_svg_draws_the_games_one_picture(tmp_path):
    env = make("classic", num_players=2)
    state = jax.jit(env.init)(jax.random.key(5))
    state = jax.jit(env.step)(state, 0, jax.random.key(6))  # hold none: all five rerolled
    game = Game("classic", 2)
    game.set_state(dice=ROLLS[int(state.roll)].tolist(), rolls_left=1, player=0)
    path = tmp_path / "state.svg"
    state.save_svg(path)
    svg = path.read_text()
    assert svg.startswith("<svg ") and svg == state.to_svg() == state._repr_html_()
    assert (_png_pixels(svg) == render_rgb(game)).all()  # the frame render_mode="rgb_array" gives, pixel for pixel
    assert f'width="{2 * render_rgb(game).shape[1]}"' in state.to_svg(scale=2)


def test_a_batch_draws_its_games_side_by_side():
    env = make("classic")
    states = jax.jit(jax.vmap(env.init))(jax.random.split(jax.random.key(1), 3))
    h, w, _ = render_rgb(Game("classic")).shape
    assert _png_pixels(states.to_svg()).shape == (h, 3 * w + 2 * 8, 3)


def test_save_svg_refuses_another_name(tmp_path):
    state = jax.jit(make("classic").init)(jax.random.key(0))
    with pytest.raises(ValueError, match=r"\.svg"):
        state.save_svg(tmp_path / "state.png")
    assert not list(tmp_path.iterdir())
