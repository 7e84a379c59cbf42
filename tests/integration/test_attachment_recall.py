"""A photo's description is kept with its round on real PostgreSQL: a week later, "what was my cat doing in the photo
I sent last week?" recalls it (the hot path's own recall, as ``mnemo bench replay`` plays it), and what the memory
update drew from the photo is remembered with the photo's turn as its source, in English and in Chinese."""

from __future__ import annotations

import asyncio
import io
import json
from datetime import timedelta

import pytest
from PIL import Image
from sqlalchemy import select

from shared.attachments.images import for_model
from shared.attachments.kinds import Attachment
from shared.attachments.texts import turn_line
from shared.commands.service import Caller, MemoryCommands
from shared.conversation.messages import IncomingMessage
from shared.db.memory_models import Memory
from shared.db.models import ConversationTurn
from tests.integration import test_conversation as conversation
from tests.integration.test_conversation import system_prompt, turn

llm = conversation.llm
clock = conversation.clock
service = conversation.service

CASES = {
    "en": ("look at my cat", "a grey British shorthair asleep on a blue sofa",
           ("fact", "user", "cat_breed", "The user's cat is a grey British shorthair"),
           "What was my cat doing in the photo I sent last week?"),
    "zh": ("看我的猫", "一只灰色英短猫在蓝色沙发上睡觉", ("fact", "user", "cat_breed", "用户的猫是一只灰色英短"),
           "上周我发的照片里猫在干什么？"),
}


def photo() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (1600, 1200), (90, 90, 100)).save(out, format="JPEG")
    return for_model(out.getvalue())


def send_photo(service, caption: str, at) -> None:
    attached = (Attachment(kind="photo", name="photo.jpg", mime_type="image/jpeg", image=photo()),)
    message = IncomingMessage(platform="telegram", chat_id="c1", user_id="u1", text=turn_line(caption, attached),
                              sent_at=at, display_name="Alice", attachments=attached)
    asyncio.run(service.handle_message(message))


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_photos_description_is_recalled_a_week_later_and_its_fact_remembered_from_it(
        service, llm, clock, uow_factory, language):
    caption, description, fact, question = CASES[language]
    reply = turn("What a cute cat!", entries=[fact])
    llm.queue_reply({**reply, "image_description": description})
    send_photo(service, caption, clock())
    clock.now += timedelta(days=7)
    llm.queue_reply(turn("It was asleep on the sofa."))
    conversation.say(service, question, clock=clock)
    assert description in system_prompt(llm)  # the round with the photo, recalled by the question's words
    with uow_factory() as uow:
        photo_turn = uow.session.scalars(select(ConversationTurn).where(ConversationTurn.role == "user")
                                         .order_by(ConversationTurn.id)).first()
        [memory] = uow.session.scalars(select(Memory)).all()
    assert photo_turn.text == f"{caption}\n[photo: {description}]"
    assert memory.source_turn_id == photo_turn.id
    assert memory.content == fact[3]


def test_export_lists_attachments_by_their_description_never_their_content(service, llm, clock, uow_factory):
    llm.queue_reply({**turn("What a cute cat you have!"), "image_description": "a grey cat on a blue sofa"})
    send_photo(service, "my cat", clock())
    notes = Attachment(kind="file", name="diary.txt", text="SECRET DIARY LINE: I hid the key under the mat")
    llm.queue_reply(turn("Thanks for sharing."))
    message = IncomingMessage(platform="telegram", chat_id="c1", user_id="u1", text=turn_line("read this", (notes,)),
                              sent_at=clock(), display_name="Alice", attachments=(notes,))
    asyncio.run(service.handle_message(message))
    assert "SECRET DIARY LINE" in llm.chat_requests()[-1]["messages"][-1]["content"]  # the model read it
    exported = MemoryCommands(uow_factory, default_timezone="UTC").export_data(
        Caller(platform="telegram", platform_user_id="u1"))
    document = json.loads(exported.data)
    lines = [row["text"] for row in document["turns"] if row["role"] == "user"]
    assert lines == ["my cat\n[photo: a grey cat on a blue sofa]", "read this\n[file diary.txt]"]
    assert b"SECRET DIARY LINE" not in exported.data
    assert b"base64" not in exported.data
