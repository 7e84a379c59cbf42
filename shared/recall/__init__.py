"""Finding what matters for a message: retrieval (BM25 candidates scored by the rules of
shared.search), vectors, embedders and the re-tokenising sweep.
"""
