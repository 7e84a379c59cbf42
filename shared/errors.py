"""Named domain errors. Adapters turn them into messages a user understands."""


class MnemoError(Exception):
    """Base of every error Mnemo raises on purpose."""


class ConfigError(MnemoError):
    """The configuration is wrong; the message names the variable and what is expected."""


class DatabaseUnavailable(MnemoError):
    """The database cannot be reached or started."""


class NotFound(MnemoError):
    """The row does not exist, or does not belong to the user asking for it."""


class InvalidCommand(MnemoError):
    """A command argument that cannot be used (empty, too long, unknown, unparseable, a bad file).

    ``key`` names the message and ``params`` fill it in; :func:`shared.commands.texts.error_text`
    renders it in the user's language.
    """

    def __init__(self, key: str, **params: object) -> None:
        self.key = key
        self.params = params
        super().__init__(key, params) if params else super().__init__(key)


class AccessRefused(MnemoError):
    """The user's account is blocked: what would add to their data or cost is refused (seeing, exporting and
    deleting what is kept still work)."""

    def __init__(self, key: str = "blocked_adding") -> None:
        self.key = key
        super().__init__(key)


class ConfirmationInvalid(MnemoError):
    """A confirmation or link code that is unknown, expired, used, or not the caller's to use."""

    def __init__(self, key: str = "confirmation_invalid") -> None:
        self.key = key
        super().__init__(key)


class DatabaseConflict(MnemoError):
    """A transaction lost a race the database settles by cancelling one side (a serialization failure, a deadlock,
    a lock or statement time-out): the same work may succeed when tried again."""


class EmbeddingError(MnemoError):
    """Texts could not be embedded, or the vectors do not fit ``EMBEDDING_DIMENSIONS``."""


class BrokerUnavailable(MnemoError):
    """The task broker (Redis, or the database as broker) could not take a message; send it later."""
