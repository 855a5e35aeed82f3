"""Redaction: secrets never leave the kernel.

The configured API key, values of environment variables whose names contain KEY, TOKEN, SECRET
or PASSWORD, and common credential shapes (``sk-…``, ``ghp_…``, ``AKIA…``, ``Bearer …``, PEM
private keys) become ``[REDACTED]`` before a memory is queued and again before it is sent.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping

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
    """Replace known secret values and credential shapes with ``[REDACTED]``."""
    for secret in secrets:
        if secret and secret in text:
            text = text.replace(secret, REDACTED)
    if not any(marker in text for marker in SHAPE_MARKERS):
        return text
    return CREDENTIAL_SHAPES.sub(REDACTED, text)


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
