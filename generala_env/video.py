"""Videos of recorded episodes, written off the training loop: :class:`RecordVideo`.

Gymnasium's ``RecordVideo`` writes each recorded episode where it ends, inside ``step``:
moviepy runs ffmpeg at x264's default preset and the loop waits, and then it runs
``gc.collect()`` (its default ``gc_trigger``), which with torch loaded costs more than the
video. This wrapper is a drop-in subclass that keeps the frames and the file names the
same but

* at an episode's end hands its frames to a writer thread and goes on at once; the thread
  encodes them with libx264 in this process through PyAV (on one thread, at the lowest
  priority, ``nice`` 19) while training goes on; without PyAV it pipes them to an ffmpeg
  process (imageio-ffmpeg's) at that priority instead;
* encodes at x264's ``ultrafast`` preset unless told otherwise (``preset=``), and
  collects garbage only where ``gc_trigger`` asks (default: never);
* bounds what it holds: at most ``max_pending`` videos are being encoded at once (2 by
  default); one more waits for the oldest;
* saves atomically and never overwrites: a video is encoded under a hidden temporary
  name in the same folder and linked to its final name only if that name is free; a name
  that is taken is one clear :class:`VideoError`, raised by the next ``reset``/``step`` or
  by ``close``, as is a failure of ffmpeg.

``close()`` waits for every pending video. ``pip install "generala-rl[video]"`` brings
PyAV and moviepy (whose imageio-ffmpeg is the fallback).
"""

from __future__ import annotations

import contextlib
import gc
import os
import subprocess
import threading
import warnings
from collections import deque

import numpy as np
from gymnasium.wrappers import RecordVideo as _GymRecordVideo


class VideoError(RuntimeError):
    """A video could not be written (its name was taken, or the encoder failed)."""


class Encoding:
    """One video being encoded: a writer thread feeds an ffmpeg process of its own (see
    :func:`start_mp4`)."""

    def __init__(self, frames: list, path: str, fps: float, preset: str, nice: int):
        self.path = path
        self.error: VideoError | None = None
        self._thread = threading.Thread(target=self._run, args=(frames, fps, preset, nice), name="generala-video", daemon=True)
        self._thread.start()

    def done(self) -> bool:
        return not self._thread.is_alive()

    def finish(self) -> None:
        """Wait for the video; raises :class:`VideoError` if it could not be written."""
        self._thread.join()
        if self.error is not None:
            raise self.error

    def _run(self, frames: list, fps: float, preset: str, nice: int) -> None:
        try:
            _encode(frames, self.path, fps, preset, nice)
        except VideoError as e:
            self.error = e
        except Exception as e:  # noqa: BLE001  (handed to the training thread as one line)
            self.error = VideoError(f"writing {self.path} failed: {e}")


def _encode(frames: list, path: str, fps: float, preset: str, nice: int) -> None:
    """Write ``frames`` to ``path`` through a hidden temporary file, then link it: never over a file."""
    if not frames:
        raise VideoError(f"no frames to write to {path}")
    h, w = frames[0].shape[:2]
    for frame in frames:
        if frame.shape != (h, w, 3):
            raise VideoError(f"frames of one video must have one size: {frame.shape} after {(h, w, 3)}")
    folder, name = os.path.split(path)
    tmp = os.path.join(folder, f".{name}.{os.getpid()}.{threading.get_ident()}.part.mp4")
    try:
        if _have_pyav():
            _encode_in_process(frames, tmp, fps, preset, nice)
        else:
            _encode_with_ffmpeg(frames, tmp, fps, preset, nice, path)
        try:
            os.link(tmp, path)  # fails if the name is taken: nothing is overwritten
        except FileExistsError:
            raise VideoError(f"video {path} exists already; not overwritten (choose another video_folder or name_prefix)") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _have_pyav() -> bool:
    try:
        import av  # noqa: F401
    except ImportError:
        return False
    return True


def _even(frame: np.ndarray) -> np.ndarray:
    """``frame`` with its odd sides padded by one pixel: yuv420p, the pixel format every player takes, needs even sides."""
    h, w = frame.shape[:2]
    if h % 2 or w % 2:
        frame = np.pad(frame, ((0, h % 2), (0, w % 2), (0, 0)), mode="edge")
    return np.ascontiguousarray(frame, dtype=np.uint8)


