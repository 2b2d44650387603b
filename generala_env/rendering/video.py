"""Videos of recorded episodes, written off the training loop: :class:`RecordVideo`.

Gymnasium's ``RecordVideo`` writes each recorded episode where it ends, inside ``step``:
moviepy runs ffmpeg at x264's default preset and the loop waits, and then it runs
``gc.collect()`` (its default ``gc_trigger``), which with torch loaded costs more than the
video. This wrapper is a drop-in subclass that keeps the frames and the file names the
same but

* for an env with ``picture()`` (``Generala-v0``) keeps only each frame's
  :class:`~generala_env.rendering.picture.Picture` and at the episode's end hands them to one child
  process (:class:`DrawingProcess`, ``nice`` 19), which draws the frames and encodes them
  (PyAV where it is installed, else ffmpeg) while training goes on; any other env, or
  ``draw_in="loop"``, has its frames drawn at each step and piped to an ffmpeg process
  (imageio-ffmpeg's) from a writer thread, at that priority;
* encodes at x264's ``ultrafast`` preset unless told otherwise (``preset=``), and
  collects garbage only where ``gc_trigger`` asks (default: never);
* bounds what it holds: at most ``max_pending`` videos are being encoded at once (2 by
  default); one more waits for the oldest;
* saves atomically and never overwrites: a video is encoded under a fresh hidden temporary
  name in the same folder (:func:`generala_env.files.create_new`) and linked to its final
  name only if that name is free; a name that is taken is one clear :class:`VideoError`,
  raised by the next ``reset``/``step`` or by ``close``, as is a failure of the encoder or of
  the drawing process. Every video that failed is named in that one line; if the drawing
  process dies (killed, out of memory), the videos it had not begun go to a fresh one.

``close()`` waits for every pending video. ``pip install ".[video]"`` (in the project's clone) brings
PyAV and moviepy (whose imageio-ffmpeg is the fallback).

The encoding is written in :mod:`generala_env.rendering.mp4`, the drawing process in
:mod:`generala_env.rendering.drawing_process`; their names are imported from here.
"""

from __future__ import annotations

import gc
import os
import warnings
from collections import deque

import gymnasium
from gymnasium.wrappers import RecordVideo as _GymRecordVideo

from generala_env.extras import how_to_install
from generala_env.rendering.drawing_process import DrawingProcess, serve
from generala_env.rendering.mp4 import Encoding, Job, VideoError, start_mp4, write_mp4


def picture_source(env):
    """``env.unwrapped.picture`` where ``env``'s frames are exactly what it draws (no wrapper in
    between changes ``render``; Gymnasium's checkers only check), else ``None``."""
    from gymnasium.wrappers import OrderEnforcing, PassiveEnvChecker

    while isinstance(env, gymnasium.Wrapper):
        if type(env).render is not gymnasium.Wrapper.render and not isinstance(env, (OrderEnforcing, PassiveEnvChecker)):
            return None
        env = env.env
    picture = getattr(env, "picture", None)
    return picture if callable(picture) else None


def _need_moviepy() -> None:
    """Raise Gymnasium's ``DependencyNotInstalled`` naming this project's extra where moviepy
    (which Gymnasium's ``RecordVideo`` requires, and whose imageio-ffmpeg encodes without
    PyAV) is missing: Gymnasium's own message names ``gymnasium[other]``."""
    try:
        import moviepy  # noqa: F401
    except ImportError:
        raise gymnasium.error.DependencyNotInstalled(f"RecordVideo needs moviepy, which is not installed; {how_to_install('video')}") from None


