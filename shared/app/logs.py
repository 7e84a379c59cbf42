"""What Mnemo's logs may hold: never a configured secret, and files only their owner can read.

Libraries print secrets at DEBUG (python-telegram-bot logs the Bot API URL, which holds the token;
uvicorn's access log shows a sign-in link's ``?token=``), and an error's text may quote a URL with its
password. So every log record of the process is redacted when it is made (a record factory, not a
handler's filter: Celery, uvicorn and the libraries bring handlers of their own), at every level.
What users say is logged at DEBUG at most: python-telegram-bot and discord.py log whole updates and
gateway events only at DEBUG, and so does Mnemo; SQLAlchemy hides statement parameters from its errors
(``hide_parameters``), so a failed statement's traceback never quotes a message either.
"""

from __future__ import annotations

import io
import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO, Any

from shared import log_context
from shared.app.log_format import CONTEXT_ATTRIBUTE
from shared.redaction import redact

LOGGED_TEXT_MAX_CHARS = 16_000
"""A log message, and each string argument of one, is cut to this many characters (after redaction, so a
secret is never cut into a visible half): a 120,000-character request path or display name costs a log
line of bounded size, not a line as long as the input."""
CUT_MARK = "…[{} chars cut]"
PRIVATE_FILE_MODE = 0o600
PRIVATE_DIRECTORY_MODE = 0o700
_PLAIN_FORMATTER = logging.Formatter()
_ORIGINAL_FACTORY = logging.getLogRecordFactory()


class SecretRedactor(logging.Filter):
    """Replaces each configured secret (and any URL password or ``?token=`` value) in a record by ``***``."""

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        self.secrets = tuple(secrets)

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.args:
            shown = str(record.msg)
            if (cleaned := self._clean(shown)) != shown:
                record.msg = cleaned
        else:  # string arguments are cleaned one by one, so formatters that read them (uvicorn's) still work
            if isinstance(record.args, tuple):
                record.args = tuple(self._clean(arg) if isinstance(arg, str) else arg for arg in record.args)
            elif isinstance(record.args, Mapping):
                record.args = {key: self._clean(arg) if isinstance(arg, str) else arg
                               for key, arg in record.args.items()}
            self._collapse_if_still_secret(record)
        if record.exc_info and not record.exc_text:
            shown = _PLAIN_FORMATTER.formatException(record.exc_info)
            if (cleaned := self._clean(shown)) != shown:
                record.exc_text = cleaned
        if record.stack_info:
            record.stack_info = self._clean(record.stack_info)
        return True

    def _clean(self, text: str) -> str:
        return bounded(redact(text, self.secrets))

    def _collapse_if_still_secret(self, record: logging.LogRecord) -> None:
        """The template, or an argument that is no string (a URL object, an exception), may still show a secret."""
        try:
            message = record.getMessage()
        except Exception:  # a malformed call: logging reports it when the record is emitted
            return
        if (cleaned := redact(message, self.secrets)) != message:
            record.msg, record.args = bounded(cleaned), None


def bounded(text: str) -> str:
    """``text`` cut to :data:`LOGGED_TEXT_MAX_CHARS`, saying how much was cut."""
    if len(text) <= LOGGED_TEXT_MAX_CHARS:
        return text
    return text[:LOGGED_TEXT_MAX_CHARS] + CUT_MARK.format(len(text) - LOGGED_TEXT_MAX_CHARS)


def redact_every_record(secrets: Iterable[str]) -> None:
    """From now on every log record of this process passes through a :class:`SecretRedactor` of ``secrets``
    and carries the log context it was made in (:mod:`shared.log_context`, shown by :mod:`shared.app.log_format`)."""
    redactor = SecretRedactor(secrets)

    def make_record(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = _ORIGINAL_FACTORY(*args, **kwargs)
        redactor.filter(record)
        setattr(record, CONTEXT_ATTRIBUTE, log_context.current())
        return record

    logging.setLogRecordFactory(make_record)


def terminal_for_the_conversation(path: Path, *, warnings_on_stderr: bool = False) -> None:
    """`mnemo chat`: the terminal is the conversation, so the process's records go to ``path`` (owner-only,
    in the configured format and level) and none reaches the terminal; with ``warnings_on_stderr``
    (``mnemo chat --log-stderr``) warnings and errors are also written to standard error."""
    root = logging.getLogger()
    configured = root.handlers[0].formatter if root.handlers else None
    for handler in list(root.handlers):
        if warnings_on_stderr:
            handler.setLevel(max(handler.level, logging.WARNING))
        else:
            root.removeHandler(handler)
    to_file = logging.StreamHandler(io.TextIOWrapper(open_private_log(path), encoding="utf-8", line_buffering=True))
    to_file.setFormatter(configured)
    root.addHandler(to_file)


def open_private_log(path: Path) -> IO[bytes]:
    """``path`` opened for appending, readable by its owner only (an existing file is made so too)."""
    path.parent.mkdir(mode=PRIVATE_DIRECTORY_MODE, parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, PRIVATE_FILE_MODE)
    os.fchmod(descriptor, PRIVATE_FILE_MODE)
    return os.fdopen(descriptor, "ab")
