"""`mnemo chat` as a new user meets it, through its real entry point on the embedded default: the log stays
out of the conversation (in the file the console names, on standard error only with ``--log-stderr``), the
warnings under a Chinese reply are Chinese, and the commands a first hour tries answer rightly. The model is
configured but down (a closed loopback port), so every turn logs a warning and falls back offline."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOG_LINE = " WARNING shared.conversation.service"


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def chat(data_dir: Path, *lines: str, flags: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    env.update(MNEMO_DATA_DIR=str(data_dir), PYTHONPATH=str(ROOT), LLM_BASE_URL=f"http://127.0.0.1:{closed_port()}/v1",
               LLM_TIMEOUT_SECONDS="2", LOG_LEVEL="INFO", LOG_FORMAT="text")
    run = subprocess.run([sys.executable, "-m", "shared.app.cli", "chat", "--user", "mei", "--no-workers", *flags],
                         input="\n".join([*lines, "/quit"]) + "\n", env=env, cwd=data_dir, capture_output=True,
                         text=True, timeout=240)
    assert run.returncode == 0, run.stderr
    return run


def test_the_log_stays_out_of_the_chat_in_the_file_it_names_and_warnings_come_in_the_users_language(data_dir):
    run = chat(data_dir, "我在一家书店上班", "/memories fact", "/link unlink", "/cancel", "/remind 昨天晚上9点 锁门",
               "/import ./old-export.json", "thanks, bye for now")
    log = data_dir / "logs" / "chat.log"
    assert f"Log: {log} (not shown here" in run.stdout
    assert LOG_LINE not in run.stdout and LOG_LINE not in run.stderr and "Traceback" not in run.stderr
    assert "LLM unavailable, answering offline" in log.read_text()
    told, listing, unlink, cancel, past, missing, goodbye = [part.strip() for part in run.stdout.split("you> ")[1:-1]]
    assert told.startswith("Mnemo（离线）> ") and "  · 语言模型暂时不可用，这是一条离线回复。" in told
    assert listing.startswith("我记得的关于你的事") and "书店" in listing
    assert unlink == "这个账号没有关联其他账号。"
    assert cancel.startswith("你现在没有待提醒的事项")
    assert past == "「昨天晚上9点」已经过去了，没有设置提醒。请换一个将来的时间再发：/remind <时间> 锁门"
    assert missing == f"找不到文件 {data_dir / 'old-export.json'}。请检查路径（相对路径从 {data_dir} 算起）。"
    assert goodbye.startswith("Mnemo (offline)> ") and "great news" not in goodbye
    assert any(words in goodbye for words in ("talk soon", "Take care", "see you")), goodbye
    assert "  · The language model is unavailable; this is an offline reply." in goodbye


def test_with_log_stderr_the_logs_warnings_also_go_to_standard_error_never_to_the_chat(data_dir):
    run = chat(data_dir, "I moved to Leeds", flags=("--log-stderr",))
    assert "its warnings and errors also go to standard error" in run.stdout
    assert LOG_LINE in run.stderr and LOG_LINE not in run.stdout
    assert " INFO " not in run.stderr
