"""The console with a model behind it, where the first hour's non-answers and overflowing prompts were met: a
number or a timestamp for a reply is never printed as Mnemo's words, and a long paste is read as far as the model's
window allows, the user told so."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from bench.fakes.openai_server import FakeOpenAI
from bot.console import chat_loop
from shared.conversation.config import ConversationConfig
from shared.conversation.service import ConversationService
from shared.llm.client import ChatModel
from tests.builders import typed
from tests.integration.test_conversation import turn

CONFIG = ConversationConfig(bot_name="Mnemo", personality="a friend", emotion_enabled=True, retrieval_limit=5,
                            memory_budget_tokens=700, history_turns=15, idle=timedelta(minutes=30),
                            default_timezone="Asia/Shanghai")


def console_with_model(uow_factory, server: FakeOpenAI, lines: list[str], **model_options) -> list[str]:
    """What the console printed for each line, with the model on ``server`` answering."""
    read_line, out = typed(lines), []

    model = ChatModel(base_url=server.base_url, api_key="k", model="fake-chat", timeout_seconds=10, **model_options)
    service = ConversationService(uow_factory, CONFIG, chat_model=model)
    asyncio.run(chat_loop(service, user_id="lin", bot_name="Mnemo", read_line=read_line, write=out.append))
    return out[1:-1]


def test_a_number_or_a_timestamp_for_a_reply_is_answered_offline_and_a_real_answer_is_printed(uow_factory):
    with FakeOpenAI(models=("fake-chat",)) as server:
        for answer in ("4182735", "2026-12-03 21:05:44", "Yes", "Sounds like a lovely walk! Was it cold?"):
            server.queue_reply(turn(answer))
        number, stamp, yes, walk = console_with_model(uow_factory, server, [
            "我周末去西湖散步了", "Can you tell me about yourself", "Do you remember where I walked?",
            "I walked by the river today"])
    assert number.startswith("Mnemo（离线）> ") and "4182735" not in number  # in the language it was asked in
    assert "模型的回答无法使用" in number
    assert stamp.startswith("Mnemo (offline)> ") and "21:05:44" not in stamp
    assert "The model's answer was unusable (only a date or time)" in stamp
    assert yes.startswith("Mnemo> Yes")  # a yes/no question: "Yes" answers it
    assert walk.startswith("Mnemo> Sounds like a lovely walk!")


def test_a_paste_longer_than_the_models_window_is_cut_and_the_console_says_how_much_was_read(uow_factory):
    paste = " ".join(f"Chapter {n}: the lighthouse keeper counted the ships again." for n in range(130))
    with FakeOpenAI(models=("fake-chat",), personality="llama.cpp", context_window=1700) as server:  # the fixed prompt
        # (system, rules, note) takes most of it: what is left is a few lines of the paste
        server.set_responder(lambda _request: turn("What a story. Who wrote it?"))
        printed, = console_with_model(uow_factory, server, [paste], max_output_tokens=200)
        sent = server.chat_requests()[-1]["messages"][-1]["content"]
    assert printed.startswith("Mnemo> What a story.") and 400 not in server.chat_statuses
    assert "  · Your message was too long for the model: it read the first " in printed
    assert sent.startswith("Chapter 0:") and "[the rest of this message did not fit and was cut]" in sent
