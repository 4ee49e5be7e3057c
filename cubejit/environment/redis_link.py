"""The link to one Redis server, and what cubejit does when the server cannot be reached.

A server that cannot be reached (at start, or lost in the middle of a batch) is never an error
to the caller: every operation is bounded by ``store_timeout`` seconds, the first failure logs
one WARNING, and until a reconnect is attempted (at most every :data:`RETRY_EVERY` seconds) the
operations raise :class:`Offline` at once: the shared store answers it as a miss or a failed
write, and a fleet's single-flight by compiling here without a lease.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

if TYPE_CHECKING:
    import redis

logger = logging.getLogger("cubejit.environment")

T = TypeVar("T")

RETRY_EVERY = 5.0
"""Seconds between attempts to reach a server found unreachable."""


class Offline(Exception):
    """The server is not reachable now; raised by :meth:`RedisLink.run` and caught by the
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
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path or '/0'}"


class RedisLink:
    """One client to one server, with the fault policy of the module docstring.

    Thread-safe: the Redis client pools its connections, and the up/down state is guarded."""

    def __init__(self, url: str, timeout: float, retry_every: float = RETRY_EVERY) -> None:
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        client_url, _ = split_url(url)
        self.name = describe(url)
        self.timeout = timeout
        self.client = redis.Redis.from_url(
            client_url,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 0),
        )
        self._errors = (redis.ConnectionError, redis.TimeoutError, OSError)
        self.retry_every = retry_every
        """Seconds between attempts to reach the server once it was found unreachable."""
        self._lock = threading.Lock()
        self._down_since: float | None = None
        self._last_attempt = 0.0

    def run(self, operation: Callable[[redis.Redis], T]) -> T:
        """``operation`` on the client; raises :class:`Offline` at once while the server is
        down and no reconnect is due, or when it fails (and then logs the outage once)."""
        with self._lock:
            due = self._last_attempt + self.retry_every
            if self._down_since is not None and time.monotonic() < due:
                raise Offline(self.name)
        try:
            result = operation(self.client)
        except self._errors as e:
            self._went_down(e)
            raise Offline(self.name) from e
        if self._down_since is not None:
            self._came_back()
        return result

    def _went_down(self, error: BaseException) -> None:
        with self._lock:
            first = self._down_since is None
            now = time.monotonic()
            if first:
                self._down_since = now
            self._last_attempt = now
        self.client.connection_pool.disconnect()
        if first:
            logger.warning(
                "shared store %s unreachable (%s): using the local environment only, "
                "retrying at most every %.0f s",
                self.name,
                error,
                self.retry_every,
            )

    def _came_back(self) -> None:
        with self._lock:
            if self._down_since is None:
                return
            down = time.monotonic() - self._down_since
            self._down_since = None
        logger.info("shared store %s reachable again after %.1f s", self.name, down)

    def close(self) -> None:
        """Closes the client's connections."""
        self.client.close()
