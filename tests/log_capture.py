"""A test's view of the process's log: every record at a level, as ``LOG_FORMAT=json`` writes it."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from shared.app.log_format import JsonFormatter
from shared.app.logs import redact_every_record


@contextmanager
def json_logs(level: int, secrets: Iterable[str] = ()) -> Iterator[io.StringIO]:
    """Every record of the process at ``level`` and above as JSON lines, with the record factory of a configured
    process (redaction, log context); the root logger and the factory are put back afterwards."""
    root, factory = logging.getLogger(), logging.getLogRecordFactory()
    out, before = io.StringIO(), root.level
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter())
    handler.setLevel(level)
    redact_every_record(secrets)
    root.addHandler(handler)
    root.setLevel(level)
    try:
        yield out
    finally:
        root.removeHandler(handler)
        root.setLevel(before)
        logging.setLogRecordFactory(factory)
