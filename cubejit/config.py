"""Every setting of cubejit, read once into one typed object.

Settings come from a file, then from environment variables, which win. The file is
``cubejit.toml`` (top-level keys) or the ``[tool.cubejit]`` table of a ``pyproject.toml``,
whichever is found first walking up from the current directory. A malformed file or value is a
:class:`~cubejit.errors.ConfigError` naming the file (or variable) and the key: never ignored in
silence.

Code that needs a setting takes a :class:`Settings` (or calls :func:`settings`); no other module
reads ``os.environ`` for cubejit's own variables.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cubejit.errors import ConfigError

RECORD_LEVELS = ("off", "basic", "full")


@dataclass(frozen=True, slots=True)
class Settings:
    """What cubejit was told to do. Every field has a default that works on a fresh machine."""

    cache_dir: Path
    """The root holding environments (``CUBEJIT_CACHE_DIR``); default the user cache dir."""
    env: str = "default"
    """The active environment's name (``CUBEJIT_ENV``, else the file's, else the one
    ``cubejit env use`` chose)."""
    compilation_cache: bool = True
    """Whether artifacts persist (``CUBEJIT_COMPILATION_CACHE``); off selects memory only."""
    parallelism: int | None = None
    """Compile workers (``CUBEJIT_COMPILE_PARALLELISM``); ``None`` means one per CPU."""
    compile_timeout: float = 300.0
    """Seconds a platform compiler may run before it is killed (``CUBEJIT_COMPILE_TIMEOUT``)."""
    record_level: str = "basic"
    """``off``, ``basic`` or ``full`` (``CUBEJIT_RECORD_LEVEL``)."""
    keep_sessions: int | None = None
    """Sessions kept in an environment's records (``CUBEJIT_KEEP_SESSIONS``); ``None``: all."""
    dump_dir: Path | None = None
    """Where each compiled source is written, if set (``CUBEJIT_DUMP_DIR``)."""
    store: str | None = None
    """A shared store behind the local one, e.g. ``redis://host:6379/0`` (``CUBEJIT_STORE``)."""
    signing_key: str | None = None
    """Key that signs and checks entries of shared stores (``CUBEJIT_SIGNING_KEY``)."""
    store_timeout: float = 2.0
    """Seconds one shared-store operation may take (``CUBEJIT_STORE_TIMEOUT``)."""
    cc: str = "cc"
    """The C compiler of the CPU backend (``CC``)."""
    march_native: bool = True
    """Whether CPU code is built for this host's CPU (``CUBEJIT_MARCH_NATIVE``)."""
    tune_budget: float = 2.0
    """Seconds of timed runs a tuner spends on one tuning key (``CUBEJIT_TUNE_BUDGET``)."""
    source: Path | None = None
    """The configuration file these settings were read from, if any."""


_FIELDS: dict[str, tuple[str, type]] = {
    "cache_dir": ("CUBEJIT_CACHE_DIR", Path),
    "env": ("CUBEJIT_ENV", str),
    "compilation_cache": ("CUBEJIT_COMPILATION_CACHE", bool),
    "parallelism": ("CUBEJIT_COMPILE_PARALLELISM", int),
    "compile_timeout": ("CUBEJIT_COMPILE_TIMEOUT", float),
    "record_level": ("CUBEJIT_RECORD_LEVEL", str),
    "keep_sessions": ("CUBEJIT_KEEP_SESSIONS", int),
    "dump_dir": ("CUBEJIT_DUMP_DIR", Path),
    "store": ("CUBEJIT_STORE", str),
    "signing_key": ("CUBEJIT_SIGNING_KEY", str),
    "store_timeout": ("CUBEJIT_STORE_TIMEOUT", float),
    "cc": ("CC", str),
    "march_native": ("CUBEJIT_MARCH_NATIVE", bool),
    "tune_budget": ("CUBEJIT_TUNE_BUDGET", float),
}

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def default_cache_dir(environ: Mapping[str, str]) -> Path:
    """The user cache directory: ``$XDG_CACHE_HOME/cubejit``, else ``~/.cache/cubejit``."""
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "cubejit"


