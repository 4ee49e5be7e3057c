"""The link to one Redis server, and what cubejit does when the server cannot serve it.

A server that cannot serve (unreachable, or answering with an error: out of memory under
``noeviction``, ``READONLY`` replica, ``MISCONF`` after a failed save, ``NOPERM``, a bad database
index, any ``-ERR``) is never an error to the caller: each whole operation is bounded by
``store_timeout`` seconds, however slowly the server answers; the first failure logs one
WARNING, and until a reconnect is attempted (at most every :data:`RETRY_EVERY` seconds) the
operations raise :class:`Offline` at once: the shared store answers it as a miss or a failed
write, and a fleet's single-flight by compiling here without a lease. A reconnect first writes
a short-lived probe key through a script, so a server that still reads but cannot write (or run
scripts) stays down: one outage, one WARNING. A failure closes the pool's idle connections only:
another thread's operation under way (a lease renewal, a subscriber waiting) ends on its own,
served or failed as an outage, never with its socket closed under it.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

if TYPE_CHECKING:
    import redis

logger = logging.getLogger("cubejit.environment")

T = TypeVar("T")

RETRY_EVERY = 5.0
"""Seconds between attempts to reach a server found unavailable."""

# Writes the probe key KEYS[1] for a second: a server that can run this serves cubejit.
_PROBE = "return redis.call('SET', KEYS[1], ARGV[1], 'PX', 1000) and 1"


class Offline(Exception):
    """The server cannot serve now; raised by :meth:`RedisLink.run` and caught by the
    shared store (:mod:`cubejit.environment.storage_redis`, :mod:`cubejit.environment.fleet`),
    never raised to a user."""


def split_url(url: str) -> tuple[str, dict[str, str]]:
    """The URL handed to the Redis client, and cubejit's own query parameters taken out of it
    (``lease``: seconds a single-flight lease lasts; ``prefix``: the name prefix on the
    server)."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    own = {k: v for k, v in query if k in ("lease", "prefix")}
    rest = urlencode([(k, v) for k, v in query if k not in own])
    return urlunsplit(parts._replace(query=rest)), own


def describe(url: str) -> str:
    """``url`` without credentials or query, for log lines."""
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    return f"{parts.scheme}://{host}{port}{parts.path or '/0'}"


_deadline = threading.local()
"""The monotonic time by which the calling thread's store operation must end, if any."""


@contextlib.contextmanager
def _bounded(seconds: float) -> Iterator[None]:
    before = getattr(_deadline, "at", None)
    _deadline.at = time.monotonic() + seconds
    try:
        yield
    finally:
        _deadline.at = before


class _BoundedSocket:
    """A connection's socket whose every wait ends by the calling operation's deadline, so
    that a server answering one byte at a time cannot stretch an operation past its timeout
    (a socket timeout alone bounds each ``recv``, not their sum)."""

    def __init__(self, sock: Any) -> None:
        self._sock = sock
        self._timeout = sock.gettimeout()

    def settimeout(self, timeout: float | None) -> None:
        self._timeout = timeout
        self._sock.settimeout(timeout)

    def _arm(self) -> None:
        at = getattr(_deadline, "at", None)
        if at is None:
            self._sock.settimeout(self._timeout)
            return
        left = at - time.monotonic()
        if left <= 0:
            raise TimeoutError("the shared store's operation ran past CUBEJIT_STORE_TIMEOUT")
        wanted = self._timeout
        self._sock.settimeout(left if wanted is None or wanted > left else wanted)

    def recv(self, *args: Any) -> bytes:
        self._arm()
        return self._sock.recv(*args)  # type: ignore[no-any-return]

    def recv_into(self, *args: Any) -> int:
        self._arm()
        return self._sock.recv_into(*args)  # type: ignore[no-any-return]

    def sendall(self, *args: Any) -> None:
        self._arm()
        self._sock.sendall(*args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


@functools.cache
def _bounded_connection(scheme: str) -> type:
    """The client's connection class for ``scheme``, its sockets made :class:`_BoundedSocket`."""
    from redis.connection import Connection, SSLConnection, UnixDomainSocketConnection

    base: Any = {"rediss": SSLConnection, "unix": UnixDomainSocketConnection}.get(
        scheme, Connection
    )

    def _connect(self: Any) -> _BoundedSocket:
        return _BoundedSocket(base._connect(self))

    return type(f"Bounded{base.__name__}", (base,), {"_connect": _connect})


class RedisLink:
    """One client to one server, with the fault policy of the module docstring.

    Thread-safe: the Redis client pools its connections, and the up/down state is guarded."""

    def __init__(self, url: str, timeout: float, retry_every: float = RETRY_EVERY) -> None:
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        client_url, own = split_url(url)
        self.name = describe(url)
        self.timeout = timeout
        self.prefix = own.get("prefix", "cubejit") + ":"
        """What every name this link writes on the server starts with."""
        self.client = redis.Redis.from_url(
            client_url,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 0),
            connection_class=_bounded_connection(urlsplit(client_url).scheme),
        )
        self._errors = (redis.RedisError, OSError)
        self.retry_every = retry_every
        """Seconds between attempts to reach the server once it was found unavailable."""
        self._lock = threading.Lock()
        self._down_since: float | None = None
        self._last_attempt = 0.0
        self._probe = self.client.register_script(_PROBE)
        self._probe_key = f"{self.prefix}probe:{os.getpid()}"

    def run(self, operation: Callable[[redis.Redis], T], waiting: float = 0.0) -> T:
        """``operation`` on the client, ended after ``waiting`` (seconds it means to block,
        as a subscriber does) plus the store timeout; raises :class:`Offline` at once while
        the server is down and no reconnect is due, or when it fails (and then logs the
        outage once)."""
        with self._lock:
            down = self._down_since is not None
            if down and time.monotonic() < self._last_attempt + self.retry_every:
                raise Offline(self.name)
        try:
            with _bounded(waiting + self.timeout):
                if down:
                    self._probe(keys=[self._probe_key], args=["1"], client=self.client)
                result = operation(self.client)
        except self._errors as e:
            self._went_down(e)
            raise Offline(self.name) from e
        if down:
            self._came_back()
        return result

    def _went_down(self, error: BaseException) -> None:
        with self._lock:
            first = self._down_since is None
            now = time.monotonic()
            if first:
                self._down_since = now
            self._last_attempt = now
        self.client.connection_pool.disconnect(inuse_connections=False)
        if first:
            logger.warning(
                "shared store %s unavailable (%s: %s): using the local environment only, "
                "retrying at most every %.0f s",
                self.name,
                type(error).__name__,
                error,
                self.retry_every,
            )

    def _came_back(self) -> None:
        with self._lock:
            if self._down_since is None:
                return
            down = time.monotonic() - self._down_since
            self._down_since = None
        logger.info("shared store %s available again after %.1f s", self.name, down)

    def close(self) -> None:
        """Closes the client's connections."""
        self.client.close()
