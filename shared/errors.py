"""Named domain errors. Adapters turn them into messages a user understands."""


class MnemoError(Exception):
    """Base of every error Mnemo raises on purpose."""


class ConfigError(MnemoError):
    """The configuration is wrong; the message names the variable and what is expected."""


class DatabaseUnavailable(MnemoError):
    """The database cannot be reached or started."""


class NotFound(MnemoError):
    """The row does not exist, or does not belong to the user asking for it."""
