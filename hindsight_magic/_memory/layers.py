"""Layers: banks a session reads beside its own — a course bank thirty students read, a team's
project bank beside each analyst's scratch bank.

The session writes one bank, labelled ``mine``; the ``layers`` setting (``NAME=BANK`` pairs,
``HINDSIGHT_LAYERS``, ``%hindsight layer add``) names the others. A recall asks every layer at
once, each request in its own thread, and waits for them under one deadline: a layer that does
not answer in time, cannot be reached or whose bank is gone is skipped with a one-line notice,
and the recall answers from the rest (the session's own bank failing is still an error).

**How the answers are merged.** The layers live on one server with one embedding model, so a
memory's similarity to the question means the same whatever bank it came from: the pools are
joined and ranked as one pool (``reading.ranked``: similarity plus a BM25 score over the
joined pool). Reciprocal rank fusion, the usual merge for lists whose scores cannot be
compared, would throw that away: it counts every layer's first memory as equally good, so a
layer with nothing on the subject would still place its best guess second. Ranking the joined
pool is what a single bank holding all the memories would do, which is the bar the benchmark
holds layers to (hit@5 within 0.05 of one bank).

**Read-only is a rule of this client, not a permission on the server**: the open-source server
has no per-bank permissions. Every write path here (retain, auto-retain, curation, mental
models) goes to the session's own bank only, and a layer's memory named for curation is
refused with its layer's name (``RecalledMemory``, ``Curator``).
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from .._errors import PUBLIC, HindsightError, InputError
from .._settings import MINE, layer_name_problem
from .._text import html_text, plain_text

if TYPE_CHECKING:
    from .._api.client import HindsightClient

T = TypeVar("T")


class LayerError(InputError):
    """A layer named that this session does not read, or one that cannot be added."""

    __module__ = PUBLIC


@dataclass(frozen=True)
class Layer:
    """A bank read under a name; ``tags`` narrow it (the session's own bank in a tagged
    scope), a layer is read whole."""

    name: str
    bank_id: str
    tags: tuple[str, ...] | None = None
    tags_match: str | None = None

    @property
    def writable(self) -> bool:
        """Whether this is the session's own bank (the only one anything is written to)."""
        return self.name == MINE


def layer_refusal(layer: str, shown: str = "This memory") -> str:
    """The one line that refuses to curate a layer's memory: layers are read, never written."""
    return (
        f"{shown} is from the layer {layer!r}, which this session only reads: curate it from "
        "a session whose own bank it is."
    )


@dataclass(frozen=True)
class Skipped:
    """A layer a read went without, and why (one line)."""

    name: str
    bank_id: str
    reason: str

    def line(self) -> str:
        """``Layer 'course' (bank intro-ml) was skipped: …``."""
        return f"Layer {self.name!r} (bank {self.bank_id}) was skipped: {self.reason}"


def layers_of(pairs: Sequence[str]) -> tuple[Layer, ...]:
    """The layers a ``layers`` setting names (its ``NAME=BANK`` pairs, already checked)."""
    layers = []
    for pair in pairs:
        name, _, bank = pair.partition("=")
        layers.append(Layer(name, bank))
    return tuple(layers)


def pairs_of(layers: Sequence[Layer]) -> list[str]:
    """The ``layers`` setting's value for ``layers``."""
    return [f"{layer.name}={layer.bank_id}" for layer in layers]


def chosen(mine: Layer, layers: Sequence[Layer], only: str | None) -> list[Layer]:
    """The layers a read asks: the session's own bank and every layer, or the one named
    ``only`` (``--layer NAME``); ``LayerError`` for a name this session does not read. A
    layer naming the session's own bank (set in the environment, say) is read once, as
    ``mine``: read twice, each memory would come back twice."""
    everything = [mine, *(layer for layer in layers if layer.bank_id != mine.bank_id)]
    if only is None:
        return everything
    for layer in everything:
        if layer.name == only:
            return [layer]
    names = ", ".join(layer.name for layer in everything)
    raise LayerError(
        f"No layer named {only!r}: this session reads {names} (%hindsight layer list)."
    )


MAX_THREADS = 8  # layers asked at once beyond the first (more wait for a free thread)


class LayerAsking:
    """Asks every layer at once, on threads kept for the session: the HTTP client keeps a
    connection pool per thread, so threads made for each recall would open (and keep) new
    connections every time — the cost that made a layered recall three times one bank's."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None

    def _threads(self) -> concurrent.futures.ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = concurrent.futures.ThreadPoolExecutor(
                    MAX_THREADS, thread_name_prefix="hm-layer"
                )
            return self._pool

    def close(self) -> None:
        """Let the threads go (a request still running ends by its own timeout)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def ask(
        self, layers: Sequence[Layer], ask: Callable[[Layer], T], deadline_s: float
    ) -> tuple[dict[str, T], list[Skipped]]:
        """``ask(layer)`` for every layer at once, waiting at most ``deadline_s`` in all: the
        answers by layer name, and the layers skipped (failed, or no answer in time). The
        first layer is asked on the calling thread, the others on the session's threads. The
        session's own bank's failure is raised, as a recall of it alone would; so is any
        failure when it is the only layer asked."""
        if len(layers) == 1:  # the usual case, one bank: no thread
            return {layers[0].name: ask(layers[0])}, []
        started = time.monotonic()
        pool = self._threads()
        futures = {layer.name: pool.submit(ask, layer) for layer in layers[1:]}
        first: concurrent.futures.Future[T] = concurrent.futures.Future()
        try:
            first.set_result(ask(layers[0]))
        except Exception as error:  # judged below, with the others'
            first.set_exception(error)
        futures = {layers[0].name: first, **futures}
        left = max(deadline_s - (time.monotonic() - started), 0.0)
        concurrent.futures.wait(futures.values(), timeout=left)
        return _judged(layers, futures, deadline_s)