def find_file(start: Path) -> tuple[Path, Mapping[str, object]] | None:
    """The nearest configuration file at or above ``start`` and its cubejit table."""
    for folder in (start, *start.parents):
        own = folder / "cubejit.toml"
        if own.is_file():
            return own, _read_toml(own)
        project = folder / "pyproject.toml"
        if project.is_file():
            table = _read_toml(project).get("tool", {})
            if isinstance(table, dict) and "cubejit" in table:
                section = table["cubejit"]
                if not isinstance(section, dict):
                    raise ConfigError(f"{project}: [tool.cubejit] must be a table")
                return project, section
    return None


def _read_toml(path: Path) -> dict[str, object]:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"{path}: cannot read configuration: {e}") from e


def _convert(value: object, kind: type, where: str, key: str) -> object:
    if kind is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise ConfigError(f"{where}: {key} must be true or false, not {value!r}")
    if kind is int:
        try:
            if isinstance(value, bool):
                raise ValueError
            return int(value)  # type: ignore[call-overload]
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: {key} must be an integer, not {value!r}") from None
    if kind is float:
        try:
            return float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: {key} must be a number, not {value!r}") from None
    if kind is Path:
        return Path(str(value)).expanduser()
    return str(value)


def _checked(values: dict[str, object], where: str) -> dict[str, object]:
    level = values.get("record_level")
    if level is not None and level not in RECORD_LEVELS:
        raise ConfigError(
            f"{where}: record_level must be one of {', '.join(RECORD_LEVELS)}, not {level!r}"
        )
    for key in ("parallelism", "keep_sessions"):
        number = values.get(key)
        if isinstance(number, int) and number < 1:
            raise ConfigError(f"{where}: {key} must be at least 1, not {number}")
    return values


def read(environ: Mapping[str, str] | None = None, cwd: Path | None = None) -> Settings:
    """Reads the settings now: the configuration file, then ``environ`` over it."""
    environ = os.environ if environ is None else environ
    values: dict[str, object] = {}
    source: Path | None = None
    found = find_file(Path.cwd() if cwd is None else cwd)
    if found is not None:
        source, table = found
        for key, value in table.items():
            if key not in _FIELDS:
                raise ConfigError(
                    f"{source}: unknown key {key!r}; known keys: {', '.join(sorted(_FIELDS))}"
                )
            values[key] = _convert(value, _FIELDS[key][1], str(source), key)
        _checked(values, str(source))
    from_env: dict[str, object] = {}
    for key, (variable, kind) in _FIELDS.items():
        raw = environ.get(variable)
        if raw is not None and raw != "":
            from_env[key] = _convert(raw, kind, f"environment variable {variable}", key)
    for key, value in _checked(from_env, "environment").items():
        values[key] = value
    values.setdefault("cache_dir", default_cache_dir(environ))
    if "env" not in values:
        chosen = chosen_environment(Path(str(values["cache_dir"])))
        if chosen:
            values["env"] = chosen
    return Settings(source=source, **values)  # type: ignore[arg-type]


CHOSEN_ENVIRONMENT_FILE = "active-environment"
"""The file under the root where ``cubejit env use NAME`` keeps its choice."""


def chosen_environment(cache_dir: Path) -> str:
    """The environment ``cubejit env use`` chose under ``cache_dir``; empty when none. It
    yields to ``CUBEJIT_ENV`` and to a configuration file's ``env``."""
    try:
        return (cache_dir.expanduser() / CHOSEN_ENVIRONMENT_FILE).read_text("utf-8").strip()
    except OSError:
        return ""


_current: Settings | None = None


def settings() -> Settings:
    """The settings of this process, read on first use and kept."""
    global _current
    if _current is None:
        _current = read()
    return _current


def override(**changes: object) -> Settings:
    """Replaces some settings of this process (for tools and tests); returns the new ones."""
    global _current
    _current = dataclasses.replace(settings(), **changes)  # type: ignore[arg-type]
    return _current


def reset() -> None:
    """Forgets the settings read, so the next :func:`settings` reads them again."""
    global _current
    _current = None
