"""What ``render_mode="rgb_array"`` costs: one frame, and training with a video of every 100th episode.

1. ``frame``: microseconds per ``env.render()`` of a one-player and a two-player game
   (:func:`generala_env.rendering.picture.render_rgb`), and per encoded video of one episode
   (moviepy, what ``RecordVideo`` calls at the end of a recorded episode).
2. ``training``: sb3-contrib's MaskablePPO as ``configs/ppo_classic.yaml`` trains it (CPU, one
   torch thread, ``DummyVecEnv`` x16 of one-player classic ``Generala-v0``, ``net_arch
   [256, 256]``, ``n_steps`` 256, ``batch_size`` 1024, ``n_epochs`` 4), the same seed and
   number of steps, three ways: ``plain`` (``render_mode=None``); ``drawn``: every 100th
   episode (counted over all the envs) has every frame drawn (``render()``) and thrown
   away, the cost of the pictures alone; ``video``: every env wrapped in
   ``gymnasium.wrappers.RecordVideo`` with that trigger, so every 100th episode is also
   written as an mp4 (moviepy); ``video-half``: the same with ``render_scale=1`` (half the
   width and height); ``project-video``: :class:`generala_env.rendering.video.RecordVideo` instead,
   which encodes at x264's ``ultrafast`` preset off the loop and skips the ``gc.collect()``:
   for ``Generala-v0`` it keeps only each frame's ``Picture`` in the loop, and a child process
   draws and encodes the video; ``project-video-loop``: the same recorder with
   ``draw_in="loop"`` (frames drawn in the loop, piped to ffmpeg from a thread);
   ``project-video-half``: the recorder with ``render_scale=1``. The runs alternate so a busy machine slows all alike; a slowdown is
   a median time over the median plain time, minus one. On a shared machine those times
   swing by more than the effect, so each run also times, where they happen, the drawing
   and the video writing (``RecordVideo._capture_frame`` and ``stop_recording``), and
   reports them as a share of the rest of that run's training: the slowdown they cause.

    python benchmarks/render_cost.py                 # 3 rounds of 40,960-step runs
    python benchmarks/render_cost.py --steps 8192 --repeats 1   # a quick look
    python benchmarks/render_cost.py --repeats 8 --modes project-video,project-video-loop,project-video-half
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import warnings

import numpy as np


def frame_cost(n: int = 2000) -> dict:
    import gymnasium as gym

    import generala_env  # noqa: F401

    out = {}
    for players in (1, 2):
        env = gym.make("Generala-v0", num_players=players, opponents="greedy" if players > 1 else None, render_mode="rgb_array").unwrapped
        env.reset(seed=0)
        env.step(0)
        env.render()
        t = time.perf_counter()
        for _ in range(n):
            env.render()
        out[f"render_us_{players}p"] = (time.perf_counter() - t) / n * 1e6
    try:
        from moviepy import ImageSequenceClip
    except ImportError:
        return out
    rng = np.random.default_rng(0)
    for scale in (2, 1):  # the frames of one one-player classic episode
        env = gym.make("Generala-v0", render_mode="rgb_array", render_scale=scale)
        _, info = env.reset(seed=0)
        frames, done = [env.render()], False
        while not done:
            _, _, term, trunc, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
            frames.append(env.render())
            done = term or trunc
        with tempfile.TemporaryDirectory() as d:
            ImageSequenceClip(frames, fps=4).write_videofile(f"{d}/w.mp4", logger=None)
            t = time.perf_counter()
            for i in range(3):
                ImageSequenceClip(frames, fps=4).write_videofile(f"{d}/v{i}.mp4", logger=None)
            out[f"encode_ms_per_episode_scale{scale}"] = (time.perf_counter() - t) / 3 * 1e3
    return out


class DrawEvery(__import__("gymnasium").Wrapper):
    """Draws every frame of the episodes ``trigger`` picks, and throws them away."""

    def __init__(self, env, trigger):
        super().__init__(env)
        self.trigger, self.drawing = trigger, False

    def _draw(self):
        self.env.render()

    def reset(self, **kwargs):
        out = self.env.reset(**kwargs)
        self.drawing = self.trigger(None)
        if self.drawing:
            self._draw()
        return out

    def step(self, action):
        out = self.env.step(action)
        if self.drawing:
            self._draw()
        return out


SPENT = {"draw": 0.0, "write": 0.0}  # seconds inside the drawing and the video writing, in this process


def _children_cpu() -> float:
    """CPU seconds of this process's finished children (ffmpeg), user and system."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _timed(method, what: str):
    def timed(self, *args, **kwargs):
        t = time.perf_counter()
        try:
            return method(self, *args, **kwargs)
        finally:
            SPENT[what] += time.perf_counter() - t

    return timed


