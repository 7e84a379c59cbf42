"""The log context (turn, platform, user hash) and the two log formats: text by default, JSON lines on demand."""

from __future__ import annotations

import hashlib
import io
import json
import logging
from collections.abc import Iterator

import pytest

from shared import log_context
from shared.app.bootstrap import configure_logging
from shared.app.log_format import JsonFormatter, TextFormatter
from shared.app.logs import redact_every_record
from shared.errors import ConfigError
from shared.settings import Settings, load_settings

TOKEN = "7654321:AAH-bot-token-for-the-context-tests"


@pytest.fixture(autouse=True)
def record_factory() -> Iterator[None]:
    """Each test installs the record factory; the process's factory and hash key are put back after it."""
    factory = logging.getLogRecordFactory()
    yield
    logging.setLogRecordFactory(factory)
    log_context.use_key(None)


def logger_to(formatter: logging.Formatter, name: str) -> tuple[logging.Logger, io.StringIO]:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(formatter)
    logger = logging.getLogger(name)
    logger.handlers, logger.propagate, logger.level = [handler], False, logging.DEBUG
    return logger, out


def test_bound_fields_add_to_the_outer_ones_and_are_gone_after_the_block():
    with log_context.bound(platform="telegram", turn="t1"):
        with log_context.bound(task="mnemo.extract_turn", user=None, colour="blue"):
            assert log_context.current() == {"platform": "telegram", "turn": "t1", "task": "mnemo.extract_turn"}
        assert log_context.current() == {"platform": "telegram", "turn": "t1"}
    assert log_context.current() == {}


def test_a_job_takes_along_the_turn_platform_and_user_but_not_the_task_or_strangers():
    assert log_context.carried({"turn": "t1", "platform": "discord", "user": "ab12", "task": "x", "sql": "drop"}) == \
        {"turn": "t1", "platform": "discord", "user": "ab12"}
    assert log_context.carried(None) == {}
    assert log_context.carried(["turn"]) == {}
    with log_context.bound(turn="t2", task="mnemo.sweep_outbox"):
        assert log_context.carried() == {"turn": "t2"}


def test_a_turn_gets_a_new_id_and_a_keyed_hash_of_its_user_that_is_not_the_plain_hash():
    log_context.use_key(b"k" * 32)
    with log_context.turn_context("telegram", "1001"):
        first = log_context.current()
    with log_context.turn_context("telegram", "1001"):
        second = log_context.current()
    assert first["turn"] != second["turn"]
    assert first["user"] == second["user"]
    assert first["platform"] == "telegram"
    assert "1001" not in first["user"]
    assert first["user"] not in hashlib.sha256(b"telegram\x001001").hexdigest()
    assert log_context.hash_user("discord", "1001") != first["user"]
    log_context.use_key(b"another key, another deployment")
    assert log_context.hash_user("telegram", "1001") != first["user"]


def test_the_hash_key_is_log_hash_key_or_derived_from_the_secrets_and_random_without_any():
    own = log_context.derive_key("my-own-log-hash-key", ["tok"])
    assert own == b"my-own-log-hash-key"
    derived = log_context.derive_key(None, ["b-secret", "a-secret"])
    assert derived == log_context.derive_key(None, ["a-secret", "b-secret"])
    assert b"secret" not in derived
    assert derived != log_context.derive_key(None, ["a-secret"])
    assert log_context.derive_key(None, []) is None
    log_context.use_key(None)
    random_user = log_context.hash_user("console", "me")
    log_context.use_key(None)
    assert log_context.hash_user("console", "me") != random_user


def test_the_configured_process_hashes_users_with_a_key_from_its_settings():
    settings = Settings(_env_file=None, telegram_token=TOKEN)
    configure_logging(settings)
    configured = log_context.hash_user("telegram", "1001")
    log_context.use_key(log_context.derive_key(None, settings.secret_values()))
    assert log_context.hash_user("telegram", "1001") == configured
    configure_logging(Settings(_env_file=None, telegram_token=TOKEN, log_hash_key="x" * 32))
    assert log_context.hash_user("telegram", "1001") != configured


def test_log_format_and_log_hash_key_are_checked():
    assert Settings(_env_file=None).log_format == "text"
    assert Settings(_env_file=None, log_format="JSON").log_format == "json"
    with pytest.raises(ConfigError, match="LOG_FORMAT"):
        load_settings(_env_file=None, log_format="yaml")
    with pytest.raises(ConfigError, match="LOG_HASH_KEY: must be at least 16"):
        load_settings(_env_file=None, log_hash_key="short")
    assert "x" * 32 in Settings(_env_file=None, log_hash_key="x" * 32).secret_values()


def test_a_json_line_is_one_event_with_the_context_and_a_redacted_traceback():
    redact_every_record([TOKEN])
    logger, out = logger_to(JsonFormatter(), "mnemo.test.json")
    with log_context.bound(turn="t9", platform="telegram", user="ab12"):
        try:
            raise RuntimeError(f"token {TOKEN} refused\nsecond line")
        except RuntimeError:
            logger.exception("job %s failed\non two lines", 7)
    logger.info("outside any turn")
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    event, outside = map(json.loads, lines)
    assert event["message"] == "job 7 failed\non two lines"
    assert event["level"] == "ERROR"
    assert (event["turn"], event["platform"], event["user"]) == ("t9", "telegram", "ab12")
    assert event["logger"] == "mnemo.test.json"
    assert event["time"].endswith("+00:00")
    assert event["pid"] > 0
    assert "RuntimeError: token *** refused" in event["exc"]
    assert TOKEN not in out.getvalue()
    assert "turn" not in outside
    assert outside["message"] == "outside any turn"


def test_a_text_line_ends_with_the_context_in_brackets():
    redact_every_record([])
    logger, out = logger_to(TextFormatter(), "mnemo.test.text")
    with log_context.bound(turn="t9", platform="discord", user="ab12", task="mnemo.extract_turn"):
        logger.warning("slow")
    logger.warning("plain")
    first, second = out.getvalue().splitlines()
    assert first.endswith("WARNING mnemo.test.text: slow [turn=t9 platform=discord user=ab12 task=mnemo.extract_turn]")
    assert second.endswith("WARNING mnemo.test.text: plain")
