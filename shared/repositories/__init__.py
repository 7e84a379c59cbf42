"""Repositories, one per aggregate. Every query of a user's data is scoped by ``user_id``."""
