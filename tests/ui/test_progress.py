"""The transfer progress bars: a text bar in a terminal, a line per step in a log, a widget bar
in a notebook — each showing the step, how far it is, and the outcome, escaped."""

from __future__ import annotations

import io

import pytest

from hindsight_magic._ui import progress as progress_module
from hindsight_magic._ui.progress import ReadProgress, TextProgress, WidgetProgress, progress_for


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_one_redrawn_bar_per_step(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter(range(1000))
    monkeypatch.setattr(progress_module.time, "monotonic", lambda: float(next(clock)))
    out = Terminal()
    bar = TextProgress(out)
    bar.stage("downloading to course.zip", 4_000_000)
    bar.advance(2_000_000)
    bar.advance(4_000_000)
    bar.stage("restoring bank intro on the server")
    bar.advance(0)
    bar.close("Restored bank 'intro'")
    shown = out.getvalue()
    assert "[###############...............] 2.0 MB of 4.0 MB — downloading to course.zip" in shown
    assert "[##############################] 4.0 MB of 4.0 MB" in shown
    assert "s — restoring bank intro on the server" in shown  # seconds, when the size is unknown
    assert shown.endswith("\r\x1b[K")  # the bar is cleared: the outcome line follows it


def test_a_log_gets_one_line_per_step() -> None:
    out = io.StringIO()
    bar = TextProgress(out)
    bar.stage("exporting bank intro on the server")
    for done in range(0, 10_000, 100):
        bar.advance(done)
    bar.stage("downloading to x.zip", 10)
    bar.close("done")
    assert out.getvalue() == "exporting bank intro on the server …\ndownloading to x.zip …\n"


def test_the_widget_bar_moves_and_ends_with_the_outcome_escaped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    shown: list[object] = []
    monkeypatch.setattr("IPython.display.display", shown.append)
    bar = WidgetProgress()
    meter, label = bar.widget.children
    bar.stage("downloading to <b>x</b>.zip", 1_000_000)
    bar.advance(1_000_000)
    assert shown == [bar.widget]  # shown once, in the running cell
    assert meter.value == 1.0
    assert "&lt;b&gt;x&lt;/b&gt;.zip" in label.value
    bar.stage("restoring on the server")
    assert meter.bar_style == "info"  # no size: the bar only says time passes
    bar.close("Restored <script>")
    assert label.value == "Restored &lt;script&gt;"
    assert meter.bar_style == "success"
    assert len(shown) == 1


def test_outside_a_kernel_the_bar_is_text() -> None:
    assert isinstance(progress_for(object()), TextProgress)


def test_a_long_read_shows_one_bar_counting_memories_and_a_short_one_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A dedupe's read: past ``LONG_READ`` memories one widget, shown once in the running cell
    and moved in place; a read that fits shows nothing at all."""
    shown: list[object] = []
    monkeypatch.setattr("IPython.display.display", shown.append)
    monkeypatch.setattr(progress_module.time, "monotonic", iter(range(0, 10_000, 1)).__next__)
    kernel = type("Shell", (), {"kernel": object()})()

    short = ReadProgress(kernel, "reading")
    for done in (0, 2_000, progress_module.LONG_READ):
        short(done, progress_module.LONG_READ)
    short.close("Read.")
    assert shown == []

    long = ReadProgress(kernel, "reading the bank's memories to find copies")
    total = progress_module.LONG_READ * 10
    for done in range(0, total + 1, 5_000):
        long(done, total)
    (widget,) = shown
    meter, label = widget.children
    assert meter.value == 1.0
    assert f"{total} of {total} memories" in label.value
    long.close(f"Read {long.done} memories.")
    assert label.value == f"Read {total} memories."
    assert len(shown) == 1


def test_a_terminal_counts_memories_not_bytes() -> None:
    out = Terminal()
    bar = TextProgress(out)
    bar.stage("reading the bank's memories to find copies", 50_000, "memories")
    bar.advance(50_000)
    assert "50000 of 50000 memories — reading the bank's memories" in out.getvalue()
