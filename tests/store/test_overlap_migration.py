"""Revision 0012 on a database with schedules: existing schedules get the default overlap
policy ``skip`` (an overridden one keeps ``skip`` as its code's policy too), and going down
again removes the waiting links with the columns."""

from __future__ import annotations

from alembic import command
from sqlalchemy import text

from rota.core.overlap import Overlap
from rota.store import migrate, open_store
from tests.conftest import Database

ROW = (
    "INSERT INTO {table} (name, task, cron, tz, payload, queue, priority, source, state, "
    "next_run_at, created_at, updated_at, code_cron, code_tz) VALUES (:name, 'report', "
    "'*/5 * * * *', 'UTC', '{{}}', 'default', 0, 'code', 'active', '2026-01-01 00:00:00', "
    "'2026-01-01 00:00:00', '2026-01-01 00:00:00', :code_cron, :code_tz)"
)


def test_0012_gives_existing_schedules_skip_and_going_down_drops_the_waits(db: Database) -> None:
    store = open_store(db.url, db.prefix)
    config = migrate._config(db.prefix)
    with store.engine.connect() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0011")
        insert = text(ROW.format(table=f"{db.prefix}schedules"))
        connection.execute(insert, {"name": "plain", "code_cron": None, "code_tz": None})
        connection.execute(insert, {"name": "edited", "code_cron": "0 * * * *", "code_tz": "UTC"})
        connection.commit()
        command.upgrade(config, "0012")
        connection.commit()
    plain, edited = store.schedules.get("plain"), store.schedules.get("edited")
    assert plain is not None and edited is not None
    assert (plain.spec.overlap, plain.code_overlap) == (Overlap.SKIP, None)
    assert (edited.spec.overlap, edited.code_overlap) == (Overlap.SKIP, Overlap.SKIP)
    links = f"{db.prefix}dependencies"
    with store.engine.connect() as connection:
        connection.execute(
            text(f"INSERT INTO {links} (job_id, depends_on, until_final) VALUES (2, 1, :yes)"),
            {"yes": True},
        )
        connection.execute(
            text(f"INSERT INTO {links} (job_id, depends_on, until_final) VALUES (3, 1, :no)"),
            {"no": False},
        )
        connection.commit()
        config.attributes["connection"] = connection
        command.downgrade(config, "0011")
        connection.commit()
        kept = connection.execute(text(f"SELECT job_id FROM {links}")).scalars().all()
        assert kept == [3], "a waiting link goes; a dependency stays"
        command.upgrade(config, "head")
        connection.commit()
    store.dispose()
