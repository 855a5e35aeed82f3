"""Mental-model content (Markdown written by the server's LLM) as safe HTML, with markdown-it-py.

The text is untrusted, so the CommonMark parser runs with raw HTML off (any tag in the input
shows as text), images off (nothing is fetched when a panel opens) and links only to ``http``,
``https`` and ``mailto`` addresses, opened in a new tab. markdown-it is imported on the first
render, never by ``%load_ext``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token
    from markdown_it.utils import EnvType, OptionsDict

SAFE_LINK = re.compile(r"^(https?:|mailto:)", re.IGNORECASE)


def _link_open(
    renderer: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    tokens[idx].attrSet("target", "_blank")
    tokens[idx].attrSet("rel", "noopener noreferrer")
    return str(renderer.renderToken(tokens, idx, options, env))


@cache
def _parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False}).disable("image")
    md.validateLink = lambda url: bool(SAFE_LINK.match(url.strip()))  # type: ignore[method-assign]
    md.add_render_rule("link_open", _link_open)
    return md


def markdown_to_html(text: str) -> str:
    """Render ``text`` (Markdown) as HTML in which no tag, image or unsafe link comes from it."""
    return str(_parser().render(text or ""))
