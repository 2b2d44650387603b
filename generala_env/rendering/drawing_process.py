"""The drawing process of :class:`generala_env.rendering.video.RecordVideo`: a child process that draws a
recorded episode's frames from their pictures and encodes them (:mod:`generala_env.rendering.mp4`), so
that the training process pays for neither.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import subprocess
import threading
from collections import deque

from generala_env.rendering.mp4 import Job, VideoError, encode

_RESULT = b"generala-video-result "
_STARTED = b"generala-video-start "


class _Worker:
    """One drawing process and the jobs sent to it, oldest first."""

    def __init__(self, proc: subprocess.Popen):
        self.proc = proc
        self.jobs: deque[Job] = deque()
        self.ended = False  # its reader has seen it end and handled the jobs left


class DrawingProcess:
    """One child process, ``python -m generala_env.rendering.video``, at priority ``nice``: it draws each
    video's frames from their :class:`~generala_env.rendering.picture.Picture` and encodes them, so the
    training process pays neither. Jobs go down its stdin and results come back on its stdout
    as JSON lines (no pickles either way); a reader thread marks each job done. It starts with
    the first video and ends with :meth:`close`.

    If the process ends before its jobs are done (killed, out of memory), each video it had
    begun fails with its own :class:`VideoError` naming it, and the videos it had not begun are
    sent to a fresh process (``retries`` times, default once), so that they are still written.

    :param nice: the process's priority
    :param retries: how many times a video the process had not begun goes to a fresh one
    :param command: the process to start (default ``python -m generala_env.rendering.video``)
    """

    def __init__(self, nice: int = 19, retries: int = 1, command: list[str] | None = None):
        import sys

        self.nice = nice
        self.retries = retries
        self.command = command or [sys.executable, "-m", "generala_env.rendering.video"]
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

    def submit(self, pictures: list, path: str, fps: float, preset: str) -> Job:
        import json

        job = Job(path)
        with self._lock:
            self._count += 1
            job.id = self._count
            self._closing = False
        job.line = (json.dumps({"id": job.id, "path": path, "fps": fps, "preset": preset, "pictures": [list(p) for p in pictures]}) + "\n").encode()
        self._send(job)
        return job

    def _send(self, job: Job) -> None:
        """Queue ``job`` on the running process (a fresh one if it has ended) and write its line."""
        with self._lock:
            if self._worker is None or self._worker.ended:
                try:
                    self._worker = self._start()
                except VideoError as e:
                    job.end(e)
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
                            queued.begin()
                    continue
                done = worker.jobs.popleft() if worker.jobs and worker.jobs[0].id == message.get("id") else None
            if done is not None:
                done.end(VideoError(message["error"]) if message.get("error") else None)
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
                job.end(VideoError(f"the drawing process ended ({how}) before writing {job.path}{said}"))
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


def serve() -> None:
    """The drawing process: one JSON job a line on stdin, one JSON result a line on stdout."""
    import json
    import signal
    import sys

    from generala_env.rendering.picture import Picture, draw

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
            encode([draw(p) for p in pictures], job["path"], job["fps"], job["preset"], nice=19, in_process=True)
        except VideoError as e:
            error = str(e)
        except Exception as e:  # noqa: BLE001  (one line back to the training process)
            error = f"writing {job.get('path') if isinstance(job, dict) else 'a video'} failed: {type(e).__name__}: {e}"
        out.write(_RESULT + json.dumps({"id": job.get("id") if isinstance(job, dict) else None, "error": error}).encode() + b"\n")
        out.flush()
