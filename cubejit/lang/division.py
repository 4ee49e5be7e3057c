"""``cj.cdiv``, the builtin that launch geometry needs on the host, in a module of its own.

A script computes its cube counts with ``cj.cdiv`` before anything else of the language: kept
here, naming it imports neither the IR nor constant folding (30 to 50 ms on a fresh process).
Inside a kernel the frontend knows it by identity, as the other builtins.
"""

from __future__ import annotations


def cdiv(a: int, b: int) -> int:
    """Ceiling division of integers: ``cj.cdiv(n, 256)`` cubes of 256 cover ``n`` units.
    Inside a kernel it is integer ceiling division of the operands' type."""
    return -(-a // b)
