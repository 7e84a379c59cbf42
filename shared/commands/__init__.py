"""The memory-command service every front-end calls, and its texts in Chinese and English.
"""
