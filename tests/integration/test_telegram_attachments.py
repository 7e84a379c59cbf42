"""Photos, stickers, files and voice notes on Telegram, end to end: the real python-telegram-bot polling the fake
Bot API (``getFile`` and the file download), the real conversation service on PostgreSQL, and the fake OpenAI
server as a seeing model, as each text-only server refuses an image part, or no model at all (offline)."""

from __future__ import annotations

import base64
import io
import json

import pytest
from limits.storage import MemoryStorage
from PIL import Image
from sqlalchemy import select
from telegram.ext import Application

from bench.fakes.llm_personalities import has_images
from bench.fakes.openai_server import FakeOpenAI
from bench.fakes.telegram_api import FakeTelegram, chat_object, sticker_object, user_object
from bench.fakes.transcriber import FakeTranscriber
from shared.attachments.files import TEXT_FILE_TOKEN_CAP
from shared.attachments.images import IMAGE_MAX_SIDE
from shared.attachments.kinds import MAX_TEXT_FILE_BYTES
from shared.commands.service import MemoryCommands
from shared.db.memory_models import Memory
from shared.db.models import ConversationTurn
from shared.db.usage_models import UsageCall
from shared.limits import SharedLimit
from shared.llm.transcription import Transcriber
from shared.settings import Settings
from tests.builders import chat_model, conversation, telegram_settings
from tests.integration.test_telegram_bot import run_bot as run_polling_bot
from tests.waiting import until

ALICE = user_object(1001, "Alice", username="alice", language_code="en")
BOB = user_object(1002, "Bob", language_code="zh-hans")
USERS = {"en": (ALICE, 1001), "zh": (BOB, 1002)}
CAT = {"en": "a grey British shorthair asleep on a blue sofa", "zh": "一只灰色英短猫睡在蓝色沙发上"}
CAPTION = {"en": "look at my cat", "zh": "看我的猫"}
UNSEEN = {"en": "I can't see images with this setup", "zh": "现在的配置下我看不到图片"}

pytestmark = pytest.mark.committed


def photo_bytes(width: int = 2400, height: int = 1600) -> bytes:
    """A JPEG as a phone sends it: big, with EXIF naming the camera."""
    image = Image.new("RGB", (width, height), (120, 120, 130))
    exif = Image.Exif()
    exif[0x010F] = "SecretPhoneMaker"  # Make
    exif[0x0110] = "Model X"  # Model
    out = io.BytesIO()
    image.save(out, format="JPEG", exif=exif.tobytes())
    return out.getvalue()


def turn(response: str, description: str | None = None, *entries: tuple[str, str, str]) -> dict:
    return {"emotion": {"primary": "joy", "category": "positive", "confidence": 0.9, "indicators": []},
            "response": response, "image_description": description,
            "memory_update": {"should_store": bool(entries), "entries": [
                {"type": "fact", "subject": "user", "predicate": p, "content": c, "tier": "long"}
                for _t, p, c in entries]},
            "todos": [], "topic": None, "context_variables": [], "timezone": None}


def seeing(language: str):
    """A vision model: describes the image when there is one (and says what it learnt of the user's cat)."""
    def answer(body: dict) -> dict:
        if has_images(body):
            fact = ("fact", "pet", "The user's cat is a grey British shorthair" if language == "en"
                    else "用户的猫是一只灰色英短")
            return turn("What a lovely cat!" if language == "en" else "好可爱的猫！", CAT[language], fact)
        return turn("Tell me more." if language == "en" else "多说一点。")
    return answer


@pytest.fixture
def settings(telegram: FakeTelegram, monkeypatch: pytest.MonkeyPatch) -> Settings:
    return telegram_settings(telegram, monkeypatch)


def run_bot(settings: Settings, uow_factory, llm: FakeOpenAI | None, scenario, *,
            ears: FakeTranscriber | None = None, vision: str = "auto", fetch_limit: SharedLimit | None = None) -> None:
    model = chat_model(llm, vision=vision) if llm else None
    transcriber = Transcriber(ears.base_url, "test", "whisper-1") if ears else None
    service = conversation(uow_factory, settings, model, transcriber=transcriber, fetch_limit=fetch_limit)
    run_polling_bot(settings, service, MemoryCommands(uow_factory, default_timezone="Asia/Shanghai"), scenario)


