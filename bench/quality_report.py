"""The quality benchmark's figures as a plain-text table: Mnemo beside BM25, per category."""

from __future__ import annotations

LOCOMO_KS = (1, 5, 10, 20)
"""Cut-offs of the LoCoMo figures."""
MADIAL_KS = (1, 3, 5, 10)
"""Cut-offs of the MADial figures."""
LABEL_WIDTH = 22
IN_PROMPT_COLUMNS = {"evidence_in_prompt": ("ev", ".3f"), "all_evidence_in_prompt": ("all", ".3f"),
                     "memories_in_prompt": ("mems", ".1f"), "context_tokens_mean": ("tok", ".0f"),
                     "context_tokens_p95": ("tok95", ".0f")}
"""Evidence-in-prompt columns: evidence reached the prompt (LoCoMo any of it, MADial its share), all of
it, memories in the prompt, and memory-context tokens (mean, p95)."""
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
        lines += _locomo_rows(lo, [f"{metric}@{k}" for k in LOCOMO_KS], ".3f")
    lines.append(f"  {_in_prompt_title(figures)}" + _in_prompt_heading())
    lines += _locomo_rows(lo, list(IN_PROMPT_COLUMNS), *(fmt for _, fmt in IN_PROMPT_COLUMNS.values()))
    lines.append(f"MADial-zh: {ma['dialogues']} dialogues, {ma['memories']} memories in the archive")
    lines.append(f"  {'recall':<{LABEL_WIDTH + 5}}" + "".join(f"{'@' + str(k):>7}" for k in MADIAL_KS))
    for system in _systems(ma):
        found = "".join(f"{ma[system][f'recall@{k}']:>7.3f}" for k in MADIAL_KS)
        lines.append(f"    {'':<{LABEL_WIDTH}}{SYSTEM_LABELS[system]:<6}{found}")
    lines.append(f"  {_in_prompt_title(figures)}" + _in_prompt_heading())
    for system in _systems(ma):
        found = "".join(f"{ma[system][key]:>7{fmt}}" for key, (_, fmt) in IN_PROMPT_COLUMNS.items())
        lines.append(f"    {'':<{LABEL_WIDTH}}{SYSTEM_LABELS[system]:<6}{found}")
    for name, h in figures["headline"].items():
        ratio = f"x{h['ratio']:.2f}" if h["ratio"] is not None else "n/a"
        speaker = f", BM25 with speakers {h['bm25_speaker']:.3f}" if "bm25_speaker" in h else ""
        lines.append(f"{name}: Mnemo {h['mnemo']:.3f} vs BM25 {h['bm25']:.3f} ({ratio}){speaker}; "
                     f"target >= {h['target']:.2f} {'met' if h['met'] else 'NOT met'}")
    lines.append(_tokens_line(figures))
    hybrid = figures.get("hybrid", {})
    lines.append(f"hybrid (lexical + {hybrid['model']} vectors): LoCoMo recall_any@10 "
                 f"{lo['mnemo_hybrid']['overall']['recall_any@10']:.3f}, evidence in prompt "
                 f"{lo['mnemo_hybrid']['overall']['evidence_in_prompt']:.3f}; MADial recall@5 "
                 f"{ma['mnemo_hybrid']['recall@5']:.3f}, evidence in prompt "
                 f"{ma['mnemo_hybrid']['evidence_in_prompt']:.3f}" if "model" in hybrid
                 else f"hybrid pass skipped: {hybrid.get('skipped', 'not run')}")
    return "\n".join(lines)


def _locomo_rows(lo: dict, keys: list[str], *formats: str) -> list[str]:
    """One row per category and system; ``formats`` per key (one for all when a single one is given)."""
    formats = formats * len(keys) if len(formats) == 1 else formats
    rows = []
    for group in lo["mnemo"]:
        for system in _systems(lo):
            values = lo[system][group]
            label = f"{group} ({values['questions']})" if system == "mnemo" else ""
            rows.append(f"    {label:<{LABEL_WIDTH}}{SYSTEM_LABELS[system]:<6}"
                        + "".join(f"{values[key]:>7{fmt}}" for key, fmt in zip(keys, formats, strict=True)))
    return rows


def _in_prompt_title(figures: dict) -> str:
    prompt = figures["prompt"]
    title = f"in prompt ({prompt['retrieval_limit']} mems, {prompt['memory_budget_tokens']} tok)"
    return f"{title:<{LABEL_WIDTH + 5}}"


def _in_prompt_heading() -> str:
    return "".join(f"{label:>7}" for label, _ in IN_PROMPT_COLUMNS.values())


def _tokens_line(figures: dict) -> str:
    """Memory-context tokens per prompt, Mnemo and BM25, against the budget."""
    lo, ma = figures["locomo"]["mnemo"].get("overall", {}), figures["madial"]["mnemo"]
    lo_bm25, ma_bm25 = figures["locomo"]["bm25"].get("overall", {}), figures["madial"]["bm25"]
    return (f"memory-context tokens per prompt (budget {figures['prompt']['memory_budget_tokens']}): "
            f"LoCoMo Mnemo mean {lo.get('context_tokens_mean', 0):.0f}, p95 {lo.get('context_tokens_p95', 0):.0f} "
            f"(BM25 {lo_bm25.get('context_tokens_mean', 0):.0f}, {lo_bm25.get('context_tokens_p95', 0):.0f}); "
            f"MADial Mnemo mean {ma['context_tokens_mean']:.0f}, p95 {ma['context_tokens_p95']:.0f} "
            f"(BM25 {ma_bm25['context_tokens_mean']:.0f}, {ma_bm25['context_tokens_p95']:.0f})")


def _systems(figures: dict) -> list[str]:
    return [system for system in SYSTEM_LABELS if system in figures]
