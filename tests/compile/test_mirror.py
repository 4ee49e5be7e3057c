"""A mirror keeps what was built on a store's contents while the store stays the same."""

from __future__ import annotations

from loader_fakes import FakeTarget

from cubejit.compile import KernelLoader
from cubejit.compile.mirror import Mirror


def test_a_mirror_empties_when_its_generation_changes_and_keeps_what_is_put_after():
    generation = [0]
    mirror: Mirror[str, int] = Mirror(lambda: generation[0])
    mirror.put("a", 1)
    assert mirror.get("a") == 1
    generation[0] += 1
    assert mirror.get("a") is None
    mirror.put("a", 2)
    assert mirror.get("a") == 2


def test_a_clients_mirror_bound_to_a_loader_empties_with_its_loaded_kernels(target: FakeTarget):
    loader = KernelLoader(target)
    launchers: Mirror[str, str] = Mirror(loader.generation)
    launchers.put("saxpy", "its launch function")
    target.generation_now += 1
    assert launchers.get("saxpy") is None
    assert KernelLoader(FakeTarget(persisting=False)).generation() == 0
