"""The OpenAI SDK is loaded on first use: a process that never calls a model does not import it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import sys
import shared.conversation.service, shared.lifecycle.extraction, shared.recall.embeddings, worker.tasks
from shared.llm.sdk import openai
assert "openai.types" not in sys.modules, "the SDK ran at import"
assert issubclass(openai.APIStatusError, openai.OpenAIError)  # first use loads it whole
assert "openai.types" in sys.modules
"""


def test_importing_the_services_and_the_worker_does_not_run_the_sdk_until_it_is_used() -> None:
    probe = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=60,
                           env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert probe.returncode == 0, probe.stderr
