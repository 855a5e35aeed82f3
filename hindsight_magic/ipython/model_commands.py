"""``%hindsight models …`` and ``%hindsight context``: browse and manage the bank's mental models.

Server failures raise ``HindsightError``; the magics' ``user_facing`` wrapper turns them into one
line with a hint. What the commands return (``ModelList``, ``ModelDetail`` …) lives in
``ui/model_views.py``.
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING, NoReturn

from IPython.core.error import UsageError

from ..api.banks import ensure_bank
from ..api.client import HindsightError
from ..memory.mental_models import MentalModel, ensure_seeds, resolve_seeds
from ..times import utc_minute_text
from ..ui.display import Message
from ..ui.model_views import ModelDetail, ModelHistory, ModelList, PromptContext, line_diff

if TYPE_CHECKING:
    from .magics import HindsightMagics

MODELS_USAGE = (
    "Usage: %hindsight models [list | show ID | refresh [ID] | seed | delete ID | history ID "
    "| reload]"
)
REFRESH_SETTLE_S = 0.5
VERB_ARGS = {  # verb: what follows it ("<id>" required, "[<id>]" optional, "" nothing)
    "list": "",
    "show": "<id>",
    "refresh": "[<id>]",
    "seed": "",
    "delete": "<id>",
    "remove": "<id>",
    "history": "<id>",
    "reload": "",
}


class _VerbParser(argparse.ArgumentParser):
    """One verb's arguments; any mistake is a one-line ``UsageError`` (never ``SystemExit``)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"Usage: {self.usage}")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        raise UsageError(f"Usage: {self.usage}")


def _verb_parser(verb: str, shape: str) -> _VerbParser:
    usage = f"%hindsight models {verb}{' ' + shape if shape else ''}"
    parser = _VerbParser(prog=f"%hindsight models {verb}", usage=usage, add_help=False)
    if shape:
        parser.add_argument("id", nargs="?" if shape.startswith("[") else None)
    return parser


PARSERS = {verb: _verb_parser(verb, shape) for verb, shape in VERB_ARGS.items()}


def parse_models_args(args: str) -> tuple[str, str]:
    """``(verb, id)`` from the text after ``%hindsight models`` (``list``, ``""`` when absent)."""
    verb, *rest = args.split() or ["list"]
    parser = PARSERS.get(verb)
    if parser is None:  # the usage lists the valid verbs
        raise UsageError(MODELS_USAGE)
    parsed = parser.parse_args(["--", *rest] if rest else [])  # "--": ids may start with "-"
    return verb, getattr(parsed, "id", None) or ""


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
        when = utc_minute_text(entry.get("changed_at"), " UTC") or "at an unknown time"
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
    settings = session.settings
    ensure_bank(session.client, bank, settings.bank_mission, settings.retain_mission)
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
    verb, model_id = parse_models_args(args)
    bank = session.scope.bank_id
    client = session.client
    if verb == "list":
        models = [MentalModel.from_json(m) for m in client.list_mental_models(bank)]
        if not models:
            return Message(f"No mental models on bank {bank}.")
        return ModelList(bank, sorted(models, key=lambda m: m.id))
    if verb == "show":
        raw = client.get_mental_model(bank, model_id)
        if raw is None:
            return Message(f"Mental model not found: {model_id}")
        return ModelDetail(MentalModel.from_json(raw))
    if verb == "refresh":
        return _refresh(magics, bank, model_id or None)
    if verb == "seed":
        return _seed(magics, bank)
    if verb == "history":
        return _history(magics, bank, model_id)
    if verb == "reload":
        finished = session.mental_models.reload(clear=False).wait(session.client.timeouts.request)
        error = session.mental_models.state.error
        if not finished or error:
            return Message(f"Reload failed: {error or 'the load is still running'}")
        return Message("Mental-model cache reloaded.")
    if not client.delete_mental_model(bank, model_id):
        return Message(f"Mental model not found: {model_id}")
    session.mental_models.reload(clear=False)
    return Message(f"Deleted mental model {model_id} from bank {bank}.")


def cmd_context(magics: HindsightMagics, args: str) -> PromptContext:
    """The ``<mental_models>`` block and the last ``<memories>`` block, for an LLM prompt."""
    if args.strip():
        raise UsageError("Usage: prompt = %hindsight context")
    session = magics.session
    session.mental_models.wait_first_load()
    parts = [session.mental_models.block()]
    last_recall = session.reader.last_recall
    if last_recall is not None:
        parts.append(last_recall.as_context())
    return PromptContext("\n\n".join(part for part in parts if part))
