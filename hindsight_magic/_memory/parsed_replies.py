"""Recall and reflect replies, parsed: memories that know where they came from, and the
sources a reflect's answer is based on. The client parses a reply into these at its edge
(``recall(…, memory=RecalledMemory)``, ``reflect(…, reflection=Reflected)``).

Every text parsed here came back from the server, so each is remembered as one of the
extension's own (``_capture.transcript.own_text``): printed in a cell later (``r.texts``,
``r[0].text``), it is cut out of the transcript auto-retain sends, and the objects themselves
are never retained as a cell's value. Pydantic (through ``_api/replies.py``): imported on first
read, not at extension load.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, PrivateAttr, model_validator

from .._api.replies import Memory, ReflectDirective, Reflection, ReflectMentalModel
from .._capture.transcript import own_text
from .._settings import MINE
from .layers import layer_refusal
from .provenance import Provenance, provenance_line, provenance_of

if TYPE_CHECKING:
    from .curation import Curator, Outcome


class RecalledMemory(Memory):
    """A recalled memory (or a reflect's evidence) with its provenance as fields, and the
    curation methods: ``forget(reason=…)``, ``restore()``, ``correct(text)``, ``history()``,
    ``delete(yes=…)`` — the same as ``%hindsight forget ID`` and the others."""

    _hindsight_result_: ClassVar[bool] = True  # never retained by auto-retain
    _curator: Curator | None = PrivateAttr(default=None)
    layer: str = MINE
    """The layer this memory was read from: ``mine`` (the session's own bank) or a layer's
    name (``%hindsight layer list``); only ``mine`` can be curated here."""
    copies: int = 0
    """How many other memories say the same (earlier runs of the same cell from before
    versions were kept, the same text retained twice, a cell's other valid version) and were
    folded into this one, so that a recall shows each cell once."""
    relevance: float | None = None
    """How well this memory matches the query of the recall that found it, from 0 to 1: the
    score the recall is ordered by, so higher is more relevant and a recall's memories come
    highest first (``reading.ranked``: its similarity in meaning to the query, 0-1, and its
    keyword score among the memories recalled, 0-1, weighted 10 to 3). ``None`` where no
    query ranked it (``latest``, the sources the server gives a reflect). The server's own
    scores, in its own order, stay in ``.scores``."""

    @model_validator(mode="after")
    def _remembered(self) -> RecalledMemory:
        own_text(self.text)
        return self

    @property
    def provenance(self) -> Provenance:
        """Notebook, cells, kernel session, document id and source, where known."""
        return provenance_of(self)

    def provenance_line(self, now: datetime | None = None) -> str:
        """``fieldwork.ipynb · cell 14 · 3 days ago`` (what is known)."""
        return provenance_line(self, now)

    def in_layer(self, name: str) -> RecalledMemory:
        """This memory, labelled as read from the layer ``name``."""
        self.layer = name
        return self

    def tended_by(self, curator: Curator) -> RecalledMemory:
        """This memory, curated through ``curator`` (the session that recalled it)."""
        self._curator = curator
        return self

    def _curation(self) -> tuple[Curator, str]:
        from .curation import CurationError  # curation imports this module

        if self.layer != MINE:
            raise CurationError(layer_refusal(self.layer))
        if self._curator is None or not self.id:
            raise CurationError(
                "This memory is not tied to a session: use hm.forget(memory.id) and the others."
            )
        return self._curator, self.id

    def forget(self, reason: str = "") -> Outcome:
        """Leave this memory out of recall and reflect (reversible: ``restore``)."""
        curator, memory_id = self._curation()
        return curator.forget(memory_id, reason)

    def restore(self) -> Outcome:
        """Bring this memory back into recall after ``forget``."""
        curator, memory_id = self._curation()
        return curator.restore(memory_id)

    def correct(self, text: str) -> Outcome:
        """Make this memory say ``text`` (recall then finds the new text, not the old)."""
        curator, memory_id = self._curation()
        return curator.correct(memory_id, text)

    def history(self) -> Outcome:
        """What this memory said and when it changed, from the server."""
        curator, memory_id = self._curation()
        return curator.history(memory_id)

    def delete(self, yes: bool = False) -> Outcome:
        """Delete the document this memory came from, with all its memories (irreversible);
        without ``yes`` only lists what would go."""
        curator, memory_id = self._curation()
        return curator.delete(memory_id, yes)


class ModelSource(ReflectMentalModel):
    """A mental model an answer drew on, with its ``name``."""

    name: str = ""
    _hindsight_result_: ClassVar[bool] = True  # never retained by auto-retain

    @model_validator(mode="after")
    def _name_from_text(self) -> ModelSource:
        if not self.name:  # the server sends "<name>: <content>"
            head, colon, _ = self.text.partition(": ")
            self.name = head.strip() if colon and head.strip() else self.id
        own_text(self.text)
        return self


class Sources(BaseModel):
    """What a reflect's answer is based on: memories, mental models and directives."""

    _hindsight_result_: ClassVar[bool] = True  # never retained by auto-retain

    memories: list[RecalledMemory] = []
    mental_models: list[ModelSource] = []
    directives: list[ReflectDirective] = []

    def __len__(self) -> int:
        return len(self.memories) + len(self.mental_models) + len(self.directives)

    def named(self, names: Mapping[str, str]) -> Sources:
        """The same sources, the mental models named as ``names`` (id → name) says."""
        models = [
            m.model_copy(update={"name": names[m.id]}) if names.get(m.id) else m
            for m in self.mental_models
        ]
        return self.model_copy(update={"mental_models": models})


class _Recall(BaseModel):
    results: list[RecalledMemory] = []


class Reflected(Reflection):
    """A reflect's reply with its sources as the extension shows them."""

    based_on: Sources | None = None


def parse_recall(reply: Any) -> list[RecalledMemory]:
    """The memories of a ``POST …/memories/recall`` reply (none for ``None``)."""
    return _Recall.model_validate(reply).results if reply else []


def parse_reflect(reply: Any) -> tuple[str, Sources | None]:
    """The answer and (when asked for) the sources of a ``POST …/reflect`` reply."""
    parsed = Reflected.model_validate(reply)
    return parsed.text or "", parsed.based_on
