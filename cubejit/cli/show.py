"""``cubejit show KERNEL``: print what cubejit generates for a kernel.

KERNEL names a kernel the way ``cubejit warm`` finds modules: ``FILE.py:NAME`` or
``MODULE:NAME``, or a qualified name ``package.module.NAME``; a file or module holding one
kernel may be named alone. The specialisation is ``--cube-dim`` (and ``--set NAME=VALUE`` for
comptime values), else the kernel's first ``warm`` entry, else a cube of 256 units. The text is
what a launch's compile makes (:mod:`cubejit.backends.show`).
"""

from __future__ import annotations

import argparse
import ast
import importlib
from types import ModuleType
from typing import Any

import cubejit as cj
from cubejit.backends.show import kernel_text
from cubejit.cli.warm import import_target
from cubejit.errors import CubejitError

DEFAULT_CUBE_DIM = 256
"""The cube_dim shown for a kernel that declares no warm entry and is given none."""


def register(commands: Any) -> None:
    command = commands.add_parser(
        "show",
        help="print a kernel's IR, generated C or CUDA C++, PTX or SASS",
        description="Prints what cubejit generates for KERNEL (FILE.py:NAME, MODULE:NAME or "
        "package.module.NAME): the generated source by default, or its IR, PTX (through "
        "NVRTC, no GPU needed) or SASS (cuobjdump or nvdisasm on the PATH).",
    )
    command.add_argument("kernel", metavar="KERNEL", help="FILE.py:NAME, MODULE:NAME or a.b.NAME")
    forms = command.add_mutually_exclusive_group()
    for form, what in (
        ("ir", "the kernel's IR"),
        ("source", "the generated C (cpu) or CUDA C++ (cuda); the default"),
        ("ptx", "the PTX NVRTC makes of the CUDA C++"),
        ("sass", "the SASS of the cubin, through cuobjdump or nvdisasm"),
    ):
        forms.add_argument(
            f"--{form}", dest="form", action="store_const", const=form, help=f"print {what}"
        )
    command.add_argument(
        "--cube-dim", type=_cube_dim, default=None, metavar="N", help="units per cube: N or XxYxZ"
    )
    command.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a comptime value (repeatable)",
    )
    command.add_argument("--backend", choices=("cpu", "cuda"), default="cpu")
    command.add_argument("--checked", action="store_true", help="show the bounds-checked variant")
    command.add_argument(
        "--arch", default="", help="the GPU architecture of PTX and SASS (default sm_90)"
    )
    command.set_defaults(run=run, form="source")


def _cube_dim(text: str) -> int | tuple[int, ...]:
    try:
        dims = tuple(int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not N or XxYxZ") from None
    return dims[0] if len(dims) == 1 else dims


def run(args: argparse.Namespace) -> int:
    kernel = find_kernel(args.kernel)
    spec = specialization(kernel, args.cube_dim, args.set)
    backend = "cuda" if args.form in ("ptx", "sass") else args.backend
    print(kernel_text(spec, args.form, backend, args.checked, args.arch))
    return 0


def find_kernel(name: str) -> Any:
    """The kernel ``name`` names (see the module's doc); CubejitError saying what was found
    otherwise."""
    if ":" in name:
        target, _, attribute = name.rpartition(":")
        return _kernel_in(import_target(target), attribute, name)
    if name.endswith(".py"):
        return _only_kernel(import_target(name), name)
    module_name, _, attribute = name.rpartition(".")
    if module_name:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError:
            module = None
        if module is not None and isinstance(getattr(module, attribute, None), cj.Kernel):
            return getattr(module, attribute)
    return _only_kernel(import_target(name), name)


def _kernels(module: ModuleType) -> dict[str, Any]:
    return {k: v for k, v in vars(module).items() if isinstance(v, cj.Kernel)}


def _kernel_in(module: ModuleType, attribute: str, name: str) -> Any:
    found = _kernels(module)
    if attribute not in found:
        have = ", ".join(sorted(found)) or "none"
        raise CubejitError(f"{name}: {module.__name__} has no kernel {attribute!r} (it has {have})")
    return found[attribute]


def _only_kernel(module: ModuleType, name: str) -> Any:
    found = _kernels(module)
    if len(found) != 1:
        have = ", ".join(sorted(found)) or "none"
        raise CubejitError(f"{name} holds {len(found)} kernels ({have}); name one as {name}:NAME")
    return next(iter(found.values()))


def specialization(kernel: Any, cube_dim: Any, settings: list[str]) -> Any:
    """The spec of ``kernel`` to show: ``cube_dim`` with the ``NAME=VALUE`` comptime
    ``settings``, else its first warm entry, else :data:`DEFAULT_CUBE_DIM`."""
    comptime: dict[str, Any] = {}
    warm = list(getattr(kernel, "warm", None) or ())
    if cube_dim is None and not settings and warm and isinstance(warm[0], dict):
        comptime = dict(warm[0])
        cube_dim = comptime.pop("cube_dim", DEFAULT_CUBE_DIM)
    for setting in settings:
        key, sep, text = setting.partition("=")
        if not sep or not key:
            raise CubejitError(f"--set takes NAME=VALUE, not {setting!r}")
        try:
            comptime[key] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            raise CubejitError(f"--set {key}: {text!r} is not a number or bool") from None
    return kernel.specialize(cube_dim if cube_dim is not None else DEFAULT_CUBE_DIM, **comptime)
