"""The CPU toolchain: built once per target, its compiler bounded by the timeout whatever it
does, its identity asked once per binary, the folders of killed processes cleaned up."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import cubejit as cj
from cubejit import config
from cubejit.backends.cpu import CpuClient, CpuCompiler, CpuLowered, cpu_fingerprint
from cubejit.backends.cpu.fingerprint import Toolchain
from cubejit.backends.cpu.probe import probe_runs
from cubejit.errors import CompilationError

LOWERED = CpuLowered("void f(void) {}", "helper_kernel", "f.py:1", ())


def fake_cc(folder: Path, name: str, body: str, version: str = "fake cc 1.0") -> Path:
    """A compiler script answering ``--version`` with ``version`` and running ``body``."""
    script = folder / name
    script.write_text(
        f'#!/bin/sh\nif [ "$1" = "--version" ]; then echo "{version}"; exit 0; fi\n{body}\n'
    )
    script.chmod(0o755)
    return script


def settings_with(tmp_path: Path, cc: Path, **changes: object) -> config.Settings:
    return config.Settings(cache_dir=tmp_path / "root", cc=str(cc), **changes)  # type: ignore[arg-type]


def toolchain(tmp_path: Path, cc: Path, timeout: float) -> Toolchain:
    return Toolchain.from_settings(settings_with(tmp_path, cc, compile_timeout=timeout))


def ended(pid: int) -> bool:
    """Whether process ``pid`` is gone or a zombie waiting to be reaped, within 5 s."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return True
        if state == "Z":
            return True
        threading.Event().wait(0.05)
    return False


