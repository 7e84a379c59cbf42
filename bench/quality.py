"""Retrieval-quality benchmark: the product's own ingestion and recall on LoCoMo and MADial-Bench.

Every turn (LoCoMo) or archive entry (MADial) is stored as one of that user's memories through the
ORM, so ``search_tokens`` come from the product's tokenizer, and every question is answered by
``shared.recall.retrieval.recall_for_turn``. A plain BM25 (rank_bm25) over the same data runs beside it
as the baseline. Beside recall@k, the headline is the evidence in the prompt: what the product's own
step 1 packs into the memory budget at its defaults (:mod:`bench.prompt_evidence`), and the baseline's
best memories packed by the same prompt builder. Writes ``quality.json`` to the output directory;
``report`` renders the figures.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from pathlib import Path

from bench.datasets import Conversation, load_locomo, load_madial
from bench.hybrid import HybridSearch, load_hybrid, vectors_enabled
from bench.prompt_evidence import ArchiveItem, baseline_packed, mnemo_packed, product_config
from bench.quality_metrics import locomo_figures, madial_figures
from bench.quality_report import report

TOP_N = 20
QUICK_CONVERSATIONS = 1
QUICK_DIALOGUES = 20
QUERY_DAY_AFTER = timedelta(days=1)
"""Questions are asked the day after the last session (LoCoMo) or the latest memory (MADial)."""
HEADLINE = {"locomo_evidence_in_prompt": ("locomo", "evidence_in_prompt", 0.75),
            "madial_evidence_in_prompt": ("madial", "evidence_in_prompt", 0.65),
            "locomo_recall_any@10": ("locomo", "recall_any@10", 0.78),
            "madial_recall@5": ("madial", "recall@5", 0.60)}
"""The headline figures: dataset, figure and goal. Evidence in the prompt (what the model is shown at the
product's defaults) comes first; recall@k says what retrieval found before packing."""
PROGRESS_EVERY = 25

Ranked = list[str]
"""External ids (LoCoMo dia ids, MADial memory ids), best first."""


class Progress:
    """A counter line on stderr for the long loops."""

    def __init__(self, label: str, total: int) -> None:
        self.label, self.total, self.done = label, total, 0

    def step(self) -> None:
        self.done += 1
        if self.done % PROGRESS_EVERY == 0 or self.done == self.total:
            end = "\n" if self.done == self.total else ""
            print(f"\r{self.label}: {self.done}/{self.total}", end=end, file=sys.stderr, flush=True)


class BM25Ranking:
    """The baseline: rank_bm25's BM25Okapi over pre-tokenised documents."""

    def __init__(self, keys: Sequence[str], documents: Sequence[list[str]]) -> None:
        from rank_bm25 import BM25Okapi

        self._keys = list(keys)
        self._bm25 = BM25Okapi([tokens or [""] for tokens in documents])

    def rank(self, query: list[str]) -> Ranked:
        return [key for key, _ in self.scored(query)]

    def scored(self, query: list[str]) -> list[tuple[str, float]]:
        """The best ``TOP_N`` ids with their BM25 scores, best first."""
        scores = self._bm25.get_scores(query) if query else [0.0] * len(self._keys)
        order = sorted(range(len(self._keys)), key=lambda i: -scores[i])
        return [(self._keys[i], float(scores[i])) for i in order[:TOP_N] if scores[i] > 0]


def jieba_tokens(text: str) -> list[str]:
    """Plain jieba words without punctuation or whitespace (the MADial baseline's tokens)."""
    import jieba

    return [word for word in jieba.lcut(text) if any(ch.isalnum() for ch in word)]


def madial_turn(user_lines: Sequence[str]) -> tuple[str, tuple[str, ...]]:
    """The user's latest line (the message) and the earlier ones (the conversation context)."""
    return user_lines[-1], tuple(user_lines[:-1])


def ingest(uow, platform_user_id: str, items: Sequence[tuple]) -> tuple[int, dict[int, str]]:
    """Stores ``(key, text, time[, subject])`` items as one user's stated event memories (the subject
    is who said it, as the product records who a memory is about); returns the user and memory id →
    key. The ORM listener computes the search tokens with the product's tokenizer."""
    from shared.db.memory_models import Memory
    from shared.memory.writes import STATED_CONFIDENCE
    from shared.text import clean_text

    user_id = uow.users.identify("console", platform_user_id).user_id
    memories = [Memory(user_id=user_id, type="event", source="user_stated", content=clean_text(text),
                       subject=subject[0] if subject else None,
                       confidence=STATED_CONFIDENCE, created_at=at, updated_at=at, last_accessed=at)
                for _, text, at, *subject in items]
    uow.session.add_all(memories)
    uow.session.flush()
    keys = {memory.id: item[0] for memory, item in zip(memories, items, strict=True)}
    uow.commit()
    return user_id, keys


def mnemo_rank(uow, user_id: int, query: str, now: datetime, keys: dict[int, str], context: Sequence[str] = (),
               *, vector: Sequence[float] | None = None, hybrid=None) -> Ranked:
    from shared.recall.retrieval import recall_for_turn

    recall = recall_for_turn(uow, user_id, query, now=now, limit=TOP_N, context=context, query_vector=vector,
                             vectors=hybrid.vectors if hybrid else None)
    return [keys[item.memory.id] for item in recall.memories]


def run_locomo(new_uow: Callable, conversations: list[Conversation], config, hybrid=None) -> dict:
    """Mnemo and BM25 rankings, and what the prompt holds, for every question, per conversation (one
    user each); with ``hybrid`` (see :mod:`bench.hybrid`) also Mnemo with the query's vector fused in
    ("mnemo_hybrid"). ``config`` is the hot path's (see :func:`bench.prompt_evidence.product_config`)."""
    from shared.search.tokenizer import search_tokens

    rows: dict[str, list] = {"mnemo": [], "bm25": [], "bm25_speaker": []} | ({"mnemo_hybrid": []} if hybrid else {})
    progress = Progress("LoCoMo questions", sum(len(c.questions) for c in conversations))
    for index, conversation in enumerate(conversations):
        turns = conversation.turns
        now = max(turn.at for turn in turns) + QUERY_DAY_AFTER
        archive = {t.dia_id: ArchiveItem(t.dia_id, t.text, t.at) for t in turns}
        baselines = {"bm25": BM25Ranking(list(archive), [search_tokens(t.text) for t in turns]),
                     "bm25_speaker": BM25Ranking(list(archive), [search_tokens(f"{t.speaker or ''} {t.text}")
                                                                 for t in turns])}
        user = f"locomo-{index}-{conversation.sample_id}"
        with new_uow() as uow:
            user_id, keys = ingest(uow, user, [(t.dia_id, t.text, t.at, t.speaker) for t in turns])
        texts = [question.question for question in conversation.questions]
        query_vectors = _embedded(hybrid, new_uow, user_id, keys, texts)
        with new_uow() as uow:
            for question, vector in zip(conversation.questions, query_vectors, strict=True):
                asked = question.question
                found = {"mnemo": (mnemo_rank(uow, user_id, asked, now, keys),
                                   mnemo_packed(new_uow, config, user, [asked], now, keys))}
                for system, baseline in baselines.items():
                    scored = baseline.scored(search_tokens(asked))
                    found[system] = [key for key, _ in scored], baseline_packed(config, archive, scored, asked, now)
                if vector is not None:
                    found["mnemo_hybrid"] = (
                        mnemo_rank(uow, user_id, asked, now, keys, vector=vector, hybrid=hybrid),
                        mnemo_packed(new_uow, config, user, [asked], now, keys, vector=vector, vectors=hybrid.vectors))
                for system, (ranked, packed) in found.items():
                    rows[system].append((question.category, ranked, question.evidence, packed))
                progress.step()
    return {system: locomo_figures(found) for system, found in rows.items()}


def run_madial(new_uow: Callable, archive: list, dialogues: list, config, hybrid=None) -> dict:
    """Mnemo and BM25 rankings of the user's archive, and what the prompt holds, for every dialogue.
    Mnemo searches with the user's latest line and the earlier ones as conversation context, as a
    chat turn does (the prompt's memories come from replaying the user's lines through step 1)."""
    rows: dict[str, list] = {"mnemo": [], "bm25": []} | ({"mnemo_hybrid": []} if hybrid else {})
    now = max(memory.at for memory in archive) + QUERY_DAY_AFTER
    items = {m.id: ArchiveItem(m.id, m.text, m.at) for m in archive}
    bm25 = BM25Ranking(list(items), [jieba_tokens(m.text) for m in archive])
    progress = Progress("MADial dialogues", len(dialogues))
    user = "madial-user"
    with new_uow() as uow:
        user_id, keys = ingest(uow, user, [(m.id, m.text, m.at) for m in archive])
    query_vectors = _embedded(hybrid, new_uow, user_id, keys, [d.user_lines[-1] for d in dialogues])
    with new_uow() as uow:
        for dialogue, vector in zip(dialogues, query_vectors, strict=True):
            latest, earlier = madial_turn(dialogue.user_lines)
            scored = bm25.scored(jieba_tokens(" ".join(dialogue.user_lines)))
            found = {"mnemo": (mnemo_rank(uow, user_id, latest, now, keys, earlier),
                               mnemo_packed(new_uow, config, user, dialogue.user_lines, now, keys)),
                     "bm25": ([key for key, _ in scored], baseline_packed(config, items, scored, latest, now))}
            if vector is not None:
                found["mnemo_hybrid"] = (
                    mnemo_rank(uow, user_id, latest, now, keys, earlier, vector=vector, hybrid=hybrid),
                    mnemo_packed(new_uow, config, user, dialogue.user_lines, now, keys, vector=vector,
                                 vectors=hybrid.vectors))
            for system, (ranked_ids, packed) in found.items():
                rows[system].append((ranked_ids, dialogue.relevant, packed))
            progress.step()
    return {system: madial_figures(found) for system, found in rows.items()}


def _embedded(hybrid, new_uow: Callable, user_id: int, keys: dict[int, str], queries: list[str]) -> list:
    """Embeds the user's memories (the product's job) and returns the queries' vectors (None each
    without ``hybrid``)."""
    if hybrid is None:
        return [None] * len(queries)
    hybrid.index(new_uow, user_id, list(keys))
    return hybrid.query_vectors(queries)


def run(locomo_path: Path, madial_dir: Path, database_url: str | None, out_dir: Path, quick: bool = False,
        hybrid: bool | None = None, embedder=None) -> dict:
    """Both benchmarks on a scratch database; writes ``quality.json`` and ``quality.md`` and returns
    the figures. ``hybrid``: True insists on the vector pass, False skips it, None (the default)
    runs it when the local embedder is installed. ``embedder`` (any of :mod:`shared.recall.embeddings`)
    replaces the local model in the vector pass."""
    from bench.hot_path import scratch_database
    from shared.db.engine import make_engine, session_factory
    from shared.repositories.uow import UnitOfWork

    started = time.perf_counter()
    conversations = load_locomo(Path(locomo_path), QUICK_CONVERSATIONS if quick else None)
    archive, dialogues = load_madial(Path(madial_dir), QUICK_DIALOGUES if quick else None)
    search, skipped = _hybrid_search(hybrid, embedder)
    config = product_config()
    with scratch_database(database_url) as url:
        engine = make_engine(url)
        factory = session_factory(engine)
        new_uow = lambda: UnitOfWork(factory)  # noqa: E731
        try:
            if search is not None and not vectors_enabled(search, new_uow):
                search, skipped = None, "the database has no pgvector"
            if hybrid and search is None:
                raise RuntimeError(f"the hybrid pass cannot run: {skipped}")
            locomo = run_locomo(new_uow, conversations, config, search)
            madial = run_madial(new_uow, archive, dialogues, config, search)
        finally:
            engine.dispose()
    figures = {
        "quick": quick,
        "mode": "lexical",
        "prompt": {"retrieval_limit": config.retrieval_limit, "memory_budget_tokens": config.memory_budget_tokens},
        "locomo": {"conversations": len(conversations), "memories": sum(len(c.turns) for c in conversations),
                   "questions": sum(len(c.questions) for c in conversations),
                   "skipped_questions": sum(c.skipped_questions for c in conversations), **locomo},
        "madial": {"dialogues": len(dialogues), "memories": len(archive), **madial},
        "headline": _headline({"locomo": locomo, "madial": madial}),
        "hybrid": {"model": search.model} if search else {"skipped": skipped},
        "elapsed_s": round(time.perf_counter() - started, 1),
    }
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "quality.json").write_text(json.dumps(figures, indent=2, ensure_ascii=False))
    (out_dir / "quality.md").write_text(f"# Retrieval quality\n\n```\n{report(figures)}\n```\n")
    return figures


def _hybrid_search(wanted: bool | None, embedder=None):
    if wanted is False:
        return None, "not asked for"
    if embedder is not None:
        from shared.repositories.vectors import VectorIndex

        return HybridSearch(embedder, VectorIndex()), None
    return load_hybrid()


def _headline(results: dict[str, dict]) -> dict:
    """Each headline figure for Mnemo against the BM25 baseline (and BM25 with speakers where it ran)."""
    headline = {}
    for name, (dataset, metric, target) in HEADLINE.items():
        found = {system: _overall(figures).get(metric, 0.0) for system, figures in results[dataset].items()}
        mnemo, bm25 = found["mnemo"], found["bm25"]
        headline[name] = {"mnemo": mnemo, "bm25": bm25, "ratio": mnemo / bm25 if bm25 else None, "target": target,
                          "met": mnemo >= target}
        if "bm25_speaker" in found:
            headline[name]["bm25_speaker"] = found["bm25_speaker"]
    return headline


def _overall(figures: dict) -> dict:
    """A system's overall figures (LoCoMo's are grouped by category, MADial's are not)."""
    return figures.get("overall", figures)