def file_sent(telegram: FakeTelegram, settings: Settings, uow_factory, language: str, content: bytes, name: str,
              mime: str) -> tuple[dict, dict]:
    """The model's one request and the one reply after the user sends a file with the caption, the model seeing."""
    user, chat = USERS[language]
    with FakeOpenAI(models=("fake-chat",)) as llm:
        llm.set_responder(seeing(language))

        async def scenario(_app: Application) -> None:
            document = telegram.add_file(content, name, mime)
            telegram.push_message(chat, user, CAPTION[language], document=document)
            await until(lambda: telegram.messages_to(chat), what="the reply")

        run_bot(settings, uow_factory, llm, scenario)
        [body] = llm.chat_requests()
    [reply] = telegram.messages_to(chat)
    return body, reply


def user_turns(uow_factory) -> list[str]:
    with uow_factory() as uow:
        rows = uow.session.scalars(select(ConversationTurn).where(ConversationTurn.role == "user")
                                   .order_by(ConversationTurn.id))
        return [row.text for row in rows]


def sent_image(llm: FakeOpenAI) -> Image.Image:
    [url] = [part["image_url"]["url"] for body in llm.chat_requests() for message in body["messages"]
             if isinstance(message["content"], list) for part in message["content"] if part["type"] == "image_url"]
    assert url.startswith("data:image/jpeg;base64,")
    return Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_photo_with_a_caption_is_seen_described_kept_with_the_round_and_remembered_from(
        telegram, settings, uow_factory, language):
    user, chat = USERS[language]
    with FakeOpenAI(models=("fake-chat",)) as llm:
        llm.set_responder(seeing(language))

        async def scenario(_app: Application) -> None:
            telegram.push_message(chat, user, CAPTION[language], media={"photo": telegram.add_photo(photo_bytes(),
                                                                                                    2400, 1600)})
            await until(lambda: telegram.messages_to(chat), what="the reply")

        run_bot(settings, uow_factory, llm, scenario)
        image = sent_image(llm)
    assert max(image.size) == IMAGE_MAX_SIDE and image.size == (1024, 683)
    assert not image.getexif() and b"SecretPhoneMaker" not in image.fp.getvalue()  # re-encoded: no metadata
    [reply] = telegram.messages_to(chat)
    assert reply["text"].startswith("What a lovely cat!" if language == "en" else "好可爱的猫！")
    assert UNSEEN[language] not in reply["text"]
    assert user_turns(uow_factory) == [f"{CAPTION[language]}\n[photo: {CAT[language]}]"]
    with uow_factory() as uow:
        [memory] = uow.session.scalars(select(Memory)).all()
        [photo_turn] = uow.session.scalars(select(ConversationTurn).where(ConversationTurn.role == "user")).all()
    assert (memory.source_turn_id == photo_turn.id and "British" in memory.content) or "英短" in memory.content


def test_a_photo_without_a_caption_is_answered_and_its_description_is_the_round(telegram, settings, uow_factory):
    with FakeOpenAI(models=("fake-chat",)) as llm:
        llm.set_responder(seeing("en"))

        async def scenario(_app: Application) -> None:
            telegram.push_message(1001, ALICE, None, media={"photo": telegram.add_photo(photo_bytes(800, 600),
                                                                                       800, 600)})
            await until(lambda: telegram.messages_to(1001), what="the reply")

        run_bot(settings, uow_factory, llm, scenario)
        assert sent_image(llm).size == (800, 600)  # smaller than the cap: never enlarged
    assert user_turns(uow_factory) == [f"[photo: {CAT['en']}]"]


@pytest.mark.parametrize("personality", ["openai-text-only", "llama.cpp-text-only", "vllm-text-only"])
@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_text_only_model_that_refuses_the_image_part_answers_the_caption_once_refused_never_sent_again(
        telegram, settings, uow_factory, personality, language):
    user, chat = USERS[language]
    with FakeOpenAI(models=("fake-chat",), personality=personality) as llm:
        llm.set_responder(seeing(language))

        async def scenario(_app: Application) -> None:
            for number in range(2):
                telegram.push_message(chat, user, CAPTION[language], media={"photo": telegram.add_photo(
                    photo_bytes(640, 480), 640, 480)})
                await until(lambda n=number: len(telegram.messages_to(chat)) > n, what="a reply")

        run_bot(settings, uow_factory, llm, scenario)
        statuses, images = llm.chat_statuses, [has_images(body) for body in llm.chat_requests()]
    assert statuses[0] in (400, 500) and statuses[-2:] == [200, 200]  # (llama.cpp also refuses json_schema: 500)
    assert images[0] and not any(images[1:])  # refused once, remembered for the endpoint
    replies = telegram.messages_to(chat)
    assert all(UNSEEN[language] in reply["text"] for reply in replies)
    assert user_turns(uow_factory) == [f"{CAPTION[language]}\n[photo]"] * 2  # the round records that a photo came


