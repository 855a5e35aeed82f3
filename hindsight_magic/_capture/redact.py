"""Redaction: secrets never leave the kernel.

The configured API key, values of environment variables whose names contain KEY, TOKEN, SECRET
or PASSWORD, common credential shapes (``sk-…``, ``ghp_…``, ``AKIA…``, ``Bearer …``, PEM
private keys), and what detect-secrets' plugins find in a line (a value assigned to
``password``/``passwd``/``pwd``/``secret``/``…_key``, an AWS secret access key, the password in
``scheme://user:password@host``) become ``[REDACTED]`` before a memory is queued and again
before it is sent.

**Secrets in prose.** detect-secrets finds keyed assignments (``password = 'x'``); a note says
it in words: "the warehouse password is hunter2secret", "token: abc123def", "pw Tr0ub4dor",
"the api key for staging is …". ``PROSE_NAME`` finds a credential's name (``password``,
``passphrase``, ``pw``, ``token``, ``secret``, ``api key`` …), what links it to a value (``is``,
``was``, ``:``, ``=``, ``set to``, or, after a password's name, nothing), and the next word,
which is redacted only when it looks like a secret (``secret_like``: long enough, with a digit
or a symbol, or quoted; not an expression): "the password policy changed" and "my password is
on the wiki" stay.

detect-secrets (Yelp's, maintained, with a plugin per kind of secret) is used rather than a
growing hand list for what needs context (an assignment's name, a URL's user part); its
plugins run only on lines that name a likely secret (``_HINT``), so text without one costs a
single search, and only on lines where they could find something (``_FINDABLE``). Its entropy
plugins are left out: they flag ordinary words.
"""

from __future__ import annotations

import functools
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

REDACTED = "[REDACTED]"
SECRET_ENV_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD")
MIN_SECRET_LENGTH = 8
CREDENTIAL_SHAPES = re.compile(
    "|".join(
        (
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
            r"\bsk-[A-Za-z0-9_\-]{16,}",
            r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}",
            r"\bgithub_pat_[A-Za-z0-9_]{20,}",
            r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
            r"\bxox[abprs]-[A-Za-z0-9\-]{10,}",
            r"\bAIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])",
            r"(?<=Bearer )(?=[A-Za-z0-9\-._~+/]*[0-9])[A-Za-z0-9\-._~+/]{12,}=*",
        )
    ),
    re.DOTALL,
)
# Every credential shape starts with one of these (case as written): text without any of them
# cannot match, and a few substring tests cost far less than running the pattern over it.
SHAPE_MARKERS = (
    "-----BEGIN ",
    "sk-",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "AKIA",
    "ASIA",
    "xox",
    "AIza",
    "Bearer ",
)

CACHE_TTL_S = 2.0
# a line worth giving to detect-secrets: it names a likely secret, or holds a URL's user part
_HINT = re.compile(r"pass|pwd|secret|key|token|cred|auth|://", re.IGNORECASE)
_PROSE_HINT = re.compile(r"pass|pw|secret|key|token|cred", re.IGNORECASE)
PROSE_NAME = re.compile(
    r"(?<![A-Za-z0-9])(?:(pass(?:word|phrase|wd|code)s?|pwd?)|secret|token|credentials?"
    r"|(?:api|access|secret|private|auth|license)[ _-]?(?:key|token))(?![A-Za-z0-9])",
    re.IGNORECASE,
)
_VALUE = r"\s*([\"'`]?)([^\s\"'`,;]+)\1"
# what may follow a credential's name before its value, tried in this order at the name's end
PROSE_LINKS = tuple(
    re.compile(f"(?:{link}){_VALUE}", re.IGNORECASE)
    for link in (
        r"(?:\s+(?:for|of|on|to)(?:\s+[\w.@/-]+){1,4}?)\s+(?:is|was)(?:\s+(?:now|still))?",
        r"\s*[:=]|\s+(?:is|was|are)(?:\s+(?:now|still))?(?:\s+set\s+to)?|\s+set\s+to",
    )
)
# a password's name and its value with nothing between ("pw Tr0ub4dor", "passphrase
# correct-horse-9"); after a token's or a secret's, the next word is what it is about
# ("secret 2024-Q3 roadmap", "access token TTL=3600s")
PASSWORD_LINK = re.compile(f"(?=\\s){_VALUE}")
_EXPRESSION = re.compile(r"[()\[\]{}<>]|^\w+\.\w+$")  # code (``get()``, ``cfg.token``)
_TRAILING = ".,;:!?"
# What the plugins need on such a line to find anything in a cell (``cell.py``): a quote (the
# keyword detector's every form for Python quotes the value, and so does an AWS secret key's),
# the ``@`` ending a URL's user part, or the start of an AWS key id. Prose without any (the API
# key rotates monthly) cannot give a finding, so it needs no plugins: a kernel's first %retain
# of it paid their import on the kernel thread (70-140 ms) when it came before the worker's.
_FINDABLE = re.compile(r"['\"`@]|A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA")
DETECT_LINE_MAX = 4096  # longer lines (data, a minified blob) keep only the shapes above
MIN_DETECTED = 6  # a shorter "secret" (pw = 'x1') would redact that text everywhere


