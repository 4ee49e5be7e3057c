"""``cubejit warm TARGET``: compile a module's kernels into the store before anything launches.

A module declares what to warm in two ways: ``@cj.kernel(warm=[dict(cube_dim=256, n=4), ...])``
(each dict a specialisation: ``cube_dim`` plus comptime values), and a module-level ``WARM``
list of :class:`~cubejit.KernelSpec` (from ``kernel.specialize(...)``) or ``(kernel, dict)``
pairs. Everything found compiles as one batch. A file is imported under the dotted name its
package folders give it (``pkg/mod.py`` inside a package ``pkg`` is ``pkg.mod``), so its
kernels have the names, and the keys, they have when the program imports them.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import cubejit as cj
from cubejit import config, environment
from cubejit.cli.batch import compile_queued
from cubejit.cli.console import console, seconds_text, table
from cubejit.environment import records
from cubejit.errors import CubejitError


def register(commands: Any) -> None:
    command = commands.add_parser(
        "warm",
        help="compile the kernels a module declares for warming, as one batch",
        description="Imports TARGET (a module name or a .py file), collects the kernels it "
        "declares for warming (@cj.kernel(warm=[dict(cube_dim=..., **comptime), ...]) and a "
        "module-level WARM list of kernel.specialize(...) results or (kernel, dict) pairs), "
        "and compiles them as one batch into the active environment. Exit status 1 when a "
        "kernel failed, with its error.",
    )
    command.add_argument("target", metavar="TARGET", help="a module name or a .py file")
    command.add_argument(
        "--backend",
        choices=("cpu", "cuda"),
        default="cpu",
        help="the backend to compile for (default: cpu)",
    )
    command.add_argument(
        "--arch",
        type=_architectures,
        default=None,
        metavar="ARCHS",
        help="with --backend cuda: build for these architectures (comma-separated, e.g. "
        "sm_80,sm_90a,sm_100a) with NVRTC alone, no GPU needed, each under the namespace a GPU "
        "of that architecture reads; then cubejit env export ships them",
    )
    command.add_argument(
        "--parallelism",
        type=_positive,
        default=None,
        metavar="N",
        help="compile worker threads (default: CUBEJIT_COMPILE_PARALLELISM, else one per CPU)",
    )
    command.set_defaults(run=run)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _architectures(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    bad = [n for n in names if not (n.startswith("sm_") and n[3:].rstrip("af").isdigit())]
    if not names or bad:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a list of CUDA architectures such as sm_80,sm_90a,sm_100a"
        )
    return names


def run(args: argparse.Namespace) -> int:
    err = console(stderr=True)
    if args.arch is not None and args.backend != "cuda":
        err.print("cubejit: --arch builds CUDA code: give --backend cuda with it")
        return 2
    if args.parallelism is not None:
        config.override(parallelism=args.parallelism)
    records.label("warm")
    module = import_target(args.target)
    specs, problems = collect(module)
    if not specs and not problems:
        err.print(
            f"cubejit: {args.target} declares nothing to warm: give kernels "
            "@cj.kernel(warm=[dict(cube_dim=...)]) or the module a WARM list"
        )
        return 1
    if args.arch is None:
        return _warm(args, cj.client(args.backend), args.backend, module, specs, problems)
    from cubejit.backends.cuda.offline import OfflineBuild

    status = 0
    for arch in args.arch:
        build = OfflineBuild(arch, args.parallelism)
        status |= _warm(args, build, f"cuda {arch}, no GPU", module, specs, problems)
    return status


def _warm(
    args: argparse.Namespace,
    client: Any,
    what: str,
    module: ModuleType,
    specs: list[Any],
    problems: list[tuple[str, BaseException]],
) -> int:
    """Compiles ``specs`` on ``client`` (a client, or an offline build) as one batch and
    prints what each came to; the exit status."""
    out, err = console(), console(stderr=True)
    if args.parallelism is not None:
        client.loader.parallelism = args.parallelism
    for spec in specs:
        client.prepare(spec)
    result = compile_queued(client, len(specs), f"warming {module.__name__}", out)
    rows = []
    for spec in specs:
        id = spec.id()
        comptime = ", ".join(f"{k}={v!r}" for k, v in sorted(spec.comptime.items()))
        rows.append(
            (
                spec.name,
                "x".join(map(str, spec.cube_dim)),
                comptime or "-",
                result.outcome(id),
                seconds_text(result.work_s(id)),
            )
        )
    out.print(
        table(
            f"cubejit warm {args.target} ({what}, environment {environment.active()})",
            ("kernel", "cube_dim", "comptime", "outcome", "work"),
            rows,
        )
    )
    threads = f" on {result.threads} threads" if result.threads else ""
    out.print(
        f"{len(specs)} kernels in {seconds_text(result.wall_s)}{threads}: "
        f"{result.count('compiled')} compiled, {result.count('loaded')} from the store, "
        f"{result.count('rekeyed')} rekeyed, {result.count('failed') + len(problems)} "
        "failed"
    )
    for what, error in problems:
        err.print(f"cubejit: {what} failed: {type(error).__name__}: {error}", markup=False)
    for spec in specs:
        error = result.failures.get(str(spec.id()))
        if error is not None:
            err.print(f"cubejit: {spec.name} failed: {type(error).__name__}: {error}", markup=False)
    return 1 if problems or result.failures else 0


def import_target(target: str) -> ModuleType:
    """The module ``target`` names: a ``.py`` file (imported under its package's dotted name,
    the folder above its top package put on ``sys.path``) or a module name (found from the
    current directory too, as ``python -m`` does)."""
    path = Path(target)
    if target.endswith(".py") or path.is_file():
        if not path.is_file():
            raise CubejitError(f"cannot warm {target}: no such file")
        return _import_file(path.resolve())
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as e:
        raise CubejitError(f"cannot warm {target}: {e}") from e


def _import_file(path: Path) -> ModuleType:
    parts = [path.stem]
    folder = path.parent
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    name = ".".join(parts)
    if len(parts) > 1:
        return importlib.import_module(name)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CubejitError(f"cannot warm {path}: not a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def collect(module: ModuleType) -> tuple[list[Any], list[tuple[str, BaseException]]]:
    """The specs ``module`` declares for warming, each once, in declaration order; and the
    declarations that could not be specialised, with their errors."""
    specs: dict[Any, Any] = {}
    problems: list[tuple[str, BaseException]] = []
    for what, make in _declared(module):
        try:
            spec = make()
        except (CubejitError, TypeError, ValueError) as e:
            problems.append((what, e))
            continue
        specs.setdefault(spec.id(), spec)
    return list(specs.values()), problems


def _declared(module: ModuleType) -> Iterator[tuple[str, Any]]:
    for value in list(vars(module).values()):
        if isinstance(value, cj.Kernel):
            for entry in getattr(value, "warm", None) or ():
                yield _entry(value, entry)
    for entry in getattr(module, "WARM", None) or ():
        if isinstance(entry, cj.KernelSpec):
            yield entry.name, lambda spec=entry: spec
        elif isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[0], cj.Kernel):
            yield _entry(*entry)
        else:
            yield "a WARM entry", lambda entry=entry: _not_a_spec(entry)


def _entry(kernel: Any, entry: Any) -> tuple[str, Any]:
    name = getattr(kernel, "name", None) or getattr(kernel, "__name__", "a kernel")
    if not isinstance(entry, dict) or "cube_dim" not in entry:
        return name, lambda: _not_a_spec(entry)
    options = dict(entry)
    cube_dim = options.pop("cube_dim")
    return f"{name} {entry}", lambda: kernel.specialize(cube_dim, **options)


def _not_a_spec(entry: Any) -> Any:
    raise TypeError(
        f"{entry!r} is not a specialisation: write dict(cube_dim=..., **comptime), "
        "kernel.specialize(...) or (kernel, dict(cube_dim=...))"
    )
