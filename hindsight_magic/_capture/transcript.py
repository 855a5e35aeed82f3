"""Cells → transcript text: skip rules, output capture, memory-tag stripping (redaction: redact.py).

Pure functions, run on the worker thread (never on the kernel's).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from .redact import redact

SKIP_MARKER = re.compile(r"^\s*#\s*hindsight\s*:\s*skip\b", re.IGNORECASE)
OWN_MAGIC = re.compile(
    r"^\s*(?:[A-Za-z_][\w.]*\s*=\s*)?%{1,2}(?:retain|recall|reflect|hindsight)\b"
    r"|^\s*%(?:load_ext|reload_ext|unload_ext)\s+hindsight_magic\s*$"
)
MEMORY_TAGS = re.compile(
    r"<(memories|mental_models|hindsight_memories|relevant_memories)>.*?</\1>", re.DOTALL
)
HAS_WORD = re.compile(r"[^\W_]")
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
