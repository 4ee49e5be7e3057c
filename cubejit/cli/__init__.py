"""The ``cubejit`` command: see and steer what the compiler did.

``cubejit demo`` runs the example suite; ``warm`` compiles a module's kernels ahead of time;
``env`` manages environments (the compilation stores); ``explain`` says why a kernel missed the
store (or a tuner was tuned again); ``tune`` shows and forgets tuning decisions; ``records``
shows what each process compiled; ``doctor`` checks the machine. Every
command and subcommand has ``--help``. Errors cubejit raises on purpose are printed as one line
with exit status 1; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from cubejit.cli import demo, doctor, env, explain, records, show, tune, warm
from cubejit.errors import CubejitError

COMMANDS = (demo, warm, show, env, explain, tune, records, doctor)
"""The modules of the command groups, in the order ``--help`` lists them."""


def parser() -> argparse.ArgumentParser:
    """The whole command line: one subparser per command group."""
    from cubejit.environment.build import version

    top = argparse.ArgumentParser(
        prog="cubejit",
        description="cubejit: Python kernels compiled many at a time, once per machine. "
        "See and steer what the compiler did.",
    )
    top.add_argument("--version", action="version", version=f"cubejit {version()}")
    commands = top.add_subparsers(title="commands", metavar="COMMAND")
    for command in COMMANDS:
        command.register(commands)
    top.set_defaults(run=lambda _: _help(top))
    return top


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command ``argv`` (default: the process's arguments); its exit status."""
    args = parser().parse_args(argv)
    try:
        return int(args.run(args))
    except CubejitError as e:
        print(f"cubejit: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("cubejit: interrupted", file=sys.stderr)
        return 130
