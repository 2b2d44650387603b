"""``render_mode="rgb_array"``: the picture's shape, determinism and content, and the video
tools that read it (Gymnasium's RecordVideo, SB3's make_vec_env and VecVideoRecorder)."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest

import generala_env  # noqa: F401  (registers the env)
from generala_env.core.game import Game
from generala_env.envs.env import GeneralaEnv
from generala_env.envs.vector import GeneralaVectorEnv
from generala_env.rendering.picture import CROSSED, DIE, GOLD, PAD, TOP_DICE, WHITE, _col_x, _row_y, describe_move, frame_size, render_rgb, text_mask


def play(env, seed: int, steps: int):
    """``steps`` random legal moves from ``reset(seed)``, the frame after each."""
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    frames = [env.render()]
    for _ in range(steps):
        obs, r, term, trunc, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        frames.append(env.render())
        if term or trunc:
            break
    return frames


def die_box(img, i):
    x = PAD + i * (DIE + 8)
    return img[TOP_DICE : TOP_DICE + DIE, x : x + DIE]


def drawn_at(img, x, y, text, color) -> bool:
    """Whether ``text`` is drawn at ``(x, y)`` in ``color``."""
    m = text_mask(text)
    return bool((img[y : y + m.shape[0], x : x + m.shape[1]][m] == color).all())


@pytest.mark.parametrize("rules,players", [("classic", 1), ("double", 2), ("sixty", 6)])
def test_frames_are_uint8_pictures_of_one_size_through_a_game(rules, players):
    env = GeneralaEnv(rules=rules, num_players=players, opponents="random" if players > 1 else None, render_mode="rgb_array")
    frames = play(env, 0, 200)
    h, w = frame_size(env.rules.num_lines, players)
    assert h % 16 == 0 and w % 16 == 0
    for f in frames:
        assert f.dtype == np.uint8 and f.shape == (h, w, 3)
    assert len({f.tobytes() for f in frames}) > len(frames) // 2  # the picture follows the game


def test_same_seed_same_frames():
    a = play(GeneralaEnv(num_players=2, opponents="greedy", render_mode="rgb_array"), 7, 60)
    b = play(GeneralaEnv(num_players=2, opponents="greedy", render_mode="rgb_array"), 7, 60)
    assert len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def test_a_held_die_is_drawn_differently():
    g = Game("classic", 1)
    g.reset(np.random.default_rng(0))
    g.set_state(dice=[3, 3, 3, 5, 6], rolls_left=1, locked=[3, 3])
    held = render_rgb(g)
    g.set_state(dice=[3, 3, 3, 5, 6], rolls_left=1, locked=[])
    free = render_rgb(g)
    # dice 0 and 1 (the two held 3s) change; the third 3 and the others do not
    for i in range(5):
        assert np.array_equal(die_box(held, i), die_box(free, i)) == (i >= 2)
    assert (die_box(held, 0) == GOLD).all(axis=-1).sum() > 100
    assert not (die_box(free, 0) == GOLD).all(axis=-1).any()
    # the same face drawn twice is the same picture
    assert np.array_equal(die_box(free, 0), die_box(free, 2)) and not np.array_equal(die_box(free, 0), die_box(free, 3))


def test_written_and_crossed_lines_and_the_last_move_are_shown():
    g = Game("classic", 2)
    g.reset(np.random.default_rng(0))
    sheets = np.full((2, 10), -1)
    sheets[0, 3], sheets[0, 9], sheets[1, 3] = 16, 0, 0  # fours 16, generala crossed out; seat 1 crossed its fours
    g.set_state(sheets=sheets, dice=[1, 2, 4, 4, 6], rolls_left=2, player=1)
    roll = g.roll
    img = render_rgb(g, seat=1, moves=[(1, 3, 0, roll)])
    cell = lambda p, line: img[_row_y(line + 1) + 1 : _row_y(line + 2), _col_x(p) + 1 : _col_x(p + 1)]  # noqa: E731
    assert (cell(0, 9) == CROSSED).all(axis=-1).mean() > 0.5 and (cell(1, 3) == CROSSED).all(axis=-1).mean() > 0.5
    assert not (cell(0, 3) == CROSSED).all(axis=-1).any() and not (cell(0, 0) == CROSSED).all(axis=-1).any()
    assert len(np.unique(cell(0, 0).reshape(-1, 3), axis=0)) == 1  # an open line is blank
    assert len(np.unique(cell(0, 3).reshape(-1, 3), axis=0)) > 1  # a written one holds its points
    text = describe_move(g.rules, 1, 3, 0, roll)
    assert text == "p1 held 1 2, rerolled 3"
    assert drawn_at(img, PAD, _row_y(12) + 10, text, WHITE)
    assert not drawn_at(render_rgb(g, seat=1), PAD, _row_y(12) + 10, text, WHITE)
    assert describe_move(g.rules, 0, 32 + 3, 16, roll) == "p0 wrote 16 on fours"
    assert describe_move(g.rules, 0, 32 + 9, 0, roll) == "p0 crossed out generala"


def test_the_env_shows_the_agents_move_and_the_opponents():
    env = GeneralaEnv(num_players=2, opponents="greedy", render_mode="rgb_array")
    env.reset(seed=0)
    env.step(32)  # write on ones: then the opponent plays its turn
    moves = env._shown_moves
    assert moves[0][:2] == (0, 32) and len(moves) >= 2 and all(m[0] == 1 for m in moves[1:])
    assert np.array_equal(env.render(), render_rgb(env.game, seat=0, moves=moves))


def test_vector_env_renders_chosen_games():
    venv = GeneralaVectorEnv(3, num_players=2, opponents="random", render_mode="rgb_array")
    venv.reset(seed=0)
    venv.step(np.array([0, 32, 33]))
    frames = venv.render()
    assert len(frames) == 3 and all(f.shape == frame_size(10, 2) + (3,) for f in frames)
    (one,) = venv.render(games=[1])
    assert np.array_equal(one, frames[1]) and not np.array_equal(frames[0], frames[1])
    g1 = venv.game_view(1)
    assert np.array_equal(one, render_rgb(g1, seat=0, moves=venv._shown_move(1)))
    assert venv._shown_move(1)[0][:2] == (0, 32)
    with pytest.raises(ValueError, match="games must be indices from 0 to 2"):
        venv.render(games=[3])


def test_pettingzoo_renders_a_picture():
    pytest.importorskip("pettingzoo")
    from generala_env.envs.multiagent import raw_env

    e = raw_env(render_mode="rgb_array")
    e.reset(seed=0)
    first = e.render()
    e.step(32)
    after = e.render()
    assert first.shape == after.shape == frame_size(10, 2) + (3,) and not np.array_equal(first, after)
    assert drawn_at(after, PAD, _row_y(12) + 10, describe_move(e.rules, *e._shown_moves[-1]), WHITE)


def test_record_video_writes_a_playable_video(tmp_path):
    pytest.importorskip("moviepy")
    imageio = pytest.importorskip("imageio.v3")
    from gymnasium.wrappers import RecordVideo

    env = gym.make("Generala-v0", rules={"lines": ["ones", "twos", "generala"]}, render_mode="rgb_array")
    assert env.metadata["render_fps"] > 0
    env = RecordVideo(env, str(tmp_path / "videos"), episode_trigger=lambda e: e == 0, disable_logger=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        frames = play(env, 0, 100)
        env.close()
    (video,) = (tmp_path / "videos").glob("*.mp4")
    read = imageio.imread(video, plugin="pyav") if _has_pyav() else imageio.imread(video)
    assert read.shape[0] == len(frames) and read.shape[1:] == frames[0].shape
    assert abs(read[0].astype(int) - frames[0].astype(int)).mean() < 8  # the first frame, as lossy coding leaves it


def _read_video(path):
    imageio = pytest.importorskip("imageio.v3")
    return imageio.imread(path, plugin="pyav") if _has_pyav() else imageio.imread(path)


@pytest.mark.parametrize("draw_in", ["process", "loop"])
def test_project_record_video_writes_in_the_background_and_never_overwrites(tmp_path, draw_in):
    pytest.importorskip("moviepy")
    from generala_env.rendering.video import RecordVideo, VideoError

    def recorder():
        env = gym.make("Generala-v0", rules={"lines": ["ones", "twos", "generala"]}, render_mode="rgb_array")
        return RecordVideo(env, str(tmp_path / "videos"), episode_trigger=lambda e: e in (0, 2), max_pending=1, draw_in=draw_in)

    env = recorder()
    assert env.draw_in == draw_in
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        runs = [play(env, seed, 100) for seed in range(3)]
        env.close()
    videos = sorted((tmp_path / "videos").iterdir())
    assert [v.name for v in videos] == ["rl-video-episode-0.mp4", "rl-video-episode-2.mp4"]  # no temporary left behind
    for video, frames in zip(videos, (runs[0], runs[2]), strict=True):
        read = _read_video(video)
        assert read.shape[0] == len(frames) and read.shape[1:] == frames[0].shape
        assert abs(read[-1].astype(int) - frames[-1].astype(int)).mean() < 8
    before = videos[0].read_bytes()
    env = recorder()  # the same names again: refused, the first videos kept
    with pytest.raises(VideoError, match="exists already; not overwritten"):
        for seed in range(3):
            play(env, seed, 100)
        env.close()
    assert videos[0].read_bytes() == before and sorted(p.name for p in (tmp_path / "videos").iterdir()) == [v.name for v in videos]


def test_write_mp4_pads_odd_sizes_and_refuses_mixed_sizes(tmp_path):
    pytest.importorskip("moviepy")
    from generala_env.rendering.video import VideoError, write_mp4

    frames = [np.full((33, 47, 3), 40 * i, dtype=np.uint8) for i in range(4)]
    write_mp4(frames, str(tmp_path / "odd.mp4"), fps=4)
    read = _read_video(tmp_path / "odd.mp4")
    assert read.shape[0] == 4 and read.shape[1:3] == (34, 48)
    with pytest.raises(VideoError, match="one size"):
        write_mp4(frames + [np.zeros((10, 10, 3), np.uint8)], str(tmp_path / "mixed.mp4"), fps=4)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["odd.mp4"]


def test_a_picture_is_plain_data_that_draws_the_frame_render_draws():
    import json

    from generala_env.rendering.picture import Picture, draw

    env = GeneralaEnv(num_players=2, opponents="greedy", render_mode="rgb_array", render_scale=2)
    rng = np.random.default_rng(4)
    obs, info = env.reset(seed=4)
    done, n = False, 0
    while not done:
        pic = env.picture()
        again = Picture.from_plain(json.loads(json.dumps(list(pic))))  # what the drawing process gets
        assert again == pic and np.array_equal(draw(again), env.render())
        obs, r, term, trunc, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        done, n = term or trunc, n + 1
    assert np.array_equal(draw(env.picture()), env.render()) and n > 20
    half = GeneralaEnv(render_mode="rgb_array", render_scale=1)
    half.reset(seed=0)
    assert np.array_equal(draw(half.picture()), half.render())


def test_the_recorder_draws_in_the_loop_behind_a_wrapper_that_changes_render(tmp_path):
    pytest.importorskip("moviepy")
    from generala_env.rendering.video import RecordVideo

    class Inverted(gym.Wrapper):
        def render(self):
            return 255 - self.env.render()

    env = gym.make("Generala-v0", rules={"lines": ["ones", "twos", "generala"]}, render_mode="rgb_array")
    rec = RecordVideo(Inverted(env), str(tmp_path / "v"), episode_trigger=lambda e: e == 0)
    assert rec.draw_in == "loop"
    frames = play(rec, 0, 100)
    rec.close()
    (video,) = (tmp_path / "v").glob("*.mp4")
    assert abs(_read_video(video)[-1].astype(int) - frames[-1].astype(int)).mean() < 8  # the inverted frames


def test_a_video_the_drawing_process_cannot_write_is_one_error_line(tmp_path):
    pytest.importorskip("moviepy")
    from generala_env.rendering.video import DrawingProcess, VideoError

    env = GeneralaEnv(render_mode="rgb_array")
    env.reset(seed=0)
    drawer = DrawingProcess()
    try:
        job = drawer.submit([env.picture()], str(tmp_path / "no" / "such" / "folder.mp4"), 4, "ultrafast")
        with pytest.raises(VideoError) as e:
            job.finish()
        assert "\n" not in str(e.value) and "folder.mp4" in str(e.value)
        good = drawer.submit([env.picture(), env.picture()], str(tmp_path / "ok.mp4"), 4, "ultrafast")
        good.finish()  # the process goes on after a failed video
        assert _read_video(tmp_path / "ok.mp4").shape[0] == 2
    finally:
        drawer.close()


def test_the_drawing_process_leaves_no_pipe_open(tmp_path):
    pytest.importorskip("moviepy")
    import threading

    from generala_env.rendering.video import DrawingProcess

    env = GeneralaEnv(render_mode="rgb_array")
    env.reset(seed=0)
    drawer = DrawingProcess()
    drawer.submit([env.picture()], str(tmp_path / "one.mp4"), 4, "ultrafast").finish()
    proc = drawer._proc
    drawer.close()
    for thread in threading.enumerate():
        if thread.name == "generala-video-results":
            thread.join(timeout=30)
    assert proc is not None and proc.stdin.closed and proc.stdout.closed and proc.stderr.closed


def _has_pyav() -> bool:
    try:
        import av  # noqa: F401
    except ImportError:
        return False
    return True


def test_sb3_make_vec_env_and_video_recorder_work_with_no_warning(tmp_path):
    pytest.importorskip("moviepy")
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecVideoRecorder

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        vec = make_vec_env("Generala-v0", n_envs=2, seed=0)
        assert vec.render_mode == "rgb_array"
        rec = VecVideoRecorder(vec, str(tmp_path), record_video_trigger=lambda s: s == 0, video_length=6)
        rec.reset()
        for _ in range(8):
            masks = np.array(vec.env_method("action_masks"))
            rec.step(np.array([int(np.flatnonzero(m)[0]) for m in masks]))
        rec.close()
    (video,) = tmp_path.glob("*.mp4")
    assert video.stat().st_size > 1000


def test_sb3_vector_env_tiles_its_pictures():
    pytest.importorskip("stable_baselines3")
    from generala_env.adapters.sb3 import make_sb3_vec_env

    venv = make_sb3_vec_env(4, seed=0, render_mode="rgb_array")
    venv.reset()
    h, w = frame_size(10, 1)
    assert venv.render().shape == (2 * h, 2 * w, 3)


def test_half_scale_is_every_other_pixel_of_the_full_picture():
    full = GeneralaEnv(num_players=2, opponents="greedy", render_mode="rgb_array")
    half = GeneralaEnv(num_players=2, opponents="greedy", render_mode="rgb_array", render_scale=1)
    a, b = play(full, 4, 30), play(half, 4, 30)
    assert b[0].shape == frame_size(10, 2, scale=1) + (3,) == (a[0].shape[0] // 2, a[0].shape[1] // 2, 3)
    assert all(np.array_equal(x[::2, ::2], y) for x, y in zip(a, b, strict=True))
    # the letters survive: a half-size text mask is the full one's every other pixel
    assert np.array_equal(text_mask("p0 wrote 16 on fours", 2)[::2, ::2], text_mask("p0 wrote 16 on fours", 1))
    venv = GeneralaVectorEnv(2, render_mode="rgb_array", render_scale=1)
    venv.reset(seed=0)
    assert venv.render()[0].shape == frame_size(10, 1, scale=1) + (3,)
    for bad in (0, 3, True, 1.0, "1"):
        with pytest.raises(ValueError, match="render_scale must be 1 or 2"):
            GeneralaEnv(render_scale=bad)
