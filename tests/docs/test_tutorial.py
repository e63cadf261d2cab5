"""What the tutorial's two replicas promise and its page cannot show in real time: two
``rota worker app:rota`` processes on the tutorial's own ``app.py``, on MariaDB as its last step
deploys them, run every job once between them and each tick of a schedule once.

The page itself runs its blocks on SQLite (tests/docs/test_code_blocks.py); a tick of its daily
schedule cannot be waited for there, so here the schedule is moved to every minute, as an
operator would (``rota.update_schedule``), and the next minute's tick is awaited.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sysconfig
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import pytest

from rota import Enqueue, JobState, Rota
from tests.conftest import Database
from tests.helpers import wait_until

TUTORIAL = Path(__file__).resolve().parents[2] / "docs" / "tutorial.md"
ROTA = Path(sysconfig.get_path("scripts")) / "rota"
SIGN_UPS = 200

pytestmark = pytest.mark.slow


def tutorial_app() -> str:
    """The last ``app.py`` of the tutorial, with its URL from the environment, as its two
    replicas step says to write it for a server."""
    files = re.findall(r'```python title="app.py"\n(.*?)```', TUTORIAL.read_text(), re.DOTALL)
    assert files, "the tutorial writes no app.py"
    embedded = re.compile(r'^rota = Rota\("sqlite:///rota\.db"\).*$', re.MULTILINE)
    assert embedded.search(files[-1]), "the tutorial's app.py no longer names its SQLite file"
    return embedded.sub("rota = Rota()", files[-1])


def started_jobs(log: str) -> Counter[int]:
    return Counter(int(found) for found in re.findall(r"job\.started job_id=(\d+) ", log))


@pytest.mark.timeout(180)
def test_two_replicas_run_each_job_once_and_each_tick_once(
    mariadb: Database, tmp_path: Path
) -> None:
    (tmp_path / "app.py").write_text(tutorial_app())
    control = Rota(mariadb.url, table_prefix=mariadb.prefix, connect_timeout=10)
    control.jobs()  # the schema, before the workers race to make it
    env = {
        **os.environ,
        "ROTA_DATABASE_URL": mariadb.url,
        "ROTA_TABLE_PREFIX": mariadb.prefix,
        "PYTHONPATH": str(tmp_path),
    }
    logs = [tmp_path / f"worker-{number}.log" for number in (1, 2)]
    workers = []
    for log in logs:
        with log.open("wb") as sink:
            workers.append(
                subprocess.Popen(
                    [str(ROTA), "worker", "app:rota"],
                    cwd=tmp_path,
                    env=env,
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                )
            )
    try:
        ids, tick = replicas_at_work(control, workers)
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.send_signal(signal.SIGTERM)
        codes = [worker.wait(timeout=30) for worker in workers]
    texts = [log.read_text(errors="replace") for log in logs]
    assert codes == [0, 0], texts
    try:
        welcomes = control.find(task="send_welcome", limit=1000).jobs
        tick_jobs = [j for j in control.find(schedule="send_digest").jobs if j.scheduled_at == tick]
    finally:
        control.close()

    assert sorted(job.id for job in welcomes) == sorted(ids)
    assert {(job.state, job.attempt) for job in welcomes} == {(JobState.SUCCEEDED, 1)}
    by_worker = [started_jobs(text) for text in texts]
    together = by_worker[0] + by_worker[1]
    assert all(together[job_id] == 1 for job_id in ids), texts  # each job on one worker, once
    assert all(set(ids) & set(started) for started in by_worker), "one worker took every job"
    assert len(tick_jobs) == 1, texts
    assert together[tick_jobs[0].id] == 1, texts


def replicas_at_work(
    control: Rota, workers: list[subprocess.Popen[bytes]]
) -> tuple[list[int], datetime]:
    """Once both workers are live: the daily schedule moved to every minute, and sign-ups
    queued, as the tutorial's last step does; returns the jobs' ids and the tick awaited, once
    every job and that tick have succeeded."""
    wait_until(lambda: len(control.inspect.workers()) == 2, timeout=30)
    tick = control.update_schedule("send_digest", cron="* * * * *").next_run_at
    emails = [f"user{number}@example.com" for number in range(SIGN_UPS)]
    ids = control.queue_many([Enqueue("send_welcome", email) for email in emails])

    def done() -> bool:
        assert all(worker.poll() is None for worker in workers), "a worker died"
        ticks = control.find(schedule="send_digest", state="succeeded").jobs
        welcomes = control.count(task="send_welcome", state="succeeded")
        return welcomes == SIGN_UPS and any(job.scheduled_at == tick for job in ticks)

    left = (tick - datetime.now(timezone.utc)).total_seconds()
    wait_until(done, timeout=left + 30, every=0.2)
    return ids, tick
