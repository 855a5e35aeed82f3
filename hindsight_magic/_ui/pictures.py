"""``hm.timeline()`` and ``hm.memory_map()``: the numbers as pictures in a notebook, as tables
in a terminal.

A notebook gets ``image/png`` and ``image/svg+xml`` (the front end shows the one it prefers)
and ``text/plain``; a terminal gets the table. The figures are drawn on a bare
``matplotlib.figure.Figure``, never through ``pyplot``: the user's backend, current figure
and ``rcParams`` stay exactly as they were (the user's style still colours them). networkx
lays out the entity graph (``spring_layout``: a well-kept, pure-Python force layout; drawing
is done here so networkx's own drawing, which imports ``pyplot``, is never called).

matplotlib and networkx come with the ``pictures`` extra. Without them the text still
answers, with one line saying how to get the picture. Nothing here is imported by
``%load_ext``.

Entity names, notebook names and bank ids come from the server: untrusted text. In the
figures they are drawn with mathtext off (a ``$`` stays a dollar sign, never a formula) and
cut to one short line; in text they go through ``plain_text``.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from datetime import date
from typing import TYPE_CHECKING, Any, ClassVar

from .._capture.transcript import own_text
from .._memory.overview import (
    CONSOLIDATED,
    FACT_TYPES,
    NOT_READ,
    EntityMap,
    Period,
    TimelineCounts,
    TimelineRow,
)
from .._memory.provenance import memory_line
from .._text import one_line, plain_text

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from .._memory.parsed_replies import RecalledMemory

HINT = "pip install 'hindsight-magic[pictures]' to see this drawn"
TYPE_COLOURS = {"world": "#4e79a7", "experience": "#f28e2b", "observation": "#76b7b2"}
GREYS = {CONSOLIDATED: "#c7c7c7", NOT_READ: "#ebebeb"}  # not a notebook: drawn in grey, last
NOTEBOOK_COLOURS = ("#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#e15759", "#bab0ac")
OTHERS = "other notebooks"
MAX_NOTEBOOKS = len(NOTEBOOK_COLOURS) - 1  # the rest are drawn as OTHERS
LABEL_CHARS = 28
CHANGED_MARK = "⚠"  # over a period with memories whose data changed (the figure)
CHANGED_COLUMN = "data changed"  # … and the table's column
DPI = 96


def missing(*modules: str) -> str | None:
    """The first of ``modules`` that cannot be imported, or None."""
    import importlib.util

    for name in modules:
        if importlib.util.find_spec(name) is None:
            return name
    return None


def _untrusted(text: str, limit: int = LABEL_CHARS) -> str:
    return plain_text(one_line(text, limit))


class Picture:
    """A figure drawn on first display and kept: ``png()``, ``svg()``, ``text()``."""

    _hindsight_result_ = True  # never retained by auto-retain (``_capture.transcript``)
    _needs: tuple[str, ...] = ("matplotlib",)
    _margins: ClassVar[dict[str, float]] = {
        "left": 0.02,
        "right": 0.98,
        "top": 0.92,
        "bottom": 0.02,
    }

    def __init__(self) -> None:
        self._figure: Figure | None = None
        self._rendered: dict[str, bytes] = {}

    def text(self) -> str:
        raise NotImplementedError

    def _draw(self, figure: Figure) -> None:
        raise NotImplementedError

    def drawable(self) -> bool:
        """Whether the libraries to draw are installed."""
        return missing(*self._needs) is None

    def figure(self) -> Figure:
        """The matplotlib ``Figure`` (not registered with ``pyplot``)."""
        if self._figure is None:
            from matplotlib.figure import Figure

            # fixed margins, not a layout engine: a constrained layout measures every text
            # again on each save, and PNG and SVG are two saves
            figure = Figure(figsize=(8.0, 4.6), dpi=DPI)
            figure.subplots_adjust(**self._margins)
            self._draw(figure)
            _plain_texts(figure)  # every path, the empty one too
            self._figure = figure
        return self._figure

    def _render(self, fmt: str) -> bytes:
        if fmt not in self._rendered:
            buffer = io.BytesIO()
            extra: dict[str, Any] = {"pil_kwargs": {"compress_level": 1}} if fmt == "png" else {}
            self.figure().savefig(buffer, format=fmt, dpi=DPI, metadata=_METADATA[fmt], **extra)
            self._rendered[fmt] = buffer.getvalue()
        return self._rendered[fmt]

    def png(self) -> bytes:
        """The picture as PNG bytes."""
        return self._render("png")

    def svg(self) -> str:
        """The picture as SVG text (text drawn as paths: nothing in it is markup from the
        server)."""
        return self._render("svg").decode("utf-8")

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        if not self.drawable():
            return {"text/plain": repr(self)}
        return {"image/png": self.png(), "image/svg+xml": self.svg(), "text/plain": repr(self)}

    def __repr__(self) -> str:
        """The table; where the picture cannot be drawn, with one line saying how to get it."""
        hint = "" if self.drawable() else f"\n({HINT}.)"
        return own_text(self.text()) + hint

    def __str__(self) -> str:
        return self.text()


_METADATA = {"png": {"Software": None}, "svg": {"Date": None}}


def _plain_texts(figure: Figure) -> None:
    """Mathtext off for every text in ``figure`` (legends, titles, labels): server text with a
    ``$`` must show as written, and a malformed formula must not fail the drawing."""
    from matplotlib.text import Text

    for text in figure.findobj(Text):
        text.set_parse_math(False)


def _empty(figure: Figure, sentence: str) -> None:
    """The sentence, centred, wrapped here: matplotlib's own wrapping measures the text as a
    formula whenever it has two ``$``, whatever ``set_parse_math`` says."""
    import textwrap

    axes = figure.add_subplot()
    axes.set_axis_off()
    axes.text(0.5, 0.5, textwrap.fill(sentence, 70), ha="center", va="center", fontsize=12)


class Timeline(Picture):
    """Memories per day, week or month, by fact type and by the notebook they came from.

    In a notebook: a figure. ``.rows`` are the numbers (period, fact type, notebook, count),
    ``.dataframe()`` the same as a pandas DataFrame, ``.counts`` everything read. The counts
    per period and type are the server's; in a large scope the split by notebook is read from
    its newest memories only (``.counts.notebooks_read``; a line under the table says so).
    A period holding memories whose data changed since their cell read it is marked ``⚠ N``
    (``.counts.data_changes()``), and a line under the table names the files.
    """

    _margins: ClassVar[dict[str, float]] = {
        "left": 0.07,
        "right": 0.76,  # the legends sit to the right
        "top": 0.91,
        "bottom": 0.15,
        "hspace": 0.12,
    }

    def __init__(self, counts: TimelineCounts) -> None:
        super().__init__()
        self.counts = counts

    @property
    def rows(self) -> list[TimelineRow]:
        """One row per (period, fact type, notebook) with memories."""
        return list(self.counts.rows)

    def dataframe(self) -> Any:
        """``rows`` as a pandas DataFrame (columns period, fact_type, notebook, count)."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError(
                "pandas is not installed: pip install pandas (the numbers are in .rows)."
            ) from None
        frame = pd.DataFrame(self.rows, columns=list(TimelineRow._fields))
        frame["period"] = pd.to_datetime(frame["period"])
        return frame

    def _period_name(self, period: date) -> str:
        if self.counts.by == Period.MONTH:
            return f"{period:%b %Y}"
        return f"{period.day} {period:%b}" + (
            f" {period.year}" if period.year != date.today().year else ""
        )

    def text(self) -> str:
        counts = self.counts
        lines = [counts.describe()]
        if not counts.total:
            lines.append(self._nothing())
            return "\n".join(lines)
        width = max(len(self._period_name(p)) for p in counts.periods)
        header = f"{'period':<{width}}  " + "  ".join(f"{t:>11}" for t in FACT_TYPES)
        changed = counts.data_changes() if counts.changed_data else {}
        marked = f"  {CHANGED_COLUMN:>12}" if changed else ""  # a column only when marked
        lines += ["", header + "  " + f"{'total':>6}  {'cells revised':>13}{marked}"]
        revisions = counts.revisions()
        for period, by_type in counts.per_type().items():
            if not by_type:
                continue
            cells = "  ".join(f"{by_type[t]:>11}" for t in FACT_TYPES)
            total = sum(by_type.values())
            revised = revisions.get(period) or ""
            line = f"{self._period_name(period):<{width}}  {cells}  {total:>6}  {revised:>13}"
            if changed:
                line += f"  {changed.get(period) or '':>12}"
            lines.append(line.rstrip())
        listed = sorted(counts.notebooks(), key=lambda item: item[0] == NOT_READ)  # it last
        names = [(plain_text(one_line(n, 40)), c) for n, c in listed]
        width = max(len("from"), *(len(n) for n, _ in names))
        lines += ["", f"{'from':<{width}}  {'memories':>8}"]
        lines += [f"{name:<{width}}  {count:>8}" for name, count in names]
        if counts.notebooks_read:
            lines += ["", counts.notebook_note()]
        if counts.changed_data:
            lines += ["", plain_text(counts.data_note())]
        return "\n".join(lines)

    def _nothing(self) -> str:
        window = f" {self.counts.window.label}" if self.counts.window else ""
        return (
            f"No memories{window} in bank {self.counts.bank_id}: %retain a fact, then look again."
        )

    def _draw(self, figure: Figure) -> None:
        counts = self.counts
        if not counts.total:
            _empty(figure, plain_text(self._nothing()))
            return
        by_type, by_notebook = figure.subplots(2, 1, sharex=True)
        positions = list(range(len(counts.periods)))
        per_type = counts.per_type()
        self._stack(by_type, positions, [(t, TYPE_COLOURS[t]) for t in FACT_TYPES], per_type)
        self._mark_revisions(by_type, positions, counts.revisions(), per_type)
        self._mark_data_changes(by_type, positions, counts, per_type)
        by_type.set_title(plain_text(counts.describe()), loc="left", fontsize=11)
        by_type.set_ylabel("by type")
        notebooks = [name for name, _ in counts.notebooks() if name not in GREYS]
        shown = notebooks[:MAX_NOTEBOOKS]
        per_notebook = counts.per_notebook()
        if len(notebooks) > MAX_NOTEBOOKS:
            for table in per_notebook.values():
                rest = sum(c for n, c in table.items() if n not in shown and n not in GREYS)
                table[OTHERS] = rest
            shown.append(OTHERS)
        series = [(name, NOTEBOOK_COLOURS[i]) for i, name in enumerate(shown)]
        present = {name for name, _ in counts.notebooks()}
        series += [(name, colour) for name, colour in GREYS.items() if name in present]
        self._stack(by_notebook, positions, series, per_notebook)
        by_notebook.set_ylabel("by notebook")
        by_type.tick_params(axis="x", bottom=False, labelbottom=False)
        step = max(1, math.ceil(len(positions) / 12))
        by_notebook.set_xticks(positions[::step])
        by_notebook.set_xticklabels([self._period_name(p) for p in counts.periods[::step]])
        by_notebook.tick_params(axis="x", labelrotation=30)

    @staticmethod
    def _mark_revisions(
        axes: Axes,
        positions: Sequence[int],
        revisions: dict[date, int],
        per_type: dict[date, Any],
    ) -> None:
        """``↻ N`` above each period in which notebook cells were revised (a new version
        replaced an earlier one, which is kept: ``%hindsight history #N``)."""
        for x, period in zip(positions, per_type, strict=True):
            revised = revisions.get(period, 0)
            if revised:
                top = sum(per_type[period].values())
                axes.annotate(
                    f"↻ {revised}",
                    (x, top),
                    xytext=(0, 2),
                    textcoords="offset points",
                    ha="center",
                    fontsize=7,
                    color="#8c564b",
                )

    @staticmethod
    def _mark_data_changes(
        axes: Axes,
        positions: Sequence[int],
        counts: TimelineCounts,
        per_type: dict[date, Any],
    ) -> None:
        """``⚠ N`` above each period holding memories whose data changed since their cell read
        it (over a period's ``↻``, when it has both): ``%hindsight verify`` lists them."""
        changed, revisions = counts.data_changes(), counts.revisions()
        for x, period in zip(positions, per_type, strict=True):
            marked = changed.get(period, 0)
            if marked:
                top = sum(per_type[period].values())
                above = 11 if revisions.get(period) else 2  # clear of the ``↻ N``
                axes.annotate(
                    f"{CHANGED_MARK} {marked}",
                    (x, top),
                    xytext=(0, above),
                    textcoords="offset points",
                    ha="center",
                    fontsize=7,
                    color="#c62828",
                )

    @staticmethod
    def _stack(
        axes: Axes,
        positions: Sequence[int],
        series: Sequence[tuple[str, str]],
        table: dict[date, Any],
    ) -> None:
        """Stacked bars, one ``PolyCollection`` per series holding only its non-empty bars:
        ``axes.bar`` makes an artist per bar, zero-height ones too, and 90 days of seven
        series cost more than everything else in the picture."""
        from matplotlib.collections import PolyCollection
        from matplotlib.patches import Patch
        from matplotlib.ticker import MaxNLocator

        bottoms = [0] * len(positions)
        periods = list(table)
        handles = []
        for name, colour in series:
            heights = [table[p][name] for p in periods]
            if not any(heights):
                continue
            boxes = [
                [(x - 0.4, b), (x - 0.4, b + h), (x + 0.4, b + h), (x + 0.4, b)]
                for x, b, h in zip(positions, bottoms, heights, strict=True)
                if h
            ]
            axes.add_collection(PolyCollection(boxes, facecolors=colour, edgecolors="none"))
            handles.append(Patch(facecolor=colour, label=_untrusted(name)))
            bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
        axes.set_xlim(-0.6, len(positions) - 0.4)
        axes.set_ylim(0, max(bottoms, default=1) * 1.05 or 1)
        axes.legend(
            handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False
        )
        axes.spines[["top", "right"]].set_visible(False)
        axes.yaxis.set_major_locator(MaxNLocator(nbins=4, integer=True))


