"""``cubejit.std``: kernels users call rather than write, in the cubejit language.

Each function takes arrays of a client (numpy arrays and CPU buffers on the CPU; client buffers
and CUDA arrays such as CuPy's or PyTorch's on CUDA) of any non-negative strides, computes on
``f32``, ``f16`` (and ``bf16`` on CUDA) with ``f32`` accumulation, and ``f64``, and returns a
new array of that client (a numpy array on the CPU, a buffer on CUDA) or writes into ``out=``.
``client=`` names the client when the arguments do not (it defaults to the arrays' own).

- :func:`sum`, :func:`max`, :func:`min`, :func:`mean` over one axis or all
  (:mod:`~cubejit.std.reductions`);
- :func:`softmax` and :func:`layer_norm` over rows (:mod:`~cubejit.std.rows`);
- :func:`cumsum` and :func:`exclusive_cumsum` (:mod:`~cubejit.std.scan`);
- :func:`histogram` (:mod:`~cubejit.std.histograms`);
- :func:`matmul` (:mod:`~cubejit.std.tiles`).
"""

from __future__ import annotations

from cubejit.std.histograms import histogram
from cubejit.std.reductions import max, mean, min, sum
from cubejit.std.rows import layer_norm, softmax
from cubejit.std.scan import cumsum, exclusive_cumsum
from cubejit.std.tiles import matmul

__all__ = [
    "cumsum",
    "exclusive_cumsum",
    "histogram",
    "layer_norm",
    "matmul",
    "max",
    "mean",
    "min",
    "softmax",
    "sum",
]
