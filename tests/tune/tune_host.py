"""One host of a fleet that tunes, as a process of its own: launches ``plus_one_tuner`` on
arrays of the given sizes until every size's key is decided, checks every launch against numpy,
and prints what happened as one JSON line.

``python tune_host.py SIZE [SIZE ...] [--die-while-tuning]``, with the host's own
``CUBEJIT_CACHE_DIR`` (and the fleet's ``CUBEJIT_STORE``) in its environment. It prints
``ready`` once imported and waits for a line on stdin, so that several hosts start at once.
``--die-while-tuning`` prints ``tuning`` and exits at once when its first timed run starts,
holding whatever lease it took; ``--changed`` tunes the tuner with its candidate ``fast``
changed.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys

import numpy as np
from tune_kernels import changed_tuner, plus_one_tuner

import cubejit as cj
from cubejit.tune import tuner as tuner_module


class Warnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("sizes", type=int, nargs="+")
    parser.add_argument("--die-while-tuning", action="store_true")
    parser.add_argument("--changed", action="store_true")
    args = parser.parse_args()
    warnings = Warnings()
    logging.getLogger("cubejit").addHandler(warnings)
    if args.die_while_tuning:

        def die(*_: object, **__: object) -> None:
            print("tuning", flush=True)
            os._exit(3)

        tuner_module.measure = die  # type: ignore[assignment]
    tuner = changed_tuner() if args.changed else plus_one_tuner()
    client = cj.client("cpu")
    rng = np.random.default_rng(os.getpid())
    print("ready", flush=True)
    sys.stdin.readline()
    right, launches = True, 0
    while True:
        for size in args.sizes:
            x = rng.random(size, dtype=np.float32)
            expected = x + np.float32(1)
            tuner.launch(client, x)
            launches += 1
            right = right and bool(np.array_equal(x, expected))
        decisions = [tuner.decision(np.empty(size, np.float32)) for size in args.sizes]
        if all(d is not None for d in decisions):
            break
    here = (os.getpid(), os.uname().nodename)
    print(
        json.dumps(
            {
                "right": right,
                "launches": launches,
                "timed_runs": tuner.timed_runs,
                "tuned": sorted(
                    d.key[0] for d in decisions if (d.session["pid"], d.session["host"]) == here
                ),
                "winners": {str(d.key[0]): d.winner for d in decisions},
                "warnings": warnings.lines,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
