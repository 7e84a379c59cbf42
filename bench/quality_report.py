"""The quality benchmark's figures as a plain-text table: Mnemo beside BM25, per category."""

from __future__ import annotations

LOCOMO_KS = (1, 5, 10, 20)
"""Cut-offs of the LoCoMo figures."""
MADIAL_KS = (1, 3, 5, 10)
"""Cut-offs of the MADial figures."""
LABEL_WIDTH = 22
SYSTEM_LABELS = {"mnemo": "mnemo", "mnemo_hybrid": "hybrid", "bm25": "bm25", "bm25_speaker": "bm25+s"}
"""Report labels; ``bm25_speaker`` is BM25 with each turn's speaker name in its text, the fair
comparison for Mnemo, whose memories carry the speaker as their subject."""


def report(figures: dict) -> str:
    """The figures as a plain-text table, Mnemo beside BM25."""
    lo, ma = figures["locomo"], figures["madial"]
    lines = [f"Retrieval quality{' (quick)' if figures['quick'] else ''}, {figures['mode']} mode, "
             f"{figures['elapsed_s']} s",
             f"LoCoMo: {lo['questions']} questions (categories 1-4, {lo['skipped_questions']} without resolvable "
             f"evidence skipped) over {lo['memories']} turns in {lo['conversations']} conversations"]
    for metric in ("recall_any", "recall_all", "session_recall"):
        lines.append(f"  {metric:<{LABEL_WIDTH + 5}}" + "".join(f"{'@' + str(k):>7}" for k in LOCOMO_KS))
        for group in lo["mnemo"]:
            for system in _systems(lo):
                values = lo[system][group]
                label = f"{group} ({values['questions']})" if system == "mnemo" else ""
                lines.append(f"    {label:<{LABEL_WIDTH}}{SYSTEM_LABELS[system]:<6}"
                             + "".join(f"{values[f'{metric}@{k}']:>7.3f}" for k in LOCOMO_KS))
    lines.append(f"MADial-zh: {ma['dialogues']} dialogues, {ma['memories']} memories in the archive")
    lines.append(f"  {'recall':<{LABEL_WIDTH + 5}}" + "".join(f"{'@' + str(k):>7}" for k in MADIAL_KS))
    for system in _systems(ma):
        found = "".join(f"{ma[system][f'recall@{k}']:>7.3f}" for k in MADIAL_KS)
        lines.append(f"    {'':<{LABEL_WIDTH}}{SYSTEM_LABELS[system]:<6}{found}")
    for name, h in figures["headline"].items():
        ratio = f"x{h['ratio']:.2f}" if h["ratio"] is not None else "n/a"
        speaker = f", BM25 with speakers {h['bm25_speaker']:.3f}" if "bm25_speaker" in h else ""
        lines.append(f"{name}: Mnemo {h['mnemo']:.3f} vs BM25 {h['bm25']:.3f} ({ratio}){speaker}; "
                     f"target >= {h['target']:.2f} {'met' if h['met'] else 'NOT met'}")
    hybrid = figures.get("hybrid", {})
    lines.append(f"hybrid (lexical + {hybrid['model']} vectors): LoCoMo recall_any@10 "
                 f"{lo['mnemo_hybrid']['overall']['recall_any@10']:.3f}, MADial recall@5 "
                 f"{ma['mnemo_hybrid']['recall@5']:.3f}" if "model" in hybrid
                 else f"hybrid pass skipped: {hybrid.get('skipped', 'not run')}")
    return "\n".join(lines)


def _systems(figures: dict) -> list[str]:
    return [system for system in SYSTEM_LABELS if system in figures]
