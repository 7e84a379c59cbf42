"""Prompt-cost benchmark: memory-context tokens per turn, against the full conversation.

LoCoMo conversations are replayed in order through the product's ``ConversationService``: the
first speaker is the user, and the fake LLM answers each message with the other speaker's next
lines. The fake also stores every user message as a memory, without its questions (the most an LLM
could store: the write path refuses questions), so the 700-token memory budget is under full pressure
by the end of each conversation. The memory-context
section is read from the request the fake LLM actually received and counted with the product's
``estimate_tokens``; every chat request is classified to check the hot path makes exactly one LLM
call per message. Writes ``prompt_cost.json``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import pairwise
from pathlib import Path

from bench.fakes.openai_server import FakeOpenAI
from bench.hot_path import build_service, message_at, scratch_database
from bench.llm_calls import TURN, count_kinds, per_message, request_kind
from bench.prefix_cache import reusable_shares, reusable_tokens
from bench.stats import distribution

MEMORY_TOKENS_TARGET = 700
REUSABLE_PREFIX_TARGET = 0.75
REFERENCE_TOKENS = {"mem0": 1_800, "full_context_mem0_paper": 26_000}
"""Per-turn context the mem0 paper reports on LoCoMo: mem0's memories, and the whole conversation."""
MEMORY_SECTION_OPENING = "What you know about the user"
QUICK_CONVERSATIONS = 1
SECONDS_BETWEEN_MESSAGES = 40
PROGRESS_EVERY = 50
NEUTRAL = {"primary": "neutral", "category": "neutral", "confidence": 0.9, "indicators": []}


@dataclass(frozen=True)
class ReplayMessage:
    """One user message of a replayed conversation, the reply the fake LLM gives, and when it is sent."""

    text: str
    reply: str
    at: datetime


@dataclass(frozen=True)
class Replay:
    sample_id: str
    messages: tuple[ReplayMessage, ...]
    transcript: str
    """The whole conversation, both speakers, as a full-context prompt would hold it."""


def load_replays(path: Path, limit: int | None = None) -> list[Replay]:
    """The conversations of a LoCoMo file as replays (the first ``limit`` when given)."""
    samples = json.loads(Path(path).read_text(encoding="utf-8"))
    return [replay_of(sample) for sample in samples[:limit]]


def replay_of(sample: dict) -> Replay:
    """Consecutive lines of ``speaker_a`` make one user message; the ``speaker_b`` lines after it its reply."""
    from bench.datasets import parse_session_date

    conversation = sample["conversation"]
    user = conversation["speaker_a"]
    messages: list[ReplayMessage] = []
    lines: list[str] = []
    for number in _session_numbers(conversation):
        started = parse_session_date(conversation[f"session_{number}_date_time"])
        runs = _speaker_runs(conversation[f"session_{number}"])
        lines += [f"{speaker}: {text}" for speaker, texts in runs for text in texts]
        for index, (speaker, texts) in enumerate(runs):
            if speaker != user:
                continue
            reply = runs[index + 1][1] if index + 1 < len(runs) else ["Talk soon!"]
            at = started + timedelta(seconds=SECONDS_BETWEEN_MESSAGES * len(messages))
            messages.append(ReplayMessage(" ".join(texts), " ".join(reply), at))
    return Replay(str(sample.get("sample_id", "")), tuple(messages), "\n".join(lines))


def _session_numbers(conversation: dict) -> list[int]:
    numbers = (key.removeprefix("session_") for key in conversation if key.startswith("session_"))
    return sorted(int(n) for n in numbers if n.isdigit() and isinstance(conversation[f"session_{n}"], list))


def _speaker_runs(turns: list[dict]) -> list[tuple[str, list[str]]]:
    """[(speaker, [text, …]), …] with each speaker's consecutive turns together."""
    runs: list[tuple[str, list[str]]] = []
    for turn in turns:
        text = " ".join(str(part).strip() for part in (turn.get("text"), turn.get("blip_caption"))
                        if part and str(part).strip())
        if not text:
            continue
        if runs and runs[-1][0] == turn["speaker"]:
            runs[-1][1].append(text)
        else:
            runs.append((turn["speaker"], [text]))
    return runs


def memory_section(messages: list[dict]) -> str:
    """The memory-context block of a turn prompt's app note ("" when nothing was remembered)."""
    from shared.conversation.prompt import app_note

    note = app_note(messages[-1]["content"]) if messages else ""
    return next((part for part in note.split("\n\n") if part.startswith(MEMORY_SECTION_OPENING)), "")


def prompt_tokens(body: dict) -> int:
    from shared.text import estimate_tokens

    return sum(estimate_tokens(m["content"]) for m in body["messages"] if isinstance(m.get("content"), str))


def turn_answer(item: ReplayMessage, number: int) -> dict:
    """What the fake LLM answers: the other speaker's reply, and what the user's message states stored as a
    memory (its questions, greetings and requests left out, as the write path would refuse them)."""
    from shared.memory.policy import MAX_MEMORY_CHARS
    from shared.speech.acts import sentences

    stated = " ".join(sentence.text for sentence in sentences(item.text) if sentence.kind == "statement")
    entries = [{"type": "event", "subject": "user", "predicate": f"said_{number}",
                "content": stated[:MAX_MEMORY_CHARS], "tier": "long"}] if stated else []
    return {"emotion": NEUTRAL, "response": item.reply,
            "memory_update": {"should_store": bool(entries), "entries": entries},
            "todos": [], "topic": None, "context_variables": []}


