"""Talking to the platforms from any process: the outgoing REST senders (Telegram, Discord, console)
and chat id moves. No discord.py or python-telegram-bot here.
"""
