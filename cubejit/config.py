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
import math
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from logging import getLogger
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from cubejit import trust
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
    check_bounds: bool = False
    """Whether clients launch checked variants, every access compared with its buffer's
    length (``CUBEJIT_CHECK_BOUNDS``)."""
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
    "check_bounds": ("CUBEJIT_CHECK_BOUNDS", bool),
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
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: cannot read configuration: {e}") from e


def _convert(value: object, kind: type, where: str, key: str) -> object:
    """``value`` (text from a variable, or a TOML value from a file) as a ``kind``."""
    if kind is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if isinstance(value, str) and text in _TRUE:
            return True
        if isinstance(value, str) and text in _FALSE:
            return False
        raise ConfigError(f"{where}: {key} must be true or false, not {value!r}")
    if kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        try:
            if not isinstance(value, str):
                raise ValueError
            return int(value)
        except ValueError:
            raise ConfigError(f"{where}: {key} must be an integer, not {value!r}") from None
    if kind is float:
        try:
            if isinstance(value, bool) or not isinstance(value, int | float | str):
                raise ValueError
            number = float(value)
        except ValueError:
            raise ConfigError(f"{where}: {key} must be a number, not {value!r}") from None
        if not math.isfinite(number) or number <= 0:
            raise ConfigError(f"{where}: {key} must be a positive number of seconds, not {value!r}")
        return number
    if not isinstance(value, str):
        raise ConfigError(f"{where}: {key} must be a string, not {value!r}")
    if not value.strip():
        raise ConfigError(f"{where}: {key} must not be empty, not {value!r}")
    if kind is Path:
        return Path(value).expanduser()
    return value


def _checked(key: str, value: object, where: str) -> object:
    """``value`` of ``key`` once converted, or a ConfigError naming ``where``."""
    if key == "record_level" and value not in RECORD_LEVELS:
        raise ConfigError(
            f"{where}: record_level must be one of {', '.join(RECORD_LEVELS)}, not {value!r}"
        )
    if key in ("parallelism", "keep_sessions") and isinstance(value, int) and value < 1:
        raise ConfigError(f"{where}: {key} must be at least 1, not {value}")
    if key == "env":
        return environment_name(str(value), where)
    if key == "store":
        check_store(str(value), where)
    return value


def environment_name(name: str, where: str) -> str:
    """``name`` as an environment's name; a ConfigError naming ``where`` when it is empty."""
    if not name.strip():
        raise ConfigError(f"{where}: an environment name must not be empty, not {name!r}")
    return name


STORE_SCHEMES = ("redis", "rediss", "unix")
"""The URL schemes a shared store may have."""


def check_store(url: str, where: str) -> None:
    """Raises a ConfigError naming ``where`` unless ``url`` names a Redis server cubejit can
    use: ``redis://``, ``rediss://`` or ``unix://``, a numeric port, a numeric database, and a
    positive ``lease``."""
    parts = urlsplit(url)
    if parts.scheme not in STORE_SCHEMES:
        raise ConfigError(
            f"{where}: store must be a redis://host:port/db URL (or rediss://, unix://), "
            f"not {_without_password(url)!r}"
        )
    try:
        parts.port  # noqa: B018
    except ValueError:
        raise ConfigError(
            f"{where}: store {_without_password(url)!r}: the port must be a number"
        ) from None
    database = parts.path.strip("/") if parts.scheme != "unix" else ""
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    database = query.get("db", database)
    if database and not database.isdigit():
        raise ConfigError(
            f"{where}: store {_without_password(url)!r}: the database must be a number, "
            f"not {database!r}"
        )
    store_lease(url, where)


def store_lease(url: str, where: str) -> float | None:
    """The seconds of the store URL's ``lease`` query parameter, or ``None`` when it has
    none; a ConfigError naming ``where`` unless it is a positive finite number."""
    query = dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))
    if "lease" not in query:
        return None
    text = query["lease"]
    try:
        lease = float(text)
    except ValueError:
        lease = math.nan
    if not math.isfinite(lease) or lease <= 0:
        raise ConfigError(
            f"{where}: store {_without_password(url)!r}: lease must be a positive number of "
            f"seconds, not {text!r}"
        )
    return lease


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@")))


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
            converted = _convert(value, _FIELDS[key][1], str(source), key)
            values[key] = _checked(key, converted, str(source))
    for key, (variable, kind) in _FIELDS.items():
        raw = environ.get(variable)
        if raw is not None and raw != "":
            where = f"environment variable {variable}"
            values[key] = _checked(key, _convert(raw, kind, where, key), where)
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
    yields to ``CUBEJIT_ENV`` and to a configuration file's ``env``. A file that is not
    trusted (another user's, writable by others, a link: :mod:`cubejit.trust`) is ignored with
    a WARNING: it would choose which store's code runs."""
    chosen = cache_dir.expanduser() / CHOSEN_ENVIRONMENT_FILE
    refused = trust.refusal(chosen)
    if refused is not None:
        getLogger("cubejit.environment").warning(
            "cubejit: %s is not trusted (%s); it is ignored and the environment %r is used",
            chosen,
            refused,
            "default",
        )
        return ""
    try:
        return chosen.read_text("utf-8").strip()
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