def _packed_layout(graph: Any, centre: str | None) -> dict[str, tuple[float, float]]:
    """A spring layout of each connected part, the parts packed in a grid, largest first.

    One spring layout of a graph in pieces pushes the pieces to the edges and squeezes each
    into a blot; laid out apart, each piece gets room in proportion to its size. Topology only
    (weights would pull entities that always occur together onto one spot), and ``centre`` (the
    entity asked for) in the middle of its piece.
    """
    import networkx as nx

    parts = sorted(nx.connected_components(graph), key=lambda part: (-len(part), min(part)))
    columns = math.ceil(math.sqrt(len(parts))) or 1
    rows = math.ceil(len(parts) / columns) or 1
    placed: dict[str, tuple[float, float]] = {}
    for index, part in enumerate(parts):
        piece = graph.subgraph(part)
        fixed = {centre: (0.0, 0.0)} if centre in part else None
        if len(part) == 1:
            spots = {next(iter(part)): (0.0, 0.0)}
        else:
            spots = nx.spring_layout(
                piece,
                k=2.0 / math.sqrt(len(part)),
                weight=None,
                seed=7,
                pos=fixed,
                fixed=list(fixed) if fixed else None,
            )
            if fixed is None:
                spots = nx.rescale_layout_dict(spots, scale=1.0)
        row, column = divmod(index, columns)
        scale = 0.42 * (0.5 + 0.5 * len(part) / len(parts[0]))
        for name, (x, y) in spots.items():
            placed[name] = (column + 0.5 + scale * float(x), rows - row - 0.5 + scale * float(y))
    return placed


