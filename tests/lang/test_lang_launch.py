"""Kernel objects: launch, specialize and prepare through a client, comptime checks, the
specialisation cache and what a launch through it runs."""

from __future__ import annotations

import re
import sys
import threading

import pytest

import cubejit as cj

SOURCE = """
@cj.kernel(warm=[dict(cube_dim=256, N=4), dict(cube_dim=128, N=8)])
def scale(x: cj.Array[cj.f32], a: cj.f32, N: cj.Comptime[int]):
    i = cj.ABSOLUTE_POS
    if i < x.len():
        x[i] = x[i] * a * N


@cj.kernel
def plain(x: cj.Array[cj.f32]):
    x[0] = 1.0
"""


class RecordingClient:
    def __init__(self) -> None:
        self.launches: list[tuple[object, object, tuple]] = []
        self.prepared: list[object] = []

    def launch(self, spec, cube_count, args):
        self.launches.append((spec, cube_count, args))

    def prepare(self, spec):
        self.prepared.append(spec)
        return "prepared"


class NullClient:
    def launch(self, spec, cube_count, args):
        pass


def test_launch_hands_the_client_the_spec_cube_count_and_arguments(module):
    mod = module(SOURCE)
    client = RecordingClient()
    mod.scale.launch(client, 4, 256, "buffer", 2.0, N=4)
    spec, cube_count, args = client.launches[0]
    assert (cube_count, args) == (4, ("buffer", 2.0))
    assert spec is mod.scale.specialize((256, 1, 1), N=4)
    assert spec.cube_dim == (256, 1, 1) and spec.comptime == {"N": 4}
    assert [(p.name, str(p.type)) for p in spec.params] == [("x", "Array[f32]"), ("a", "f32")]
    assert (spec.file, spec.line) == (mod.__file__, 5)  # the `def` line
    assert mod.scale.prepare(client, 256, N=4) == "prepared"
    assert client.prepared == [spec]


def test_warm_specialisations_are_kept_on_the_kernel(module):
    mod = module(SOURCE)
    assert mod.scale.warm == [dict(cube_dim=256, N=4), dict(cube_dim=128, N=8)]
    assert mod.plain.warm == []


@pytest.mark.parametrize(
    ("comptime", "fragment"),
    [
        ({}, "needs the comptime parameter(s) N"),
        ({"N": 4, "M": 1}, "has no comptime parameter 'M'"),
        ({"N": 2.5}, "comptime parameter N is Comptime[int]"),
        ({"N": True}, "comptime parameter N is Comptime[int]"),
    ],
)
def test_a_comptime_mistake_is_a_launch_error_naming_it(module, comptime, fragment):
    mod = module(SOURCE)
    with pytest.raises(cj.LaunchError, match=re.escape(fragment)):
        mod.scale.launch(NullClient(), 1, 256, None, 1.0, **comptime)


def test_a_bad_cube_dim_and_a_direct_call_are_launch_errors(module):
    mod = module(SOURCE)
    with pytest.raises(cj.LaunchError, match="cube_dim"):
        mod.plain.specialize((1, 2, 3, 4))
    with pytest.raises(cj.LaunchError, match="launch it"):
        mod.plain(None)


def test_define_from_many_threads_builds_one_ir(module):
    mod = module(SOURCE)
    spec = mod.scale.specialize(64, N=2)
    results = []
    barrier = threading.Barrier(8)

    def define():
        barrier.wait()
        results.append(spec.define())

    threads = [threading.Thread(target=define) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 8 and all(r is results[0] for r in results)


def test_a_launch_of_a_known_specialisation_runs_no_python_but_the_clients(module):
    mod = module(SOURCE)
    client = NullClient()
    launch = mod.scale.launch
    launch(client, 1, 256, None, 1.0, N=4)
    calls: list[str] = []

    def profile(frame, event, arg):
        if event == "call":
            calls.append(frame.f_code.co_qualname)

    sys.setprofile(profile)
    try:
        launch(client, 1, 256, None, 1.0, N=4)
    finally:
        sys.setprofile(None)
    assert calls == ["Kernel.launch", "NullClient.launch"]
