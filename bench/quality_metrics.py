"""The quality benchmark's metrics (pure): recall at k of a ranking, and evidence in the prompt.

LoCoMo rows are ``(category, ranked dia ids, evidence, packed)``, MADial rows ``(ranked memory ids,
relevant ids, packed)``, where ``packed`` (:class:`bench.prompt_evidence.Packed`) is what the
prompt held. A LoCoMo question's evidence is in the prompt when any of its turns is (as recall_any);
a MADial dialogue counts the share of its relevant memories in the prompt (as its recall@k).
"""

from __future__ import annotations

from collections.abc import Sequence

from bench.datasets import LOCOMO_CATEGORIES, session_of
from bench.quality_report import LOCOMO_KS, MADIAL_KS
from bench.stats import percentile

TOKENS_PERCENTILE = 0.95


def recall_any(ranked: Sequence, relevant: Sequence, k: int) -> float:
    """1 when at least one relevant item is in the top ``k``."""
    return 1.0 if set(ranked[:k]) & set(relevant) else 0.0


def recall_all(ranked: Sequence, relevant: Sequence, k: int) -> float:
    """1 when every relevant item is in the top ``k``."""
    return 1.0 if set(relevant) <= set(ranked[:k]) else 0.0


def recall_share(ranked: Sequence, relevant: Sequence, k: int) -> float:
    """The share of the relevant items found in the top ``k``."""
    wanted = set(relevant)
    return len(set(ranked[:k]) & wanted) / len(wanted) if wanted else 0.0


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def in_prompt_figures(rows: Sequence[tuple], *, share: bool = False) -> dict[str, float]:
    """From ``(packed, evidence)`` pairs: the evidence in the prompt (any of it, or with ``share`` the
    share of it), all of it, and how many memories and memory-context tokens the prompts held."""
    hit = recall_share if share else recall_any
    tokens = [packed.tokens for packed, _ in rows]
    return {"evidence_in_prompt": mean([hit(p.keys, evidence, len(p.keys)) for p, evidence in rows]),
            "all_evidence_in_prompt": mean([recall_all(p.keys, evidence, len(p.keys)) for p, evidence in rows]),
            "memories_in_prompt": mean([len(p.keys) for p, _ in rows]),
            "context_tokens_mean": mean(tokens),
            "context_tokens_p95": percentile(tokens, TOKENS_PERCENTILE) if tokens else 0}


def locomo_figures(rows: list[tuple]) -> dict:
    """Overall and per-category recall and evidence in the prompt."""
    groups = {"overall": rows} | {f"{c} {name}": [r for r in rows if r[0] == c]
                                  for c, name in LOCOMO_CATEGORIES.items()}
    return {name: _locomo_group(group) for name, group in groups.items() if group}


def _locomo_group(rows: list[tuple]) -> dict:
    figures: dict[str, float] = {"questions": len(rows)}
    for k in LOCOMO_KS:
        figures[f"recall_any@{k}"] = mean([recall_any(ranked, evidence, k) for _, ranked, evidence, _ in rows])
        figures[f"recall_all@{k}"] = mean([recall_all(ranked, evidence, k) for _, ranked, evidence, _ in rows])
        figures[f"session_recall@{k}"] = mean([
            recall_share([session_of(d) for d in ranked], [session_of(d) for d in evidence], k)
            for _, ranked, evidence, _ in rows])
    return figures | in_prompt_figures([(packed, evidence) for _, _, evidence, packed in rows])


def madial_figures(rows: list[tuple]) -> dict:
    recall = {f"recall@{k}": mean([recall_share(ranked, relevant, k) for ranked, relevant, _ in rows])
              for k in MADIAL_KS}
    return recall | in_prompt_figures([(packed, relevant) for _, relevant, packed in rows], share=True)