def test_a_compiler_that_exits_is_done_at_once_and_the_helper_it_left_is_killed(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "helper.pid"
    cc = fake_cc(
        tmp_path,
        "leaves-a-helper",
        f"sleep 30 &\necho $! > {pid_file}\necho 'kernel.c:1:1: error: fake failure'\nexit 1",
    )
    compiler = CpuCompiler(toolchain=toolchain(tmp_path, cc, 20.0))
    with pytest.raises(CompilationError, match=r"failed \(exit status 1\)") as caught:
        compiler.finalize(None, LOWERED)  # type: ignore[arg-type]
    assert "fake failure" in (caught.value.log or "")
    assert ended(int(pid_file.read_text()))


def test_a_huge_compiler_log_is_kept_once_and_a_message_quotes_only_its_end(
    tmp_path: Path,
) -> None:
    noisy = "yes 'kernel.c:1:1: warning: fake noise' | head -c 1000000\n"
    cc = fake_cc(tmp_path, "noisy", f"{noisy}echo 'kernel.c:9:9: error: the real cause'\nexit 1")
    compiler = CpuCompiler(toolchain=toolchain(tmp_path, cc, 20.0))
    with pytest.raises(CompilationError) as caught:
        compiler.finalize(None, LOWERED)  # type: ignore[arg-type]
    message, log = str(caught.value), caught.value.log or ""
    assert len(log) > 1_000_000 and log.rstrip().endswith("the real cause")
    assert len(message.encode()) < 66 * 1024
    assert message.rstrip().endswith("the real cause") and "bytes of the log before" in message


def test_a_compiler_past_the_timeout_is_not_waited_on_for_a_helper_that_left_its_group(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "escaped.pid"
    cc = fake_cc(tmp_path, "escapes", f"setsid sleep 30 &\necho $! > {pid_file}\nexec sleep 30")
    compiler = CpuCompiler(toolchain=toolchain(tmp_path, cc, 0.5))
    started = time.monotonic()
    try:
        with pytest.raises(CompilationError, match=r"ran past the compile timeout of 0\.5 s"):
            compiler.finalize(None, LOWERED)  # type: ignore[arg-type]
        took = time.monotonic() - started
    finally:
        if pid_file.exists():
            os.kill(int(pid_file.read_text()), 9)
    assert took < 10


def test_the_version_probe_runs_under_the_compile_timeout(tmp_path: Path) -> None:
    cc = tmp_path / "hangs-on-version"
    cc.write_text("#!/bin/sh\nexec sleep 30\n")
    cc.chmod(0o755)
    started = time.monotonic()
    fingerprint = cpu_fingerprint(settings_with(tmp_path, cc, compile_timeout=0.5))
    assert time.monotonic() - started < 10
    assert fingerprint.startswith(os.uname().machine)


PROBES = """
from cubejit.backends.cpu import CpuClient
from cubejit.backends.cpu.probe import probe_runs
CpuClient()
print(probe_runs.count)
"""


def test_a_process_starting_on_a_warm_root_does_not_ask_the_compiler_who_it_is(
    tmp_path: Path,
) -> None:
    environ = dict(os.environ, CUBEJIT_CACHE_DIR=str(tmp_path / "root"))
    runs = [
        subprocess.run(
            [sys.executable, "-c", PROBES], env=environ, capture_output=True, text=True, check=True
        ).stdout.strip()
        for _ in range(2)
    ]
    assert runs == ["1", "0"]


def test_compiler_identities_kept_in_a_file_others_may_write_are_never_believed(
    tmp_path: Path,
) -> None:
    environ = dict(os.environ, CUBEJIT_CACHE_DIR=str(tmp_path / "root"))

    def probes() -> str:
        return subprocess.run(
            [sys.executable, "-c", PROBES], env=environ, capture_output=True, text=True, check=True
        ).stdout.strip()

    assert probes() == "1"
    kept = tmp_path / "root" / "compilers.json"
    kept.chmod(0o666)
    assert probes() == "1"


def test_a_compiler_binary_that_changed_is_asked_again_and_changes_the_fingerprint(
    tmp_path: Path,
) -> None:
    cc = fake_cc(tmp_path, "upgraded-cc", "exit 1", version="fake cc 1")
    settings = settings_with(tmp_path, cc)
    before = probe_runs.count
    first = cpu_fingerprint(settings)
    assert cpu_fingerprint(settings) == first
    assert probe_runs.count - before == 1
    fake_cc(tmp_path, "upgraded-cc", "exit 1", version="fake cc 22")
    assert cpu_fingerprint(settings) != first
    assert probe_runs.count - before == 2


@cj.kernel
def doubled(x: cj.Array[cj.f32], out: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        out[i] = x[i] * 2.0


def test_settings_changed_after_a_client_is_made_never_change_how_or_where_it_compiles(
    tmp_path: Path, settings_restored: None
) -> None:
    real = config.settings().cc
    logs = {name: tmp_path / f"{name}.log" for name in ("first", "second")}
    wrappers = {
        name: fake_cc(tmp_path, f"{name}-cc", f'echo "$@" >> {log}\nexec {real} "$@"', name)
        for name, log in logs.items()
    }
    config.override(cc=str(wrappers["first"]), march_native=True)
    client = CpuClient()
    namespace = client.target.artifacts.namespace
    config.override(cc=str(wrappers["second"]), march_native=False)
    x = np.random.default_rng(7).random(100, dtype=np.float32)
    out = np.empty_like(x)
    doubled.launch(client, 2, 64, x, out)
    np.testing.assert_array_equal(out, x * np.float32(2.0))
    assert "-march=native" in logs["first"].read_text()
    assert not logs["second"].exists()
    config.override(cc=str(wrappers["first"]), march_native=True)
    assert namespace.endswith(cpu_fingerprint())


CLEAN = """
from cubejit.backends.cpu import CpuCompiler, CpuLowered
CpuCompiler().finalize(None, CpuLowered("void f(void) {}", "k", "f.py:1", ()))
"""


def test_the_next_process_removes_compile_folders_killed_processes_left_and_only_those(
    tmp_path: Path,
) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    hours_ago = time.time() - 2 * 3600
    folders = {}
    for name in ("cubejit-cc-killed", "cubejit-cc-running", "cubejit-cc-another-user", "keep-me"):
        folders[name] = temp / name
        folders[name].mkdir()
        (folders[name] / "kernel.c").write_text("int x;")
    target = temp / "elsewhere"
    target.mkdir()
    (target / "precious").write_text("kept")
    (temp / "cubejit-cc-link").symlink_to(target)
    if os.getuid() == 0:
        os.chown(folders["cubejit-cc-another-user"], 4321, 4321)
    else:
        folders.pop("cubejit-cc-another-user")
    for name, folder in folders.items():
        if name != "cubejit-cc-running":
            os.utime(folder, (hours_ago, hours_ago))
    os.utime(target, (hours_ago, hours_ago))
    os.utime(temp / "cubejit-cc-link", (hours_ago, hours_ago), follow_symlinks=False)
    environ = dict(os.environ, TMPDIR=str(temp), CUBEJIT_CACHE_DIR=str(tmp_path / "root"))
    subprocess.run([sys.executable, "-c", CLEAN], env=environ, check=True)
    left = sorted(p.name for p in temp.iterdir())
    assert "cubejit-cc-killed" not in left
    assert {"cubejit-cc-running", "keep-me", "cubejit-cc-link", "elsewhere"} <= set(left)
    assert "cubejit-cc-another-user" in left or os.getuid() != 0
    assert (target / "precious").read_text() == "kept"
