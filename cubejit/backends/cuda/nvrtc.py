"""NVRTC, called in process, from CUDA C++ straight to a cubin for one exact architecture.

A cubin loads in tens of microseconds where PTX costs the driver a JIT compilation at every
load, so cubejit never hands the driver PTX. ``nvrtcCompileProgram`` releases the GIL, so
several worker threads compile at once; each call owns its program handle, so the functions
here are thread-safe.

Only ``cuda.bindings.nvrtc`` is imported here, never the driver: a machine without a GPU
compiles cubins as well as one with.
"""

from __future__ import annotations

import functools
from pathlib import Path

from cubejit.errors import BackendUnavailableError, CompilationError

INSTALL_HINT = "pip install 'cubejit[cuda]'"
"""What a user without the CUDA packages runs; every message about them says it."""

_HALF_HEADERS = ("cuda_fp16.h", "cuda_bf16.h")


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
    """NVRTC's ``(major, minor)``; part of every CUDA artifact's namespace."""
    major, minor = _checked(nvrtc_module().nvrtcVersion(), "version")
    return int(major), int(minor)


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


def compile_to_cubin(
    source: str,
    arch: str,
    *,
    include_dirs: tuple[Path, ...] = (),
    kernel: str | None = None,
) -> bytes:
    """Compiles ``source`` for ``arch`` (``"sm_90a"``) and returns the cubin.

    Raises :class:`CompilationError` naming ``kernel`` and carrying NVRTC's log and the source
    when NVRTC refuses it. Safe to call from several threads at once.
    """
    return _compile(source, arch, include_dirs, kernel, ptx=False)


def compile_to_ptx(
    source: str,
    arch: str,
    *,
    include_dirs: tuple[Path, ...] = (),
    kernel: str | None = None,
) -> str:
    """The PTX of ``source`` for the virtual architecture of ``arch`` (``"sm_90a"`` gives
    ``compute_90a``'s), as :func:`compile_to_cubin` compiles it; no GPU is needed."""
    virtual = arch.replace("sm_", "compute_", 1)
    ptx = _compile(source, virtual, include_dirs, kernel, ptx=True)
    return ptx.rstrip(b"\0").decode()


def _compile(
    source: str, arch: str, include_dirs: tuple[Path, ...], kernel: str | None, ptx: bool
) -> bytes:
    nvrtc = nvrtc_module()
    (program,) = _checked(
        nvrtc.nvrtcCreateProgram(source.encode(), b"kernel.cu", 0, [], []), "program creation"
    )
    try:
        options = [f"-arch={arch}".encode(), b"-std=c++17"]
        options += [f"-I{folder}".encode() for folder in include_dirs]
        (status,) = nvrtc.nvrtcCompileProgram(program, len(options), options)
        if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            log = _program_log(program)
            what = f"kernel {kernel}" if kernel else "a kernel"
            raise CompilationError(
                f"NVRTC could not compile {what} for {arch}:\n{log}",
                kernel=kernel,
                log=log,
                source=source,
            )
        if ptx:
            (size,) = _checked(nvrtc.nvrtcGetPTXSize(program), "PTX size")
            text = bytes(size)
            _checked(nvrtc.nvrtcGetPTX(program, text), "PTX copy")
            return text
        (size,) = _checked(nvrtc.nvrtcGetCUBINSize(program), "cubin size")
        cubin = bytes(size)
        _checked(nvrtc.nvrtcGetCUBIN(program, cubin), "cubin copy")
        return cubin
    finally:
        nvrtc.nvrtcDestroyProgram(program)


def _program_log(program: object) -> str:
    nvrtc = nvrtc_module()
    (size,) = _checked(nvrtc.nvrtcGetProgramLogSize(program), "log size")
    log = bytes(size)
    _checked(nvrtc.nvrtcGetProgramLog(program, log), "log copy")
    return log.rstrip(b"\0").decode(errors="replace").strip()