def secret_values(
    api_key: str | None = None, environ: Mapping[str, str] | None = None
) -> list[str]:
    """Values to redact: the API key and env values whose names look like credentials."""
    env = os.environ if environ is None else environ
    values = {api_key} if api_key else set()
    for name, value in env.items():
        upper = name.upper()
        if any(word in upper for word in SECRET_ENV_WORDS) and len(value) >= MIN_SECRET_LENGTH:
            values.add(value)
    return sorted(values, key=len, reverse=True)  # longest first: no partial leftovers


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """Replace known secret values, detected secrets and credential shapes with
    ``[REDACTED]``."""
    for secret in secrets:
        if secret and secret in text:
            text = text.replace(secret, REDACTED)
    text = _detected(text)
    text = _prose_secrets(text)
    if not any(marker in text for marker in SHAPE_MARKERS):
        return text
    return CREDENTIAL_SHAPES.sub(REDACTED, text)


def _detected(text: str) -> str:
    """``text`` with the secrets detect-secrets' plugins find in its lines redacted."""
    if not _HINT.search(text):
        return text
    lines = [
        line
        for line in text.splitlines()
        if len(line) <= DETECT_LINE_MAX and _HINT.search(line) and _FINDABLE.search(line)
    ]
    if not lines:
        return text
    plugins = _plugins()
    found: set[str] = set()
    for line in lines:
        for plugin in plugins:
            for secret in plugin.analyze_line(filename="cell.py", line=line, line_number=0):
                value = secret.secret_value or ""
                if len(value) >= MIN_DETECTED and value != REDACTED:
                    found.add(value)
    for value in sorted(found, key=len, reverse=True):  # longest first: no partial leftover
        text = text.replace(value, REDACTED)
    return text


def secret_like(value: str, quoted: bool = False, password: bool = False) -> bool:
    """Whether a word said to be a credential looks like one: ``MIN_DETECTED`` characters or
    more, with a digit or a symbol (any word, ``quoted``); only digits for a ``password``
    alone (a token's "128000" is a count); never an expression (``cfg.token``, ``get(…)``)
    nor a redaction already made."""
    if len(value) < MIN_DETECTED or _EXPRESSION.search(value) or REDACTED in value:
        return False
    if value.isdigit():
        return password
    return quoted or any(c.isdigit() or c in "!@#$%^&*+=?~|" for c in value)


def _prose_secrets(text: str) -> str:
    """``text`` with the values prose names as credentials redacted (``PROSE_NAME``, then the
    first of ``PROSE_LINKS``, or for a password ``PASSWORD_LINK``, that leads to a
    ``secret_like`` word)."""
    if not _PROSE_HINT.search(text):
        return text
    spans: list[tuple[int, int]] = []
    for name in PROSE_NAME.finditer(text):
        password = bool(name.group(1))
        for link in (*PROSE_LINKS, PASSWORD_LINK) if password else PROSE_LINKS:
            found = link.match(text, name.end())
            if found is None:
                continue
            quoted, value = bool(found.group(1)), found.group(2)
            if not quoted:
                value = value.rstrip(_TRAILING)
            if secret_like(value, quoted, password):
                spans.append((found.start(2), found.start(2) + len(value)))
                break
    for start, end in reversed(spans):
        text = text[:start] + REDACTED + text[end:]
    return text


@functools.lru_cache(maxsize=1)
def _plugins() -> tuple[Any, ...]:
    """detect-secrets' plugins for what a notebook holds (imported once, first thing in the
    worker's warm-up: the import, with ``requests``, takes 50-70 ms of CPU)."""
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.basic_auth import BasicAuthDetector
    from detect_secrets.plugins.keyword import KeywordDetector

    return (KeywordDetector(), BasicAuthDetector(), AWSKeyDetector())


def warm_up() -> None:
    """Import and build the plugins now (the worker's first job), not in a user's cell."""
    _plugins()


class SecretValues:
    """``secret_values()`` cached for ``CACHE_TTL_S`` (the environment rarely changes, and
    scanning it for every queued memory would cost more than the queueing)."""

    def __init__(self, api_key: Callable[[], str | None], ttl_s: float = CACHE_TTL_S) -> None:
        self._api_key = api_key
        self._ttl_s = ttl_s
        self._lock = threading.Lock()
        self._expires = 0.0
        self._values: list[str] = []

    def __call__(self) -> list[str]:
        """The values to redact now."""
        now = time.monotonic()
        with self._lock:
            if now >= self._expires:
                self._values = secret_values(self._api_key())
                self._expires = now + self._ttl_s
            return self._values
