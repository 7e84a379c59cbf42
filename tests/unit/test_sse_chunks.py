"""A chat stream's server-sent events read as JSON, as the OpenAI SDK's stream reads them (pure)."""

from __future__ import annotations

import asyncio

import pytest

from shared.llm.sdk import openai
from shared.llm.transport import _sse_chunks


class Lines:
    """What ``aiter_lines`` gives of a streamed response: its lines, without their ends."""

    request = None

    def __init__(self, text: str) -> None:
        self.lines = text.split("\n")

    async def aiter_lines(self):
        for line in self.lines:
            yield line


def chunks(text: str) -> list[dict]:
    async def read() -> list[dict]:
        return [chunk async for chunk in _sse_chunks(Lines(text))]

    return asyncio.run(read())


def test_each_event_is_one_chunk_until_done():
    stream = ('data: {"choices": [{"delta": {"content": "Hel"}}]}\n\n'
              ': a comment the server sends to keep the line open\n\n'
              'data:{"choices": [{"delta": {"content": "lo"}}]}\n\n'
              'data: [DONE]\n\n'
              'data: {"choices": [{"delta": {"content": "after the end"}}]}\n\n')
    assert [c["choices"][0]["delta"]["content"] for c in chunks(stream)] == ["Hel", "lo"]


def test_an_event_over_several_data_lines_is_joined_and_the_last_needs_no_blank_line():
    stream = 'data: {"choices": [{"delta":\ndata:  {"content": "x"}}]}\n\ndata: {"usage": {"prompt_tokens": 3}}'
    assert chunks(stream) == [{"choices": [{"delta": {"content": "x"}}]}, {"usage": {"prompt_tokens": 3}}]


def test_events_of_another_kind_are_passed_over():
    assert chunks('event: ping\ndata: {"at": 1}\n\ndata: {"choices": []}\n\n') == [{"choices": []}]


@pytest.mark.parametrize("stream", ['data: {"error": {"message": "model overloaded"}}\n\n',
                                    'event: error\ndata: {"error": {"message": "model overloaded"}}\n\n'])
def test_an_error_in_the_stream_raises_the_sdks_error(stream):
    with pytest.raises(openai.APIError, match="model overloaded"):
        chunks(stream)


def test_an_error_without_words_still_says_what_happened():
    with pytest.raises(openai.APIError, match="An error occurred during streaming"):
        chunks('data: {"error": "boom"}\n\n')
