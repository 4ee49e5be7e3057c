"""``cubejit records``: sessions and compilations, and a batch's timeline."""

from __future__ import annotations

from pathlib import Path

from cli_runner import command


def test_records_show_the_session_that_compiled_and_its_kernels(
    warmed: Path, tmp_path: Path
) -> None:
    done = command(warmed, tmp_path)("records").stdout
    assert "sessions in 'default'" in done
    assert " warm " in done
    assert done.count("compiled") >= 4
    assert "warm_module.power[256x1x1]" in done


def test_records_of_one_kernel_and_of_one_session(warmed: Path, tmp_path: Path) -> None:
    cubejit = command(warmed, tmp_path)
    one = cubejit("records", "--kernel", "scale").stdout
    assert one.count("warm_module.scale[") == 2
    assert "power" not in one
    session = next(
        line.split()[1] for line in cubejit("records").stdout.splitlines() if " warm " in line
    )
    assert f"batches of session {session}" in cubejit("records", "--session", session).stdout
    missing = cubejit("records", "--session", "zzz", check=False)
    assert missing.returncode == 1 and "no session starting with 'zzz'" in missing.stderr


def test_plot_writes_a_png_of_the_batch_timeline(warmed: Path, tmp_path: Path) -> None:
    png = tmp_path / "timeline.png"
    done = command(warmed, tmp_path)("records", "--plot", str(png))
    assert "written to" in done.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size > 10_000
