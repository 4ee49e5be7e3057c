"""NVRTC, called in process, from CUDA C++ straight to a cubin for one exact architecture.

A cubin loads in tens of microseconds where PTX costs the driver a JIT compilation at every
load, so cubejit never hands the driver PTX. ``nvrtcCompileProgram`` releases the GIL, so
several worker threads compile at once; each call owns its program handle, so the functions
here are thread-safe.

Only ``cuda.bindings.nvrtc`` is imported here, never the driver: a machine without a GPU
compiles cubins as well as one with. A process that finds every kernel in the store never
compiles, so it never imports NVRTC's bindings nor loads the library (together about 100 ms):
:func:`version`, which names the store's namespace, is read from the ``nvidia-cuda-nvrtc``
wheel's metadata where that wheel is installed, and checked against the library itself the
first time NVRTC compiles.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import re
import sys
from pathlib import Path

from cubejit.errors import BackendUnavailableError, CompilationError, log_tail

INSTALL_HINT = "pip install 'cubejit[cuda]'"
"""What a user without the CUDA packages runs; every message about them says it."""

_HALF_HEADERS = ("cuda_fp16.h", "cuda_bf16.h")
_WHEEL = re.compile(r"nvidia_cuda_nvrtc(?:_cu\d+)?-(\d+)\.(\d+)[^/]*\.dist-info")
_log = logging.getLogger("cubejit.compilation")


def available() -> bool:
    """Whether NVRTC's bindings are installed, found without importing them."""
    try:
        return importlib.util.find_spec("cuda.bindings.nvrtc") is not None
    except (ImportError, ValueError):
        return False


def nvrtc_module():
    """``cuda.bindings.nvrtc``, or :class:`BackendUnavailableError` saying what to install."""
    try:
        from cuda.bindings import nvrtc
    except ImportError as e:
        raise BackendUnavailableError(
            f"the CUDA backend needs cuda-bindings and NVRTC ({e}); install them with "
            f"{INSTALL_HINT}"
        ) from e
    return nvrtc


def _checked(result: tuple, what: str) -> tuple:
    nvrtc = nvrtc_module()
    status, *values = result
    if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        _, text = nvrtc.nvrtcGetErrorString(status)
        raise CompilationError(f"NVRTC {what} failed: {text.decode(errors='replace')}")
    return tuple(values)


@functools.cache
def version() -> tuple[int, int]:
    """NVRTC's ``(major, minor)``; part of every CUDA artifact's namespace. From the wheel's
    metadata when the ``nvidia-cuda-nvrtc`` wheel and NVRTC's bindings are installed (the
    bindings load that wheel's library before any other), else asked of the library.
    :class:`BackendUnavailableError` without the bindings."""
    if not available():
        nvrtc_module()
    return wheel_version() or loaded_version()


@functools.cache
def loaded_version() -> tuple[int, int]:
    """The ``(major, minor)`` the NVRTC library itself reports (loading it)."""
    major, minor = _checked(nvrtc_module().nvrtcVersion(), "version")
    return int(major), int(minor)


@functools.cache
def wheel_version() -> tuple[int, int] | None:
    """The ``(major, minor)`` of the installed ``nvidia-cuda-nvrtc`` wheel, read from the
    name of its ``.dist-info`` folder on ``sys.path``; ``None`` without one."""
    for folder in sys.path:
        try:
            names = os.listdir(folder or ".")
        except OSError:
            continue
        for name in names:
            found = _WHEEL.fullmatch(name)
            if found is not None:
                return int(found.group(1)), int(found.group(2))
    return None


_checked_versions = False


def check_version() -> None:
    """Once per process, before NVRTC first compiles: one WARNING if the library loaded is not
    the version :func:`version` named the store's namespace after (a toolkit's NVRTC found
    before the wheel's)."""
    global _checked_versions
    if _checked_versions:
        return
    _checked_versions = True
    loaded, named = loaded_version(), version()
    if loaded != named:
        _log.warning(
            "NVRTC %d.%d is loaded, but the installed nvidia-cuda-nvrtc wheel is %d.%d and "
            "names the store's namespace; remove one of them so that cubins are kept under "
            "the NVRTC that built them",
            *loaded,
            *named,
        )


@functools.cache
def supported_architectures() -> tuple[int, ...]:
    """The compute capabilities (``90`` for 9.0) this NVRTC can build cubins for."""
    (archs,) = _checked(nvrtc_module().nvrtcGetSupportedArchs(), "architecture query")
    return tuple(int(a) for a in archs)


