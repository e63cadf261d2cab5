"""rota's pytest plugin, as a user's test suite meets it: pytester runs a user's test file in a
pytest of its own, which loads the plugin from its entry point as any installation would."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, text

from rota.store.schema import notify_function
from rota.store.urls import normalise_url
from tests.conftest import Database

TESTING = (Path(__file__).parents[2] / "docs" / "testing.md").read_text()
RETRIED = re.split(r"```python[^\n]*\n", TESTING)[1].split("```")[0]
"""The testing page's example, run as it stands there."""

# Each test queues one job and must find only it; each notes its prefix for the outer test.
ISOLATED = """
from pathlib import Path

import pytest
from rota import Rota

app = Rota("sqlite:///app.db")


@app.task
def greet(ctx, name):
    return f"hello {name}"


@pytest.mark.parametrize("name", ["ana", "bo"])
def test_alone(make_rota, rota_prefix, name):
    Path(f"prefix-{name}.txt").write_text(rota_prefix)
    rota = make_rota(tasks_from=app)
    job_id = rota.queue(greet, name)
    assert [job.id for job in rota.store.reads.jobs()] == [job_id]
    assert rota.drain().succeeded == 1
    assert rota.job(job_id).result == f"hello {name}"
"""


def run(pytester: pytest.Pytester, *arguments: str) -> pytest.RunResult:
    """The user's pytest, in this process; Hypothesis's plugin is left out because it imports
    Hypothesis anew in every run (pytester forgets the modules a run imported), and
    pytest-django's because this process may have set up Django's test environment already."""
    left_out = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:django")
    return pytester.runpytest(*left_out, *arguments)


def test_the_readme_example_passes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(RETRIED)
    run(pytester).assert_outcomes(passed=1)


def test_a_failing_user_test_is_reported_failing(pytester: pytest.Pytester) -> None:
    failing = RETRIED.replace('== "succeeded"', '== "failed"')
    assert failing != RETRIED
    pytester.makepyfile(failing)
    result = run(pytester, "-rf")  # the short summary names the failure
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["E  *AssertionError*", "FAILED *::test_charge_is_retried*"])


def test_the_clock_starts_at_rota_start_and_the_url_is_a_file_of_the_test(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        """
        from rota.pytest_plugin import ROTA_START

        def test_defaults(rota, rota_clock, rota_url, rota_prefix, tmp_path):
            assert rota_clock.now() == ROTA_START
            assert rota.clock is rota_clock
            assert rota_url == f"sqlite:///{tmp_path / 'rota.db'}"
            assert rota.config.url == rota_url
            assert rota.config.table_prefix == rota_prefix
        """
    )
    run(pytester).assert_outcomes(passed=1)


def test_the_url_comes_from_the_option_then_the_ini_then_the_environment(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        """
        import os

        def test_url(rota_url):
            assert rota_url == os.environ["EXPECTED"]
        """
    )
    monkeypatch.setenv("ROTA_TEST_URL", "sqlite:///from-env.db")
    monkeypatch.setenv("EXPECTED", "sqlite:///from-env.db")
    run(pytester).assert_outcomes(passed=1)
    pytester.makeini("[pytest]\nrota_url = sqlite:///from-ini.db\n")
    monkeypatch.setenv("EXPECTED", "sqlite:///from-ini.db")
    run(pytester).assert_outcomes(passed=1)
    monkeypatch.setenv("EXPECTED", "sqlite:///from-option.db")
    run(pytester, "--rota-url", "sqlite:///from-option.db").assert_outcomes(passed=1)


def given_url_isolates_and_drops(pytester: pytest.Pytester, url: str) -> None:
    """Two tests on one database see only their own jobs, under prefixes of their own whose
    tables (and PostgreSQL's trigger function) are gone afterwards; the application's
    ``Rota`` they copy the task from never touches its own database."""
    pytester.makepyfile(ISOLATED)
    result = run(pytester, "--rota-url", url)
    result.assert_outcomes(passed=2)
    prefixes = {path.read_text() for path in pytester.path.glob("prefix-*.txt")}
    assert len(prefixes) == 2
    assert not (pytester.path / "app.db").exists()
    engine = create_engine(normalise_url(url))
    try:
        with engine.connect() as connection:
            left = [
                name
                for name in inspect(connection).get_table_names()
                if name.startswith(tuple(prefixes))
            ]
            assert left == []
            if connection.dialect.name == "postgresql":
                functions = [notify_function(prefix) for prefix in prefixes]
                query = text("SELECT count(*) FROM pg_proc WHERE proname = ANY(:names)")
                assert connection.execute(query, {"names": functions}).scalar_one() == 0
    finally:
        engine.dispose()


def test_a_given_sqlite_url_isolates_tests_by_prefix(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    given_url_isolates_and_drops(pytester, f"sqlite:///{tmp_path / 'shared.db'}")


def test_a_given_server_url_isolates_tests_by_prefix(
    pytester: pytest.Pytester, server_db: Database
) -> None:
    given_url_isolates_and_drops(pytester, server_db.url)
