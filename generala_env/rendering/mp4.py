"""Frames written as an H.264 mp4, whole or not at all and never over a file: :func:`start_mp4`
encodes off the caller's thread, :func:`write_mp4` waits. A failure is one :class:`VideoError`
line. Used by :class:`generala_env.rendering.video.RecordVideo` and its drawing process.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading

import numpy as np


class VideoError(RuntimeError):
    """A video could not be written (its name was taken, or the encoder failed)."""


class Job:
    """A video being written elsewhere (a thread, the drawing process): ``done`` says whether
    it has ended, ``finish`` waits for it and raises its :class:`VideoError`, if any."""

    def __init__(self, path: str):
        self.path = path
        self.error: VideoError | None = None
        self._done = threading.Event()
        self.id = 0
        self.line = b""  # a drawing process's job: its JSON line
        self.started = False  # a drawing process said it began it
        self._began = threading.Event()  # set with started
        self.tries = 0  # times it was sent again to a fresh drawing process

    def done(self) -> bool:
        return self._done.is_set()

    def begin(self) -> None:
        """Mark it begun (a drawing process said so): if that process dies, this video fails."""
        self.started = True
        self._began.set()

    def end(self, error: VideoError | None) -> None:
        """Mark it ended, with the error it failed with, if any: :meth:`finish` returns or raises."""
        self.error = error
        self._done.set()

    def finish(self) -> None:
        """Wait for the video; raises :class:`VideoError` if it could not be written."""
        self._done.wait()
        if self.error is not None:
            raise self.error


class Encoding(Job):
    """One video being encoded: a writer thread feeds an ffmpeg process of its own (see
    :func:`start_mp4`)."""

    def __init__(self, frames: list, path: str, fps: float, preset: str, nice: int):
        super().__init__(path)
        threading.Thread(target=self._run, args=(frames, fps, preset, nice), name="generala-video", daemon=True).start()

    def _run(self, frames: list, fps: float, preset: str, nice: int) -> None:
        try:
            encode(frames, self.path, fps, preset, nice)
        except VideoError as e:
            self.error = e
        except Exception as e:  # noqa: BLE001  (handed to the training thread as one line)
            self.error = VideoError(f"writing {self.path} failed: {e}")
        finally:
            self._done.set()


def encode(frames: list, path: str, fps: float, preset: str, nice: int, in_process: bool = False) -> None:
    """Write ``frames`` to ``path`` through a hidden temporary file, then link it: never over a
    file. ``in_process``: encode with PyAV here where it is installed (in the drawing process,
    which has no training loop to hold up); else pipe the frames to an ffmpeg process (from a
    thread of a training process, PyAV's share of the GIL costs the loop more than the pipe)."""
    if not frames:
        raise VideoError(f"no frames to write to {path}")
    h, w = frames[0].shape[:2]
    for frame in frames:
        if frame.shape != (h, w, 3):
            raise VideoError(f"frames of one video must have one size: {frame.shape} after {(h, w, 3)}")
    from generala_env.files import FileProblem, NameTaken, create_new

    def write(tmp) -> None:
        if in_process and _have_pyav():
            _encode_in_process(frames, str(tmp), fps, preset, nice)
        else:
            _encode_with_ffmpeg(frames, str(tmp), fps, preset, nice, path)

    try:
        create_new(path, write)  # a fresh temporary file (O_EXCL), linked to path only if that name is free
    except NameTaken:
        raise VideoError(f"video {path} exists already; not overwritten (choose another video_folder or name_prefix)") from None
    except FileProblem as e:
        raise VideoError(f"video {path} could not be written: {e}") from None


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
    """PyAV: libx264 in this thread, on one codec thread, at priority ``nice`` (Linux sets it
    per thread). The drawing process encodes this way: no ffmpeg to start and no pipe."""
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
