"""The cost of a workflow step (issue 34): statements and time a ``ctx.step`` adds to a job.

Per backend, jobs of a no-op task and jobs of the same task calling ``ctx.step`` ``STEPS`` times
(a trivial function each) are run by ``rota.drain()`` in this process (concurrency 50), in
alternating rounds; the difference, per step, is the step's own cost: its statements (counted
on the engine; the first step of a run also reads the job's saved steps, one statement a job,
spread here over its five steps) and its wall time. A replayed step (saved, returned without
running) costs no statement of its own: the stepping jobs are run a second time from their
saved steps, and the statements they take beyond a plain job's are the one read of them.

    python -m bench.steps                           # SQLite, MariaDB, PostgreSQL
    python -m bench.steps --backends mariadb --jobs 500
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import event, update

from bench import rota_bench
from bench.common import Config
from rota import Enqueue, JobContext, Rota

STEPS = 5


@contextmanager
def counted(rota: Rota) -> Iterator[list[int]]:
    """The statements the rota's engine runs meanwhile, in ``[0]``."""
    seen = [0]

    def count(*_: object) -> None:
        seen[0] += 1

    engine = rota.store.engine  # type: ignore[attr-defined]
    event.listen(engine, "before_cursor_execute", count)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", count)


def run(rota: Rota, task: str, jobs: int) -> tuple[float, int]:
    """Seconds and statements to queue-free run ``jobs`` jobs of ``task`` (already queued)."""
    with counted(rota) as seen:
        started = time.perf_counter()
        rota.drain()
        return time.perf_counter() - started, seen[0]


def measure(config: Config, backend: str, jobs: int, rounds: int) -> dict[str, float]:
    per_step: list[float] = []
    statements: list[float] = []
    replayed: list[float] = []
    with rota_bench.fresh(config, backend, concurrency=50) as (rota, _, _):

        @rota.task(name="stepping", retries=0)
        async def stepping(ctx: JobContext, steps: int) -> None:
            for n in range(steps):
                await ctx.step("step", lambda n=n: n)

        for _ in range(rounds):
            results = {}
            for steps in (0, STEPS):
                rota.queue_many([Enqueue("stepping", steps) for _ in range(jobs)])
                results[steps] = run(rota, "stepping", jobs)
            (plain, plain_sql), (stepped, stepped_sql) = results[0], results[STEPS]
            per_step.append((stepped - plain) / (jobs * STEPS))
            statements.append((stepped_sql - plain_sql) / (jobs * STEPS))
            # Every stepping job again, from its saved steps: the replay's cost.
            table = rota.store.schema.jobs  # type: ignore[attr-defined]
            with rota.store.engine.begin() as connection:  # type: ignore[attr-defined]
                connection.execute(
                    update(table)
                    .where(table.c.task == "stepping", table.c.has_workflow.is_(True))
                    .values(state="pending", finished_at=None, attempt=0)
                )
            _, again_sql = run(rota, "stepping", jobs)
            replayed.append((again_sql - plain_sql) / jobs)
    return {
        "ms per step": statistics.median(per_step) * 1000,
        "statements per step": statistics.median(statements),
        "statements per replayed job (5 saved steps)": statistics.median(replayed),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="sqlite,mariadb,postgres")
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    config = Config(backends=tuple(options.backends.split(",")), jobs=options.jobs)
    for backend in config.backends:
        figures = measure(config, backend, options.jobs, options.rounds)
        shown = ", ".join(f"{name} {value:.2f}" for name, value in figures.items())
        print(f"{backend}: {shown}", flush=True)


if __name__ == "__main__":
    main()