@pytest.mark.parametrize("language", ["en", "zh"])
def test_ollama_with_a_text_only_model_drops_the_image_and_the_user_is_told_it_was_not_seen(
        telegram, settings, uow_factory, language):
    user, chat = USERS[language]
    with FakeOpenAI(models=("fake-chat",), personality="ollama-text-only") as llm:
        llm.set_responder(seeing(language))  # never sees an image: Ollama took it out

        async def scenario(_app: Application) -> None:
            telegram.push_message(chat, user, CAPTION[language], media={"photo": telegram.add_photo(
                photo_bytes(640, 480), 640, 480)})
            await until(lambda: telegram.messages_to(chat), what="the reply")

        run_bot(settings, uow_factory, llm, scenario)
        assert llm.chat_statuses[-1] == 200 and all(has_images(body) for body in llm.chat_requests())  # taken
    [reply] = telegram.messages_to(chat)
    assert UNSEEN[language] in reply["text"]
    assert user_turns(uow_factory) == [f"{CAPTION[language]}\n[photo]"]


@pytest.mark.parametrize("personality", ["ollama-text-only", "llama-cpp-python-text-only"])
@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_server_that_takes_image_parts_and_drops_them_gets_none_after_two_undescribed_answers(
        telegram, settings, uow_factory, personality, language):
    user, chat = USERS[language]
    heard: list[str] = []
    with FakeOpenAI(models=("fake-chat",), personality=personality) as llm:
        def answer(body: dict) -> dict:  # what the model was given of the user's message
            heard.append(body["messages"][-1]["content"])
            return seeing(language)(body)
        llm.set_responder(answer)

        async def scenario(_app: Application) -> None:
            for number in range(3):
                telegram.push_message(chat, user, CAPTION[language], media={"photo": telegram.add_photo(
                    photo_bytes(640, 480), 640, 480)})
                await until(lambda n=number: len(telegram.messages_to(chat)) > n, what="a reply")

        run_bot(settings, uow_factory, llm, scenario)
        sent = [has_images(body) for body in llm.chat_requests()]
    stopped = sent.index(False)  # two answers without a description, then never an image again
    assert sent[0] and not any(sent[stopped:])
    caption_reached = [CAPTION[language] in text for text in heard]
    assert caption_reached[-1]  # the third photo's caption reaches the model
    if personality == "llama-cpp-python-text-only":  # the whole message went with the image: caption and all
        assert not any(caption_reached[:-1])
    assert all(UNSEEN[language] in reply["text"] for reply in telegram.messages_to(chat))
    assert user_turns(uow_factory) == [f"{CAPTION[language]}\n[photo]"] * 3


