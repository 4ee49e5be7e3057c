"""Where decisions live: a namespace of the active environment per device, shared by a fleet.

The namespace is ``autotune/<cubejit version>/<device fingerprint>``: a decision measured on one
kind of device is never served to another. The device fingerprint is the backend's and more:
on the CPU, the architecture, the host CPU's model and flags, the C compiler and its flags, and
the CPUs this process may run on; on CUDA, the architecture, the device's name and NVRTC's
version. Keys are ``b"decision:"`` + a digest of the tuner's name, its candidate checksum and
the tuning key (see :class:`~cubejit.tune.tuner.Tuner`).

With a fleet's Redis store (``CUBEJIT_STORE``) decisions go through the same layered store as
artifacts (:mod:`cubejit.environment.fleet`): read locally, then from the server (and kept);
written to both, signed with ``CUBEJIT_SIGNING_KEY``, and a host holding the key refuses one
whose signature is missing or wrong. One host tunes a key under the fleet's lease on it; the
others do not wait (:meth:`Decisions.claim` answers at once) and run the first candidate until
the decision lands. A host that dies while tuning stops renewing its lease, which expires, and
the next host to ask takes it.
"""

from __future__ import annotations

import enum
import logging
import os
import platform
import re
from collections.abc import Iterator
from typing import Any

from cubejit.compile.id import stable_digest
from cubejit.environment import fleet
from cubejit.environment.build import version
from cubejit.environment.store import Store
from cubejit.environment.value import DamagedValueError
from cubejit.tune.decision import Decision

log = logging.getLogger("cubejit.tune")

NAMESPACE_PREFIX = "autotune/"
KEY_PREFIX = b"decision:"


class Claim(enum.Enum):
    """Who tunes a key that no store holds a decision for."""

    MINE = "mine"
    """This process: it holds the fleet's lease, or there is no fleet."""
    ELSEWHERE = "elsewhere"
    """Another host holds the lease: run the first candidate, and ask again later."""


def device_fingerprint(client: Any) -> str:
    """What decisions measured on ``client``'s device are valid for (see the module text)."""
    if getattr(client, "backend", "cpu") == "cuda":
        from cubejit.backends.cuda import nvrtc

        name = re.sub(r"[^A-Za-z0-9._-]+", "_", str(client.limits.name))
        major, minor = nvrtc.version()
        return f"cuda-{client.arch}-{name}-nvrtc{major}.{minor}"
    from cubejit.backends.cpu.fingerprint import Toolchain, host_cpu

    toolchain = Toolchain.from_settings()
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    parts = [*toolchain.fingerprint_parts(), ("host", host_cpu()), ("cpus", str(cpus))]
    return f"cpu-{platform.machine()}-{cpus}cpu-{stable_digest(parts)[:16]}"


def decision_key(tuner: str, checksum: str, key: Any) -> bytes:
    """The store key of ``tuner``'s decision for the canonical tuning ``key``."""
    return KEY_PREFIX + stable_digest("autotune", tuner, checksum, key).encode()


class Decisions:
    """The decisions of one device in the active environment (and the fleet's store)."""

    def __init__(self, device: str) -> None:
        self.device = device
        self.namespace = f"{NAMESPACE_PREFIX}{version()}/{device}"
        """``autotune/<cubejit version>/<device fingerprint>``."""
        self._store = fleet.layered(Store(self.namespace))

    def get(self, key: bytes) -> Decision | None:
        """The decision under ``key``, locally or from the fleet; ``None`` when none is there
        or it is damaged (then dropped, with a WARNING, and the key tuned again)."""
        value = self._store.get(key)
        if value is None:
            return None
        try:
            return Decision.decode(value)
        except DamagedValueError as e:
            log.warning(
                "dropped a damaged tuning decision (namespace %s, key %s): %s; it is tuned again",
                self.namespace,
                key.decode("ascii", "replace"),
                e,
            )
            self._store.purge_key(key)
            return None

    def put(self, key: bytes, decision: Decision) -> Decision:
        """Keeps ``decision`` (and gives back the fleet's lease). Insert-only: when another
        host's decision is there already, that one stays and is returned, so that every host
        runs the same winner."""
        self._store.insert(key, decision.encode())
        found = self.get(key)
        return decision if found is None else found

    def claim(self, key: bytes) -> Claim:
        """Whether this process tunes ``key`` now. Never waits: on a fleet, the lease is taken
        or found taken at once; an unreachable server means tuning here."""
        if not isinstance(self._store, fleet.FleetStore):
            return Claim.MINE
        return Claim.MINE if self._store.try_claim(key) else Claim.ELSEWHERE

    def abandon(self, key: bytes) -> None:
        """This process will not store a decision for ``key`` (every candidate failed): gives
        back the fleet's lease, so that another host may try."""
        fleet.abandon(self._store, key)

    def forget(self, key: bytes) -> None:
        """Deletes the decision under ``key`` here and on the fleet's store."""
        self._store.purge_key(key)

    def scan(self) -> Iterator[tuple[bytes, Decision]]:
        """Every intact decision of the local environment in this namespace."""
        for key, value in self._store.scan():
            try:
                yield key, Decision.decode(value)
            except DamagedValueError:
                continue
