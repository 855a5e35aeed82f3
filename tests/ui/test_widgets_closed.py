"""Widgets a test makes are closed when it ends, not at interpreter exit (where ipywidgets'
finaliser prints a traceback per widget, after its module is gone)."""

from __future__ import annotations

from typing import Any

MADE: list[Any] = []


def test_a_test_that_makes_widgets_and_keeps_them() -> None:
    import ipywidgets

    MADE.append(ipywidgets.VBox([ipywidgets.HTML("kept"), ipywidgets.Button()]))
    assert MADE[0].comm is not None  # open while the test runs


def test_they_are_closed_once_it_ended() -> None:
    assert MADE, "runs after the test above"
    box = MADE[0]
    assert box.comm is None
    assert all(child.comm is None for child in box.children)
