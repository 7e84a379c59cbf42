"""``mnemo bench replay --fake-model``: the replay with a fake model that answers every job as a plain model would,
to count the model calls a user message costs (hot path and background apart) without a real server.

The fake (:class:`~bench.fakes.openai_server.FakeOpenAI`, in-process) answers a turn with no memory update (the
recorded reply replaces its text), the knowledge monitor with one ADD per USER line of the conversation it is
shown (the line itself: what the user said is what is stored, so extraction alone decides what the replay can
recall), an episode summary with a short summary, and anything else with SKIP. The ADD's predicate is the line's
own digest, the same however the lines are batched.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from contextlib import contextmanager

from bench.fakes.openai_server import FakeOpenAI
from bench.llm_calls import EPISODE_SUMMARY, EXTRACTION, SITTING, TURN, count_kinds, per_message, request_kind

USER_LINE = re.compile(r"^\[\d+\] USER \([^)]*\): (.+)$", re.MULTILINE)
NEUTRAL = {"primary": "neutral", "category": "neutral", "confidence": 0.9, "indicators": []}
HOT_PATH = (TURN,)
PER_MESSAGE = (EXTRACTION, EPISODE_SUMMARY, SITTING)
"""The background work messages cause; the rest (dedup, reviews) is the nightly maintenance's, per day."""


def answer(request: dict) -> dict:
    kind = request_kind(request)
    if kind == TURN:
        return {"emotion": NEUTRAL, "response": "I see.", "memory_update": {"should_store": False, "entries": []},
                "todos": [], "topic": None, "context_variables": []}
    if kind in (EXTRACTION, SITTING):
        from shared.memory.policy import MAX_MEMORY_CHARS

        said = USER_LINE.findall(request["messages"][-1]["content"])  # the lines it is to read, not [earlier] ones
        operations = {"operations": [
            {"op": "ADD", "type": "event", "subject": "user", "source": "user_stated", "tier": "long",
             "predicate": f"said_{hashlib.sha1(line.encode()).hexdigest()[:8]}", "content": line[:MAX_MEMORY_CHARS]}
            for line in said] or [{"op": "SKIP"}]}
        return {**operations, "episode": SUMMARY} if kind == SITTING else operations
    if kind == EPISODE_SUMMARY:
        return SUMMARY
    return {"operations": [{"op": "SKIP"}]}


SUMMARY = {"summary": "talked about their week", "entities": [], "importance": 1.0,
           "scratchpad": {"current_focus": "", "open_threads": [], "next_steps": []}, "core_summary": None}


@contextmanager
def fake_model() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(models=("fake-chat",)) as llm:
        llm.set_responder(answer)
        yield llm


def model_calls(llm: FakeOpenAI, user_messages: int) -> dict:
    """The chat requests the fake received, by job, and per user message (hot path and background apart)."""
    from bench.prompt_cost import prompt_tokens

    bodies = llm.chat_requests()
    counts = count_kinds(bodies)
    tokens: dict[str, int] = {}
    for body in bodies:
        tokens[request_kind(body)] = tokens.get(request_kind(body), 0) + prompt_tokens(body)
    def share(kinds) -> float:
        return sum(count for kind, count in counts.items() if kind in kinds) / user_messages if user_messages else 0.0

    return {"user_messages": user_messages, "calls": counts, "per_message": per_message(counts, user_messages),
            "prompt_tokens_per_message": per_message(tokens, user_messages),
            "hot_path_per_message": share(HOT_PATH), "background_per_message": share(PER_MESSAGE),
            "nightly_per_message": share(set(counts) - set(HOT_PATH) - set(PER_MESSAGE))}
