"""What the real llama-cpp-python server (0.3, the text-only Gemma 3 270M of ``make test-llm``) does with a photo,
and that Mnemo loses no turn to it.

llama-cpp-python without a multimodal chat handler keeps only string content (``llama_chat_format._map_roles``): a
message with an image part reaches the model empty, caption and all, and is answered 200 as if nothing was said.
Mnemo cannot see that in the answer except by the missing description, so ``LLM_VISION=auto`` stops sending images
after two answers in a row that describe none. Whatever the small model writes, every photo's turn is kept with its
caption and answered, and what the server answered is printed for the record.
"""

from __future__ import annotations

import asyncio
import io
import json
from datetime import UTC, datetime, timedelta

import pytest
from PIL import Image
from sqlalchemy import select

from shared.attachments.images import for_model
from shared.attachments.kinds import Attachment
from shared.attachments.texts import turn_line
from shared.attachments.vision import image_count
from shared.conversation.messages import IncomingMessage
from shared.conversation.service import ConversationService
from shared.conversation.warning_texts import WarningCode
from shared.db.models import ConversationTurn
from tests.fakes.recording_proxy import RecordingProxy
from tests.real_llm.test_real_model_replies import CONFIG, model_on
from tests.told import told

pytestmark = [pytest.mark.real_llm, pytest.mark.timeout(900)]

START = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)
CAPTIONS = ("This is my cat Mochi.", "这是我家猫咪睡觉的样子。", "Mochi again, on the sofa.")


def send_photo(service: ConversationService, caption: str, number: int):
    out = io.BytesIO()
    Image.new("RGB", (800, 600), (200, 120, 60)).save(out, format="JPEG")
    attached = (Attachment(kind="photo", name="photo.jpg", image=for_model(out.getvalue())),)
    message = IncomingMessage(platform="telegram", chat_id="c1", user_id="lin", text=turn_line(caption, attached),
                              sent_at=START + timedelta(minutes=number), display_name="Lin",
                              message_id=f"photo-{number}", attachments=attached)
    return asyncio.run(service.handle_message(message))


def test_photos_sent_to_the_real_text_only_server_lose_no_turn(real_llm_url, uow_factory):
    with RecordingProxy(real_llm_url) as proxy:
        model = model_on(proxy)
        service = ConversationService(uow_factory, CONFIG, chat_model=model)
        replies = [send_photo(service, caption, number) for number, caption in enumerate(CAPTIONS)]
        requests = proxy.chat_requests()
    with uow_factory() as uow:
        lines = list(uow.session.scalars(select(ConversationTurn.text).where(ConversationTurn.role == "user")
                                         .order_by(ConversationTurn.id)))
    print(json.dumps({"statuses": [request.status for request in requests],
                      "images": [image_count(request.body["messages"]) for request in requests],
                      "images_refused": model.endpoint.images_refused,
                      "replies": [[reply.text, reply.offline, told(reply), [str(w) for w in reply.warnings]]
                                  for reply in replies], "lines": lines},
                     ensure_ascii=False))
    assert any(image_count(request.body["messages"]) for request in requests)  # auto tried the image
    assert all(reply.text.strip() for reply in replies)  # every photo answered, by the model or offline
    assert not any(warning.code is WarningCode.MODEL_UNAVAILABLE for reply in replies for warning in reply.warnings)
    assert [line.split("\n")[0] for line in lines] == list(CAPTIONS)  # no turn lost, each with its caption
    assert all("[photo" in line for line in lines)
