"""One message answered (DESIGN.md §3): prepare, the one LLM call or the offline responder, apply; the
prompt and the offline replies. Imports recall, memory, speech, emotion, llm, db; never bot/ or
worker/.
"""
