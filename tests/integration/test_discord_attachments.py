"""Photos, stickers, files and voice messages on Discord through the real discord.py: MESSAGE_CREATE payloads with
attachments served by the fake Discord CDN, the real conversation service on PostgreSQL, and the fake OpenAI server
as a seeing model, a text-only one that refuses image parts, or none (offline)."""

from __future__ import annotations

import asyncio
import base64
import io
from collections.abc import Iterator

import pytest
from limits.storage import MemoryStorage
from PIL import Image
from sqlalchemy import select

from bench.fakes.discord_api import CDN_PREFIX, FakeDiscord
from bench.fakes.llm_personalities import has_images
from bench.fakes.openai_server import FakeOpenAI
from bench.fakes.transcriber import FakeTranscriber
from bot.discord_attachments import from_discord
from shared.attachments.kinds import MAX_TEXT_FILE_BYTES
from shared.commands.service import MemoryCommands
from shared.conversation.service import ConversationService
from shared.db.models import ConversationTurn
from shared.limits import SharedLimit
from shared.llm.client import ChatModel
from shared.llm.transcription import Transcriber
from tests.integration.test_discord_bot import CONFIG, Bot
from tests.integration.test_telegram_attachments import CAPTION, CAT, UNSEEN, photo_bytes, seeing

ALICE = "300000000000000001"
HEAR = {"en": "I can't hear voice messages", "zh": "我听不了语音"}
CAPTIONS = {"en": CAPTION["en"], "zh": CAPTION["zh"]}

pytestmark = pytest.mark.committed


@pytest.fixture
def fake_discord() -> Iterator[FakeDiscord]:
    with FakeDiscord() as server:
        yield server


def run(fake: FakeDiscord, uow_factory, llm: FakeOpenAI | None, *messages: dict,
        ears: FakeTranscriber | None = None, fetch_limit: SharedLimit | None = None) -> None:
    model = ChatModel(base_url=llm.base_url, api_key="test", model="fake-chat", timeout_seconds=10) if llm else None
    transcriber = Transcriber(ears.base_url, None, "whisper-1") if ears else None
    service = ConversationService(uow_factory, CONFIG, chat_model=model, transcriber=transcriber,
                                  fetch_limit=fetch_limit)

    async def main() -> None:
        async with Bot(fake, service, MemoryCommands(uow_factory, default_timezone="Asia/Shanghai")) as bot:
            for message in messages:
                await bot.receive(message)

    asyncio.run(main())


def user_turns(uow_factory) -> list[str]:
    with uow_factory() as uow:
        return list(uow.session.scalars(select(ConversationTurn.text).where(ConversationTurn.role == "user")
                                        .order_by(ConversationTurn.id)))


def replies(fake: FakeDiscord) -> list[str]:
    return [message["content"] for message in fake.messages_in(fake.dm_channel(ALICE))]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_photo_from_the_cdn_is_seen_and_its_description_kept_with_the_round(fake_discord, uow_factory, language):
    photo = fake_discord.add_attachment("cat.jpg", photo_bytes(), "image/jpeg")
    with FakeOpenAI(models=("fake-chat",)) as llm:
        llm.set_responder(seeing(language))
        run(fake_discord, uow_factory, llm,
            fake_discord.incoming_message(CAPTIONS[language], user_id=ALICE, attachments=(photo,)))
        [url] = [part["image_url"]["url"] for body in llm.chat_requests() for m in body["messages"]
                 if isinstance(m["content"], list) for part in m["content"] if part["type"] == "image_url"]
    image = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
    assert image.size == (1024, 683) and not image.getexif()
    assert user_turns(uow_factory) == [f"{CAPTIONS[language]}\n[photo: {CAT[language]}]"]
    assert UNSEEN[language] not in replies(fake_discord)[0]


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("personality", ["openai-text-only", None])
def test_without_a_seeing_model_the_caption_is_the_message_and_the_user_told(
        fake_discord, uow_factory, language, personality):
    photo = fake_discord.add_attachment("cat.png", photo_bytes(300, 200), "image/png")
    message = fake_discord.incoming_message(CAPTIONS[language], user_id=ALICE, attachments=(photo,))
    if personality is None:  # offline
        run(fake_discord, uow_factory, None, message)
    else:
        with FakeOpenAI(models=("fake-chat",), personality=personality) as llm:
            llm.set_responder(seeing(language))
            run(fake_discord, uow_factory, llm, message)
            assert [has_images(body) for body in llm.chat_requests()] == [True, False]
    assert UNSEEN[language] in replies(fake_discord)[0]
    assert user_turns(uow_factory) == [f"{CAPTIONS[language]}\n[photo]"]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_text_file_is_read_an_oversized_or_unread_one_never_fetched(fake_discord, uow_factory, language):
    notes = fake_discord.add_attachment("notes.csv", b"day,steps\nmon,9000\n", "text/csv; charset=utf-8")
    big = fake_discord.add_attachment("big.txt", b"x" * (MAX_TEXT_FILE_BYTES + 1), "text/plain")
    pdf = fake_discord.add_attachment("report.pdf", b"%PDF-1.7 ...", "application/pdf")
    with FakeOpenAI(models=("fake-chat",)) as llm:
        llm.set_responder(seeing(language))
        run(fake_discord, uow_factory, llm,
            fake_discord.incoming_message(CAPTIONS[language], user_id=ALICE, attachments=(notes, big, pdf)))
        [body] = llm.chat_requests()
    assert '<file name="notes.csv">\nday,steps\nmon,9000\n</file>' in body["messages"][-1]["content"]
    assert fake_discord.cdn_reads == [f"{CDN_PREFIX}/{notes['id']}/notes.csv"]  # the others refused unread
    [reply] = replies(fake_discord)
    assert ("big.txt is too large" if language == "en" else "big.txt 太大了") in reply
    assert ("I can't read report.pdf" if language == "en" else "我读不了 report.pdf") in reply
    [line] = user_turns(uow_factory)
    assert line.startswith(f"{CAPTIONS[language]}\n[file notes.csv]\n[file big.txt, too large")


