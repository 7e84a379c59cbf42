"""One verdict of ``mnemo doctor``, shared by the modules that check one thing each."""

from __future__ import annotations

from dataclasses import dataclass

VERDICTS = {"ok": "OK  ", "info": "INFO", "warn": "WARN", "fail": "FAIL"}


@dataclass(frozen=True)
class Check:
    """One verdict: ``ok``, ``info`` (fine, worth knowing), ``warn`` (works, should be fixed) or ``fail``."""

    name: str
    verdict: str
    detail: str

    def line(self) -> str:
        return f"[{VERDICTS[self.verdict]}] {self.name}: {self.detail}"


def first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