class RecordVideo(_GymRecordVideo):
    """``gymnasium.wrappers.RecordVideo``, with the drawing and the encoding off the training
    loop (see the module).

    Takes every argument of Gymnasium's (by keyword after ``video_folder``), plus ``preset``
    (x264's, default ``"ultrafast"``), ``max_pending`` (videos encoded at once, default 2) and
    ``draw_in``: ``"process"`` (the default, for an env with ``picture()`` such as
    ``Generala-v0``: each step keeps only the frame's :class:`~generala_env.rendering.picture.Picture`,
    and a child process at ``nice`` 19 draws and encodes the video; ``recorded_frames`` then
    holds pictures) or ``"loop"`` (frames drawn at each step, encoded by a thread; what any
    other env gets). ``gc_trigger`` defaults to ``None`` (no ``gc.collect()``)."""

    def __init__(self, env, video_folder: str, *, preset: str = "ultrafast", max_pending: int = 2, gc_trigger=None, draw_in: str = "process", **kwargs):
        _need_moviepy()
        if not isinstance(max_pending, int) or max_pending < 1:
            raise ValueError(f"max_pending must be a whole number >= 1, not {max_pending!r}")
        if draw_in not in ("process", "loop"):
            raise ValueError(f"draw_in must be 'process' or 'loop', not {draw_in!r}")
        with warnings.catch_warnings():  # Gymnasium's "Overwriting existing videos": this class never does
            warnings.filterwarnings("ignore", message=".*Overwriting existing videos")
            super().__init__(env, video_folder, gc_trigger=gc_trigger, **kwargs)
        self.preset = preset
        self.max_pending = max_pending
        self._pending: deque[Job] = deque()
        self._errors: list[VideoError] = []
        self._picture = picture_source(self.env) if draw_in == "process" else None
        self._drawer = DrawingProcess.shared() if self._picture is not None else None
        self.draw_in = "process" if self._picture is not None else "loop"

    def _capture_frame(self) -> None:
        if self._picture is None:
            return super()._capture_frame()
        assert self.recording, "Cannot capture a frame, recording wasn't started."
        self.recorded_frames.append(self._picture())  # drawn by the drawing process

    def _reap(self, wait_for: int = 0) -> None:
        """Finish the videos whose ffmpeg is done, and wait for the oldest ``wait_for``."""
        while self._pending and (wait_for > 0 or self._pending[0].done()):
            wait_for -= 1
            try:
                self._pending.popleft().finish()
            except VideoError as e:
                self._errors.append(e)

    def _raise_errors(self) -> None:
        """Raise one :class:`VideoError` for every video that failed since the last one: each
        named, on one line; the videos after them are still written."""
        errors, self._errors = self._errors, []
        if len(errors) == 1:
            raise errors[0]
        if errors:
            raise VideoError(f"{len(errors)} videos were not written: " + "; ".join(f"({k}) {e}" for k, e in enumerate(errors, 1)))

    def stop_recording(self) -> None:
        assert self.recording, "stop_recording was called, but no recording was started"
        frames, self.recorded_frames = self.recorded_frames, []
        path = os.path.join(self.video_folder, f"{self._video_name}.mp4")
        self.recording, self._video_name = False, None
        if frames:
            self._reap(wait_for=len(self._pending) + 1 - self.max_pending)
            if self._drawer is not None:
                self._pending.append(self._drawer.submit(frames, path, self.frames_per_sec, self.preset))
            else:
                self._pending.append(start_mp4(frames, path, self.frames_per_sec, self.preset))
        if self.gc_trigger and self.gc_trigger(self.episode_id):
            gc.collect()

    def step(self, action):
        self._raise_errors()
        return super().step(action)

    def reset(self, *, seed=None, options=None):
        self._reap()
        self._raise_errors()
        return super().reset(seed=seed, options=options)

    def close(self) -> None:
        super().close()
        self._reap(wait_for=len(self._pending))
        drawer, self._drawer = self._drawer, None
        if drawer is not None:
            drawer.release()
        self._raise_errors()


__all__ = ["DrawingProcess", "Encoding", "RecordVideo", "VideoError", "picture_source", "start_mp4", "write_mp4"]

if __name__ == "__main__":  # the drawing process: DrawingProcess starts ``python -m generala_env.rendering.video``
    serve()
