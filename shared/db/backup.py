"""``mnemo backup`` and ``mnemo restore``: the whole database in pg_dump's custom format.

Everything is in it: memories with their vector columns (where pgvector is installed), episodes,
reminders, the audit trail, accounts, the schema version, and the jobs still owed. The tools are
PostgreSQL's own, of a major version at least the server's: the embedded server's bundled ones, or
``pg_dump``/``pg_restore`` on the PATH for ``DATABASE_URL``. The password travels in the tools'
environment, never on their command line. A backup file is written 0600 and appears only when it is
complete; a restore runs in one transaction (all or nothing) and replaces what the database holds.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy.engine import make_url

from shared.errors import ConfigError, MnemoError

BACKUP_SUFFIX = ".dump"


class BackupFailed(MnemoError):
    """pg_dump or pg_restore refused or failed; the message carries what it said."""


def default_backup_path(data_dir: Path, now: datetime | None = None) -> Path:
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%d-%H%M%S")
    return data_dir / "backups" / f"mnemo-{stamp}{BACKUP_SUFFIX}"


def backup(database_url: str, target: Path, bin_dir: Path | None = None) -> Path:
    """Dump the database into ``target`` (custom format); returns the file written."""
    target = target.expanduser().resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    dbname, environment = _connection(database_url)
    previous = os.umask(0o077)
    try:
        _run(_tool("pg_dump", bin_dir), ["--format=custom", "--no-owner", "--no-privileges", f"--file={partial}",
                                         f"--dbname={dbname}"], environment)
    finally:
        os.umask(previous)
    partial.chmod(0o600)
    partial.replace(target)
    return target


def restore(database_url: str, source: Path, bin_dir: Path | None = None) -> None:
    """Replace what the database holds with ``source`` (one transaction: on any error nothing changes)."""
    source = source.expanduser().resolve()
    if not source.is_file():
        raise ConfigError(f"no backup file at {source}")
    dbname, environment = _connection(database_url)
    _run(_tool("pg_restore", bin_dir), ["--clean", "--if-exists", "--no-owner", "--no-privileges",
                                        "--single-transaction", "--exit-on-error", f"--dbname={dbname}",
                                        str(source)], environment)


def _connection(database_url: str) -> tuple[str, dict[str, str]]:
    """A libpq URL without the password, and the environment that carries it."""
    url = make_url(database_url).set(drivername="postgresql")
    environment = dict(os.environ)
    if url.password is not None:
        environment["PGPASSWORD"] = str(url.password)
    return url.set(password=None).render_as_string(hide_password=False), environment


def _tool(name: str, bin_dir: Path | None) -> str:
    path = str(bin_dir / name) if bin_dir is not None else shutil.which(name)
    if path is None or not Path(path).exists():
        raise ConfigError(f"{name} is not installed: install the PostgreSQL client tools of your server's major "
                          "version (e.g. apt-get install postgresql-client)")
    return path


def _run(tool: str, arguments: list[str], environment: dict[str, str]) -> None:
    finished = subprocess.run([tool, *arguments], env=environment, capture_output=True, text=True, check=False)
    if finished.returncode != 0:
        said = (finished.stderr or finished.stdout).strip().splitlines()
        raise BackupFailed(f"{Path(tool).name} failed: {' / '.join(said[-3:]) or f'exit {finished.returncode}'}")
