"""Memories written and edited: stated memories with supersede and audit, the write-path guard, manual
edits shared by chat commands and the panel.
"""