@functools.cache
def half_include_dir() -> Path | None:
    """A folder holding ``cuda_fp16.h`` and ``cuda_bf16.h``, which NVRTC needs for f16/bf16
    kernels and does not ship; ``None`` when neither the CUDA runtime wheel
    (``nvidia-cuda-runtime``) nor a CUDA toolkit is found."""
    try:
        from cuda.pathfinder import find_nvidia_header_directory
    except ImportError:
        return None
    try:
        found = find_nvidia_header_directory("cudart")
    except Exception:
        return None
    if found is None:
        return None
    folder = Path(found)
    return folder if all((folder / h).is_file() for h in _HALF_HEADERS) else None


MINIMAL_SINCE = (12, 4)
"""The first NVRTC with ``-minimal``."""


@functools.cache
def _lean_options() -> tuple[bytes, ...]:
    """``-minimal`` where the NVRTC loaded has it: it leaves out of every translation unit what
    cubejit's kernels never use (textures and surfaces, the device runtime and its types,
    launches from device code), which cuts NVRTC's time on a small kernel by a sixth or so."""
    return (b"-minimal",) if loaded_version() >= MINIMAL_SINCE else ()


def compile_to_cubin(
    source: str,
    arch: str,
    *,
    include_dirs: tuple[Path, ...] = (),
    kernel: str | None = None,
) -> bytes:
    """Compiles ``source`` for ``arch`` (``"sm_90a"``) and returns the cubin (see
    :func:`compile_to_cubin_and_ptx`)."""
    return compile_to_cubin_and_ptx(source, arch, include_dirs=include_dirs, kernel=kernel)[0]


def compile_to_cubin_and_ptx(
    source: str,
    arch: str,
    *,
    include_dirs: tuple[Path, ...] = (),
    kernel: str | None = None,
    options: tuple[str, ...] = (),
) -> tuple[bytes, bytes]:
    """Compiles ``source`` for ``arch`` (``"sm_90a"``), with NVRTC's further ``options``: the
    cubin, and the PTX NVRTC made it from (which a driver can compile for a newer GPU, when
    ``arch`` has no ``a`` suffix).

    Raises :class:`CompilationError` naming ``kernel`` and carrying NVRTC's log and the source
    when NVRTC refuses it. Safe to call from several threads at once.
    """
    nvrtc = nvrtc_module()
    check_version()
    (program,) = _checked(
        nvrtc.nvrtcCreateProgram(source.encode(), b"kernel.cu", 0, [], []), "program creation"
    )
    try:
        given = [f"-arch={arch}".encode(), b"-std=c++17", *_lean_options()]
        given += [f"-I{folder}".encode() for folder in include_dirs]
        given += [option.encode() for option in options]
        (status,) = nvrtc.nvrtcCompileProgram(program, len(given), given)
        if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            log = _program_log(program)
            what = f"kernel {kernel}" if kernel else "a kernel"
            raise CompilationError(
                f"NVRTC could not compile {what} for {arch}:\n{log_tail(log)}",
                kernel=kernel,
                log=log,
                source=source,
            )
        (size,) = _checked(nvrtc.nvrtcGetCUBINSize(program), "cubin size")
        cubin = bytes(size)
        _checked(nvrtc.nvrtcGetCUBIN(program, cubin), "cubin copy")
        (size,) = _checked(nvrtc.nvrtcGetPTXSize(program), "PTX size")
        ptx = bytes(size)
        _checked(nvrtc.nvrtcGetPTX(program, ptx), "PTX copy")
        return cubin, ptx.rstrip(b"\0")
    finally:
        nvrtc.nvrtcDestroyProgram(program)


def compile_to_ptx(
    source: str,
    arch: str,
    *,
    include_dirs: tuple[Path, ...] = (),
    kernel: str | None = None,
) -> str:
    """The PTX NVRTC makes of ``source`` for ``arch`` on the way to its cubin (see
    :func:`compile_to_cubin_and_ptx`); no GPU is needed."""
    _, ptx = compile_to_cubin_and_ptx(source, arch, include_dirs=include_dirs, kernel=kernel)
    return ptx.decode()


def _program_log(program: object) -> str:
    nvrtc = nvrtc_module()
    (size,) = _checked(nvrtc.nvrtcGetProgramLogSize(program), "log size")
    log = bytes(size)
    _checked(nvrtc.nvrtcGetProgramLog(program, log), "log copy")
    return log.rstrip(b"\0").decode(errors="replace").strip()
