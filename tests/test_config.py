"""Settings: a file found walking up, environment variables over it, every mistake named."""

from __future__ import annotations

from pathlib import Path

import pytest

from cubejit import config
from cubejit.errors import ConfigError


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project folder with a nested working directory and no configuration yet."""
    (tmp_path / "src" / "deep").mkdir(parents=True)
    return tmp_path


def read(project: Path, environ: dict[str, str] | None = None) -> config.Settings:
    return config.read(
        environ={"XDG_CACHE_HOME": str(project / "xdg"), **(environ or {})},
        cwd=project / "src" / "deep",
    )


def test_a_fresh_machine_gets_working_defaults(project: Path) -> None:
    settings = read(project)
    assert settings.cache_dir == project / "xdg" / "cubejit"
    assert settings.env == "default"
    assert settings.compilation_cache is True
    assert settings.parallelism is None
    assert settings.record_level == "basic"
    assert settings.keep_sessions is None
    assert settings.dump_dir is None
    assert settings.source is None


def test_cubejit_toml_is_found_walking_up_from_the_working_directory(project: Path) -> None:
    (project / "cubejit.toml").write_text(
        'env = "serve"\nparallelism = 3\nrecord_level = "full"\nkeep_sessions = 5\n'
        'compile_timeout = 12.5\ncompilation_cache = false\ncache_dir = "~/kernels"\n'
    )
    settings = read(project)
    assert settings.source == project / "cubejit.toml"
    assert (settings.env, settings.parallelism, settings.record_level) == ("serve", 3, "full")
    assert (settings.keep_sessions, settings.compile_timeout) == (5, 12.5)
    assert settings.compilation_cache is False
    assert settings.cache_dir == Path.home() / "kernels"


def test_the_tool_table_of_pyproject_is_read(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.cubejit]\nenv = "ci"\n')
    settings = read(project)
    assert settings.env == "ci"
    assert settings.source == project / "pyproject.toml"


def test_a_pyproject_without_a_cubejit_table_does_not_stop_the_walk(project: Path) -> None:
    (project / "cubejit.toml").write_text('env = "outer"\n')
    (project / "src" / "pyproject.toml").write_text("[tool.other]\nx = 1\n")
    assert read(project).env == "outer"


def test_the_nearest_file_wins(project: Path) -> None:
    (project / "cubejit.toml").write_text('env = "outer"\n')
    (project / "src" / "cubejit.toml").write_text('env = "inner"\n')
    assert read(project).env == "inner"


def test_environment_variables_override_the_file(project: Path) -> None:
    (project / "cubejit.toml").write_text('env = "from-file"\nparallelism = 2\n')
    settings = read(
        project,
        {
            "CUBEJIT_ENV": "from-env",
            "CUBEJIT_COMPILE_PARALLELISM": "7",
            "CUBEJIT_COMPILATION_CACHE": "off",
            "CUBEJIT_DUMP_DIR": str(project / "dump"),
            "CUBEJIT_CACHE_DIR": str(project / "root"),
        },
    )
    assert (settings.env, settings.parallelism) == ("from-env", 7)
    assert settings.compilation_cache is False
    assert settings.dump_dir == project / "dump"
    assert settings.cache_dir == project / "root"


def test_an_empty_variable_leaves_the_setting_alone(project: Path) -> None:
    (project / "cubejit.toml").write_text('env = "from-file"\n')
    assert read(project, {"CUBEJIT_ENV": ""}).env == "from-file"


def test_a_file_that_is_not_toml_is_an_error_naming_the_file(project: Path) -> None:
    (project / "cubejit.toml").write_text("env = = broken\n")
    with pytest.raises(ConfigError, match=r"cubejit\.toml"):
        read(project)


def test_an_unknown_key_is_an_error_naming_the_file_and_the_key(project: Path) -> None:
    (project / "cubejit.toml").write_text("paralelism = 4\n")
    with pytest.raises(ConfigError, match=r"cubejit\.toml.*'paralelism'"):
        read(project)


def test_a_value_of_the_wrong_type_is_an_error_naming_the_file_and_the_key(
    project: Path,
) -> None:
    (project / "pyproject.toml").write_text('[tool.cubejit]\nparallelism = "many"\n')
    with pytest.raises(ConfigError, match=r"pyproject\.toml: parallelism must be an integer"):
        read(project)


def test_a_tool_entry_that_is_not_a_table_is_an_error(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool]\ncubejit = "yes"\n')
    with pytest.raises(ConfigError, match=r"\[tool\.cubejit\] must be a table"):
        read(project)


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("CUBEJIT_COMPILE_PARALLELISM", "lots", "CUBEJIT_COMPILE_PARALLELISM.*integer"),
        ("CUBEJIT_COMPILE_PARALLELISM", "0", "parallelism must be at least 1"),
        ("CUBEJIT_KEEP_SESSIONS", "-2", "keep_sessions must be at least 1"),
        ("CUBEJIT_RECORD_LEVEL", "verbose", "record_level must be one of off, basic, full"),
        ("CUBEJIT_COMPILATION_CACHE", "maybe", "CUBEJIT_COMPILATION_CACHE.*true or false"),
        ("CUBEJIT_COMPILE_TIMEOUT", "soon", "CUBEJIT_COMPILE_TIMEOUT.*number"),
    ],
)
def test_a_bad_variable_is_an_error_naming_it(
    project: Path, variable: str, value: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        read(project, {variable: value})


def test_a_bad_record_level_in_a_file_names_the_file(project: Path) -> None:
    (project / "cubejit.toml").write_text('record_level = "loud"\n')
    with pytest.raises(ConfigError, match=r"cubejit\.toml: record_level"):
        read(project)


def test_settings_are_read_once_until_reset(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    monkeypatch.setenv("CUBEJIT_ENV", "first")
    config.reset()
    try:
        assert config.settings().env == "first"
        monkeypatch.setenv("CUBEJIT_ENV", "second")
        assert config.settings().env == "first"
        assert config.override(record_level="off").record_level == "off"
        assert config.settings().env == "first"
        config.reset()
        assert config.settings().env == "second"
        assert config.settings().record_level == "basic"
    finally:
        config.reset()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("compile_timeout = nan", "compile_timeout must be a positive number of seconds"),
        ("compile_timeout = inf", "compile_timeout must be a positive number of seconds"),
        ("compile_timeout = 0", "compile_timeout must be a positive number of seconds"),
        ("store_timeout = -1.5", "store_timeout must be a positive number of seconds"),
        ("compile_timeout = true", "compile_timeout must be a number"),
        ("cache_dir = 5", "cache_dir must be a string, not 5"),
        ("parallelism = 1.7", "parallelism must be an integer, not 1.7"),
        ('env = ""', "env must not be empty"),
        ('cc = " "', "cc must not be empty"),
        ('store = "http://cache.internal:6379/0"', "store must be a redis://host:port/db URL"),
        ('store = "redis://cache.internal:sixty/0"', "the port must be a number"),
        ('store = "redis://cache.internal:6379/zero"', "the database must be a number"),
        ('store = "redis://cache.internal:6379/0?lease=nan"', "lease must be a positive number"),
        ('store = "redis://cache.internal:6379/0?lease=-3"', "lease must be a positive number"),
    ],
)
def test_a_malformed_value_in_a_file_is_an_error_naming_the_file_and_the_key(
    project: Path, text: str, message: str
) -> None:
    (project / "cubejit.toml").write_text(text + "\n")
    with pytest.raises(ConfigError, match=r"cubejit\.toml: ") as caught:
        read(project)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("CUBEJIT_COMPILE_TIMEOUT", "nan", "compile_timeout must be a positive number"),
        ("CUBEJIT_COMPILE_TIMEOUT", "inf", "compile_timeout must be a positive number"),
        ("CUBEJIT_COMPILE_TIMEOUT", "0", "compile_timeout must be a positive number"),
        ("CUBEJIT_STORE_TIMEOUT", "-1", "store_timeout must be a positive number"),
        ("CUBEJIT_COMPILE_PARALLELISM", "1.7", "parallelism must be an integer"),
        ("CUBEJIT_ENV", "   ", "env must not be empty"),
        ("CUBEJIT_STORE", "http://cache.internal/0", "store must be a redis://host:port/db URL"),
        ("CUBEJIT_STORE", "redis://cache.internal:port/0", "the port must be a number"),
        ("CUBEJIT_STORE", "redis://h:6379/0?lease=nan", "lease must be a positive number"),
        ("CUBEJIT_STORE", "redis://h:6379/0?lease=inf", "lease must be a positive number"),
    ],
)
def test_a_malformed_variable_is_an_error_naming_the_variable_and_the_key(
    project: Path, variable: str, value: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=rf"environment variable {variable}: ") as caught:
        read(project, {variable: value})
    assert message in str(caught.value)


def test_a_configuration_file_that_is_not_utf8_is_an_error_naming_the_file(
    project: Path,
) -> None:
    (project / "cubejit.toml").write_bytes(b'env = "caf\xe9"\n')
    with pytest.raises(ConfigError, match=r"cubejit\.toml: cannot read configuration"):
        read(project)


def test_a_store_url_password_never_appears_in_the_error(project: Path) -> None:
    url = "redis://:hunter2@cache.internal:port/0"
    with pytest.raises(ConfigError, match="the port must be a number") as caught:
        read(project, {"CUBEJIT_STORE": url})
    assert "hunter2" not in str(caught.value)


def test_choosing_an_empty_environment_name_is_an_error_and_chooses_nothing(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cubejit.cli import main

    before = config.settings()
    config.override(cache_dir=project / "root")
    try:
        assert main(["env", "use", ""]) == 1
    finally:
        config.override(cache_dir=before.cache_dir)
    assert "cubejit env use NAME: an environment name must not be empty" in capsys.readouterr().err
    assert not (project / "root" / config.CHOSEN_ENVIRONMENT_FILE).exists()
