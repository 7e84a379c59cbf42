"""Two real ``mnemo telegram`` webhook replicas on one database, behind a load balancer played by the test:
the fake Bot API's updates (a chat message, commands, a button press, an edit) go to both replicas at once,
and again later to one of them, as Telegram does when it missed an answer. Each is answered once."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sqlalchemy import text

from bench.fakes.openai_server import FakeOpenAI
from bench.fakes.telegram_api import FakeTelegram, user_object
from shared.db.engine import make_engine
from tests.e2e.bot_process import REPLY, stop
from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]
PUBLIC_URL = "https://bot.mnemo.test/telegram/hook"  # example.org is refused: it is the example's address
SECRET = "webhook-secret_0123456789abcdef"
EVE = user_object(2101, "Eve", language_code="en")
START_SECONDS = 90
EDIT_UPDATE_ID = 10_000

pytestmark = pytest.mark.e2e


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def replica(database_url: str, telegram: FakeTelegram, llm: FakeOpenAI, port: int, log: Path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LOG_", "LLM_", "REDIS_", "TELEGRAM_", "DISCORD_", "METRICS_", "PROMETHEUS_"))}
    env.update(DATABASE_URL=database_url, TELEGRAM_TOKEN=telegram.token, TELEGRAM_API_BASE_URL=telegram.base_url,
               TELEGRAM_WEBHOOK_SECRET=SECRET, LLM_BASE_URL=llm.base_url, LLM_API_KEY="test", LLM_MODEL="fake-chat",
               DEFAULT_TIMEZONE="UTC", MNEMO_DATA_DIR=str(log.parent), PYTHONPATH=str(ROOT), LOG_LEVEL="INFO")
    with open(log, "wb") as output:
        return subprocess.Popen([sys.executable, "-m", "shared.app.cli", "telegram", "--no-workers",
                                 "--webhook-url", PUBLIC_URL, "--listen", "127.0.0.1", "--port", str(port)],
                                env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True)


class LoadBalancer:
    """Sends an update to the replicas it is told to, all at the same moment."""

    def __init__(self, telegram: FakeTelegram, ports: list[int]) -> None:
        self.telegram = telegram
        self.urls = [f"http://127.0.0.1:{port}/telegram/hook" for port in ports]

    def deliver(self, update: dict, *replicas: int) -> list[int]:
        with ThreadPoolExecutor(len(replicas)) as pool:
            return list(pool.map(lambda index: self.telegram.post_update(self.urls[index], update), replicas))


def forget_question(telegram: FakeTelegram) -> dict | None:
    """The bot's message asking whether to forget, with its Yes/No buttons."""
    for message in telegram.messages_to(EVE["id"]):
        buttons = message.get("reply_markup", {}).get("inline_keyboard", [[{}]])
        if buttons[0][0].get("callback_data", "").startswith("cf:"):
            return message
    return None


def count(database_url: str, query: str) -> int:
    engine = make_engine(database_url)
    try:
        with engine.connect() as connection:
            return connection.scalar(text(query))
    finally:
        engine.dispose()


def handled_everything(database_url: str) -> bool:
    return count(database_url, "SELECT count(*) FROM platform_updates WHERE handled_at IS NULL") == 0


def test_two_webhook_replicas_answer_every_update_once_however_often_and_wherever_it_is_delivered(
        migrated_system_db, telegram, llm, tmp_path):
    ports = [free_port(), free_port()]
    logs = [tmp_path / "first.log", tmp_path / "second.log"]
    replicas = [replica(migrated_system_db, telegram, llm, port, log) for port, log in zip(ports, logs, strict=True)]
    said = lambda: "\n".join(log.read_text() for log in logs)  # noqa: E731
    try:
        wait_for(lambda: len(telegram.calls_to("setWebhook")) == 2 or any(p.poll() is not None for p in replicas),
                 START_SECONDS, said)
        assert telegram.webhook["url"] == PUBLIC_URL and telegram.webhook["secret_token"] == SECRET
        balancer = LoadBalancer(telegram, ports)
        for text_ in ("hello there", "/remember I drink green tea", "/remind tomorrow 9am call the bank", "/help",
                      "/forget all"):
            telegram.push_message(EVE["id"], EVE, text_)
        sent = telegram.push_message(EVE["id"], EVE, "helo")
        updates = telegram.take_updates()
        updates.append({"update_id": EDIT_UPDATE_ID, "edited_message": {**sent, "text": "hello", "edit_date": 1}})
        for update in updates:
            assert balancer.deliver(update, 0, 1) == [200, 200]
        asking = wait_for(lambda: forget_question(telegram), 60, said)
        wait_for(lambda: handled_everything(migrated_system_db), 60, said)  # /remember too, before Yes is pressed
        wait_for(lambda: len(telegram.messages_to(EVE["id"])) == 6, 60, said)  # and every answer sent
        assert count(migrated_system_db, "SELECT count(*) FROM conversation_turns WHERE role = 'user'") == 2
        assert count(migrated_system_db, "SELECT count(*) FROM memories") == 1
        query_id = telegram.push_callback(EVE, asking, asking["reply_markup"]["inline_keyboard"][0][0]["callback_data"])
        press = telegram.take_updates()[0]
        assert balancer.deliver(press, 1, 0) == [200, 200]
        for index, update in enumerate([*updates, press]):  # Telegram missed the answers: it sends them again
            assert balancer.deliver(update, index % 2) == [200]
        wait_for(lambda: handled_everything(migrated_system_db), 60, said)
    finally:
        codes = [stop(process) for process in replicas]
    assert codes == [0, 0], said()

    texts = [message.get("text", "") for message in telegram.messages_to(EVE["id"])]
    assert len(texts) == 6, texts  # two chat replies, remembered, reminder set, help, the question (the edit: none)
    assert sum(reply.startswith(REPLY) for reply in texts) == 2 and len(llm.chat_requests()) == 2, texts
    assert [call.params["callback_query_id"] for call in telegram.calls_to("answerCallbackQuery")] == [query_id]
    assert count(migrated_system_db, "SELECT count(*) FROM todos") == 1
    assert count(migrated_system_db, "SELECT count(*) FROM memories WHERE deleted_at IS NULL") == 0  # forgotten
    assert count(migrated_system_db, "SELECT count(*) FROM platform_updates WHERE body IS NOT NULL") == 0
    assert said().count("was received before") == 2 * (len(updates) + 1)  # the second of each pair; each again
