"""Reminders: time parsing (pure) and the claim-and-deliver service.
"""
