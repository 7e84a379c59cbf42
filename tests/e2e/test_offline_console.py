"""`mnemo chat` on the embedded default with no model, restarted between telling and asking, in Chinese and
English: the fact comes back in the second person, the question is not stored, a correction replaces the old
value, and another user is told nothing. The console runs without its companions (``--no-workers``): what is
checked here is the turn itself; the worker's rule pass over the same turns is tested in
tests/integration/test_offline_memory.py and the companions beside the console in test_embedded.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def chat(data_dir: Path, user: str, *lines: str) -> list[str]:
    """One `mnemo chat` run (a fresh process: the restart) fed ``lines``; the bot's replies and command output."""
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "LLM_BASE_URL"}}
    env.update(MNEMO_DATA_DIR=str(data_dir), PYTHONPATH=str(ROOT))
    run = subprocess.run([sys.executable, "-m", "shared.app.cli", "chat", "--user", user, "--no-workers"],
                         input="\n".join([*lines, "/quit"]) + "\n", env=env, cwd=data_dir, capture_output=True,
                         text=True, timeout=180)
    assert run.returncode == 0, run.stderr
    return [part.strip() for part in run.stdout.split("you> ")[1:]]


def reply(output: str) -> str:
    return output.removeprefix("Mnemo (offline)> ").removeprefix("Mnemo（离线）> ").splitlines()[0]


@pytest.mark.parametrize("script", [
    {"tell": ("我叫小红。", "我最喜欢的水果是芒果", "我住在北京。"),
     "ask": (("你还记得我最喜欢什么水果吗？", "你最喜欢的水果是芒果。"), ("我叫什么名字？", "你叫小红。"),
             ("我住在哪里？", "你住在北京。")),
     "correct": "不对，我现在住在上海", "corrected": ("我住哪？", "你现在住在上海。"),
     "stranger": "我住在哪里？", "unknown": "还不知道", "kept": "我现在住在上海", "gone": "我住在北京"},
    {"tell": ("My name is Ana.", "I have a dog named Biscuit, he's a beagle.", "I live in Paris."),
     "ask": (("Do you remember my dog's name?", "You have a dog named Biscuit, he's a beagle."),
             ("What is my name?", "Your name is Ana."),
             ("I live in which city, do you remember?", "You live in Paris.")),
     "correct": "actually I moved to Berlin", "corrected": ("where do I live?", "You moved to Berlin."),
     "stranger": "where do I live?", "unknown": "don't know", "kept": "I moved to Berlin", "gone": "I live in Paris"},
], ids=["chinese", "english"])
def test_a_fact_told_before_a_restart_is_answered_after_it_and_corrected(data_dir, script):
    told = chat(data_dir, "alice", *script["tell"])
    assert all(reply(line).startswith(("好的", "Got it", "Nice to meet you")) for line in told[:3])

    questions = [question for question, _ in script["ask"]]
    asked = chat(data_dir, "alice", *questions, script["correct"], "/memories")
    assert [reply(line) for line in asked[:3]] == [answer for _, answer in script["ask"]]
    listing = asked[4]
    assert script["kept"] in listing and script["gone"] not in listing
    assert not any(question.rstrip("？?") in listing for question in questions)  # no question was stored

    again = chat(data_dir, "alice", script["corrected"][0])
    assert reply(again[0]) == script["corrected"][1]

    stranger = chat(data_dir, "bob", script["stranger"], "/memories")
    assert script["unknown"] in reply(stranger[0]) and "Paris" not in stranger[0] and "北京" not in stranger[0]
    assert script["kept"] not in stranger[1]