def _judged(
    layers: Sequence[Layer],
    futures: dict[str, concurrent.futures.Future[T]],
    deadline_s: float,
) -> tuple[dict[str, T], list[Skipped]]:
    answers: dict[str, T] = {}
    skipped = []
    for layer in layers:
        future = futures[layer.name]
        if not future.done():
            future.cancel()
            if layer.writable:
                raise HindsightError(
                    "recall", f"recall request timed out after {deadline_s:.0f}s", kind="timeout"
                )
            skipped.append(Skipped(layer.name, layer.bank_id, f"no answer in {deadline_s:.0f} s"))
            continue
        error = future.exception()
        if error is None:
            answers[layer.name] = future.result()
        elif layer.writable or not isinstance(error, HindsightError):
            raise error
        else:
            skipped.append(Skipped(layer.name, layer.bank_id, str(error)))
    return answers, skipped


@dataclass(frozen=True)
class LayerState:
    """A layer as ``%hindsight status`` and ``layer list`` show it: its memory count now, or
    why it cannot be read."""

    layer: Layer
    memories: int | None
    problem: str = ""

    def line(self) -> str:
        """``bank intro-ml · 42 memories`` or ``bank intro-ml · cannot be read: …``."""
        where = f"bank {self.layer.bank_id}"
        if self.problem:
            return f"{where} · cannot be read: {self.problem}"
        count = self.memories or 0
        return f"{where} · {count} {'memory' if count == 1 else 'memories'}"


def layer_states(
    client: HindsightClient,
    layers: Sequence[Layer],
    asking: LayerAsking,
    deadline_s: float = 5.0,
) -> list[LayerState]:
    """Each layer's memory count, asked at once (at most ``deadline_s``): a bank that is not
    on the server, or a server that fails or does not answer, is said so, never raised."""

    def state(place: Layer) -> LayerState:
        layer = layers[int(place.name)]
        try:
            count = client.memory_count(layer.bank_id)
        except HindsightError as error:
            return LayerState(layer, None, str(error))
        if count is None and not layer.writable:  # the own bank: nothing retained yet
            return LayerState(layer, None, "there is no such bank on the server")
        return LayerState(layer, count or 0)

    # asked by place, not by name: even the own bank's lateness is a state, not an error
    places = [Layer(str(n), layer.bank_id) for n, layer in enumerate(layers)]
    answers, _ = asking.ask(places, state, deadline_s) if layers else ({}, [])
    late = f"no answer in {deadline_s:.0f} s"
    return [answers.get(str(n), LayerState(layer, None, late)) for n, layer in enumerate(layers)]


class LayerList(tuple[LayerState, ...]):
    """The banks a session reads (``hm.layers()``, ``%hindsight layer list``): its own first
    (``mine``, the only one it writes), then its layers, each with its memory count now or why
    it cannot be read. A tuple of states: ``.layer.name``, ``.layer.bank_id``, ``.memories``,
    ``.problem``."""

    HEADING = "Layers (recall and reflect read them all; only 'mine' is written):"
    note = ""  # what adding a layer did first (a snapshot restored), shown above the list

    def __repr__(self) -> str:
        lines = [plain_text(self.note)] if self.note else []
        lines.append(self.HEADING)
        lines += [f"  {state.layer.name} — {plain_text(state.line())}" for state in self]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{html_text(state.layer.name)}</td>"
            f"<td style='text-align:left'>{html_text(state.line())}</td></tr>"
            for state in self
        )
        note = f"<p>{html_text(self.note)}</p>" if self.note else ""
        return (
            f"{note}<p>{html_text(self.HEADING)}</p><table><thead><tr><th>layer</th>"
            f"<th style='text-align:left'>bank</th></tr></thead><tbody>{rows}</tbody></table>"
        )


def with_layer(
    layers: Sequence[Layer], bank_id: str, name: str | None, mine_bank: str
) -> tuple[Layer, ...]:
    """``layers`` and a new one reading ``bank_id`` as ``name`` (default: the bank's id, when
    it can name a layer); ``LayerError`` (one line) for a name or bank already read."""
    given = (name or "").strip()
    name = given or bank_id
    problem = layer_name_problem(name)
    if problem and not given:
        raise LayerError(f"Give the layer of bank {bank_id!r} a name (--as NAME): {problem}.")
    if problem:
        raise LayerError(f"Cannot name a layer {name!r}: {problem}.")
    if bank_id == mine_bank:
        raise LayerError(
            f"Bank {bank_id!r} is this session's own bank ('mine'): a layer is another bank."
        )
    for layer in layers:
        if layer.name == name:
            raise LayerError(
                f"A layer named {name!r} already reads bank {layer.bank_id!r}: "
                f"%hindsight layer remove {name} first, or choose another name with --as."
            )
        if layer.bank_id == bank_id:
            raise LayerError(f"Bank {bank_id!r} is already read as the layer {layer.name!r}.")
    return (*layers, Layer(name, bank_id))


def without_layer(layers: Sequence[Layer], name: str) -> tuple[Layer, ...]:
    """``layers`` without the one named ``name``; ``LayerError`` when there is none."""
    kept = tuple(layer for layer in layers if layer.name != name)
    if len(kept) == len(layers):
        names = ", ".join(layer.name for layer in layers) or "none"
        raise LayerError(f"No layer named {name!r} to remove; the layers are: {names}.")
    return kept
