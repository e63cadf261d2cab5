"""A JSON-lines formatter for ``rota worker --log-format json``: one object per record."""

from __future__ import annotations

import json
import logging
from datetime import datetime, timezone
from typing import Any

STANDARD = frozenset(set(vars(logging.makeLogRecord({}))) | {"message", "asctime"})


class JsonLines(logging.Formatter):
    """Every record as one JSON object; rota's event fields become keys of their own."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, timezone.utc).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        extra = {k: v for k, v in vars(record).items() if k not in STANDARD and v is not None}
        if "event" not in extra:
            data["message"] = record.getMessage()
        data.update(extra)
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info)
        return json.dumps(data, default=str, ensure_ascii=False)
