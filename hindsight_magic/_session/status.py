"""``SessionStatus``: one typed snapshot of a session, which every status form renders.

``%hindsight status`` and ``hm.status()`` (a report), the panel (its health line, tables and
text form) and an agent's ``status`` tool all read one ``SessionStatus`` that
``HindsightSession.status`` makes: the server and whether it answered, the scope, the queue's
counters, auto-retain, the layers, the mental models, the Recent feed. They decide from its
fields (``server.ok``, ``queue.failed``, ``auto``), never from the words a report shows; the
report's rows (``sections``) are made here once, from the same fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._diagnosis import NOTEBOOK_COMMAND, server_state
from .._enums import StrEnum
from .._machine import running_server
from .._memory.layers import Layer, LayerState, layer_states
from .._settings import MINE
from .._text import local_second

if TYPE_CHECKING:
    from .._api.client import HindsightClient
    from .._capture.autoretain import AutoRetainStatus
    from .._delivery.items import QueueStats
    from .._delivery.recent import RecentItem
    from .._memory.mental_models import MentalModel
    from .._memory.scope import BankScope
    from .parts import Parts

Rows = list[tuple[str, str]]
CHECKING = "checking…"  # the panel's server state before its first check
LLM_ELSEWHERE = "not known here (%hindsight doctor asks the server)"


class AutoState(StrEnum):
    """Auto-retain as it runs: on, paused (the panel's button; the setting stays on), or off."""

    ON = "on"
    PAUSED = "paused"
    OFF = "off"


@dataclass(frozen=True)
class ServerState:
    """What the server said when it was last asked (``HindsightSession.check_server``).

    ``line``: ``ok (Hindsight 1.1.0)``, or what is wrong and what to do, in one line;
    ``llm``: the local server's LLM provider when this session talks to the local server
    (from its state file, no request), None when the LLM is not known here."""

    url: str
    ok: bool
    line: str
    llm: str | None = None


def same_url(one: str, other: str) -> bool:
    """Whether two server URLs are one (a trailing slash aside)."""
    return one.rstrip("/") == other.rstrip("/")


def _when(stamp: float | None) -> str:
    return "never" if stamp is None else local_second(stamp)


@dataclass(frozen=True)
class SessionStatus:
    """Everything a status shows of one session at one moment (no request was made for it
    unless ``checked``).

    ``server``: the server's state as asked now (``checked``) or as last asked while the session
    talks to the same URL, None when it was never asked; ``layers``: with their memory counts
    when ``checked``, else their banks only; ``model_rows``: the mental models' state as the
    report words it; ``models``: those shown, with content (none while turned off)."""

    url: str
    has_key: bool
    server: ServerState | None
    checked: bool
    scope: BankScope
    queue: QueueStats
    already_stored: int
    autoretain: AutoRetainStatus
    auto_retain_setting: bool
    layers: tuple[LayerState, ...]
    model_rows: tuple[tuple[str, str], ...]
    models: tuple[MentalModel, ...]
    session_id: str
    notebook: str | None
    curated: str
    recent: tuple[RecentItem, ...]

    @property
    def auto(self) -> AutoState:
        """Auto-retain on, paused while the setting is on, or off."""
        if self.autoretain.enabled:
            return AutoState.ON
        return AutoState.PAUSED if self.auto_retain_setting else AutoState.OFF

    @property
    def server_ok(self) -> bool:
        """Whether the server answered as Hindsight and took the key, when last asked."""
        return self.server is not None and self.server.ok

    @property
    def health(self) -> str:
        """The server's state as last read, or ``checking…`` before it was read."""
        return self.server.line if self.server is not None else CHECKING

    @property
    def llm(self) -> str:
        """The local server's LLM provider, when this session talks to it; a server elsewhere
        says it only to a real call, which ``%hindsight doctor`` makes."""
        if self.server is None:
            return "unknown"
        return self.server.llm or LLM_ELSEWHERE

    def server_rows(self, panel: bool = False) -> Rows:
        """The server's URL, its state (when ``checked``, or always in the panel, as last
        read), whether a key is set, and in the panel its LLM."""
        rows = [("url", self.url)]
        if self.checked or panel:
            rows.append(("state", self.health))
        rows.append(("api key", "set" if self.has_key else "not set"))
        return rows + ([("llm", self.llm)] if panel else [])

    def scope_rows(self) -> Rows:
        """Where memories go: the scoping mode, bank, project and the tags retains carry."""
        scope = self.scope
        return [
            ("mode", scope.mode),
            ("bank", scope.bank_id),
            ("project", scope.label),
            ("tags", ", ".join(scope.retain_tags or ()) or "(none)"),
        ]

    def queue_rows(self) -> Rows:
        """The delivery queue's counters, its last flush and error, and its journal."""
        stats = self.queue
        journal = (
            f"memory only ({stats.journal_problem}) — retrying"
            if stats.journal_problem
            else stats.journal or "off (memory only)"
        )
        return [
            ("pending", str(stats.pending)),
            ("in flight", str(stats.in_flight)),
            ("accepted", str(stats.accepted)),
            ("not resent", f"{self.already_stored} (retained again by a re-run: already stored)"),
            ("retrying", str(stats.retrying)),
            ("retrying at", _when(stats.retry_at) if stats.retry_at else "-"),
            ("failed", str(stats.failed) + (" (%hindsight retry)" if stats.failed else "")),
            ("last flush", _when(stats.last_flush)),
            ("last error", stats.last_error or "-"),
            ("journal", journal),
        ]

    def autoretain_rows(self) -> Rows:
        """Auto-retain's setting and this kernel's counters."""
        auto = self.autoretain
        return [
            ("state", "on" if auto.enabled else "off"),
            ("mode", f"{auto.mode}, every {auto.every} cells"),
            ("cells counted", str(auto.counted)),
            ("next retain in", f"{auto.until_next} cells"),
            ("cells retained", str(auto.retained)),
            ("cells unchanged", f"{auto.unchanged} (run again as they were: nothing sent)"),
        ]

    def layer_rows(self) -> Rows:
        """One row per layer ('mine' first), with its memory count when ``checked``; none when
        no layer is read beside the own bank."""
        return [(one.layer.name, self._layer_line(one)) for one in self.layers]

    def session_rows(self) -> Rows:
        """This kernel's session: its id, notebook and what was curated in it."""
        return [
            ("id", self.session_id),
            ("notebook", self.notebook or "-"),
            ("curated", self.curated or "nothing yet"),
        ]

    def sections(self, *, kernel: bool = True, panel: bool = False) -> list[tuple[str, Rows]]:
        """The report's sections (``%hindsight status``), headed; without ``kernel``, none of
        what only a kernel has (its auto-retain counters, its session): what an agent is told;
        with ``panel``, the server's state as last read and its LLM (the panel's)."""
        sections: list[tuple[str, Rows]] = [
            ("Server", self.server_rows(panel)),
            ("Scope", self.scope_rows()),
            ("Queue", self.queue_rows()),
        ]
        if kernel:
            sections.append(("Auto-retain", self.autoretain_rows()))
        if self.layers:  # read beside the own bank ('mine'), never written
            sections.append(("Layers", self.layer_rows()))
        sections.append(("Mental models", list(self.model_rows)))
        if kernel:
            sections.append(("Session", self.session_rows()))
        return sections

    def _layer_line(self, state: LayerState) -> str:
        return state.line() if self.checked else f"bank {state.layer.bank_id}"


def server_check(client: HindsightClient) -> ServerState:
    """Ask the server whether it answers as Hindsight and takes the key (≤ 5 s), and read the
    local server's LLM from its state file when this is the local server (no request)."""
    check = server_state(client, NOTEBOOK_COMMAND)
    local = running_server()  # None when no local server runs (or its state file is broken)
    llm = None
    if local is not None and same_url(local.url, client.base_url):
        llm = local.llm_provider or "unknown"
    return ServerState(client.base_url, check.ok, check.line, llm)


def read_status(
    parts: Parts,
    check_server: bool,
    *,
    wait_models: bool,
    url: str,
    server: ServerState | None,
    scope: BankScope,
    layers: tuple[Layer, ...],
    auto_retain_setting: bool,
    session_id: str,
    notebook: str | None,
) -> SessionStatus:
    """A session's status from its parts (``HindsightSession.status``); with ``check_server``,
    the layers' memory counts (asked at once, ≤ 5 s) and the recorded cells turned into
    entries first; ``wait_models`` waits at most 1.5 s for the first list of mental models;
    ``server``: the last check, shown while the session talks to the URL it asked."""
    if wait_models:
        parts.mental_models.wait_first_load()
    if server is not None and not same_url(server.url, url):
        server = None
    every = (Layer(MINE, scope.bank_id), *layers) if layers else ()
    if check_server and every:
        states = layer_states(parts.connection.client, every, parts.layer_asking)
    else:
        states = [LayerState(layer, None) for layer in every]
    cache = parts.mental_models
    return SessionStatus(
        url=url,
        has_key=parts.connection.client.has_key,
        server=server,
        checked=check_server,
        scope=scope,
        queue=parts.queue.stats(),
        already_stored=parts.versions.already_stored,
        autoretain=parts.autoretain.status(process=check_server),
        auto_retain_setting=auto_retain_setting,
        layers=tuple(states),
        model_rows=tuple(cache.status_rows()),
        models=cache.models if cache.enabled else (),
        session_id=session_id,
        notebook=notebook,
        curated=parts.curator.summary(),
        recent=parts.queue.feed.items(),
    )
