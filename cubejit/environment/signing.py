"""Signatures on entries of shared stores, so that writing a store is not running code.

An artifact is native code: whoever can put bytes into a store that many hosts read (a Redis
server, a bundle passed around) can make every one of those hosts run them. With a signing key
(``CUBEJIT_SIGNING_KEY``, :attr:`~cubejit.config.Settings.signing_key`), every value written to a
shared store carries an HMAC-SHA256 over its namespace, its key and the value itself, and a host
holding the key loads only entries whose signature it can check: a missing or wrong signature is
refused, logged, and its kernel compiled again. Without a key, values are written unsigned and
one WARNING per process says what that means.

The signed message is ``b"cubejit-entry-v1\\0"``, then the namespace (UTF-8) and the key, each
preceded by its length as a little-endian u32, then the value: a signature over one
(namespace, key, value) never checks for another, however the bytes are split.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import logging
import struct
import threading

from cubejit.config import Settings

logger = logging.getLogger("cubejit.environment")

SIGNATURE_BYTES = 32
"""Length of a signature (HMAC-SHA256)."""

_DOMAIN = b"cubejit-entry-v1\0"


class Verdict(enum.Enum):
    """What checking an entry's signature found."""

    VALID = "valid"
    """Signed with this host's key: the entry may be loaded."""
    UNSIGNED = "unsigned"
    """No signature where one is required: refused."""
    WRONG = "wrong"
    """A signature that does not check (a tampered value, another key): refused."""

    @property
    def accepted(self) -> bool:
        """Whether the entry may be loaded."""
        return self is Verdict.VALID


class Signer:
    """Signs and checks entries with one key. Thread-safe (it holds no mutable state)."""

    __slots__ = ("_key",)

    def __init__(self, key: str | bytes) -> None:
        raw = key.encode("utf-8") if isinstance(key, str) else bytes(key)
        if not raw:
            raise ValueError("a signing key must not be empty")
        self._key = raw

    def sign(self, namespace: str, key: bytes, value: bytes) -> bytes:
        """The signature of ``value`` stored under ``key`` in ``namespace``."""
        ns = namespace.encode("utf-8")
        mac = hmac.new(self._key, _DOMAIN, hashlib.sha256)
        mac.update(struct.pack("<I", len(ns)) + ns)
        mac.update(struct.pack("<I", len(key)) + key)
        mac.update(value)
        return mac.digest()

    def verify(self, namespace: str, key: bytes, value: bytes, signature: bytes | None) -> Verdict:
        """Whether ``signature`` is this key's signature of the entry (constant-time)."""
        if not signature:
            return Verdict.UNSIGNED
        expected = self.sign(namespace, key, value)
        return Verdict.VALID if hmac.compare_digest(expected, signature) else Verdict.WRONG

    def __repr__(self) -> str:
        return "Signer(<key hidden>)"


def signer(settings: Settings) -> Signer | None:
    """The signer of these settings, or ``None`` when no signing key is configured."""
    return Signer(settings.signing_key) if settings.signing_key else None


_warned_unsigned = False
_warn_lock = threading.Lock()


def warn_unsigned_once(store: str) -> None:
    """Says once per process, at WARNING, that entries written to ``store`` go unsigned."""
    global _warned_unsigned
    with _warn_lock:
        if _warned_unsigned:
            return
        _warned_unsigned = True
    logger.warning(
        "entries written to the shared store %s are unsigned: a shared store without signing "
        "lets any writer run code on every reader; set CUBEJIT_SIGNING_KEY (the same secret) "
        "on every host to sign and check them",
        store,
    )


def refusal_message(verdict: Verdict, store: str, namespace: str, key: bytes) -> str:
    """The log line for an entry refused for its signature."""
    why = "carries no signature" if verdict is Verdict.UNSIGNED else "has a wrong signature"
    return (
        f"entry {key.hex()[:16]} of namespace {namespace!r} in {store} {why} (tampered, "
        f"written with another key, or by a host without one); refused, it compiles again"
    )
