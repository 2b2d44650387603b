"""Videos of recorded episodes, written off the training loop: :class:`RecordVideo`.

Gymnasium's ``RecordVideo`` writes each recorded episode where it ends, inside ``step``:
moviepy runs ffmpeg at x264's default preset and the loop waits, and then it runs
``gc.collect()`` (its default ``gc_trigger``), which with torch loaded costs more than the
video. This wrapper is a drop-in subclass that keeps the frames and the file names the
same but

* for an env with ``picture()`` (``Generala-v0``) keeps only each frame's
  :class:`~generala_env.picture.Picture` and at the episode's end hands them to one child
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

``close()`` waits for every pending video. ``pip install "generala-rl[video]"`` brings
PyAV and moviepy (whose imageio-ffmpeg is the fallback).
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import subprocess
import threading
import warnings
from collections import deque

import gymnasium
import numpy as np
from gymnasium.wrappers import RecordVideo as _GymRecordVideo


class VideoError(RuntimeError):
    """A video could not be written (its name was taken, or the encoder failed)."""


class _Job:
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

    def finish(self) -> None:
        """Wait for the video; raises :class:`VideoError` if it could not be written."""
        self._done.wait()
        if self.error is not None:
            raise self.error


class Encoding(_Job):
    """One video being encoded: a writer thread feeds an ffmpeg process of its own (see
    :func:`start_mp4`)."""

    def __init__(self, frames: list, path: str, fps: float, preset: str, nice: int):
        super().__init__(path)
        threading.Thread(target=self._run, args=(frames, fps, preset, nice), name="generala-video", daemon=True).start()

    def _run(self, frames: list, fps: float, preset: str, nice: int) -> None:
        try:
            _encode(frames, self.path, fps, preset, nice)
        except VideoError as e:
            self.error = e
        except Exception as e:  # noqa: BLE001  (handed to the training thread as one line)
            self.error = VideoError(f"writing {self.path} failed: {e}")
        finally:
            self._done.set()


def _encode(frames: list, path: str, fps: float, preset: str, nice: int, in_process: bool = False) -> None:
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
    from .files import FileProblem, NameTaken, create_new

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


# -- the drawing process ------------------------------------------------------------
_RESULT = b"generala-video-result "
_STARTED = b"generala-video-start "


class _Worker:
    """One drawing process and the jobs sent to it, oldest first."""

    def __init__(self, proc: subprocess.Popen):
        self.proc = proc
        self.jobs: deque[_Job] = deque()
        self.ended = False  # its reader has seen it end and handled the jobs left


class DrawingProcess:
    """One child process, ``python -m generala_env.video``, at priority ``nice``: it draws each
    video's frames from their :class:`~generala_env.picture.Picture` and encodes them, so the
    training process pays neither. Jobs go down its stdin and results come back on its stdout
    as JSON lines (no pickles either way); a reader thread marks each job done. It starts with
    the first video and ends with :meth:`close`.

    If the process ends before its jobs are done (killed, out of memory), each video it had
    begun fails with its own :class:`VideoError` naming it, and the videos it had not begun are
    sent to a fresh process (``retries`` times, default once), so that they are still written.

    :param nice: the process's priority
    :param retries: how many times a video the process had not begun goes to a fresh one
    :param command: the process to start (default ``python -m generala_env.video``)
    """

    def __init__(self, nice: int = 19, retries: int = 1, command: list[str] | None = None):
        import sys

        self.nice = nice
        self.retries = retries
        self.command = command or [sys.executable, "-m", "generala_env.video"]
        self._worker: _Worker | None = None
        self._lock = threading.Lock()
        self._count = 0
        self._closing = False

    @property
    def _proc(self) -> subprocess.Popen | None:
        """The running process, if any."""
        return self._worker.proc if self._worker is not None else None

    def _start(self) -> _Worker:
        import sys

        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))  # the modules this process sees
        try:
            proc = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        except OSError as e:
            raise VideoError(f"could not start the drawing process: {e}") from e
        with contextlib.suppress(OSError, AttributeError):  # a lower priority is a courtesy, not a requirement
            os.setpriority(os.PRIO_PROCESS, proc.pid, self.nice)
        worker = _Worker(proc)
        threading.Thread(target=self._read, args=(worker,), name="generala-video-results", daemon=True).start()
        return worker

    def submit(self, pictures: list, path: str, fps: float, preset: str) -> _Job:
        import json

        job = _Job(path)
        with self._lock:
            self._count += 1
            job.id = self._count
            self._closing = False
        job.line = (json.dumps({"id": job.id, "path": path, "fps": fps, "preset": preset, "pictures": [list(p) for p in pictures]}) + "\n").encode()
        self._send(job)
        return job

    def _send(self, job: _Job) -> None:
        """Queue ``job`` on the running process (a fresh one if it has ended) and write its line."""
        with self._lock:
            if self._worker is None or self._worker.ended:
                try:
                    self._worker = self._start()
                except VideoError as e:
                    job.error = e
                    job._done.set()
                    return
            worker = self._worker
            worker.jobs.append(job)
            assert worker.proc.stdin is not None
            try:
                worker.proc.stdin.write(job.line)
                worker.proc.stdin.flush()
            except (BrokenPipeError, OSError):
                pass  # the process has ended: its reader fails or resends its jobs

    def _read(self, worker: _Worker) -> None:
        import json

        proc = worker.proc
        assert proc.stdout is not None
        for raw in proc.stdout:
            started = raw.startswith(_STARTED)
            if not (started or raw.startswith(_RESULT)):
                continue  # anything else the process printed
            try:
                message = json.loads(raw[len(_STARTED if started else _RESULT) :])
            except ValueError:
                continue
            with self._lock:
                if started:
                    for queued in worker.jobs:
                        if queued.id == message.get("id"):
                            queued.started = True
                            queued._began.set()
                    continue
                done = worker.jobs.popleft() if worker.jobs and worker.jobs[0].id == message.get("id") else None
            if done is not None:
                done.error = VideoError(message["error"]) if message.get("error") else None
                done._done.set()
        code = proc.wait()
        lines = proc.stderr.read().decode(errors="replace").strip().splitlines() if proc.stderr else []
        for pipe in (proc.stdout, proc.stderr):  # this thread's to close: left open, they warn when collected
            if pipe is not None:
                pipe.close()
        with self._lock:
            worker.ended = True
            left, worker.jobs = list(worker.jobs), deque()
            closing = self._closing
        how = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
        said = f": {lines[-1][-200:]}" if lines else ""
        for job in left:
            if job.started or job.tries >= self.retries or closing:
                job.error = VideoError(f"the drawing process ended ({how}) before writing {job.path}{said}")
                job._done.set()
            else:  # never begun: a fresh process writes it
                job.tries += 1
                self._send(job)

    @classmethod
    def shared(cls) -> DrawingProcess:
        """The one drawing process of this Python process (every recorder in it uses it:
        sixteen envs of a vector env start one process, not sixteen); :meth:`release` it."""
        global _SHARED, _USERS
        with _SHARED_LOCK:
            if _SHARED is None:
                _SHARED = cls()
                atexit.register(_close_shared)
            _USERS += 1
            return _SHARED

    def release(self) -> None:
        """One user fewer; the last one closes the shared process (after its videos)."""
        global _SHARED, _USERS
        with _SHARED_LOCK:
            _USERS -= 1
            last = _USERS <= 0 and _SHARED is self
            if last:
                _SHARED, _USERS = None, 0
        if last:
            self.close()

    def close(self) -> None:
        """Let the process finish the videos it has, and end."""
        with self._lock:
            worker, self._worker = self._worker, None
            self._closing = True
        if worker is not None:
            with contextlib.suppress(OSError):
                assert worker.proc.stdin is not None
                worker.proc.stdin.close()
            worker.proc.wait()


_SHARED: DrawingProcess | None = None
_USERS = 0
_SHARED_LOCK = threading.Lock()


def _close_shared() -> None:
    if _SHARED is not None:
        _SHARED.close()


def _serve() -> None:
    """The drawing process: one JSON job a line on stdin, one JSON result a line on stdout."""
    import json
    import signal
    import sys

    from .picture import Picture, draw

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the training; this process ends when its stdin does
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # what anything else prints stays off the results
    for raw in sys.stdin:
        error, job = None, None
        try:
            job = json.loads(raw)
            out.write(_STARTED + json.dumps({"id": job.get("id") if isinstance(job, dict) else None}).encode() + b"\n")
            out.flush()
            pictures = [Picture.from_plain(p) for p in job["pictures"]]
            _encode([draw(p) for p in pictures], job["path"], job["fps"], job["preset"], nice=19, in_process=True)
        except VideoError as e:
            error = str(e)
        except Exception as e:  # noqa: BLE001  (one line back to the training process)
            error = f"writing {job.get('path') if isinstance(job, dict) else 'a video'} failed: {type(e).__name__}: {e}"
        out.write(_RESULT + json.dumps({"id": job.get("id") if isinstance(job, dict) else None, "error": error}).encode() + b"\n")
        out.flush()


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
        raise gymnasium.error.DependencyNotInstalled('RecordVideo needs moviepy, which is not installed: run `pip install "generala-rl[video]"`') from None


class RecordVideo(_GymRecordVideo):
    """``gymnasium.wrappers.RecordVideo``, with the drawing and the encoding off the training
    loop (see the module).

    Takes every argument of Gymnasium's (by keyword after ``video_folder``), plus ``preset``
    (x264's, default ``"ultrafast"``), ``max_pending`` (videos encoded at once, default 2) and
    ``draw_in``: ``"process"`` (the default, for an env with ``picture()`` such as
    ``Generala-v0``: each step keeps only the frame's :class:`~generala_env.picture.Picture`,
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
        self._pending: deque[_Job] = deque()
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


if __name__ == "__main__":
    _serve()
