"""`mnemo chat`: the terminal is the conversation, so the process's log goes to a file of its own (and to
standard error only with ``--log-stderr``)."""

import io
import logging
import stat

import pytest

from shared.app.logs import terminal_for_the_conversation


@pytest.mark.parametrize("warnings_on_stderr", [False, True])
def test_the_log_goes_to_the_owner_only_file_and_reaches_the_terminal_only_when_asked(tmp_path, warnings_on_stderr):
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    terminal = io.StringIO()
    root.handlers = [logging.StreamHandler(terminal)]
    root.handlers[0].setFormatter(logging.Formatter("%(levelname)s|%(message)s"))
    root.setLevel(logging.INFO)
    try:
        terminal_for_the_conversation(tmp_path / "logs" / "chat.log", warnings_on_stderr=warnings_on_stderr)
        logging.getLogger("mnemo.test").info("message answered")
        logging.getLogger("mnemo.test").warning("the database is away")
        for handler in root.handlers:
            handler.flush()
        written = (tmp_path / "logs" / "chat.log").read_text()
        assert "INFO|message answered" in written  # same format
        assert "WARNING|the database is away" in written
        assert "message answered" not in terminal.getvalue()
        assert ("the database is away" in terminal.getvalue()) == warnings_on_stderr
        assert stat.S_IMODE((tmp_path / "logs" / "chat.log").stat().st_mode) == 0o600
    finally:
        for handler in root.handlers:
            if handler not in saved[0]:
                handler.close()
        root.handlers, root.level = saved
