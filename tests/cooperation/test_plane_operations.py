"""Every plane operation against a numpy model of planes of ``PLANE_DIM`` units: the same test
on every backend (planes of one unit on the CPU, of 32 on NVIDIA GPUs)."""

from __future__ import annotations

import numpy as np
from cooperation_devices import Device

import cubejit as cj

FLOAT_OPS = (
    "sum",
    "prod",
    "max",
    "min",
    "inclusive_sum",
    "exclusive_sum",
    "inclusive_prod",
    "exclusive_prod",
    "broadcast",
    "shuffle",
    "shuffle_xor",
    "shuffle_up",
    "shuffle_down",
)
INT_OPS = ("sum", "prod", "max", "min", "inclusive_sum", "exclusive_sum", "inclusive_prod")
MASK_OPS = ("ballot", "all", "any", "elect")


@cj.kernel
def every_plane_op(
    x: cj.Array[cj.f32],
    k: cj.Array[cj.i32],
    flags: cj.Array[cj.u32],
    f: cj.Array[cj.f32],
    g: cj.Array[cj.i32],
    h: cj.Array[cj.u32],
):
    i = cj.ABSOLUTE_POS
    v = x[i]
    w = k[i]
    b = flags[i] != 0
    lane = cj.UNIT_POS_PLANE
    last = cj.PLANE_DIM - 1
    at = i * 13
    f[at + 0] = cj.plane_sum(v)
    f[at + 1] = cj.plane_prod(v)
    f[at + 2] = cj.plane_max(v)
    f[at + 3] = cj.plane_min(v)
    f[at + 4] = cj.plane_inclusive_sum(v)
    f[at + 5] = cj.plane_exclusive_sum(v)
    f[at + 6] = cj.plane_inclusive_prod(v)
    f[at + 7] = cj.plane_exclusive_prod(v)
    f[at + 8] = cj.plane_broadcast(v, last)
    f[at + 9] = cj.plane_shuffle(v, (lane + 1) % cj.PLANE_DIM)
    f[at + 10] = cj.plane_shuffle_xor(v, 1)
    f[at + 11] = cj.plane_shuffle_up(v, 1)
    f[at + 12] = cj.plane_shuffle_down(v, 2)
    at = i * 7
    g[at + 0] = cj.plane_sum(w)
    g[at + 1] = cj.plane_prod(w)
    g[at + 2] = cj.plane_max(w)
    g[at + 3] = cj.plane_min(w)
    g[at + 4] = cj.plane_inclusive_sum(w)
    g[at + 5] = cj.plane_exclusive_sum(w)
    g[at + 6] = cj.plane_inclusive_prod(w)
    at = i * 4
    h[at + 0] = cj.plane_ballot(b)
    h[at + 1] = cj.u32(1) if cj.plane_all(b) else cj.u32(0)
    h[at + 2] = cj.u32(1) if cj.plane_any(b) else cj.u32(0)
    h[at + 3] = cj.u32(1) if cj.plane_elect() else cj.u32(0)


def _scan(planes: np.ndarray, op: np.ufunc, inclusive: bool, identity: float) -> np.ndarray:
    """The scan in the planes' own type: integers wrap, as the language's do."""
    done = op.accumulate(planes, axis=1, dtype=planes.dtype)
    if inclusive:
        return done
    shifted = np.roll(done, 1, axis=1)
    shifted[:, 0] = identity
    return shifted


def _exchange(planes: np.ndarray, source: np.ndarray) -> np.ndarray:
    """Lane ``j`` takes lane ``source[j]``'s value, its own where the source is out of the plane."""
    p = planes.shape[1]
    lanes = np.arange(p)
    chosen = np.where((source >= 0) & (source < p), source, lanes)
    return planes[:, chosen]


