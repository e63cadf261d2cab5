"""What ``rota[mysql]`` brings: PyMySQL with RSA, which MySQL 8's default authentication
(``caching_sha2_password``) needs for a full login over a connection without TLS."""

from __future__ import annotations

from importlib.metadata import requires

from packaging.requirements import Requirement


def test_the_mysql_extra_brings_pymysql_with_rsa() -> None:
    declared = [Requirement(line) for line in requires("rota") or []]
    mysql = {
        r.name.lower(): r for r in declared if r.marker and r.marker.evaluate({"extra": "mysql"})
    }
    assert "rsa" in mysql["pymysql"].extras
    assert "cryptography" in mysql
    import cryptography  # installed with it, as PyMySQL's sha256 and caching_sha2 logins use

    assert cryptography.__version__