@pytest.mark.parametrize("language", ["en", "zh"])
def test_files_past_the_senders_message_rate_are_named_not_fetched(fake_discord, uow_factory, language):
    notes = [fake_discord.add_attachment(f"day{number}.txt", b"walked 5 km", "text/plain") for number in range(2)]
    sent = [fake_discord.incoming_message(CAPTIONS[language], user_id=ALICE, attachments=(note,)) for note in notes]
    run(fake_discord, uow_factory, None, *sent,
        fetch_limit=SharedLimit(MemoryStorage(), "attachment-fetches", "1/minute"))
    assert fake_discord.cdn_reads == [f"{CDN_PREFIX}/{notes[0]['id']}/day0.txt"]
    over = {"en": "sent a lot of files just now", "zh": "发的文件有点多"}[language]
    assert [over in reply for reply in replies(fake_discord)] == [False, True]
    assert user_turns(uow_factory)[1].endswith("[file day1.txt, not fetched: too many files just now]")


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_voice_message_and_a_sticker(fake_discord, uow_factory, language):
    voice = fake_discord.add_attachment("voice-message.ogg", b"OggS" + b"\0" * 300, "audio/ogg")
    with FakeOpenAI(models=("fake-chat",)) as llm:
        llm.set_responder(seeing(language))
        run(fake_discord, uow_factory, llm,
            fake_discord.incoming_message(CAPTIONS[language] if language == "zh" else "", user_id=ALICE,
                                          attachments=(voice,), voice=True),
            fake_discord.incoming_message("", user_id=ALICE, stickers=("Wave",)))
    first, sticker_reply = replies(fake_discord)
    assert HEAR[language] in first
    assert not fake_discord.cdn_reads and sticker_reply
    assert user_turns(uow_factory)[1] == "[sticker Wave]"


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_voice_message_is_fetched_from_the_cdn_and_heard_when_there_is_a_transcriber(
        fake_discord, uow_factory, language):
    said = {"en": "remind me to water the plants", "zh": "记得提醒我浇花"}[language]
    voice = fake_discord.add_attachment("voice-message.ogg", b"OggS" + b"\1" * 900, "audio/ogg")
    with FakeOpenAI(models=("fake-chat",)) as llm, FakeTranscriber(personality="faster-whisper") as ears:
        llm.set_responder(seeing(language))
        ears.queue_transcript(said)
        run(fake_discord, uow_factory, llm, fake_discord.incoming_message("", user_id=ALICE, attachments=(voice,),
                                                                          voice=True), ears=ears)
        [heard] = ears.requests
        [body] = llm.chat_requests()
    assert heard.audio == b"OggS" + b"\1" * 900 and said in body["messages"][-1]["content"]
    assert fake_discord.cdn_reads == [f"{CDN_PREFIX}/{voice['id']}/voice-message.ogg"]
    assert user_turns(uow_factory) == [f"[voice message] {said}"]
    assert HEAR[language] not in replies(fake_discord)[0]


def test_only_discords_own_hosts_are_ever_fetched(fake_discord):
    from bot.discord_bot import use_api
    use_api(fake_discord.base_url)
    assert from_discord("https://cdn.discordapp.com/attachments/1/2/cat.jpg")
    assert from_discord(fake_discord.base_url.removesuffix("/api/v10") + "/cdn/attachments/1/cat.jpg")
    assert not from_discord("https://evil.example/cat.jpg") and not from_discord("http://169.254.169.254/latest")
