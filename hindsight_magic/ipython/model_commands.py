"""``%hindsight models …`` and ``%hindsight context``: browse and manage the bank's mental models.

Server failures raise ``HindsightError``; the magics' ``user_facing`` wrapper turns them into one
line with a hint. Everything shown is escaped in HTML and Markdown.
"""

from __future__ import annotations

import difflib
import html
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from IPython.core.error import UsageError

from ..api.client import HindsightError
from ..memory.mental_models import (
    MentalModel,
    ensure_seeds,
    inventory_line,
    resolve_seeds,
    short_time,
)
from ..ui.display import Message

if TYPE_CHECKING:
    from .magics import HindsightMagics

MODELS_USAGE = (
    "Usage: %hindsight models [list | show ID | refresh [ID] | seed | delete ID | history ID "
    "| reload]"
)
EMPTY_CONTENT = "_(empty — background reflect may still be running)_"
REFRESH_SETTLE_S = 0.5
DIFF_MAX_INPUT_LINES = 1000
DIFF_MAX_OUTPUT_LINES = 200
VERB_ARGS = {  # verb: (fewest, most arguments, usage shape)
    "list": (0, 0, ""),
    "show": (1, 1, " <id>"),
    "refresh": (0, 1, " [<id>]"),
    "seed": (0, 0, ""),
    "delete": (1, 1, " <id>"),
    "remove": (1, 1, " <id>"),
    "history": (1, 1, " <id>"),
    "reload": (0, 0, ""),
}
NO_CONTEXT = "(empty: no mental models with content and no %recall result yet)"


def _esc(text: str) -> str:
    return html.escape(text, quote=False)


@dataclass
class ModelList:
    """``%hindsight models list``: one line per model, or a table in HTML."""

    bank_id: str
    models: list[MentalModel]

    def __repr__(self) -> str:
        return "\n".join([f"Mental Models — {self.bank_id}", *map(inventory_line, self.models)])

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td style='text-align:left'>{_esc(m.id)}</td>"
            f"<td style='text-align:left'>{_esc(m.name)}</td>"
            f"<td>{_esc(', '.join(m.tags))}</td>"
            f"<td>{_esc(short_time(m.last_refreshed_at) or 'never')}</td>"
            f"<td>{'yes' if m.auto_refresh else 'no'}</td>"
            f"<td>{len((m.content or '').strip())}</td></tr>"
            for m in self.models
        )
        return (
            f"<p><b>{_esc(f'Mental Models — {self.bank_id}')}</b></p><table><thead><tr>"
            "<th style='text-align:left'>id</th><th style='text-align:left'>name</th>"
            "<th>tags</th><th>refreshed</th><th>auto-refresh</th><th>chars</th>"
            f"</tr></thead><tbody>{rows}</tbody></table>"
        )


@dataclass
class ModelDetail:
    """``%hindsight models show ID``: the model's fields and its content (Markdown)."""

    model: MentalModel

    def _fields(self) -> list[tuple[str, str]]:
        m = self.model
        return [
            ("id", m.id),
            ("tags", ", ".join(m.tags) or "(none)"),
            ("refreshed", short_time(m.last_refreshed_at) or "never"),
            ("auto-refresh", "yes" if m.auto_refresh else "no"),
            ("source query", m.source_query or ""),
        ]

    def __repr__(self) -> str:
        lines = [self.model.name]
        lines += [f"  {label}: {value}" for label, value in self._fields()]
        return "\n".join([*lines, "", (self.model.content or "").strip() or EMPTY_CONTENT])

    def _repr_markdown_(self) -> str:
        lines = [f"### {_esc(self.model.name)}", ""]
        lines += [f"- **{label}**: {_esc(value)}" for label, value in self._fields()]
        content = (self.model.content or "").strip()
        return "\n".join([*lines, "", _esc(content) if content else EMPTY_CONTENT])


def line_diff(old: str, new: str) -> list[str]:
    """``- ``/``+ ``/``  `` lines from ``old`` to ``new`` (inputs and output capped)."""
    a = old.splitlines()[:DIFF_MAX_INPUT_LINES]
    b = new.splitlines()[:DIFF_MAX_INPUT_LINES]
    out: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            out += [f"  {line}" for line in a[i1:i2]]
        else:
            out += [f"- {line}" for line in a[i1:i2]] + [f"+ {line}" for line in b[j1:j2]]
    if len(out) > DIFF_MAX_OUTPUT_LINES:
        out = [*out[:DIFF_MAX_OUTPUT_LINES], f"… ({len(out) - DIFF_MAX_OUTPUT_LINES} more lines)"]
    return out


@dataclass
class ModelHistory:
    """``%hindsight models history ID``: each change, newest first, as a line diff."""

    model_id: str
    entries: list[tuple[str, list[str]]] = field(default_factory=list)  # (when, diff lines)

    def __repr__(self) -> str:
        lines = [f"History of {self.model_id} ({len(self.entries)} changes, newest first)"]
        for when, diff in self.entries:
            lines += ["", f"changed {when}:", *(diff or ["  (no text change)"])]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(repr(self))}</pre>"


