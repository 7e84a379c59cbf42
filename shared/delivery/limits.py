"""The platforms' message limits, once: the bots split replies by them and the reminder senders cut to them."""

TELEGRAM_TEXT_LIMIT = 4096  # Bot API: characters (UTF-16 code units) of one message
DISCORD_CONTENT_LIMIT = 2000  # characters of one message's content
