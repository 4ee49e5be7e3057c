"""A fleet's store: the local environment in front, one Redis server behind, one compile per
kernel across hosts.

With ``CUBEJIT_STORE=redis://host:port/db`` (:attr:`~cubejit.config.Settings.store`), every
:class:`~cubejit.environment.artifacts.ArtifactStore` reads its local environment first, then
the server; what the server serves is kept locally (with the ``bundle`` origin: it came from
elsewhere, and a local compile may replace it), and what a host compiles goes to both. Only
artifacts travel: an environment's other namespaces (records) stay on their host.

**Single flight.** A kernel missing everywhere is claimed before it compiles: the host takes a
lease on its key on the server, a value ``<token>|<expiry>`` (a random token, then the server's
clock in milliseconds when the lease ends) with the same expiry as its TTL. A lease key without
a TTL, or past its own stated expiry, is expired whatever its TTL says: a stray ``PERSIST`` or a
foreign writer cannot block a kernel forever. The holder compiles; a thread renews its leases
every third of the lease time while they are held (compare-and-set in Lua, so a lease that
expired and was taken by another host is never extended), for at most :attr:`Leases.max_hold`
seconds; storing the artifact, or giving up on the kernel (:meth:`FleetStore.abandon`), deletes
the lease (compare-and-delete in Lua) and publishes on the key's channel. A lease that cannot
be renewed or released because the server is unavailable is dropped here and left to expire
there; the renewer stops when this process holds none.

A host that finds the lease taken subscribes to that channel and blocks on it: it wakes when
the holder stores or gives up, or when the lease's remaining time has passed, then reads the
artifact, or takes the lease itself when the holder is gone. Each wake-up is one command (a
script that takes the lease or says whether the artifact is there), and a host that wakes
without news waits longer each time (:data:`FIRST_POLL_S` doubling to :data:`LAST_POLL_S`), so
a waiting host sends at most a few commands a second however short the lease. It waits at
most the lease plus the compile timeout (:attr:`Leases.patience`), then compiles the kernel
itself.

The lease time is the URL's ``lease`` query parameter in seconds (default
:data:`DEFAULT_LEASE_S`): how long a dead holder delays the others.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Collection, Iterator
from typing import TYPE_CHECKING, Any

from cubejit import config
from cubejit.environment.redis_link import Offline, RedisLink, describe
from cubejit.environment.signing import signer
from cubejit.environment.storage import BUNDLE, LOCAL, InsertOutcome, Storage
from cubejit.environment.storage_redis import RedisStorage
from cubejit.environment.store import Store

if TYPE_CHECKING:
    import redis.client

logger = logging.getLogger("cubejit.environment")

DEFAULT_LEASE_S = 15.0
"""Seconds a lease lasts unless renewed."""
FIRST_POLL_S = 0.25
"""Seconds a waiting host waits at least before it looks again, without news."""
LAST_POLL_S = 2.0
"""What the wait without news grows to, doubling each time."""

# The server's clock in ms, as the local ``now`` of the scripts below.
_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""

# Takes the lease KEYS[1] for token ARGV[1] and ARGV[2] ms unless another live lease holds it
# (a live lease has a TTL and a stated expiry still ahead), or the entry KEYS[2] is there.
# Returns {1, ms} taken, {0, ms left} held elsewhere, {2, 0} the entry is stored.
_ACQUIRE = (
    _NOW
    + """