class MemoryMap(Picture):
    """The bank's most mentioned entities and how often they occur together (a node's size is
    its mentions, a line's width how many memories mention both); for one entity, its
    neighbourhood and the memories that mention it (``.memories``, with provenance)."""

    _needs = ("matplotlib", "networkx")

    def __init__(self, entity_map: EntityMap) -> None:
        super().__init__()
        self.map = entity_map

    @property
    def memories(self) -> list[RecalledMemory]:
        """The memories that mention the entity asked for (none for the whole map)."""
        return list(self.map.memories)

    def text(self) -> str:
        m = self.map
        lines = [plain_text(m.describe())]
        if not m.nodes:
            lines.append(self._nothing())
            return "\n".join(lines)
        if m.focus is not None:
            alongside = ", ".join(
                f"{_untrusted(node.name, 40)} ({weight})"
                for node, weight in m.neighbours(m.focus.entity_id)
            )
            lines += ["", f"occurs with: {alongside or 'no other entity'}"]
            if m.memories:
                lines += ["", "memories that mention it:"]
                lines += [f"  {plain_text(one_line(memory_line(x), 200))}" for x in m.memories]
            return "\n".join(lines)
        width = max(len(_untrusted(node.name, 40)) for node in m.nodes)
        lines += ["", f"{'entity':<{width}}  {'mentions':>8}  occurs most with"]
        for node in m.nodes:
            near = ", ".join(
                f"{_untrusted(other.name, 30)} ({weight})"
                for other, weight in m.neighbours(node.entity_id)[:3]
            )
            lines.append(f"{_untrusted(node.name, 40):<{width}}  {node.mentions:>8}  {near}")
        return "\n".join(lines)

    def _nothing(self) -> str:
        return (
            f"No entities yet in bank {self.map.bank_id}: each memory brings those it names "
            "(a cell's variables and files, the terms its notes capitalise)."
        )

    def _draw(self, figure: Figure) -> None:
        m = self.map
        if not m.nodes:
            _empty(figure, plain_text(self._nothing()))
            return
        import networkx as nx
        from matplotlib.collections import LineCollection

        graph = nx.Graph()
        graph.add_nodes_from(node.entity_id for node in m.nodes)
        for edge in m.edges:
            if graph.has_node(edge.source) and graph.has_node(edge.target):
                graph.add_edge(edge.source, edge.target, weight=edge.weight)
        layout = _packed_layout(graph, m.focus.entity_id if m.focus is not None else None)
        axes = figure.add_subplot()
        axes.set_axis_off()
        heaviest = max((e.weight for e in m.edges), default=1) or 1
        segments = [(layout[s], layout[t]) for s, t in graph.edges()]
        widths = [0.5 + 4.0 * graph.edges[s, t]["weight"] / heaviest for s, t in graph.edges()]
        axes.add_collection(LineCollection(segments, linewidths=widths, colors="#9aa5b1"))
        most = max(node.mentions for node in m.nodes) or 1
        focus = m.focus.entity_id if m.focus is not None else None
        axes.scatter(  # one collection for every node: a scatter per node costs 20× the time
            [layout[node.entity_id][0] for node in m.nodes],
            [layout[node.entity_id][1] for node in m.nodes],
            s=[60 + 840 * math.sqrt(node.mentions / most) for node in m.nodes],
            c=["#e15759" if node.entity_id == focus else "#4e79a7" for node in m.nodes],
            alpha=0.85,
            zorder=2,
        )
        for node in m.nodes:
            x, y = layout[node.entity_id]
            axes.text(x, y, _untrusted(node.name), ha="center", va="center", fontsize=8, zorder=3)
        axes.set_title(plain_text(m.describe()), loc="left", fontsize=11)
        axes.margins(0.12)
