"""`mnemo chat`: the terminal is the conversation, so the process's log goes to a file of its own."""

import io
import logging
import stat

from shared.app.logs import terminal_for_the_conversation


def test_info_goes_to_the_owner_only_file_and_only_warnings_reach_the_terminal(tmp_path):
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    terminal = io.StringIO()
    root.handlers = [logging.StreamHandler(terminal)]
    root.setLevel(logging.INFO)
    try:
        terminal_for_the_conversation(tmp_path / "logs" / "chat.log")
        logging.getLogger("mnemo.test").info("message answered")
        logging.getLogger("mnemo.test").warning("the database is away")
        for handler in root.handlers:
            handler.flush()
        written = (tmp_path / "logs" / "chat.log").read_text()
        assert "message answered" in written and "the database is away" in written
        assert "message answered" not in terminal.getvalue() and "the database is away" in terminal.getvalue()
        assert stat.S_IMODE((tmp_path / "logs" / "chat.log").stat().st_mode) == 0o600
    finally:
        for handler in root.handlers[1:]:
            handler.close()
        root.handlers, root.level = saved
