"""``mnemo backup`` and ``mnemo restore`` on the configured database (embedded or ``DATABASE_URL``);
the work itself is :mod:`shared.db.backup`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from shared.settings import Settings


def backup_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--output", type=Path, help="the file to write (default: MNEMO_DATA_DIR/backups/"
                                                    "mnemo-<UTC time>.dump)")


def run_backup(settings: Settings, args: argparse.Namespace) -> int:
    from shared.app.bootstrap import database_tools
    from shared.db.backup import backup, default_backup_path

    with database_tools(settings) as (url, bin_dir):
        written = backup(url, args.output or default_backup_path(settings.data_dir), bin_dir)
    print(f"Backed up to {written} ({written.stat().st_size:,} bytes). Restore with: mnemo restore {written}")
    return 0


def restore_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, help="a file written by `mnemo backup` (or pg_dump -Fc)")
    parser.add_argument("--yes", action="store_true", help="replace the database's contents without asking")


def run_restore(settings: Settings, args: argparse.Namespace) -> int:
    from shared.app.bootstrap import database_tools
    from shared.db import migrate
    from shared.db.backup import restore

    where = "the embedded database" if settings.uses_embedded_database else "the database at DATABASE_URL"
    if not args.yes:
        if not sys.stdin.isatty():
            print("mnemo: restore replaces everything in the database: pass --yes to confirm", file=sys.stderr)
            return 2
        if input(f"Replace everything in {where} with {args.file}? Stop the bots and workers first. [y/N] ")\
                .strip().lower() not in ("y", "yes"):
            print("Nothing changed.")
            return 1
    with database_tools(settings) as (url, bin_dir):
        restore(url, args.file, bin_dir)
        migrate.upgrade(url, settings.embedding_dimensions)
        revision = migrate.current_revision(url)
    print(f"Restored {args.file} into {where}; schema at {revision}.")
    return 0