if redis.call('EXISTS', KEYS[2]) == 1 then return {2, 0} end
local cur = redis.call('GET', KEYS[1])
if cur and string.sub(cur, 1, #ARGV[1] + 1) ~= ARGV[1] .. '|' then
  local ttl = redis.call('PTTL', KEYS[1])
  local stated = tonumber(string.match(cur, '|(%d+)$')) or (now + ttl)
  local left = math.min(ttl, stated - now)
  if ttl >= 0 and left > 0 then return {0, left} end
end
redis.call('SET', KEYS[1], ARGV[1] .. '|' .. string.format('%.0f', now + ARGV[2]), 'PX', ARGV[2])
return {1, tonumber(ARGV[2])}
"""
)

# Extends KEYS[1] by ARGV[2] ms only while it holds this host's token ARGV[1].
_RENEW = (
    _NOW
    + """
local cur = redis.call('GET', KEYS[1])
if not cur or string.sub(cur, 1, #ARGV[1] + 1) ~= ARGV[1] .. '|' then return 0 end
redis.call('SET', KEYS[1], ARGV[1] .. '|' .. string.format('%.0f', now + ARGV[2]), 'PX', ARGV[2])
return 1
"""
)

# Deletes the lease KEYS[1] only while it holds this host's token, then wakes the waiters.
_RELEASE = """
local cur = redis.call('GET', KEYS[1])
local mine = cur and string.sub(cur, 1, #ARGV[1] + 1) == ARGV[1] .. '|'
if mine then redis.call('DEL', KEYS[1]) end
redis.call('PUBLISH', ARGV[2], 'done')
return mine and 1 or 0
"""


class Claim(enum.Enum):
    """What one look at a kernel's lease found."""

    TAKEN = 1
    """This process holds the lease now: it compiles the kernel."""
    HELD = 0
    """Another host holds a live lease."""
    STORED = 2
    """The artifact is on the server: nothing to compile."""


class Leases:
    """This process's leases on one server, and the thread that renews them. Thread-safe."""

    def __init__(
        self, link: RedisLink, lease_s: float, max_hold: float, compile_timeout: float
    ) -> None:
        self.link = link
        self.prefix = link.prefix
        self.lease_ms = max(1, int(lease_s * 1000))
        self.max_hold = max_hold
        """Seconds a lease is renewed at most, in case its kernel's end was never told."""
        self.patience = lease_s + compile_timeout
        """Seconds a host waits at most on another host's lease before it compiles itself."""
        self.token = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self._held: dict[str, float] = {}
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._renewer: threading.Thread | None = None
        self._acquire = link.client.register_script(_ACQUIRE)
        self._renew = link.client.register_script(_RENEW)
        self._release = link.client.register_script(_RELEASE)

    def lease_key(self, namespace: str, key: bytes) -> str:
        return f"{self.prefix}l:{namespace}:{key.hex()}"

    def channel(self, namespace: str, key: bytes) -> str:
        return f"{self.prefix}n:{namespace}:{key.hex()}"

    def holds_any(self) -> bool:
        """Whether this process holds a lease now."""
        with self._lock:
            return bool(self._held)

    def renewing(self) -> bool:
        """Whether the thread renewing this process's leases runs now."""
        with self._lock:
            return self._renewer is not None and self._renewer.is_alive()

    def acquire(self, namespace: str, key: bytes, entry: str) -> tuple[Claim, float]:
        """Takes the lease unless another host holds a live one or the artifact (the server's
        entry ``entry``) is stored; what it found, and the seconds the lease has left. Raises
        :class:`Offline`."""
        name = self.lease_key(namespace, key)
        with self._lock:
            if name in self._held:
                return Claim.TAKEN, self.lease_ms / 1000
        found, ms = self.link.run(
            lambda r: self._acquire(keys=[name, entry], args=[self.token, self.lease_ms], client=r)
        )
        claim = Claim(int(found))
        if claim is Claim.TAKEN:
            with self._lock:
                self._held[name] = time.monotonic()
                self._start_renewer()
        return claim, int(ms) / 1000

    def release(self, namespace: str, key: bytes) -> None:
        """Gives the lease back, if this process holds it, and wakes the hosts waiting; on an
        unavailable server the lease is left to expire."""
        name = self.lease_key(namespace, key)
        with self._lock:
            if self._held.pop(name, None) is None:
                return
        with contextlib.suppress(Offline):
            channel = self.channel(namespace, key)
            self.link.run(
                lambda r: self._release(keys=[name], args=[self.token, channel], client=r)
            )

    @contextlib.contextmanager
    def subscription(self, namespace: str, key: bytes) -> Iterator[redis.client.PubSub]:
        """A subscription to the key's channel, for :meth:`wait`."""
        pubsub = self.link.client.pubsub(ignore_subscribe_messages=True)
        try:
            self.link.run(lambda _: pubsub.subscribe(self.channel(namespace, key)))
            yield pubsub
        finally:
            with contextlib.suppress(Exception):
                pubsub.close()

    def wait(self, pubsub: redis.client.PubSub, seconds: float) -> None:
        """Blocks until the key's channel speaks or ``seconds`` pass. Raises :class:`Offline`."""
        self.link.run(lambda _: pubsub.get_message(timeout=seconds), waiting=seconds)

    def _start_renewer(self) -> None:
        if self._renewer is None or not self._renewer.is_alive():
            self._renewer = threading.Thread(
                target=self._renew_loop, name="cubejit-leases", daemon=True
            )
            self._renewer.start()

    def _renew_loop(self) -> None:
        while True:
            with self._lock:
                self._wake.wait(self.lease_ms / 3000)
                if not self._held:
                    self._renewer = None
                    return
                now = time.monotonic()
                for name in [n for n, t in self._held.items() if now - t >= self.max_hold]:
                    del self._held[name]
                names = list(self._held)
            for name in names:
                if not self._renewed(name):
                    with self._lock:
                        self._held.pop(name, None)

    def _renewed(self, name: str) -> bool:
        """Whether the lease ``name`` is still this process's, now for a whole lease time."""
        try:
            return bool(
                self.link.run(
                    lambda r: self._renew(keys=[name], args=[self.token, self.lease_ms], client=r)
                )
            )
        except Offline:
            return False


class Shared:
    """One server of this process: its storage (which signs and checks) and its leases."""

    def __init__(self, url: str, settings: config.Settings) -> None:
        config.check_store(url, "CUBEJIT_STORE")
        lease_s = config.store_lease(url, "CUBEJIT_STORE") or DEFAULT_LEASE_S
        self.storage = RedisStorage(url, settings.store_timeout, signer(settings))
        self.leases = Leases(
            self.storage.link,
            lease_s,
            max_hold=2 * settings.compile_timeout + lease_s,
            compile_timeout=settings.compile_timeout,
        )


_shared: dict[str, Shared] = {}
_shared_lock = threading.Lock()


def shared(url: str) -> Shared:
    """The process's connection to the server at ``url``, made on first use."""
    with _shared_lock:
        found = _shared.get(url)
        if found is None:
            found = _shared[url] = Shared(url, config.settings())
        return found


class FleetStore:
    """A :class:`~cubejit.environment.store.Store` with a shared store behind it: the same
    methods, plus :meth:`claim` and :meth:`abandon` for single flight. The shared store's
    faults never reach the caller: the local store decides every outcome."""

    def __init__(self, local: Store, fleet: Shared) -> None:
        self.local = local
        self.fleet = fleet
        self.namespace = local.namespace

    def storage(self) -> Storage:
        """The local environment's storage."""
        return self.local.storage()

    def get(self, key: bytes) -> bytes | None:
        """The value, locally or else from the shared store (then kept locally)."""
        value = self.local.get(key)
        if value is not None:
            return value
        return self._fetch(key)

    def get_many(self, keys: Collection[bytes]) -> dict[bytes, bytes]:
        """The values found locally (one read), the others from the shared store."""
        found = self.local.get_many(keys)
        for key in keys:
            if key not in found:
                value = self._fetch(key)
                if value is not None:
                    found[key] = value
        return found

    def insert(self, key: bytes, value: bytes, origin: str = LOCAL) -> InsertOutcome:
        """Writes locally, then to the shared store, and gives back the key's lease. The
        outcome is the local one."""
        outcome = self.local.insert(key, value, origin)
        if outcome in (InsertOutcome.STORED, InsertOutcome.ALREADY_PRESENT):
            self.fleet.storage.insert(self.namespace, key, value, origin)
        self.fleet.leases.release(self.namespace, key)
        return outcome

    def purge_key(self, key: bytes) -> None:
        """Deletes the entry locally and on the shared store."""
        self.local.purge_key(key)
        self.fleet.storage.purge_key(self.namespace, key)

    def purge(self) -> None:
        """Deletes the namespace locally; the shared store, which other hosts read, keeps it."""
        self.local.purge()

    def scan(self) -> Iterator[tuple[bytes, bytes]]:
        """The local environment's entries."""
        return self.local.scan()

    def claim(self, key: bytes) -> bytes | None:
        """After a miss everywhere: the value when another host stored it meanwhile (kept
        locally), else ``None``, and the caller compiles: this process holds the lease, or
        cannot wait for another holder, or the server cannot serve."""
        leases = self.fleet.leases
        try:
            found, _ = leases.acquire(self.namespace, key, self._entry(key))
            if found is Claim.STORED:
                return self._fetch(key)
            if found is Claim.TAKEN:
                return self._acquired(key)
            if leases.holds_any():
                return None
            return self._wait(key)
        except Offline:
            return None

    def claim_now(self, key: bytes) -> bytes | Claim:
        """After a miss everywhere, one look that never waits: the value when another host
        stored it (kept locally); :attr:`Claim.TAKEN` when this process compiles it (it holds
        the lease now, or the server cannot serve); :attr:`Claim.HELD` when another host's
        lease is live, and the caller asks :meth:`wait_for` once its own work is done."""
        leases = self.fleet.leases
        try:
            found, _ = leases.acquire(self.namespace, key, self._entry(key))
            if found is Claim.HELD:
                return Claim.HELD
            value = self._fetch(key) if found is Claim.STORED else self._acquired(key)
        except Offline:
            return Claim.TAKEN
        return Claim.TAKEN if value is None else value

    def wait_for(self, key: bytes) -> bytes | None:
        """Waits for the host holding ``key``'s lease (at most :attr:`Leases.patience`): its
        value, or ``None`` when this process compiles it after all (it took the lease from a
        holder that gave up or was lost, waited too long, or the server cannot serve)."""
        try:
            return self._wait(key)
        except Offline:
            return None

    def _entry(self, key: bytes) -> str:
        return self.fleet.storage.entry_key(self.namespace, key)

    def _acquired(self, key: bytes) -> bytes | None:
        """The lease is this process's now; a holder that stored the value and left just
        before may have left it, and then there is nothing to compile."""
        value = self._fetch(key)
        if value is not None:
            self.fleet.leases.release(self.namespace, key)
        return value

    def _fetch(self, key: bytes) -> bytes | None:
        value = self.fleet.storage.get(self.namespace, key)
        if value is not None:
            self.local.insert(key, value, BUNDLE)
        return value

    def _wait(self, key: bytes) -> bytes | None:
        leases = self.fleet.leases
        deadline = time.monotonic() + leases.patience
        poll = FIRST_POLL_S
        with leases.subscription(self.namespace, key) as pubsub:
            while True:
                found, left = leases.acquire(self.namespace, key, self._entry(key))
                if found is Claim.STORED:
                    value = self._fetch(key)
                    if value is not None:
                        return value
                elif found is Claim.TAKEN:
                    value = self._acquired(key)
                    if value is None:
                        logger.info(
                            "the host compiling %s of namespace %r gave it up or was lost; "
                            "compiling it here",
                            key.hex()[:16],
                            self.namespace,
                        )
                    return value
                now = time.monotonic()
                if now >= deadline:
                    logger.info(
                        "waited %.0f s for another host to compile %s of namespace %r; "
                        "compiling it here",
                        leases.patience,
                        key.hex()[:16],
                        self.namespace,
                    )
                    return None
                leases.wait(pubsub, min(deadline - now, max(poll, left)))
                poll = min(2 * poll, LAST_POLL_S)

    def abandon(self, key: bytes) -> None:
        """This process will not store ``key`` (its kernel failed): gives its lease back, so
        that a host waiting for it compiles it."""
        self.fleet.leases.release(self.namespace, key)

    def try_claim(self, key: bytes) -> bool:
        """Takes the key's lease unless another host holds it, without waiting: whether this
        process may make the value now (also when the server cannot be reached). For work the
        other hosts need not wait for, such as tuning; :meth:`insert` or :meth:`abandon` ends
        the claim."""
        try:
            found, _ = self.fleet.leases.acquire(self.namespace, key, self._entry(key))
        except Offline:
            return True
        return found is not Claim.HELD


def layered(local: Store) -> Store | FleetStore:
    """``local`` with the settings' shared store behind it, or ``local`` alone when none is
    configured (or the compilation cache is off)."""
    settings = config.settings()
    if not settings.store or not settings.compilation_cache:
        return local
    try:
        return FleetStore(local, shared(settings.store))
    except ImportError:
        _warn_no_client(settings.store)
        return local


_warned_no_client = False


def _warn_no_client(url: str) -> None:
    global _warned_no_client
    if not _warned_no_client:
        _warned_no_client = True
        logger.warning(
            "CUBEJIT_STORE names the shared store %s but the redis package is missing "
            "(pip install 'cubejit[redis]'); using the local environment only",
            describe(url),
        )


def claim(store: Any, key: bytes) -> bytes | None:
    """:meth:`FleetStore.claim` for a fleet store; ``None`` (compile) for any other store."""
    return store.claim(key) if isinstance(store, FleetStore) else None


def claim_now(store: Any, key: bytes) -> bytes | Claim:
    """:meth:`FleetStore.claim_now` for a fleet store; :attr:`Claim.TAKEN` (compile here) for
    any other store."""
    return store.claim_now(key) if isinstance(store, FleetStore) else Claim.TAKEN


def wait_for(store: Any, key: bytes) -> bytes | None:
    """:meth:`FleetStore.wait_for` for a fleet store; ``None`` (compile here) for any other."""
    return store.wait_for(key) if isinstance(store, FleetStore) else None


def abandon(store: Any, key: bytes) -> None:
    """:meth:`FleetStore.abandon` for a fleet store; nothing for any other."""
    if isinstance(store, FleetStore):
        store.abandon(key)
