"""How a log line looks: text for people (the default), or one JSON object a line (``LOG_FORMAT=json``).

Both show the fields of :mod:`shared.log_context` the record was made with (the record factory of
:mod:`shared.app.logs` puts them on every record as ``record.mnemo_context``): text lines end with
``[turn=… platform=… user=…]``, JSON lines have them as keys. A JSON line holds the time (UTC, ISO
8601), level, logger, process id, message, those fields and, when there is one, the traceback as
``exc``; nothing else a record carries (libraries' ``extra`` data stays out).
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

from shared.log_context import FIELDS

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
CONTEXT_ATTRIBUTE = "mnemo_context"


def context_of(record: logging.LogRecord) -> dict[str, str]:
    return getattr(record, CONTEXT_ATTRIBUTE, None) or {}


class TextFormatter(logging.Formatter):
    """``TEXT_FORMAT``, then the record's log context in brackets when it has one."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def formatMessage(self, record: logging.LogRecord) -> str:
        line = super().formatMessage(record)
        context = context_of(record)
        shown = " ".join(f"{name}={context[name]}" for name in FIELDS if name in context)
        return f"{line} [{shown}]" if shown else line


class JsonFormatter(logging.Formatter):
    """One JSON object a line; newlines inside the message or traceback are escaped, so a line is an event."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "pid": record.process,
            "message": record.getMessage(),
        }
        line.update(context_of(record))
        if record.exc_info and not record.exc_text:  # the redaction may have put a cleaned traceback here
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line["exc"] = record.exc_text
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def formatter(log_format: str) -> logging.Formatter:
    """The formatter ``LOG_FORMAT`` names."""
    return JsonFormatter() if log_format == "json" else TextFormatter()
