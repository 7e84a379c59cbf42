"""Background work on memories (DESIGN.md §4): extraction by the knowledge monitor, episodes, decay,
reviews, dedup, embeddings and the jobs outbox.
"""
