"""Keeping secrets out of what Mnemo prints and logs. Pure.

One rule for every URL and secret shown to a person (``mnemo doctor``, configuration errors, logs):
a URL keeps its user name but not its password, and keeps every query parameter except the values
of password-like ones (``password``, ``token``, ``api_key``, ``sig``…); any other secret shows at
most its last :data:`SHOWN_SECRET_CHARS` characters, and only when it is long.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import unquote

MASK = "***"
SHOWN_SECRET_CHARS = 2
MIN_PARTLY_SHOWN_CHARS = 20
"""A secret shorter than this is masked whole; a longer one shows its last two characters."""
MIN_REDACTED_CHARS = 4
"""Shorter configured values are not searched for in log lines (they would hide ordinary words)."""

_SECRET_PARAMETER = re.compile(
    r"pass|pwd|token|secret|key|sig|auth|credential|session|cookie|code", re.IGNORECASE)
"""Query parameter names whose values are secrets (substrings: ``api_key``, ``X-Auth-Token``, ``sslpassword``)."""
_QUERY_PARAMETER = re.compile(r"(?P<lead>[?&;](?P<name>[^=&;#\s?]+)=)(?P<value>[^&;#\s\"'<>]*)")
_USERINFO = re.compile(r"(?P<lead>://(?P<user>[^:@/\s?#]*):)(?P<password>[^@/\s?#]+)(?=@)")
"""A URL's ``user:password@``. It starts at ``://``, not at the scheme: a scheme pattern tried at every
letter of a long run of letters made redaction quadratic (a 60,000-letter request path held the API for
27 s). From ``://`` no part can run past the next ``/``, so every character is read a bounded number of
times and the cost is linear in the text, whatever it holds."""


def mask_secret(value: str) -> str:
    """A secret as it may be shown: a URL with :func:`mask_url`, anything else hidden but its last characters."""
    if "://" in value:
        return mask_url(value)
    if len(value) < MIN_PARTLY_SHOWN_CHARS:
        return MASK
    return f"{MASK}{value[-SHOWN_SECRET_CHARS:]} ({len(value)} chars)"


def mask_url(text: str) -> str:
    """``text`` with every URL password and every password-like query parameter value replaced by ``***``."""
    text = _USERINFO.sub(lambda m: m["lead"] + MASK, text)
    return _QUERY_PARAMETER.sub(
        lambda m: m["lead"] + MASK if m["value"] and _SECRET_PARAMETER.search(m["name"]) else m[0], text)


def url_secrets(url: str | None) -> list[str]:
    """The passwords and password-like query values inside ``url`` (raw and percent-decoded)."""
    if not url:
        return []
    found = [m["password"] for m in _USERINFO.finditer(url)]
    found += [m["value"] for m in _QUERY_PARAMETER.finditer(url) if m["value"] and _SECRET_PARAMETER.search(m["name"])]
    return found + [unquote(value) for value in found if unquote(value) != value]


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with each of ``secrets`` (long enough to be one) replaced, then :func:`mask_url`."""
    for secret in sorted({s for s in secrets if len(s) >= MIN_REDACTED_CHARS}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return mask_url(text)