class ReplayClock:
    """The service's clock, set to each replayed message's time."""

    def __init__(self) -> None:
        self.now: datetime | None = None

    def __call__(self) -> datetime:
        if self.now is None:
            raise RuntimeError("the replay clock was read before the first message set it")
        return self.now


async def replay(service, llm: FakeOpenAI, clock: ReplayClock, conversation: Replay, user: str, done: list[int],
                 total: int) -> None:
    for number, item in enumerate(conversation.messages):
        clock.now = item.at
        llm.queue_reply(turn_answer(item, number))
        await service.handle_message(message_at(user, f"{user}-{number}", item.text, item.at))
        done[0] += 1
        if done[0] % PROGRESS_EVERY == 0 or done[0] == total:
            print(f"\rprompt cost: {done[0]}/{total} messages", end="\n" if done[0] == total else "",
                  file=sys.stderr, flush=True)


def run(locomo_path: Path, database_url: str | None, out_dir: Path, quick: bool = False,
        conversations: int | None = None) -> dict:
    """Replays the conversations on a scratch database; writes and returns the figures."""
    from shared.text import estimate_tokens

    started = time.perf_counter()
    replays = load_replays(Path(locomo_path), conversations or (QUICK_CONVERSATIONS if quick else None))
    total = sum(len(r.messages) for r in replays)
    clock = ReplayClock()
    with FakeOpenAI(models=("fake-chat",)) as llm, scratch_database(database_url) as url:
        service, engine = build_service(url, llm, pool_size=2, clock=clock)
        try:
            done, starts = [0], []
            for index, conversation in enumerate(replays):
                starts.append(len(llm.chat_requests()))
                asyncio.run(replay(service, llm, clock, conversation, f"locomo-{index}", done, total))
            memories = _count_memories(engine)
        finally:
            engine.dispose()
        bodies = llm.chat_requests()
    turns = [body for body in bodies if request_kind(body) == TURN]
    turn_prompts = [[body["messages"] for body in bodies[start:end] if request_kind(body) == TURN]
                    for start, end in zip(starts, [*starts[1:], len(bodies)], strict=True)]
    figures = {
        "quick": quick, "conversations": len(replays), "user_messages": total, "stored_memories": memories,
        "memory_budget_tokens": service.config.memory_budget_tokens,
        "retrieval_limit": service.config.retrieval_limit,
        "memory_context_tokens": distribution([estimate_tokens(memory_section(b["messages"])) for b in turns]),
        "whole_prompt_tokens": distribution([prompt_tokens(b) for b in turns]),
        "reusable_prefix": reusable_prefix(turn_prompts),
        "full_conversation_tokens": distribution([estimate_tokens(r.transcript) for r in replays]),
        "llm_calls": count_kinds(bodies), "llm_calls_per_message": per_message(count_kinds(bodies), total),
        "target_tokens": MEMORY_TOKENS_TARGET, "reference_tokens": REFERENCE_TOKENS,
        "elapsed_s": round(time.perf_counter() - started, 1),
    }
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "prompt_cost.json").write_text(json.dumps(figures, indent=2))
    return figures


def reusable_prefix(conversations: list[list[list[dict]]]) -> dict:
    """The share of each turn's prompt that repeats the start of the same conversation's previous prompt
    (its distribution, and the share of all prompt tokens, weighted by tokens)."""
    shares = [share for requests in conversations for share in reusable_shares(requests)]
    counted = [reusable_tokens(previous, current) for requests in conversations
               for previous, current in pairwise(requests)]
    weighted = sum(reused for reused, _ in counted) / max(1, sum(total for _, total in counted))
    return {"per_turn": distribution(shares), "token_weighted": weighted, "target": REUSABLE_PREFIX_TARGET}


def _count_memories(engine) -> int:
    with engine.connect() as connection:
        return connection.exec_driver_sql("SELECT count(*) FROM memories WHERE deleted_at IS NULL").scalar_one()


def report(figures: dict) -> str:
    m, w, f = figures["memory_context_tokens"], figures["whole_prompt_tokens"], figures["full_conversation_tokens"]
    r = figures["reusable_prefix"]
    calls = figures["llm_calls_per_message"]
    verdict = "met" if m["max"] <= figures["target_tokens"] else "MISSED"
    references = ", ".join(f"{name} {tokens:,}" for name, tokens in figures["reference_tokens"].items())
    return "\n".join([
        f"prompt cost{' (quick)' if figures['quick'] else ''}: {figures['user_messages']} LoCoMo user messages in "
        f"{figures['conversations']} conversations, {figures['stored_memories']:,} memories stored, "
        f"{figures['elapsed_s']} s",
        f"memory-context tokens per turn: mean {m['mean']:.0f}, p50 {m['p50']:.0f}, p95 {m['p95']:.0f}, max "
        f"{m['max']:.0f} (target <= {figures['target_tokens']}: {verdict}; references: {references})",
        f"whole prompt per turn (persona, rules, memories, last turns): mean {w['mean']:.0f}, p95 {w['p95']:.0f}, "
        f"max {w['max']:.0f} tokens",
        f"full conversation for the same data: mean {f['mean']:,.0f}, max {f['max']:,.0f} tokens",
        f"reusable prefix per turn (repeats the previous turn's prompt): mean {r['per_turn']['mean']:.1%}, p50 "
        f"{r['per_turn']['p50']:.1%}; of all prompt tokens {r['token_weighted']:.1%} (target >= {r['target']:.0%}: "
        f"{'met' if r['per_turn']['mean'] >= r['target'] else 'MISSED'})",
        "LLM calls per user message on the hot path: " + ", ".join(f"{k} {v:.2f}" for k, v in calls.items()),
    ])
