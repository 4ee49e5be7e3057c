"""Every exception a cubejit user can see.

All of them derive from :class:`CubejitError`, so ``except cubejit.CubejitError`` catches
anything cubejit raises on purpose. Messages are written for the person who wrote the kernel:
they name the kernel, the Python file and line where one applies, and what to do instead.
"""

from __future__ import annotations


class CubejitError(Exception):
    """The root of every error cubejit raises on purpose."""


class CompilationError(CubejitError):
    """A kernel could not be turned into something a device runs.

    Raised for a construct the language does not have, a type error in a kernel, or a platform
    compiler (the C compiler, NVRTC) that refused the generated source; in that last case
    ``log`` holds the compiler's output and ``source`` the text it compiled.
    """

    def __init__(
        self,
        message: str,
        *,
        kernel: str | None = None,
        log: str | None = None,
        source: str | None = None,
    ) -> None:
        super().__init__(message)
        self.kernel = kernel
        self.log = log
        self.source = source


LOG_TAIL_BYTES = 64 * 1024
"""How much of a platform compiler's output a message quotes; the whole log stays on the
error's ``log``."""


def log_tail(log: str) -> str:
    """The end of ``log`` a message quotes: all of it when short, else its last
    :data:`LOG_TAIL_BYTES` after a line saying how much was left out (the end of a compiler's
    output says why it failed; the start is mostly warnings)."""
    data = log.encode("utf-8", "replace")
    if len(data) <= LOG_TAIL_BYTES:
        return log
    kept = data[-LOG_TAIL_BYTES:].decode("utf-8", "ignore")
    return f"[{len(data) - LOG_TAIL_BYTES} bytes of the log before this left out]\n{kept}"


class ValidationError(CompilationError):
    """A kernel breaks a rule of the IR or a limit of the device it is compiled for
    (too many units per cube, a cube dimension beyond the device's maximum)."""


class UnsupportedError(CompilationError):
    """A kernel uses Python that the kernel language does not have (a ``try``, a list, a call
    to an unknown function, a Python object captured from outside)."""


class LaunchError(CubejitError):
    """A launch whose arguments do not fit the kernel's signature, or a device that refused to
    run it. Raised before anything runs whenever the arguments are at fault."""


class BackendUnavailableError(CubejitError):
    """A backend was asked for that this machine cannot provide: a missing package, no device.
    The message says what to install or what was not found."""


class ConfigError(CubejitError):
    """A configuration file or variable that cubejit cannot read; the message names the file
    (or variable) and the key."""


class StoreError(CubejitError):
    """A compilation-store operation the caller asked for explicitly (export, import, load of
    a bundle) that cannot be done. Routine store failures during compilation never raise: they
    are logged and the kernel is compiled again."""


class TuneError(CubejitError):
    """A tuner could not choose: every candidate failed to compile or raised for this tuning
    key. The message names the tuner, the key and each candidate's error."""
