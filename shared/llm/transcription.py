"""Voice notes heard: one OpenAI-compatible ``/audio/transcriptions`` endpoint (whisper.cpp's server,
faster-whisper-server / speaches, OpenAI), set by ``TRANSCRIPTION_BASE_URL``, ``_MODEL`` and ``_API_KEY``.

Unset, nothing is transcribed and the user is told voice cannot be heard here. Each transcription has its own
deadline and is noted on the caller's usage meter (the audio's tokens as the server reports them, else by duration).
"""

from __future__ import annotations

import logging
import time

from shared.llm import metering
from shared.llm.retries import describe
from shared.llm.sdk import openai
from shared.settings import Settings
from shared.text import clean_text

log = logging.getLogger(__name__)

TRANSCRIPTION_SECONDS = 60.0
"""The most one voice note's transcription may take."""
MAX_TRANSCRIPT_CHARS = 8000
NO_API_KEY = "no-key"


class Transcriber:
    """One transcription endpoint and model; build one per process (:meth:`from_settings`)."""

    def __init__(self, base_url: str, api_key: str | None, model: str,
                 timeout_seconds: float = TRANSCRIPTION_SECONDS) -> None:
        self.model = model
        self._client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key or NO_API_KEY, timeout=timeout_seconds,
                                          max_retries=1)

    @classmethod
    def from_settings(cls, settings: Settings) -> Transcriber | None:
        """The configured transcriber, or None when ``TRANSCRIPTION_BASE_URL`` is unset."""
        if settings.transcription_base_url is None:
            return None
        key = settings.transcription_api_key.get_secret_value() if settings.transcription_api_key else None
        return cls(settings.transcription_base_url, key, settings.transcription_model)

    async def transcribe(self, audio: bytes, name: str, mime_type: str, *, duration: float = 0.0) -> str | None:
        """What was said (None: the endpoint failed or heard nothing); ``duration`` in seconds counts the audio
        where the server reports no tokens."""
        started = time.perf_counter()
        try:
            answer = await self._client.audio.transcriptions.create(
                model=self.model, file=(name or "voice.ogg", audio, mime_type or "audio/ogg"), response_format="json")
        except openai.OpenAIError as exc:
            log.warning("the voice note could not be transcribed: %s", describe(exc))
            return None
        text = clean_text(getattr(answer, "text", "") or "", MAX_TRANSCRIPT_CHARS).strip()
        metering.note_transcription(self.model, getattr(answer, "usage", None), text, duration,
                                    time.perf_counter() - started)
        return text or None

    async def aclose(self) -> None:
        await self._client.close()