@pytest.mark.parametrize("language", ["en", "zh"])
def test_with_llm_vision_off_no_image_is_ever_sent(telegram, settings, uow_factory, language):
    user, chat = USERS[language]
    with FakeOpenAI(models=("fake-chat",)) as llm:
        llm.set_responder(seeing(language))

        async def scenario(_app: Application) -> None:
            telegram.push_message(chat, user, CAPTION[language], media={"photo": telegram.add_photo(
                photo_bytes(640, 480), 640, 480)})
            await until(lambda: telegram.messages_to(chat), what="the reply")

        run_bot(settings, uow_factory, llm, scenario, vision="off")
        assert [has_images(body) for body in llm.chat_requests()] == [False]
    [reply] = telegram.messages_to(chat)
    assert UNSEEN[language] in reply["text"] and "offline" not in reply["text"] and "离线" not in reply["text"]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_offline_a_photo_is_answered_from_its_caption_and_the_user_told_it_cannot_be_seen(
        telegram, settings, uow_factory, language):
    user, chat = USERS[language]

    async def scenario(_app: Application) -> None:
        telegram.push_message(chat, user, CAPTION[language], media={"photo": telegram.add_photo(
            photo_bytes(640, 480), 640, 480)})
        telegram.push_message(chat, user, None, media={"photo": telegram.add_photo(photo_bytes(64, 48), 64, 48)})
        await until(lambda: len(telegram.messages_to(chat)) == 2, what="both replies")

    run_bot(settings, uow_factory, None, scenario)
    assert all(UNSEEN[language] in reply["text"] for reply in telegram.messages_to(chat))
    assert sorted(user_turns(uow_factory)) == sorted([f"{CAPTION[language]}\n[photo]", "[photo]"])


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_sticker_is_its_emoji(telegram, settings, uow_factory, language):
    user, chat = USERS[language]
    with FakeOpenAI(models=("fake-chat",)) as llm:
        llm.set_responder(seeing(language))

        async def scenario(_app: Application) -> None:
            telegram.push_message(chat, user, None, media={"sticker": sticker_object("😹")})
            await until(lambda: telegram.messages_to(chat), what="the reply")

        run_bot(settings, uow_factory, llm, scenario)
        [body] = llm.chat_requests()
    assert "😹" in body["messages"][-1]["content"] and not has_images(body)
    assert user_turns(uow_factory) == ["😹"]
    assert not any(call.method == "getFile" for call in telegram.calls)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_text_file_is_read_into_the_message_but_the_round_keeps_only_its_name(
        telegram, settings, uow_factory, language):
    notes = ("Shopping: oat milk, coffee beans\nCall mum on Sunday\n" if language == "en"
             else "购物：燕麦奶，咖啡豆\n周日给妈妈打电话\n")
    body, reply = file_sent(telegram, settings, uow_factory, language, notes.encode(), "notes.txt", "text/plain")
    prompt = body["messages"][-1]["content"]
    assert f'<file name="notes.txt">\n{notes.strip()}\n</file>' in prompt
    assert user_turns(uow_factory) == [f"{CAPTION[language]}\n[file notes.txt]"]
    assert "only its beginning" not in reply["text"] and "开头" not in reply["text"]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_long_text_file_is_cut_at_the_token_cap_and_the_user_told(telegram, settings, uow_factory, language):
    long_text = "".join(f"line {n}: the quick brown fox jumps over the lazy dog\n" for n in range(2000))
    body, reply = file_sent(telegram, settings, uow_factory, language, long_text.encode(), "log.md", "text/markdown")
    prompt = body["messages"][-1]["content"]
    assert "line 0:" in prompt
    assert "line 1999:" not in prompt
    assert "(the file was cut" in prompt
    assert len(prompt) < TEXT_FILE_TOKEN_CAP * 8
    assert ("log.md was long: I read only its beginning." if language == "en" else "log.md 太长了") in reply["text"]


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize(("name", "mime", "size", "said"), [
    ("big.txt", "text/plain", MAX_TEXT_FILE_BYTES + 1, {"en": "too large", "zh": "太大"}),
    ("report.pdf", "application/pdf", 2000, {"en": "I only read text files", "zh": "我只读文本文件"}),
])
def test_an_oversized_or_unread_file_is_named_never_downloaded_and_the_user_told(
        telegram, settings, uow_factory, language, name, mime, size, said):
    body, reply = file_sent(telegram, settings, uow_factory, language, b"x" * size, name, mime)
    assert not [call for call in telegram.calls if call.method == "getFile"]  # refused before any download
    assert "xxxx" not in json.dumps(body)
    assert said[language] in reply["text"]
    assert name in reply["text"]
    [line] = user_turns(uow_factory)
    assert line.startswith(f"{CAPTION[language]}\n[file {name}, ")


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_flood_of_files_is_fetched_only_within_the_senders_message_rate_and_the_rest_named(
        telegram, settings, uow_factory, language):
    user, chat = USERS[language]
    other, other_chat = USERS["zh" if language == "en" else "en"]
    allowance = SharedLimit(MemoryStorage(), "attachment-fetches", "2/minute")
    with FakeOpenAI(models=("fake-chat",)) as llm:
        llm.set_responder(seeing(language))

        async def scenario(_app: Application) -> None:
            for number in range(3):
                document = telegram.add_file(f"note {number}".encode(), f"note{number}.txt", "text/plain")
                telegram.push_message(chat, user, CAPTION[language], document=document)
                await until(lambda n=number: len(telegram.messages_to(chat)) > n, what="a reply")
            document = telegram.add_file(b"their own note", "theirs.txt", "text/plain")
            telegram.push_message(other_chat, other, "a note", document=document)  # another sender: their own allowance
            await until(lambda: telegram.messages_to(other_chat), what="the other reply")

        run_bot(settings, uow_factory, llm, scenario, fetch_limit=allowance)
    assert len([call for call in telegram.calls if call.method == "getFile"]) == 3  # two of three, and the other's
    replies = [reply["text"] for reply in telegram.messages_to(chat)]
    over = {"en": "sent a lot of files just now", "zh": "发的文件有点多"}[language]
    assert [over in text for text in replies] == [False, False, True] and "note2.txt" in replies[2]
    assert user_turns(uow_factory)[2].endswith("[file note2.txt, not fetched: too many files just now]")
    assert over not in telegram.messages_to(other_chat)[0]["text"]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_voice_note_without_a_transcriber_gets_a_clear_answer(telegram, settings, uow_factory, language):
    user, chat = USERS[language]
    with FakeOpenAI(models=("fake-chat",)) as llm:
        llm.set_responder(seeing(language))

        async def scenario(_app: Application) -> None:
            telegram.push_message(chat, user, None, media={"voice": telegram.add_voice(b"OggS" + b"\0" * 500)})
            await until(lambda: telegram.messages_to(chat), what="the reply")

        run_bot(settings, uow_factory, llm, scenario)
    [reply] = telegram.messages_to(chat)
    assert ("I can't hear voice messages" if language == "en" else "我听不了语音") in reply["text"]
    assert user_turns(uow_factory) == ["[voice message voice.ogg, not heard: no transcriber]"]


