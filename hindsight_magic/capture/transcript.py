"""Cells → transcript text: skip rules, output capture, memory-tag stripping and redaction.

Pure functions, run on the worker thread (never on the kernel's).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

REDACTED = "[REDACTED]"
SKIP_MARKER = re.compile(r"^\s*#\s*hindsight\s*:\s*skip\b", re.IGNORECASE)
OWN_MAGIC = re.compile(
    r"^\s*(?:[A-Za-z_][\w.]*\s*=\s*)?%{1,2}(?:retain|recall|reflect|hindsight)\b"
    r"|^\s*%(?:load_ext|reload_ext|unload_ext)\s+hindsight_magic\s*$"
)
MEMORY_TAGS = re.compile(
    r"<(memories|mental_models|hindsight_memories|relevant_memories)>.*?</\1>", re.DOTALL
)
HAS_WORD = re.compile(r"[^\W_]")
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

SOURCE_CAP = 4000
RESULT_CAP = 1000
ERROR_CAP = 500
STREAM_CAP = 1000
MIN_TRANSCRIPT_CHARS = 10


def is_skipped(source: str) -> bool:
    """Empty cells, ``# hindsight: skip`` cells and cells that only run this extension's magics."""
    lines = [line for line in source.splitlines() if line.strip()]
    if not lines:
        return True
    first = lines[0]
    if SKIP_MARKER.match(first):
        return True
    if first.lstrip().startswith("%%") and OWN_MAGIC.match(first):
        return True  # a cell magic of ours owns the whole cell
    ours = [line for line in lines if OWN_MAGIC.match(line)]
    comments = [line for line in lines if line.lstrip().startswith("#")]
    return bool(ours) and len(ours) + len(comments) == len(lines)


def cap(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters with a visible marker."""
    if len(text) <= limit:
        return text
    return text[:limit].rstrip() + f" …[{len(text) - limit} more characters]"


def strip_memory_tags(text: str) -> str:
    """Remove recalled ``<memories>``/``<mental_models>`` blocks so they never feed back."""
    return MEMORY_TAGS.sub("", text)


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
    return CREDENTIAL_SHAPES.sub(REDACTED, text)


@dataclass(frozen=True)
class CellText:
    """What a cell contributes: its source and (per ``retain_outputs``) output texts."""

    number: int
    source: str
    result: str | None = None
    error: str | None = None
    stdout: str | None = None


def _clean(text: str | None, limit: int, secrets: Iterable[str]) -> str:
    if not text:
        return ""
    text = redact(strip_memory_tags(text), secrets).strip()  # before the cap cuts a secret
    return cap(text, limit) if HAS_WORD.search(text) else ""


def format_cell(cell: CellText, outputs: str = "result", secrets: Iterable[str] = ()) -> str:
    """``[cell N]``, the source, and the outputs allowed by ``outputs`` (none|result|all).

    Every part is redacted (``secrets`` plus credential shapes) before it is capped.
    """
    secrets = list(secrets)
    source = _clean(cell.source, SOURCE_CAP, secrets)
    if not source:
        return ""
    parts = [f"[cell {cell.number}]", source]
    if outputs in ("result", "all"):
        result = _clean(cell.result, RESULT_CAP, secrets)
        if result:
            parts += ["[result]", result]
        error = _clean(cell.error, ERROR_CAP, secrets)
        if error:
            parts += ["[error]", error]
    if outputs == "all":
        stdout = _clean(cell.stdout, STREAM_CAP, secrets)
        if stdout:
            parts += ["[output]", stdout]
    return "\n".join(parts)


def join_transcript(entries: Iterable[str]) -> str | None:
    """Entries joined by blank lines; None when there is too little to be worth sending."""
    text = "\n\n".join(entry for entry in entries if entry)
    return text if len(text.strip()) >= MIN_TRANSCRIPT_CHARS else None
