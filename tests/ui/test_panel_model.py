"""The panel renders typed values, never its own words read back (``_ui/panel/html.py``,
``widgets.py``, ``state.py``).

A view says whether it failed in a field set where its line is written, so a search whose
answer happens to begin "Search failed" is not shown as a failure; the status tables come from
``SessionStatus``'s named rows, so a heading reworded in the text report moves nothing in the
panel. Headless: pure functions, and widgets with no front end.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers import FakeHindsight
from test_panel import as_kernel, cell, load_fake, record_comms, show

from hindsight_magic._session.status import SessionStatus
from hindsight_magic._ui.panel.browser import LISTING, ForgottenView, SearchView
from hindsight_magic._ui.panel.figures import FigureView
from hindsight_magic._ui.panel.html import (
    figure_caption_html,
    forgotten_message_html,
    search_state_html,
)

RED, GREY = "color:#c62828", "color:#555"


@pytest.fixture
def kernel_nb(notebook: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The notebook fixture, looking like a Jupyter kernel whose widgets record their messages."""
    record_comms(monkeypatch)
    return as_kernel(notebook, monkeypatch)


def test_a_search_line_is_red_only_when_the_search_failed() -> None:
    # a line that happens to begin with the failure's words (an input's own wording)
    found = SearchView("q", False, "Search failed-over replicas: 2 memories")
    assert GREY in search_state_html(found)
    assert RED not in search_state_html(found)
    failed = SearchView("q", False, "Search failed: no Hindsight server at …", failed=True)
    assert RED in search_state_html(failed)


def test_a_figure_caption_is_red_only_when_the_drawing_failed() -> None:
    drawn = FigureView(caption="Could not-so-common words: 12 entities · drawn at 10:00")
    assert GREY in figure_caption_html(drawn)
    failed = FigureView(caption="Drawing the map failed at 10:00: timeout", failed=True)
    assert RED in figure_caption_html(failed)


def test_the_forgotten_line_is_red_only_when_listing_failed() -> None:
    assert GREY in forgotten_message_html(ForgottenView())  # still listing
    assert GREY in forgotten_message_html(ForgottenView("Nothing is forgotten.", loaded=True))
    # the server's own headline may be worded any way: still no failure
    assert GREY in forgotten_message_html(ForgottenView("No forgotten memories in this scope."))
    failed = ForgottenView(f"{LISTING} failed: no server", failed=True)
    assert RED in forgotten_message_html(failed)


def test_a_heading_reworded_in_the_report_moves_nothing_in_the_panel(
    kernel_nb: Any, fake: FakeHindsight, dead_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    headed = SessionStatus.sections

    def reworded(self: SessionStatus, **options: Any) -> list[Any]:
        return [(f"{heading} (reworded)", rows) for heading, rows in headed(self, **options)]

    monkeypatch.setattr(SessionStatus, "sections", reworded)
    session = load_fake(kernel_nb, fake, dead_url)
    panel = show(kernel_nb)
    assert cell(panel.w_header.value, "server-url") == dead_url
    assert cell(panel.w_header.value, "scope-bank") == "panel"
    assert cell(panel.w_queue.value, "queue-failed") == "0"
    assert cell(panel.w_auto.value, "autoretain-mode").endswith("every 3 cells")
    assert cell(panel.w_models_state.value, "models-state")
    assert cell(panel.w_details.value, "session-id") == session.session_id
    # the text form is the report, headings and all
    assert "Queue (reworded):" in repr(panel)
