"""The memory API and web panel (``mnemo api``): another front-end of the memory-command service."""