def _encode_in_process(frames: list, tmp: str, fps: float, preset: str, nice: int) -> None:
    """PyAV: libx264 in this thread, on one thread of its own, at priority ``nice`` (Linux sets
    it per thread). No process to start and no pipe: the cheapest way here."""
    from fractions import Fraction

    import av

    with contextlib.suppress(OSError, AttributeError, ValueError):  # a lower priority is a courtesy, not a requirement
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)
    h, w = frames[0].shape[:2]
    try:
        with av.open(tmp, "w", format="mp4", options={"movflags": "+faststart"}) as out:
            stream = out.add_stream("libx264", rate=Fraction(fps).limit_denominator(1000), options={"preset": preset})
            stream.width, stream.height, stream.pix_fmt = w + w % 2, h + h % 2, "yuv420p"
            stream.codec_context.thread_count = 1
            for frame in frames:
                out.mux(stream.encode(av.VideoFrame.from_ndarray(_even(frame), format="rgb24")))
            out.mux(stream.encode(None))
    except (av.FFmpegError, ValueError) as e:
        raise VideoError(f"could not encode {tmp}: {e}") from None


def _encode_with_ffmpeg(frames: list, tmp: str, fps: float, preset: str, nice: int, path: str) -> None:
    """Without PyAV: pipe the frames to an ffmpeg process (imageio-ffmpeg's) on one thread at priority ``nice``."""
    import imageio_ffmpeg

    h, w = frames[0].shape[:2]
    cmd = [imageio_ffmpeg.get_ffmpeg_exe(), "-nostdin", "-loglevel", "error", "-y"]
    cmd += ["-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{w + w % 2}x{h + h % 2}", "-r", f"{fps}", "-i", "-"]
    cmd += ["-c:v", "libx264", "-preset", preset, "-threads", "1", "-pix_fmt", "yuv420p", "-movflags", "+faststart", tmp]
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    except OSError as e:
        raise VideoError(f"could not start ffmpeg for {path}: {e}") from e
    with contextlib.suppress(OSError, AttributeError):
        os.setpriority(os.PRIO_PROCESS, proc.pid, nice)
    assert proc.stdin is not None
    try:
        for frame in frames:
            proc.stdin.write(_even(frame).data)
    except BrokenPipeError:
        pass  # ffmpeg stopped early: its message follows
    except BaseException:
        proc.kill()
        raise
    finally:
        _, err = proc.communicate()
    if proc.returncode != 0:
        raise VideoError(f"ffmpeg could not write {path}: {err.decode(errors='replace').strip()[-300:]}")


def start_mp4(frames: list, path: str, fps: float, preset: str = "ultrafast", nice: int = 19) -> Encoding:
    """Start encoding ``frames`` (uint8 ``(H, W, 3)``, one size) as an H.264 mp4 for ``path``
    and return at once; :meth:`Encoding.finish` waits for it. Odd sides are padded by one
    pixel. The encoder runs on one thread at priority ``nice`` (19, the lowest, by default)."""
    return Encoding(frames, path, fps, preset, nice)


def write_mp4(frames: list, path: str, fps: float, preset: str = "ultrafast") -> None:
    """Encode ``frames`` as an mp4 at ``path`` and wait: atomic, never over an existing file."""
    start_mp4(frames, path, fps, preset).finish()


class RecordVideo(_GymRecordVideo):
    """``gymnasium.wrappers.RecordVideo``, encoding in the background (see the module).

    Takes every argument of Gymnasium's (by keyword after ``video_folder``), plus ``preset`` (x264's, default ``"ultrafast"``)
    and ``max_pending`` (videos encoded at once, default 2); ``gc_trigger`` defaults to
    ``None`` (no ``gc.collect()``)."""

    def __init__(self, env, video_folder: str, *, preset: str = "ultrafast", max_pending: int = 2, gc_trigger=None, **kwargs):
        if not isinstance(max_pending, int) or max_pending < 1:
            raise ValueError(f"max_pending must be a whole number >= 1, not {max_pending!r}")
        with warnings.catch_warnings():  # Gymnasium's "Overwriting existing videos": this class never does
            warnings.filterwarnings("ignore", message=".*Overwriting existing videos")
            super().__init__(env, video_folder, gc_trigger=gc_trigger, **kwargs)
        self.preset = preset
        self.max_pending = max_pending
        self._pending: deque[Encoding] = deque()
        self._errors: list[VideoError] = []

    def _reap(self, wait_for: int = 0) -> None:
        """Finish the videos whose ffmpeg is done, and wait for the oldest ``wait_for``."""
        while self._pending and (wait_for > 0 or self._pending[0].done()):
            wait_for -= 1
            try:
                self._pending.popleft().finish()
            except VideoError as e:
                self._errors.append(e)

    def _raise_errors(self) -> None:
        if self._errors:
            first = self._errors[0]
            self._errors.clear()
            raise first

    def stop_recording(self) -> None:
        assert self.recording, "stop_recording was called, but no recording was started"
        frames, self.recorded_frames = self.recorded_frames, []
        path = os.path.join(self.video_folder, f"{self._video_name}.mp4")
        self.recording, self._video_name = False, None
        if frames:
            self._reap(wait_for=len(self._pending) + 1 - self.max_pending)
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
        self._raise_errors()
