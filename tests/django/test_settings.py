"""``settings.ROTA`` and ``DATABASES`` as rota reads them: the keys it knows, the URL of each
backend through each driver, and passwords that only a URL built part by part keeps intact."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from rota import ConfigError, Rota
from rota.contrib.django import options
from rota.contrib.django.databases import backend_driver, database_url
from rota.contrib.django.project import check
from rota.store.urls import parse_url

PASSWORDS = ["P@ss:w0rd/Секрет", "a%41b?c#d&e=f g+h", "x@y@z", "@:/%"]


def mysql(**extra: Any) -> dict[str, Any]:
    return {"NAME": "shop", "USER": "app", "PASSWORD": "", "HOST": "db", "PORT": "", **extra}


def test_every_rota_keyword_in_upper_case_is_a_setting() -> None:
    chosen = options.read(
        {
            "DATABASE": "orders",
            "DRIVER": "pymysql",
            "TABLE_PREFIX": "jobs_",
            "CONCURRENCY": 8,
            "QUEUES": {"mail": 2},
            "FAILED_RETENTION": timedelta(days=3),
            "LOG_FORMAT": "json",
            "CLOCK": None,
        }
    )
    assert (chosen.database, chosen.driver) == ("orders", "pymysql")
    assert chosen.keywords == {
        "table_prefix": "jobs_",
        "concurrency": 8,
        "queues": {"mail": 2},
        "failed_retention": timedelta(days=3),
        "log_format": "json",
        "clock": None,
    }
    assert {"concurrency", "clock", "logger", "tracer_provider"} <= options.rota_keywords()
    assert options.read({}) == options.Options()


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ({"CONCURENCY": 3}, r"unknown key 'CONCURENCY' \(did you mean 'CONCURRENCY'\?\)"),
        ({"concurrency": 3}, r"unknown key 'concurrency' \(did you mean 'CONCURRENCY'\?\)"),
        ({"URL": "sqlite:///x.db"}, "unknown key 'URL'"),
        ({"DATABASE": ""}, "alias of DATABASES"),
        ({"DRIVER": 3}, "driver's name"),
    ],
)
def test_a_wrong_key_is_a_clear_config_error(setting: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        options.read(setting)


def test_a_setting_that_is_not_a_dict_is_refused() -> None:
    with pytest.raises(ConfigError, match="must be a dict"):
        options.read(["CONCURRENCY"])


def test_values_are_checked_as_rota_checks_them() -> None:
    with pytest.raises(ConfigError, match="concurrency"):
        check({"CONCURRENCY": 0})
    with pytest.raises(ConfigError, match="table_prefix"):
        check({"TABLE_PREFIX": "no spaces"})
    with pytest.raises(ConfigError, match="DATABASES does not define"):
        check({"DATABASE": "missing"})
    check({"DATABASE": "mariadb", "DRIVER": "pymysql", "CONCURRENCY": 2})


@pytest.mark.parametrize("driver", ["mysqldb", "pymysql"])
@pytest.mark.parametrize("password", PASSWORDS)
def test_mysql_through_either_driver_keeps_the_password(driver: str, password: str) -> None:
    url = parse_url(database_url("mysql", mysql(PASSWORD=password, PORT="3307"), driver))
    assert url.drivername == f"mysql+{driver}"
    assert (url.username, url.password, url.host, url.port, url.database) == (
        "app",
        password,
        "db",
        3307,
        "shop",
    )


def test_mysql_socket_and_options_reach_the_driver() -> None:
    settings = mysql(
        HOST="/run/mysqld/mysqld.sock",
        OPTIONS={
            "isolation_level": "read committed",  # Django's own: not the driver's
            "read_default_file": "/etc/my.cnf",
            "ssl": {"ca": "/etc/ca.pem", "check_hostname": True},
            "connect_timeout": 4,
        },
    )
    url = parse_url(database_url("mysql", settings, "mysqldb"))
    assert url.host is None
    assert dict(url.query) == {
        "unix_socket": "/run/mysqld/mysqld.sock",
        "read_default_file": "/etc/my.cnf",
        "ssl_ca": "/etc/ca.pem",
        "ssl_check_hostname": "true",
        "connect_timeout": "4",
    }


def test_an_option_a_url_cannot_carry_is_refused_not_dropped() -> None:
    with pytest.raises(ConfigError, match=r"OPTIONS\['conv'\]"):
        database_url("mysql", mysql(OPTIONS={"conv": {1: str}}), "mysqldb")
    with pytest.raises(ConfigError, match=r"OPTIONS\['ssl'\]\['verify_mode'\]"):
        database_url("mysql", mysql(OPTIONS={"ssl": {"verify_mode": "x"}}), "mysqldb")


@pytest.mark.parametrize("password", PASSWORDS)
def test_postgresql_keeps_the_password_and_its_options(password: str) -> None:
    settings = {
        "NAME": "shop",
        "USER": "app",
        "PASSWORD": password,
        "HOST": "/var/run/postgresql",
        "PORT": 5433,
        "OPTIONS": {"sslmode": "require", "server_side_binding": True, "pool": {"min_size": 2}},
    }
    url = parse_url(database_url("postgresql", settings, "psycopg"))
    assert (url.drivername, url.password, url.port, url.database) == (
        "postgresql+psycopg",
        password,
        5433,
        "shop",
    )
    assert dict(url.query) == {"host": "/var/run/postgresql", "sslmode": "require"}


def test_sqlite_is_its_file() -> None:
    url = parse_url(database_url("sqlite", {"NAME": "/srv/app/db dir/db.sqlite3"}, "pysqlite"))
    assert (url.drivername, url.database) == ("sqlite+pysqlite", "/srv/app/db dir/db.sqlite3")
    in_memory = database_url("sqlite", {"NAME": ":memory:"}, "pysqlite")
    with pytest.raises(ConfigError, match="in-memory"):
        Rota(in_memory)


def test_a_backend_or_driver_rota_has_not_is_refused() -> None:
    with pytest.raises(ConfigError, match="'oracle' backend"):
        database_url("oracle", {}, "oracledb")
    with pytest.raises(ConfigError, match="not a mysql driver"):
        database_url("mysql", mysql(), "psycopg")


def test_the_driver_is_the_module_django_uses() -> None:
    def backend(name: str) -> SimpleNamespace:
        return SimpleNamespace(Database=SimpleNamespace(__name__=name))

    assert backend_driver(backend("MySQLdb")) == "mysqldb"
    assert backend_driver(backend("pymysql")) == "pymysql"  # pymysql.install_as_MySQLdb()
    assert backend_driver(backend("psycopg")) == "psycopg"
    assert backend_driver(backend("sqlite3.dbapi2")) == "pysqlite"
    with pytest.raises(ConfigError, match="DRIVER"):
        backend_driver(backend("oracledb"))
