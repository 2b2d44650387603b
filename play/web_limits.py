"""How long ``generala serve`` waits for a request and how many connections it holds at once.

uvicorn's HTTP protocol waits for the rest of a request forever: a client that sends a header
saying 60,000 bytes follow, and one byte, holds its socket until the process has no file
descriptors left. :func:`bounded_protocol` gives uvicorn's h11 protocol two limits:

* a deadline per request: from its connection (or, on a kept-alive connection, its first
  byte), a request's head and body arrive within ``read_timeout`` seconds, or the connection
  gets a 408 (where no answer has begun) and is closed; a connection idle between requests is
  closed by uvicorn after ``timeout_keep_alive`` seconds (:data:`KEEP_ALIVE`);
* a cap on connections: beyond ``max_connections`` open at once, a new one gets a 503 and is
  closed at once, its descriptor given back (uvicorn's own ``limit_concurrency`` answers 503
  only once a request's head is in, holding the socket until then).

A head is at most :data:`MAX_HEAD` bytes (16 KiB) and a body the guard's 64 KiB
(:mod:`generala_play.web_guard`). :func:`descriptors_for` makes room for the connections under
the process's limit of open files, so that a full server still opens the files a game reads.
"""

from __future__ import annotations

import json
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

READ_TIMEOUT = 10.0  # seconds a request's head and body may take to arrive
MAX_CONNECTIONS = 512  # connections held at once
MAX_HEAD = 16 * 1024  # bytes of a request's line and headers (h11's own default, said here)
SPARE_FILES = 128  # open files kept free beyond the connections: the caches a game reads, the server's own
KEEP_ALIVE = 5  # seconds an idle kept-alive connection stays open (uvicorn's timeout_keep_alive)


def _answer(status: int, reason: str, detail: str) -> bytes:
    """A whole HTTP/1.1 answer that closes the connection, with a JSON ``detail``."""
    body = json.dumps({"detail": detail}).encode()
    head = f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\nconnection: close\r\n\r\n"
    return head.encode("ascii") + body


class BoundedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline per request and a cap on connections (the class
    attributes: :func:`bounded_protocol` sets them)."""

    read_timeout: float = READ_TIMEOUT
    max_connections: int = MAX_CONNECTIONS
    _deadline: Any = None  # the timer of the request being read, or None
    _refused = False

    def connection_made(self, transport) -> None:
        if len(self.server_state.connections) >= self.max_connections:
            self._refused, self.transport = True, transport
            transport.write(_answer(503, "Service Unavailable", f"the server holds {self.max_connections} connections at once: try again shortly"))
            transport.close()
            return
        super().connection_made(transport)
        self._arm()  # a connection that sends nothing is closed too

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if not self._refused:
            super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        if self._deadline is None and self.conn.their_state is h11.IDLE:
            self._arm()  # the first byte of the next request on a kept-alive connection
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE and self.conn.their_state is not h11.SEND_BODY:
            self._disarm()  # the whole request is in (or the connection is done)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.timeout_keep_alive_task is None and self.conn.their_state in (h11.IDLE, h11.SEND_BODY) and not self.transport.is_closing():
            self._arm()  # a pipelined request already begun: its deadline runs from here

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.read_timeout, self._too_slow)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        if self.conn.our_state is h11.IDLE or (self.conn.our_state is h11.SEND_RESPONSE and not self.cycle.response_started):
            self.transport.write(_answer(408, "Request Timeout", f"a request's head and body arrive within {self.read_timeout:g} s"))
        self.transport.close()  # the app, if it waits for the body, hears the client went away


def descriptors_for(max_connections: int) -> str | None:
    """Make room for ``max_connections`` sockets and the files a game reads (:data:`SPARE_FILES`
    more) under this process's limit of open files, raising its soft limit up to the hard one
    where needed; or why there is none (one line)."""
    try:
        import resource
    except ImportError:  # not on this system: nothing to raise
        return None
    need = max_connections + SPARE_FILES
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= need:
        return None
    if hard != resource.RLIM_INFINITY and hard < need:
        return f"--max-connections {max_connections} needs {need} open files and this process may open {hard} (ulimit -n): give at most {hard - SPARE_FILES}"
    resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
    return None


def bounded_protocol(read_timeout: float = READ_TIMEOUT, max_connections: int = MAX_CONNECTIONS) -> type[BoundedH11Protocol]:
    """:class:`BoundedH11Protocol` with these limits, for ``uvicorn.Config(http=...)``."""
    return type("BoundedH11Protocol", (BoundedH11Protocol,), {"read_timeout": float(read_timeout), "max_connections": int(max_connections)})


__all__ = ["KEEP_ALIVE", "MAX_CONNECTIONS", "MAX_HEAD", "READ_TIMEOUT", "SPARE_FILES", "BoundedH11Protocol", "bounded_protocol", "descriptors_for"]