SAID = {"en": "I'm on my way home, the train is late again", "zh": "我在回家路上，火车又晚点了"}


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("personality", ["whisper.cpp", "openai-whisper-1", "openai-gpt-4o-transcribe"])
def test_a_voice_note_is_transcribed_and_the_transcript_is_the_message_counted_in_usage(
        telegram, settings, uow_factory, language, personality):
    user, chat = USERS[language]
    audio = b"OggS" + bytes(range(256)) * 20
    with FakeOpenAI(models=("fake-chat",)) as llm, FakeTranscriber(personality=personality) as ears:
        llm.set_responder(seeing(language))
        ears.queue_transcript(SAID[language])

        async def scenario(_app: Application) -> None:
            telegram.push_message(chat, user, None, media={"voice": telegram.add_voice(audio, duration=4)})
            await until(lambda: telegram.messages_to(chat), what="the reply")

        run_bot(settings, uow_factory, llm, scenario, ears=ears)
        [heard] = ears.requests
        [body] = llm.chat_requests()
    assert heard.audio == audio and heard.model == "whisper-1" and heard.filename == "voice.ogg"
    assert SAID[language] in body["messages"][-1]["content"]
    assert user_turns(uow_factory) == [f"[voice message] {SAID[language]}"]
    [reply] = telegram.messages_to(chat)
    assert HEAR_NOTHING[language] not in reply["text"]
    with uow_factory() as uow:
        [hearing] = uow.session.scalars(select(UsageCall).where(UsageCall.model == "whisper-1")).all()
    assert hearing.kind == "turn" and hearing.prompt_tokens >= 40  # the audio's tokens, counted in the turn's usage
    assert hearing.estimated is (personality != "openai-gpt-4o-transcribe")  # by the duration, unless tokens come


HEAR_NOTHING = {"en": "I couldn't make out your voice message", "zh": "我没能听清你的语音"}


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_voice_note_the_transcriber_fails_on_is_kept_and_the_user_asked_to_try_again(
        telegram, settings, uow_factory, language):
    user, chat = USERS[language]
    with FakeOpenAI(models=("fake-chat",)) as llm, FakeTranscriber() as ears:
        llm.set_responder(seeing(language))
        ears.queue_error(500)
        ears.queue_error(500)

        async def scenario(_app: Application) -> None:
            telegram.push_message(chat, user, None, media={"voice": telegram.add_voice(b"OggS" + b"1" * 300)})
            await until(lambda: telegram.messages_to(chat), what="the reply")

        run_bot(settings, uow_factory, llm, scenario, ears=ears)
    [reply] = telegram.messages_to(chat)
    assert HEAR_NOTHING[language] in reply["text"]
    assert user_turns(uow_factory) == ["[voice message, could not be transcribed]"]


def test_in_a_group_only_a_photo_whose_caption_mentions_the_bot_is_fetched_and_answered(
        telegram, settings, uow_factory):
    group = chat_object(-1001234567890, "Friends")
    with FakeOpenAI(models=("fake-chat",)) as llm:
        llm.set_responder(seeing("en"))

        async def scenario(_app: Application) -> None:
            telegram.push_message(group, ALICE, "our trip", media={"photo": telegram.add_photo(photo_bytes(640, 480),
                                                                                              640, 480)})
            telegram.push_message(group, ALICE, "@mnemo_test_bot look at my cat", media={
                "photo": telegram.add_photo(photo_bytes(640, 480), 640, 480)},
                entities=[{"type": "mention", "offset": 0, "length": 15}])
            await until(lambda: telegram.messages_to(group["id"]), what="the reply")

        run_bot(settings, uow_factory, llm, scenario)
    assert len(telegram.calls_to("getFile")) == 1  # the photo not addressed to the bot is never downloaded
    assert user_turns(uow_factory) == [f"look at my cat\n[photo: {CAT['en']}]"]
