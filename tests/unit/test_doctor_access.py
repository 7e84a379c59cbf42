"""`mnemo doctor` warns when a bot would answer anyone who finds it."""

from pydantic import SecretStr

from shared.app.doctor import _access_check
from shared.settings import Settings


def settings(**values: object) -> Settings:
    return Settings(_env_file=None, telegram_token=SecretStr("123:telegram-token-for-the-doctor"), **values)


def test_a_bot_open_to_anyone_is_a_warning():
    check = _access_check(settings())
    assert check.verdict == "warn"
    assert "telegram bot answers anyone" in check.detail


def test_an_allow_list_or_a_closed_default_with_operators_is_fine():
    assert _access_check(settings(telegram_allow_chats="-1001", access_operators="telegram:5")).verdict == "ok"
    assert _access_check(settings(access_default="closed", access_operators="telegram:5")).verdict == "ok"
    assert _access_check(settings(access_default="closed")).verdict == "info"


def test_without_a_bot_nothing_is_open():
    assert _access_check(Settings(_env_file=None)).verdict == "ok"