def train_seconds(steps: int, mode: str, seed: int = 0) -> tuple[float, int, int, float]:
    """Wall seconds of ``model.learn(steps)``, the episodes, the episodes drawn, and the
    seconds spent inside the drawing and the video writing (timed where they run)."""
    import itertools

    import gymnasium as gym
    from gymnasium.wrappers import RecordVideo
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import DummyVecEnv

    import generala_env  # noqa: F401
    from generala_env.rendering.video import RecordVideo as ProjectRecordVideo

    class TimedRecordVideo(RecordVideo):
        _capture_frame = _timed(RecordVideo._capture_frame, "draw")
        stop_recording = _timed(RecordVideo.stop_recording, "write")

    class TimedProjectRecordVideo(ProjectRecordVideo):
        _capture_frame = _timed(ProjectRecordVideo._capture_frame, "draw")
        stop_recording = _timed(ProjectRecordVideo.stop_recording, "write")
        close = _timed(ProjectRecordVideo.close, "write")  # waits for the videos still being written

    class TimedDrawEvery(DrawEvery):
        def _draw(self):
            self.env.render()

        _draw = _timed(_draw, "draw")

    SPENT.update(draw=0.0, write=0.0)
    folder = tempfile.TemporaryDirectory()
    episodes, drawn = itertools.count(), [0]

    def every_100th(_):
        pick = next(episodes) % 100 == 0
        drawn[0] += pick
        return pick

    def make(i):
        def thunk():
            scale = 1 if mode.endswith("-half") else 2
            env = gym.make("Generala-v0", rules="classic", render_mode=None if mode == "plain" else "rgb_array", render_scale=scale)
            if mode == "drawn":
                env = TimedDrawEvery(env, every_100th)
            elif mode.startswith("project-video"):
                draw_in = "loop" if mode == "project-video-loop" else "process"
                env = TimedProjectRecordVideo(env, f"{folder.name}/env{i}", episode_trigger=every_100th, disable_logger=True, draw_in=draw_in)
            elif mode.startswith("video"):
                env = TimedRecordVideo(env, f"{folder.name}/env{i}", episode_trigger=every_100th, disable_logger=True)
            return env

        return thunk

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        venv = DummyVecEnv([make(i) for i in range(16)])
        model = MaskablePPO(
            "MlpPolicy", venv, n_steps=256, batch_size=1024, n_epochs=4, seed=seed, device="cpu", verbose=0, policy_kwargs={"net_arch": [256, 256]}
        )
        t, children, cpu = time.perf_counter(), _children_cpu(), time.process_time()
        model.learn(steps)
        venv.close()  # the project's recorder waits here for the videos still being written
        wall = time.perf_counter() - t
        SPENT["ffmpeg"] = _children_cpu() - children
        SPENT["cpu"] = time.process_time() - cpu + SPENT["ffmpeg"]  # every thread of this process, and ffmpeg
    folder.cleanup()
    return wall, next(episodes), drawn[0], dict(SPENT)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=40_960, help="environment steps per training run (default 40,960: about 1,500 episodes)")
    p.add_argument("--repeats", type=int, default=3, help="rounds of the runs (default 3)")
    p.add_argument(
        "--modes", default="plain,drawn,video,video-half,project-video,project-video-half", help="the runs of a round, comma-separated (plain is always one)"
    )
    args = p.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    for k, v in frame_cost().items():
        print(f"{k}: {v:.1f}")
    modes = ["plain"] + [m for m in args.modes.split(",") if m and m != "plain"]
    unknown = set(modes) - {"plain", "drawn", "video", "video-half", "project-video", "project-video-loop", "project-video-half"}
    if unknown:
        p.error(f"unknown modes: {', '.join(sorted(unknown))}")
    times: dict[str, list[float]] = {m: [] for m in modes}
    cpus: dict[str, list[float]] = {m: [] for m in modes}
    shares: dict[str, list[float]] = {m: [] for m in times}
    for r in range(args.repeats):
        for mode in times:
            wall, episodes, drawn, spent = train_seconds(args.steps, mode, seed=r)
            times[mode].append(wall)
            cpus[mode].append(spent["cpu"])
            inside = spent["draw"] + spent["write"]
            shares[mode].append(inside / (wall - inside))
            counted = (
                f", {episodes} episodes, {drawn} drawn, {spent['draw']:.2f} s drawing, {spent['write']:.2f} s writing videos, {spent['ffmpeg']:.2f} s of ffmpeg CPU"
                if mode != "plain"
                else ""
            )
            print(f"round {r + 1} {mode}: {wall:.2f} s, {spent['cpu']:.2f} CPU s{counted}", flush=True)
    base, base_cpu = statistics.median(times["plain"]), statistics.median(cpus["plain"])
    print(f"MaskablePPO (configs/ppo_classic.yaml's setup), {args.steps:,} steps: plain {base:.2f} s")
    for mode in modes[1:]:
        m = statistics.median(times[mode])
        pairs = sorted(v / p - 1 for v, p in zip(times[mode], times["plain"], strict=True))
        print(
            f"  {mode}: {m:.2f} s, {m / base - 1:+.1%} against plain (pairs {pairs[0]:+.1%} to {pairs[-1]:+.1%}); "
            f"timed inside: {statistics.median(shares[mode]):+.1%} of the rest of training; "
            f"CPU time (all threads and ffmpeg) {statistics.median(cpus[mode]) / base_cpu - 1:+.1%}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
