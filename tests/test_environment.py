"""Every ``Rota`` keyword from its ``ROTA_<KEYWORD>`` variable: parsed by its type, checked as
the keyword is, the keyword winning; unknown ``ROTA_*`` names reported once; one documented
table of them all."""

from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path

import pytest

from rota import ConfigError, Rota
from rota.config import RotaConfig, environment_table


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/jobs.db"


def test_each_type_is_read_from_its_variable(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "ROTA_CONCURRENCY": "7",
        "ROTA_CATCHUP_MISSED": "yes",
        "ROTA_AUTO_MIGRATE": "false",
        "ROTA_POLL_INTERVAL": "0.25",
        "ROTA_TABLE_PREFIX": "env_",
        "ROTA_SUCCEEDED_RETENTION": "3600",
        "ROTA_QUEUES": "mail=2, default=5",
        "ROTA_ALERT_AFTER_FAILURES": "3",
        "ROTA_LOG_FORMAT": "json",
    }.items():
        monkeypatch.setenv(name, value)
    rota = Rota(url)
    config = rota.config
    assert rota.events.log_format == "json"
    assert config.concurrency == 7 and config.catchup_missed and not config.auto_migrate
    assert config.poll_interval == 0.25 and config.table_prefix == "env_"
    assert config.succeeded_retention == timedelta(hours=1)
    assert config.queues == {"mail": 2, "default": 5}
    assert config.alert_after_failures == 3


def test_a_keyword_wins_over_its_variable(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROTA_CONCURRENCY", "0")
    monkeypatch.setenv("ROTA_MAX_SNOOZES", "4")
    monkeypatch.setenv("ROTA_LOG_FORMAT", "json")
    rota = Rota(url, concurrency=3, log_format="text")
    assert (rota.config.concurrency, rota.config.max_snoozes) == (3, 4)
    assert rota.events.log_format == "text"


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("ROTA_CONCURRENCY", "many", "$ROTA_CONCURRENCY must be an integer, got 'many'"),
        ("ROTA_CONCURRENCY", "0", "$ROTA_CONCURRENCY: concurrency must be an int of at least 1"),
        ("ROTA_CATCHUP_MISSED", "maybe", "$ROTA_CATCHUP_MISSED must be true or false"),
        ("ROTA_KEEPALIVE", "2", "$ROTA_KEEPALIVE: keepalive must be at least 4 seconds"),
        ("ROTA_LEASE_SECONDS", "1", "$ROTA_LEASE_SECONDS: lease_seconds must be at least three"),
        ("ROTA_FAILED_RETENTION", "-1", "$ROTA_FAILED_RETENTION: failed_retention must be"),
        ("ROTA_QUEUES", "mail", "$ROTA_QUEUES must be queue=concurrency pairs"),
        ("ROTA_QUEUES", "mail=0", "$ROTA_QUEUES: queue 'mail''s concurrency must be"),
        ("ROTA_TABLE_PREFIX", "a-b", "$ROTA_TABLE_PREFIX: table_prefix must be up to 20"),
        ("ROTA_LOG_FORMAT", "xml", "$ROTA_LOG_FORMAT must be text or json, got 'xml'"),
    ],
)
def test_a_bad_value_is_refused_naming_its_variable(
    url: str, monkeypatch: pytest.MonkeyPatch, name: str, value: str, message: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as raised:
        Rota(url)
    assert str(raised.value).startswith(message), raised.value


def test_an_unknown_variable_is_reported_once_with_the_nearest_name(
    url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("ROTA_CONCURENCY", "7")
    monkeypatch.setenv("ROTA_TEST_ANYTHING", "1")
    monkeypatch.setenv("ROTA_DASHBOARD_TOKEN", "secret")
    with caplog.at_level(logging.WARNING, logger="rota"):
        Rota(url)
        Rota(url)
    warnings = [record.getMessage() for record in caplog.records]
    assert warnings == [
        "unknown setting $ROTA_CONCURENCY is ignored; did you mean ROTA_CONCURRENCY?"
    ]


def test_the_table_of_variables_lists_every_setting() -> None:
    """The table docs/reference/configuration.md shows (tests/docs checks it is there)."""
    shown = environment_table()
    for item in RotaConfig.__dataclass_fields__:
        variable = "ROTA_DATABASE_URL" if item == "url" else f"ROTA_{item.upper()}"
        assert f"| `{variable}` | `{item}`" in shown
    assert "| `ROTA_LOG_FORMAT` | `log_format` |" in shown


def test_the_cli_reads_the_table_prefix_and_namespace_from_the_environment(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``rota`` commands look where ``Rota()`` in the same environment looks."""
    import json

    from click.testing import CliRunner

    from rota.cli import main

    monkeypatch.setenv("ROTA_TABLE_PREFIX", "svc_")
    monkeypatch.setenv("ROTA_NAMESPACE", "billing")
    rota = Rota(url)
    rota.schedule("0 3 * * *", "nightly", name="nightly")
    rota.close()
    result = CliRunner().invoke(main, ["schedules", "--json", "--url", url])
    assert [row["name"] for row in json.loads(result.stdout)] == ["nightly"], result.output
    other = CliRunner().invoke(main, ["schedules", "--json", "--url", url, "--namespace", "x"])
    assert json.loads(other.stdout) == []
