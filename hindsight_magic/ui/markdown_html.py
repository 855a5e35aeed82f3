"""A small, safe Markdown → HTML renderer for mental-model content shown in the panel.

Mental models are written by the server's LLM, so their text is untrusted: everything is
HTML-escaped *first*, then a conservative subset of Markdown is turned into tags — headings,
paragraphs, bullet and numbered lists, block quotes, fenced code, inline code, bold, italics and
``http(s)`` links. Raw HTML in the input always shows as text. No dependency beyond the stdlib.
"""

from __future__ import annotations

import html
import re

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^\s*[-*+]\s+(.*)$")
_NUMBERED = re.compile(r"^\s*\d{1,9}[.)]\s+(.*)$")
_QUOTE = re.compile(r"^\s*&gt;\s?(.*)$")  # matched on escaped text
_FENCE = re.compile(r"^\s*(```|~~~)")
_RULE = re.compile(r"^\s*([-*_])(\s*\1){2,}\s*$")

_CODE = re.compile(r"`([^`]+)`")
_BOLD = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_ITALIC = re.compile(r"(?<![\w*])([*_])(?=\S)(.+?)(?<=\S)\1(?![\w*])")
_LINK = re.compile(r"\[([^\]]+)\]\((https?://[^\s()]+)\)")


def _inline(text: str) -> str:
    """Inline Markdown on already-escaped text; code spans are left untouched."""
    pieces = _CODE.split(text)
    out = []
    for index, piece in enumerate(pieces):
        if index % 2:  # inside a code span
            out.append(f"<code>{piece}</code>")
            continue
        piece = _LINK.sub(r'<a href="\2" target="_blank" rel="noopener noreferrer">\1</a>', piece)
        piece = _BOLD.sub(r"<strong>\2</strong>", piece)
        piece = _ITALIC.sub(r"<em>\2</em>", piece)
        out.append(piece)
    return "".join(out)


def markdown_to_html(text: str) -> str:
    """Render ``text`` (Markdown) as HTML in which no tag comes from the input."""
    lines = html.escape(text or "", quote=True).replace("\r\n", "\n").split("\n")
    out: list[str] = []
    paragraph: list[str] = []
    list_tag: str | None = None
    fence: list[str] | None = None

    def close_paragraph() -> None:
        if paragraph:
            out.append(f"<p>{_inline(' '.join(paragraph))}</p>")
            paragraph.clear()

    def close_list() -> None:
        nonlocal list_tag
        if list_tag:
            out.append(f"</{list_tag}>")
            list_tag = None

    for line in lines:
        if fence is not None:
            if _FENCE.match(line):
                out.append(f"<pre><code>{chr(10).join(fence)}</code></pre>")
                fence = None
            else:
                fence.append(line)
            continue
        if _FENCE.match(line):
            close_paragraph()
            close_list()
            fence = []
            continue
        if not line.strip():
            close_paragraph()
            close_list()
            continue
        heading = _HEADING.match(line)
        bullet, numbered = _BULLET.match(line), _NUMBERED.match(line)
        quote = _QUOTE.match(line)
        if heading:
            close_paragraph()
            close_list()
            level = len(heading.group(1))
            out.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
        elif _RULE.match(line):
            close_paragraph()
            close_list()
            out.append("<hr>")
        elif bullet or numbered:
            close_paragraph()
            tag = "ul" if bullet else "ol"
            if list_tag != tag:
                close_list()
                out.append(f"<{tag}>")
                list_tag = tag
            item = (bullet or numbered).group(1)  # type: ignore[union-attr]
            out.append(f"<li>{_inline(item)}</li>")
        elif quote:
            close_paragraph()
            close_list()
            out.append(f"<blockquote>{_inline(quote.group(1))}</blockquote>")
        elif list_tag and line.startswith((" ", "\t")):  # a list item's continuation line
            out[-1] = out[-1][: -len("</li>")] + " " + _inline(line.strip()) + "</li>"
        else:
            close_list()
            paragraph.append(line.strip())
    if fence is not None:
        out.append(f"<pre><code>{chr(10).join(fence)}</code></pre>")
    close_paragraph()
    close_list()
    return "\n".join(out)
