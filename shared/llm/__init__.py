"""The language model: the JSON shape of a turn (turn_schema) and the OpenAI-compatible client."""
