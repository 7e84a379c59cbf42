"""A reply streamed from a real OpenAI-compatible server (llama-cpp-python, Gemma 3 270M) to ``mnemo chat``: the
console prints the model's first words while it is still writing, and only words (never the JSON around them).

The output mode is pinned to instructions only (``LLM_OUTPUT_MODE=text``): under the JSON grammar the 270M model
writes no usable reply for most messages (an empty ``response``, a number: measured by make test-llm's own runs,
three of three and two of two in a row), so a test of streaming in that mode would mostly test the model. Reading
``response`` out of a streamed JSON object, split at every byte, is tested against the fakes
(tests/unit/test_live_text.py, tests/integration/test_live_replies.py); the console test of test_real_server.py
runs the JSON mode on this server, streamed.

Standard output is read as the bytes arrive, each write timed, through a pipe: the label and the first words come
in one write, the rest in later writes, the line's end when the reply is whole. What the 270M model says is not
judged; an answer it makes unusable is followed by the offline answer on a line of its own (a pipe cannot erase).
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time

import pytest

from shared.db import migrate
from tests.fakes.recording_proxy import RecordingProxy
from tests.real_llm.conftest import MODEL_ALIAS, SYSTEM_ROLE, _free_port

pytestmark = pytest.mark.real_llm

MESSAGES = ("Tell me a short story about a cat who lives in Lisbon, please.",
            "What would you cook for a rainy Sunday dinner?", "请给我讲一个关于月亮的小故事。")
REPLY_SECONDS = 200
"""A turn's deadline (150 s) and the rest: on two busy cores the 270M model took 40 s to its first words."""
MACHINE_TEXT = ("{", '"response"', "memory_update", "should_store", "```")


class RawConsole:
    """``mnemo chat`` in a child process; every read of its standard output kept with the time it arrived."""

    def __init__(self, env: dict[str, str]) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "shared.app.cli", "chat", "--user", "lin"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        env=env)
        self.reads: queue.Queue[tuple[float, str]] = queue.Queue()
        self.seen = ""
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        while chunk := os.read(self.process.stdout.fileno(), 4096):
            self.reads.put((time.monotonic(), chunk.decode(errors="replace")))

    def until(self, text: str, timeout: float) -> list[tuple[float, str]]:
        """The reads up to the one after which ``text`` has been printed (since the last call)."""
        start, got, deadline = len(self.seen), [], time.monotonic() + timeout
        while text not in self.seen[start:]:
            at, chunk = self.reads.get(timeout=max(0.1, deadline - time.monotonic()))
            got.append((at, chunk))
            self.seen += chunk
        return got

    def say(self, text: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(text.encode() + b"\n")
        self.process.stdin.flush()

    def close(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        return self.process.wait(timeout=60)


def streamed_reply(reads: list[tuple[float, str]]) -> tuple[float, float, str] | None:
    """(first words' time, the line's end, the words) of a model's reply printed in writes as it came; None when
    the model's words never showed (it wrote nothing usable: the offline answer was printed whole)."""
    label = "Mnemo> "  # the model's words, not the offline answer's label
    index = next((i for i, (_at, chunk) in enumerate(reads) if label in chunk), None)
    if index is None:
        return None
    first_at, first = reads[index]
    words = first[first.index(label) + len(label):]
    ends = [i for i in range(index, len(reads)) if "\n" in (words if i == index else reads[i][1])]
    assert ends and ends[0] > index, reads  # the reply's line ended in a later write: words came as written
    printed = (words + "".join(chunk for _at, chunk in reads[index + 1:ends[0] + 1])).split("\n")[0]
    return first_at, reads[ends[0]][0], printed


def test_the_console_prints_a_real_models_reply_while_the_model_writes_it(real_llm_url, fresh_system_db, tmp_path):
    migrate.upgrade(fresh_system_db)
    with RecordingProxy(real_llm_url) as proxy:
        env = {**os.environ, "DATABASE_URL": fresh_system_db, "LLM_BASE_URL": proxy.base_url,
               "LLM_SYSTEM_ROLE": SYSTEM_ROLE, "LLM_MODEL": MODEL_ALIAS,
               "LLM_TIMEOUT_SECONDS": "150", "LLM_MAX_OUTPUT_TOKENS": "200", "MNEMO_DATA_DIR": str(tmp_path),
               "API_PORT": str(_free_port()), "PYTHONUNBUFFERED": "1", "STREAM_REPLIES": "auto",
               "LLM_OUTPUT_MODE": "text"}
        console = RawConsole(env)
        streamed = None
        try:
            console.until("you> ", timeout=120)
            for message in MESSAGES:  # a 270M model sometimes writes nothing usable: the next message then
                asked = time.monotonic()
                console.say(message)
                if (streamed := streamed_reply(console.until("you> ", timeout=REPLY_SECONDS))) is not None:
                    break
        except queue.Empty:
            pytest.fail(f"no reply within {REPLY_SECONDS} s:\n{console.seen[-3000:]}")
        finally:
            exit_code = console.close()
        requests = proxy.chat_requests()

    transcript = console.seen
    assert streamed is not None, transcript  # no message of three got words of the model's own
    first_at, line_end, printed = streamed
    assert printed.strip() and not any(mark in transcript for mark in MACHINE_TEXT), transcript
    print(f"first words after {first_at - asked:.1f} s, the reply's line ended after {line_end - asked:.1f} s")
    assert requests and all(request.status == 200 or request.body.get("response_format", {}).get("type")
                            == "json_schema" for request in requests)  # llama-cpp-python refuses it with 500
    assert all(request.body.get("stream") is True and request.body.get("max_tokens") for request in requests)
    assert exit_code == 0