class PromptContext(str):
    """``%hindsight context``: the ``<mental_models>`` and ``<memories>`` blocks as one string."""

    def __repr__(self) -> str:
        return str(self) or NO_CONTEXT


def _history(magics: HindsightMagics, bank: str, model_id: str) -> ModelHistory | Message:
    client = magics.session.client
    raw = client.get_mental_model(bank, model_id)
    if raw is None:
        return Message(f"Mental model not found: {model_id}")
    entries = client.mental_model_history(bank, model_id)
    if not entries:
        return Message(f"No history recorded for {model_id}.")
    newer = str(raw.get("content") or "")
    result = ModelHistory(model_id)
    for entry in entries:
        previous = str(entry.get("previous_content") or "")
        when = short_time(entry.get("changed_at")) or "at an unknown time"
        result.entries.append((when, line_diff(previous, newer)))
        newer = previous
    return result


def _refresh(magics: HindsightMagics, bank: str, model_id: str | None) -> Message:
    session, client = magics.session, magics.session.client
    if model_id:
        try:
            client.refresh_mental_model(bank, model_id)
        except HindsightError as error:
            if error.kind == "http" and error.status_code == 404:
                return Message(f"Mental model not found: {model_id}")
            raise
        lines = [f"Refresh queued for mental model {model_id}."]
    else:
        models = [MentalModel.from_json(m) for m in client.list_mental_models(bank)]
        auto = [m for m in models if m.auto_refresh]
        curated = len(models) - len(auto)
        if not auto:
            return Message(
                f"No mental models opted into auto-refresh; {curated} curated model(s) left "
                "untouched. Pass an explicit id to refresh one of them."
            )
        failures = []
        for model in auto:
            try:
                client.refresh_mental_model(bank, model.id)
            except Exception as error:  # one failure must not stop the others
                failures.append(f"Refresh failed for {model.id}: {error}")
        done = len(auto) - len(failures)
        skipped = f"; skipped {curated} curated model(s)" if curated else ""
        lines = [
            f"Refresh queued for {done}/{len(auto)} auto-refresh model(s){skipped}.",
            *failures,
        ]
    time.sleep(REFRESH_SETTLE_S)
    session.mental_models.reload(clear=False)
    return Message("\n".join(lines))


def _seed(magics: HindsightMagics, bank: str) -> Message:
    session = magics.session
    seeds = resolve_seeds(session.scope)
    if not seeds:
        return Message(f"No built-in seeds apply to scoping={session.scope.mode}.")
    session._ensure_bank(session.client, bank)
    outcome = ensure_seeds(session.client, bank, seeds)
    session.mental_models.reload(clear=False)
    created, present = len(outcome.created), len(outcome.present)
    lines = [f"Seeded {created} new mental model(s); {present} already present."]
    lines += [f"Seed failed for {seed_id}: {message}" for seed_id, message in outcome.failed]
    return Message("\n".join(lines))


def cmd_models(magics: HindsightMagics, args: str) -> object:
    """List, show, refresh, seed, delete or diff the bank's mental models."""
    session = magics.session
    if not session.settings.mental_models:
        return Message(
            "Mental models are disabled (mental_models = false); turn them on with "
            "%hindsight config mental_models=true."
        )
    words = args.split()
    verb = words[0] if words else "list"
    rest = words[1:]
    bank = session.scope.bank_id
    client = session.client
    if verb not in VERB_ARGS:
        raise UsageError(MODELS_USAGE)
    fewest, most, shape = VERB_ARGS[verb]
    if not fewest <= len(rest) <= most:
        raise UsageError(f"Usage: %hindsight models {verb}{shape}")
    if verb == "list":
        models = [MentalModel.from_json(m) for m in client.list_mental_models(bank)]
        if not models:
            return Message(f"No mental models on bank {bank}.")
        return ModelList(bank, sorted(models, key=lambda m: m.id))
    if verb == "show":
        raw = client.get_mental_model(bank, rest[0])
        if raw is None:
            return Message(f"Mental model not found: {rest[0]}")
        return ModelDetail(MentalModel.from_json(raw))
    if verb == "refresh":
        return _refresh(magics, bank, rest[0] if rest else None)
    if verb == "seed":
        return _seed(magics, bank)
    if verb == "history":
        return _history(magics, bank, rest[0])
    if verb == "reload":
        finished = session.mental_models.reload(clear=False).wait(session.client.timeouts.request)
        error = session.mental_models.state.error
        if not finished or error:
            return Message(f"Reload failed: {error or 'the load is still running'}")
        return Message("Mental-model cache reloaded.")
    if not client.delete_mental_model(bank, rest[0]):
        return Message(f"Mental model not found: {rest[0]}")
    session.mental_models.reload(clear=False)
    return Message(f"Deleted mental model {rest[0]} from bank {bank}.")


def cmd_context(magics: HindsightMagics, args: str) -> PromptContext:
    """The ``<mental_models>`` block and the last ``<memories>`` block, for an LLM prompt."""
    if args.strip():
        raise UsageError("Usage: prompt = %hindsight context")
    session = magics.session
    session.mental_models.wait_first_load()
    parts = [session.mental_models.block()]
    if session.last_recall is not None:
        parts.append(session.last_recall.as_context())
    return PromptContext("\n\n".join(part for part in parts if part))
