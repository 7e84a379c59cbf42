"""No text a user reads names a setting (``LLM_BASE_URL``, ``MESSAGE_RATE_PER_USER``, …): settings are the
operator's words, and a bot's user cannot change them.

Every string in the modules that word what users read is scanned (docstrings and log lines are the operator's,
and skipped). The one text that names a setting on purpose, the hint on connecting a model, is shown only to the
operator at ``mnemo chat`` (tested in ``test_telegram_bot.py`` and ``test_offline.py``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from shared.conversation.offline_replies import MODEL_HINT_MARKER
from shared.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
USER_TEXTS = sorted({*ROOT.glob("shared/**/*texts*.py"), *ROOT.glob("bot/*_render.py"),
                     ROOT / "bot/telegram_chat.py", ROOT / "bot/telegram_handlers.py", ROOT / "bot/discord_commands.py",
                     ROOT / "bot/discord_access.py", ROOT / "bot/telegram_access.py",
                     ROOT / "shared/conversation/pressure.py", ROOT / "shared/conversation/fitting.py",
                     ROOT / "shared/conversation/offline_compose.py", ROOT / "shared/conversation/offline_replies.py",
                     ROOT / "shared/errors.py", ROOT / "shared/reminders/zone_lines.py"})
SETTING_NAMES = sorted(name.upper() for name in Settings.model_fields)
LOG_CALLS = {"debug", "info", "warning", "error", "exception", "critical"}


def strings_a_user_may_read(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text())
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            skipped.add(id(node.value))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in LOG_CALLS:
            skipped.update(id(inner) for inner in ast.walk(node))
    return [(node.lineno, node.value) for node in ast.walk(tree) if id(node) not in skipped
            and isinstance(node, ast.Constant) and isinstance(node.value, str)]


def test_the_scan_reads_the_modules_of_every_front_end_and_finds_the_one_hint():
    assert len(USER_TEXTS) >= 15
    assert all(path.exists() for path in USER_TEXTS)
    found = [text for path in USER_TEXTS for _line, text in strings_a_user_may_read(path)]
    assert MODEL_HINT_MARKER in found
    assert any("离线模式" in text for text in found)


@pytest.mark.parametrize("path", USER_TEXTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_no_text_a_user_reads_names_a_setting(path):
    named = [(line, name) for line, text in strings_a_user_may_read(path) if text != MODEL_HINT_MARKER
             for name in SETTING_NAMES if name in text]
    assert named == []
