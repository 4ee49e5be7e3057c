"""A batch's timeline as a PNG: a lane per thread, a bar per phase of each kernel's trip.

Worker threads lower and finalize; the calling thread loads (and stores). Drawn from the
records alone (each phase's thread, start and end), with matplotlib, the ``plot`` extra.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cubejit.environment.records import StoredBatch, StoredCompilation
from cubejit.errors import CubejitError

COLOURS = {"lower": "#4C72B0", "finalize": "#DD8452", "load": "#55A868"}
"""The colour of each phase's bars."""


def _lanes(compilations: Sequence[StoredCompilation]) -> list[str]:
    """Thread names, the calling thread first, then workers in name order."""
    callers = {c.phases["load"]["thread"] for c in compilations if "load" in c.phases}
    threads = {p["thread"] for c in compilations for p in c.phases.values()}
    return sorted(callers) + sorted(threads - callers)


def draw(batch: StoredBatch, compilations: Sequence[StoredCompilation], dest: Path) -> Path:
    """Writes the timeline of ``batch`` (its ``compilations``) to ``dest`` as a PNG."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch
    except ImportError as e:
        raise CubejitError(
            f"--plot needs matplotlib ({e}); install it with pip install 'cubejit[plot]'"
        ) from e
    lanes = _lanes(compilations)
    row = {thread: index for index, thread in enumerate(lanes)}
    figure, axes = plt.subplots(figsize=(12, 1.2 + 0.6 * len(lanes)), dpi=110)
    try:
        for compilation in compilations:
            label = compilation.name.rsplit(".", 1)[-1]
            for phase, span in compilation.phases.items():
                start, width = span["start"], span["end"] - span["start"]
                y = row[span["thread"]]
                axes.broken_barh(
                    [(start, max(width, batch.wall_s / 400))],
                    (y - 0.35, 0.7),
                    facecolors=COLOURS.get(phase, "grey"),
                    edgecolor="white",
                    linewidth=0.5 if phase != "load" else 0,
                )
                if phase != "load" and width > batch.wall_s / 25:
                    axes.text(
                        start + width / 2,
                        y,
                        label,
                        ha="center",
                        va="center",
                        fontsize=7,
                        color="white",
                        clip_on=True,
                    )
        axes.set_yticks(range(len(lanes)), [_lane_name(t, i) for i, t in enumerate(lanes)])
        axes.invert_yaxis()
        axes.set_xlim(0, max(batch.wall_s, 1e-6) * 1.02)
        axes.set_xlabel("seconds since the batch started")
        axes.set_title(
            f"batch {batch.stamp} of session {batch.session[:8]}: {batch.kernels_asked} "
            f"kernels, {batch.compiled} compiled, {batch.from_store} from the store, "
            f"{batch.rekeyed} rekeyed, {batch.threads} threads, {batch.wall_s:.3f} s",
            fontsize=9,
        )
        axes.legend(
            handles=[Patch(color=c, label=p) for p, c in COLOURS.items()],
            loc="upper left",
            bbox_to_anchor=(1.005, 1.0),
            fontsize=8,
            frameon=False,
        )
        axes.grid(axis="x", alpha=0.3)
        figure.tight_layout()
        dest.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(dest, format="png")
    finally:
        plt.close(figure)
    return dest


def _lane_name(thread: str, index: int) -> str:
    return f"{thread} (calling)" if index == 0 else thread
