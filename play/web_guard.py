"""Who may ask ``generala serve``: the ``Host`` check (DNS rebinding), the ``Origin`` check
(another site's page), JSON bodies only and of bounded size, as a local notebook server has them.

:class:`Guard` is ASGI middleware in front of every route; each refusal is a JSON ``detail`` of one line.
"""

import ipaddress
import json
from collections.abc import Iterable

from generala_env.files.safe_yaml import short_repr

MAX_BODY = 64 * 1024  # bytes of a request body
MAX_DETAIL = 400  # characters of an error's detail
ECHO = 80  # characters of a value quoted in an error
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
# the headers the guard judges a request by, each to be sent once (lower-cased: as it is shown)
GUARDED = {"host": "Host", "origin": "Origin", "sec-fetch-site": "Sec-Fetch-Site", "content-type": "Content-Type", "content-length": "Content-Length"}


def shown(value) -> str:
    """A value from a request, quoted for an error message: at most :data:`ECHO` characters."""
    return short_repr(value, ECHO)


def bounded(text: str, limit: int = MAX_DETAIL) -> str:
    """An error's detail cut to ``limit`` characters."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _split_host(value: str) -> tuple[str, int | None] | None:
    """``(name, port)`` of a ``Host`` header (the name lower-cased; an IPv6 address in brackets), or ``None``."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[: end + 1], value[end + 1 :]
        if rest and not rest.startswith(":"):
            return None
        port = rest[1:] if rest else None
    else:
        name, _, port = value.partition(":") if value.count(":") <= 1 else (value, "", None)
        port = port or None
    if not name or (port is not None and not (port.isascii() and port.isdigit() and len(port) <= 5)):
        return None
    return name, None if port is None else int(port)


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name[1:-1] if name.startswith("[") else name)
    except ValueError:
        return False
    return True


def is_loopback(host: str) -> bool:
    """Whether the address ``host`` (what ``--host`` takes) reaches this machine only."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def is_wildcard(host: str) -> bool:
    """Whether ``host`` listens on every address of the machine (``0.0.0.0``, ``::``)."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return host == ""


class HostCheck:
    """Which ``Host`` headers name this server: ``localhost``, ``127.0.0.1`` and ``[::1]`` when it
    listens on loopback; the address it listens on otherwise (any IP address when that is every
    address: a name that an attacker's DNS controls is never an IP address); and the names in
    ``allowed`` (``name`` for any port, ``name:port`` for one). The port, where the server knows
    it, must be its own."""

    def __init__(self, host: str = "127.0.0.1", port: int | None = None, allowed: Iterable[str] = ()):
        self.port = port
        bound = host.lower()
        bound = f"[{bound}]" if ":" in bound and not bound.startswith("[") else bound
        self.names = {bound}
        if is_loopback(host) or is_wildcard(host):
            self.names |= set(LOOPBACK_NAMES)
        self.any_ip = is_wildcard(host)
        self.extra = {a.strip().lower() for a in allowed}

    def __call__(self, header: str) -> bool:
        if header.strip().lower() in self.extra:
            return True
        parts = _split_host(header)
        if parts is None:
            return False
        name, port = parts
        if name in self.extra:
            return True
        if name not in self.names and not (self.any_ip and _is_ip(name)):
            return False
        return self.port is None or port == self.port or (port is None and self.port == 80)


def _error_body(detail: str) -> bytes:
    return json.dumps({"detail": bounded(detail)}).encode()


class Guard:
    """ASGI middleware in front of every route: refuses a request that sends a header it is
    judged by (:data:`GUARDED`) more than once (400), one addressed by a name the server does
    not serve (403), a state-changing one from another site's page (403), one
    whose body is not JSON (415) or is larger than ``max_body`` bytes (413); each with a JSON
    ``detail`` of one line."""

    SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

    def __init__(self, app, hosts: HostCheck, max_body: int = MAX_BODY):
        self.app, self.hosts, self.max_body = app, hosts, max_body

    @staticmethod
    async def refuse(send, status: int, detail: str) -> None:
        body = _error_body(detail)
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers: dict[str, list[str]] = {}
        for k, v in scope.get("headers", []):
            headers.setdefault(k.decode("latin-1").lower(), []).append(v.decode("latin-1"))
        repeated = [name for name in GUARDED if len(headers.get(name, ())) > 1]
        if repeated:  # which copy a check reads must never decide: a request says each once
            name = GUARDED[repeated[0]]
            return await self.refuse(send, 400, f"a request sends its {name} header once, not {len(headers[repeated[0]])} times")
        host = headers.get("host", [])
        if len(host) != 1 or not self.hosts(host[0]):
            got = shown(host[0]) if len(host) == 1 else "no Host header"
            return await self.refuse(send, 403, f"this server answers requests addressed to it by the name it serves, not {got}")
        if scope["method"] in self.SAFE_METHODS:
            return await self.app(scope, receive, send)
        origin = headers.get("origin", [])
        if origin and (origin[0].lower() not in (f"http://{host[0].lower()}", f"https://{host[0].lower()}")):
            return await self.refuse(send, 403, f"a request from another site's page is refused (Origin {shown(origin[0])})")
        if headers.get("sec-fetch-site", [""])[0].lower() == "cross-site":
            return await self.refuse(send, 403, "a request from another site's page is refused (Sec-Fetch-Site: cross-site)")
        kind = headers.get("content-type", [""])
        if kind[0].split(";", 1)[0].strip().lower() != "application/json":
            return await self.refuse(send, 415, f"a request body is JSON: send Content-Type: application/json, not {shown(kind[0] if kind else None)}")
        length = headers.get("content-length", [])
        if length and (not (length[0].strip().isascii() and length[0].strip().isdigit()) or int(length[0]) > self.max_body):
            return await self.refuse(send, 413, f"a request body is at most {self.max_body:,} bytes")
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return None  # the client went away
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                return await self.refuse(send, 413, f"a request body is at most {self.max_body:,} bytes")
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body, given = b"".join(chunks), False

        async def replay():
            nonlocal given
            if not given:
                given = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return await self.app(scope, replay, send)
