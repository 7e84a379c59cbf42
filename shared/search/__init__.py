"""The pure rules of text search: the jieba/English tokenizer, safe tsquery and LIKE patterns, the
weighted query of a turn and the seed's scoring formula. No database, LLM or platform code: the
repositories build their SQL from these, and recall uses them.
"""
