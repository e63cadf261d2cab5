"""The service's own settings, read from the environment once, at start-up.

rota's settings are not here: ``Rota()`` reads ``$ROTA_DATABASE_URL`` and every
``ROTA_<KEYWORD>`` itself (``ROTA_CONCURRENCY``, ``ROTA_TABLE_PREFIX``,
``ROTA_ALERT_AFTER_FAILURES``, ...), so the ``rota`` command run with the same environment file
(``rota check``, ``rota schedules``) looks at the same database and tables.  The service's own
variables start with ``SERVICE_``: rota warns about a ``ROTA_*`` name it does not know, and
these are not its.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Settings:
    data_dir: Path
    """Where snapshots and reports are written; shared by the replicas (one host, or NFS)."""
    accounts_url: str
    """The upstream list of accounts the sync fetches (``https://``, or ``file://``)."""
    alert_webhook: str | None
    """A chat webhook that gets a message when a schedule is failing; none: only logged."""
    report_cron: str
    report_tz: str
    keep_days: int
    """How long snapshots and reports are kept, counted back from the cleanup's tick."""

    @property
    def snapshots(self) -> Path:
        return self.data_dir / "snapshots"

    @property
    def reports(self) -> Path:
        return self.data_dir / "reports"

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] = os.environ) -> Settings:
        """``$SERVICE_DATA_DIR`` (``./var``), ``$SERVICE_ACCOUNTS_URL`` (required),
        ``$SERVICE_ALERT_WEBHOOK`` (none), ``$SERVICE_REPORT_CRON`` (``0 6 * * *``),
        ``$SERVICE_REPORT_TZ`` (``UTC``) and ``$SERVICE_KEEP_DAYS`` (``14``)."""
        accounts_url = environ.get("SERVICE_ACCOUNTS_URL", "").strip()
        if not accounts_url:
            raise RuntimeError("set SERVICE_ACCOUNTS_URL to the upstream list of accounts")
        keep_days = environ.get("SERVICE_KEEP_DAYS", "14").strip()
        if not keep_days.isdigit() or int(keep_days) < 1:
            raise RuntimeError(f"SERVICE_KEEP_DAYS must be a number of days, got {keep_days!r}")
        return cls(
            data_dir=Path(environ.get("SERVICE_DATA_DIR") or "var"),
            accounts_url=accounts_url,
            alert_webhook=environ.get("SERVICE_ALERT_WEBHOOK") or None,
            report_cron=environ.get("SERVICE_REPORT_CRON") or "0 6 * * *",
            report_tz=environ.get("SERVICE_REPORT_TZ") or "UTC",
            keep_days=int(keep_days),
        )
