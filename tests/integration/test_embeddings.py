"""Embedders through the real ``openai`` SDK against the fake OpenAI server, and their wiring."""

from __future__ import annotations

import builtins
import math
from collections.abc import Iterator
from typing import Any

import pytest

from bench.fakes.openai_server import FakeOpenAI, fake_embedding
from shared.errors import EmbeddingError
from shared.recall.embeddings import (
    EMBEDDING_BATCH_SIZE,
    MAX_EMBEDDED_CHARS,
    LocalEmbedder,
    OpenAIEmbedder,
    make_embedder,
)
from shared.repositories.vectors import vector_literal
from shared.settings import Settings
from tests.waiting import wait_for

DIMENSIONS = 16


@pytest.fixture
def llm() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(embedding_dim=DIMENSIONS) as server:
        yield server


def embedder(server: FakeOpenAI, dimensions: int = DIMENSIONS) -> OpenAIEmbedder:
    return OpenAIEmbedder(server.base_url, "test-key", "fake-embed", dimensions)


def without_sentence_transformers(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # LocalEmbedder sets it; restored afterwards

    def refusing_import(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.split(".")[0] == "sentence_transformers":
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", refusing_import)


def test_texts_are_embedded_in_order_in_batches_of_64(llm: FakeOpenAI) -> None:
    texts = [f"memory number {i}" for i in range(130)]

    vectors = embedder(llm).embed(texts)

    assert [len(body["input"]) for body in llm.embedding_requests()] == [EMBEDDING_BATCH_SIZE, EMBEDDING_BATCH_SIZE, 2]
    assert len(vectors) == 130
    assert all(len(vector) == DIMENSIONS for vector in vectors)
    expected = fake_embedding("memory number 129", DIMENSIONS)
    assert all(math.isclose(a, b, abs_tol=1e-6) for a, b in zip(vectors[129], expected, strict=True))


def test_no_texts_means_no_request(llm: FakeOpenAI) -> None:
    assert embedder(llm).embed([]) == []
    assert llm.embedding_requests() == []


def test_texts_are_cleaned_of_nul_cut_to_size_and_never_empty(llm: FakeOpenAI) -> None:
    embedder(llm).embed(["ca\x00t", "x" * 20_000, ""])

    [body] = llm.embedding_requests()
    assert body["input"][0] == "cat"
    assert len(body["input"][1]) == MAX_EMBEDDED_CHARS
    assert body["input"][2].strip() == ""
    assert body["input"][2] != ""
    assert body["model"] == "fake-embed"
    assert "dimensions" not in body


def test_vectors_of_the_wrong_length_are_an_error_that_names_the_setting(llm: FakeOpenAI) -> None:
    with pytest.raises(EmbeddingError, match="EMBEDDING_DIMENSIONS is 384"):
        embedder(llm, dimensions=384).embed(["hello"])


def test_a_refusing_endpoint_is_an_embedding_error(llm: FakeOpenAI) -> None:
    llm.queue_error(401, endpoint="embeddings")

    with pytest.raises(EmbeddingError, match="fake-embed"):
        embedder(llm).embed(["hello"])


def test_an_endpoint_trickling_its_answer_is_left_at_the_deadline_retries_included() -> None:
    with FakeOpenAI(embedding_dim=DIMENSIONS, embedding_trickle=0.4) as llm:  # minutes for the whole answer
        slow = OpenAIEmbedder(llm.base_url, "test-key", "fake-embed", DIMENSIONS, timeout_seconds=1.0)

        with pytest.raises(EmbeddingError, match="timed out"):
            slow.embed(["hello"])

        wait_for(lambda: llm.abandoned_trickles, 10, "the fake to see the client close the connection")
        assert len(llm.embedding_requests()) == llm.abandoned_trickles == 1  # no retry after the deadline


def test_local_embedder_without_the_extra_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    without_sentence_transformers(monkeypatch)

    with pytest.raises(EmbeddingError, match=r"pip install '\.\[local-embeddings\]'"):
        LocalEmbedder("all-MiniLM-L6-v2")


def test_make_embedder_prefers_the_endpoint_then_the_local_model_then_none(
    llm: FakeOpenAI, monkeypatch: pytest.MonkeyPatch,
) -> None:
    def settings(**values: Any) -> Settings:
        defaults = {"embedding_base_url": None, "embedding_model": None, "llm_api_key": None}
        return Settings(_env_file=None, embedding_dimensions=DIMENSIONS, **{**defaults, **values})

    remote = make_embedder(settings(embedding_base_url=llm.base_url, embedding_model="fake-embed",
                                    llm_api_key="sk-test-key-1234"))
    assert isinstance(remote, OpenAIEmbedder)
    assert (remote.name, remote.dimensions) == ("fake-embed", DIMENSIONS)
    assert len(remote.embed(["hi"])[0]) == DIMENSIONS
    assert llm.requests[-1].headers["authorization"] == "Bearer sk-test-key-1234"

    assert make_embedder(settings()) is None

    with pytest.raises(EmbeddingError, match="EMBEDDING_MODEL"):
        make_embedder(settings(embedding_base_url=llm.base_url))

    without_sentence_transformers(monkeypatch)
    with pytest.raises(EmbeddingError, match="local-embeddings"):
        make_embedder(settings(embedding_model="all-MiniLM-L6-v2"))


def test_vector_literal_is_pgvectors_text_format() -> None:
    assert vector_literal([0.1, -2, 3.5e-8]) == "[0.1,-2,3.5e-08]"
    assert vector_literal([]) == "[]"
    with pytest.raises(EmbeddingError):
        vector_literal([float("nan")])