def model(x: np.ndarray, k: np.ndarray, flags: np.ndarray, p: int) -> tuple[np.ndarray, ...]:
    """What :func:`every_plane_op` writes, for planes of ``p`` units."""
    xs, ks, bs = x.reshape(-1, p), k.reshape(-1, p), flags.reshape(-1, p) != 0
    lanes = np.arange(p)

    def whole(values: np.ndarray) -> np.ndarray:
        return np.repeat(values[:, None], p, axis=1)

    with np.errstate(over="ignore"):
        f = [
            whole(xs.sum(axis=1)),
            whole(xs.prod(axis=1)),
            whole(xs.max(axis=1)),
            whole(xs.min(axis=1)),
            _scan(xs, np.add, True, 0.0),
            _scan(xs, np.add, False, 0.0),
            _scan(xs, np.multiply, True, 1.0),
            _scan(xs, np.multiply, False, 1.0),
            xs[:, [p - 1] * p],
            _exchange(xs, (lanes + 1) % p),
            _exchange(xs, lanes ^ 1),
            _exchange(xs, lanes - 1),
            _exchange(xs, lanes + 2),
        ]
        g = [
            whole(ks.sum(axis=1, dtype=np.int32)),
            whole(ks.prod(axis=1, dtype=np.int32)),
            whole(ks.max(axis=1)),
            whole(ks.min(axis=1)),
            _scan(ks, np.add, True, 0),
            _scan(ks, np.add, False, 0),
            _scan(ks, np.multiply, True, 1),
        ]
    ballot = (bs.astype(np.uint64) << lanes.astype(np.uint64)).sum(axis=1).astype(np.uint32)
    h = [
        whole(ballot),
        whole(bs.all(axis=1)),
        whole(bs.any(axis=1)),
        np.broadcast_to(lanes == 0, bs.shape),
    ]
    return tuple(np.stack([a.reshape(-1) for a in group], axis=1) for group in (f, g, h))


def _wrapped_i32(value: int) -> int:
    return (value + 2**31) % 2**32 - 2**31


def test_the_model_computes_in_the_element_type_and_wraps_as_i32_does() -> None:
    p = 32
    rng = np.random.default_rng(3)
    x = rng.uniform(0.9, 1.1, 2 * p).astype(np.float32)
    k = rng.integers(-1000, 1000, 2 * p).astype(np.int32)
    f, g, _ = model(x, k, np.ones(2 * p, np.uint32), p)
    assert f.dtype == np.float32 and g.dtype == np.int32
    for plane in range(2):
        running, total = 1, 1
        for lane in range(p):
            at = plane * p + lane
            total *= int(k[at])
            running = _wrapped_i32(running * int(k[at]))
            assert g[at, INT_OPS.index("inclusive_prod")] == running
        assert g[plane * p, INT_OPS.index("prod")] == _wrapped_i32(total)


def test_every_plane_operation_matches_a_model_of_planes(device: Device) -> None:
    p = device.plane_dim()
    rng = np.random.default_rng(7)
    cubes, cube_dim = 3, 64
    n = cubes * cube_dim
    x = rng.uniform(0.9, 1.1, n).astype(np.float32)
    k = rng.integers(-1000, 1000, n).astype(np.int32)
    flags = (rng.random(n) < 0.9).astype(np.uint32)
    flags[:32] = 1
    outs = [
        np.zeros(n * width, t) for width, t in ((13, np.float32), (7, np.int32), (4, np.uint32))
    ]
    buffers = [device.put(o) for o in outs]
    every_plane_op.launch(
        device.client, cubes, cube_dim, device.put(x), device.put(k), device.put(flags), *buffers
    )
    f, g, h = (device.get(b).reshape(n, -1) for b in buffers)
    want_f, want_g, want_h = model(x, k, flags, p)
    for j, name in enumerate(FLOAT_OPS):
        np.testing.assert_allclose(f[:, j], want_f[:, j], rtol=2e-5, err_msg=f"plane_{name}")
    for j, name in enumerate(INT_OPS):
        np.testing.assert_array_equal(g[:, j], want_g[:, j], err_msg=f"plane_{name}")
    for j, name in enumerate(MASK_OPS):
        np.testing.assert_array_equal(h[:, j], want_h[:, j], err_msg=f"plane_{name}")
