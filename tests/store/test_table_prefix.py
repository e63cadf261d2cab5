"""A table prefix with capitals works on every backend.

SQLAlchemy quotes a name holding capitals, so PostgreSQL keeps its case (``"Rota_Cap_jobs"``);
rota's own SQL text (migration 0008's trigger, 0009's first row, dropping the trigger's
function) must quote it the same way, or PostgreSQL folds it to lower case and finds no table;
the channel a worker listens on keeps the prefix's case too.
"""

from __future__ import annotations

import uuid

from sqlalchemy import inspect, text

from rota import JobContext, Rota
from rota.store.schema import notify_function
from tests.conftest import Database, drop_prefixed_tables
from tests.helpers import sql_store


def test_a_capitalised_prefix_migrates_queues_drains_and_is_dropped(db: Database) -> None:
    prefix = f"Rota_Cap_{uuid.uuid4().hex[:8]}_"
    rota = Rota(db.url, table_prefix=prefix)
    try:

        @rota.task
        def double(ctx: JobContext, n: int) -> int:
            return n * 2

        listener = rota.store.listen_for_jobs()  # PostgreSQL's, on the trigger's channel
        job = rota.queue(double, 21)
        if listener is not None:
            assert listener.wait(10), "the insert was announced"
            listener.close()
        assert rota.drain().succeeded == 1
        assert rota.result(job) == 42
        assert all(name.startswith(prefix) for name in sql_store(rota).schema.metadata.tables)
        rota.store.drop_schema()
        engine = sql_store(rota).engine
        with engine.connect() as connection:
            left = [name for name in inspect(connection).get_table_names() if prefix in name]
            functions = 0
            if db.backend == "postgres":
                query = text("SELECT count(*) FROM pg_proc WHERE proname = :name")
                functions = connection.execute(
                    query, {"name": notify_function(prefix)}
                ).scalar_one()
        assert left == []
        assert functions == 0
    finally:
        sql_store(rota).engine.dispose()
        if db.backend != "sqlite":
            drop_prefixed_tables(db.url, prefix)
