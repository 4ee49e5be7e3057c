"""How a standard function chooses among the forms of one of its launches.

A form is a hashable value (a block size, a tile shape, a dataclass of them) that a launch
function takes first: ``run(form, client, *args)``. Where a backend offers several forms, a
:class:`~cubejit.tune.Tuner` with one candidate per form picks one per tuning key and device
(the first form is the default while another host tunes); where it offers one, that form runs
as it is and nothing is timed. Tuners time candidates on copies of the array arguments, so
``args`` are the arrays a launch takes (views of the call's operands), never operands.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, TypeVar

from cubejit.lang import Kernel
from cubejit.tune import Tunable, Tuner

F = TypeVar("F", bound=Hashable)


class StandardTuner(Tuner):
    """A tuner whose candidates are all cubejit's own code (a standard function's forms), which
    the build id names whole: its checksum is the build id and the candidates' names, so that a
    warm process's first standard call finds its decision without walking the candidates' code
    or reading their kernels' sources (see :mod:`cubejit.tune.identity`). Any change to cubejit
    keys decisions anew, as an upgrade does; the identities are still read when it tunes, and
    kept in the decision."""

    def checksum(self) -> str:
        if self._checksum is None:
            from cubejit.compile.id import stable_digest
            from cubejit.environment.build import build_id

            names = [c.name for c in self.candidates]
            self._checksum = stable_digest("cubejit's own candidates", build_id(), names)
        return self._checksum


def tuner(
    name: str,
    forms: Sequence[F],
    run: Callable[..., object],
    label: Callable[[F], str],
    key: Callable[..., Any],
    kernels: Iterable[Kernel] = (),
) -> Tuner:
    """A tuner called ``name`` with one candidate per form, named by ``label``, that runs
    ``run(form, client, *args)``; ``kernels`` are declared for each (see
    :mod:`cubejit.tune.identity`)."""
    declared = tuple(kernels)
    return StandardTuner(
        name,
        key=key,
        candidates=[Tunable(label(f), functools.partial(run, f), declared) for f in forms],
    )


def launch(
    forms: Sequence[F],
    tuner_of: Callable[[], Tuner],
    run: Callable[..., object],
    client: Any,
    *args: Any,
) -> None:
    """Runs ``args`` in the form ``tuner_of()`` picks among ``forms``, or in the one form."""
    if len(forms) > 1:
        tuner_of().launch(client, *args)
    else:
        run(forms[0], client, *args)


__all__ = ["StandardTuner", "launch", "tuner"]
