"""How the extension writes for people: plurals, untrusted text in each output form, and times.

**Memory text is data.** What the server returns (memories, mental models, a reflect's answer,
error details) was written by a teammate, a scraped page or an agent, so it is escaped for
the form it is shown in, by one function per form, used by every caller:

- ``plain_text``: terminals and ``__repr__``: control and bidirectional-override characters
  (which can hide or reorder what a reader sees) become ``U+FFFD``; every other form starts
  from it.
- ``html_text``: HTML (tables, the panel): escaped, quotes included.
- ``markdown_text``: ``text/markdown`` of memory text: every ASCII punctuation character
  backslash-escaped, so it can make no link, image, HTML, heading, list or table, and bare
  URLs, ``www.`` names and e-mail addresses broken with a zero-width space so that GitHub
  flavoured renderers do not turn them into links.
- ``markdown_answer``: Markdown that *is* Markdown (a reflect's answer, a mental model's
  content): emphasis, lists and code survive, but no raw HTML, no link and no image. It is
  parsed by CommonMark's rules (markdown-it-py, which pairs backtick runs and fences as every
  renderer does), links, images and HTML become their text, and the tree is written back as
  Markdown by mdformat, which escapes what would otherwise be read as syntax.
- ``prompt_text``: text placed inside the ``<memories>``/``<mental_models>`` blocks given to an
  LLM: the blocks' tags are neutralised (``&lt;/memories&gt;``), so the text cannot close the
  block it sits in or open another.
  MCP results (``_agents``) are read by an agent's LLM, so their memory text goes through it
  too, one line per memory inside a ``<memories>`` block; their structured data through
  ``plain_text``.

Two clocks appear to the user: the *server's* times (ISO 8601 text, shown in UTC to the minute,
because memories and mental models are shared across machines and time zones) and the
*kernel's* own events (epoch seconds from ``time.time()``, shown in local time, because they
answer "when did this notebook last flush"). Memories are sent with a local ISO timestamp that
carries its UTC offset, so the server knows both. Stdlib only: imported by every layer."""

from __future__ import annotations

import html
import re
import time
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it.token import Token


def plural(count: int, one: str, many: str) -> str:
    """``1 memory`` / ``3 memories``."""
    return f"{count} {one if count == 1 else many}"


# C0/C1 controls but tab and newline, and the bidirectional embeddings, overrides and isolates
_UNSAFE_CHARS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_MARKDOWN_PUNCTUATION = re.compile(r"([!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])")
# what GitHub-flavoured Markdown links by itself: scheme://, www., user@host
_AUTOLINKS = re.compile(r"(?<=:)(?=//)|(?<=\bwww)(?=\.)|(?<=[\w.+-]@)(?=[\w-]+\.\w)", re.IGNORECASE)
_ZERO_WIDTH_SPACE = "\u200b"
_LANGUAGE = re.compile(r"[\w+#.-]{0,40}")  # a code fence's language: ```python
# the blocks memories and mental models travel in (and their legacy names), opening or closing
BLOCK_NAMES = ("memories", "mental_models", "hindsight_memories", "relevant_memories")
_BLOCK_TAG = re.compile(rf"<(\s*/?\s*(?:{'|'.join(BLOCK_NAMES)})\b[^<>]*)>", re.IGNORECASE)


# Lone surrogates ("\ud800" from a JSON front end, or a folder name that is not UTF-8) cannot
# be encoded as UTF-8: httpx would refuse the whole request, so they become U+FFFD first.
_SURROGATES = re.compile("[\ud800-\udfff]")


def encodable(text: str) -> str:
    """``text`` with lone surrogates replaced, so it can be sent as UTF-8."""
    if text.isascii():  # a flag CPython keeps on every string: no scan
        return text
    return _SURROGATES.sub("\ufffd", text)


def one_line(text: str, limit: int) -> str:
    """``text`` with its white space folded to single spaces, cut to ``limit`` characters with
    ``…``. Only the beginning is read: a memory may be megabytes, the line is a few words."""
    line = " ".join(text[: limit * 4].split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def plain_text(text: str) -> str:
    """``text`` with control and bidirectional-override characters shown as ``U+FFFD``."""
    if text.isascii() and text.isprintable():
        return text
    return _UNSAFE_CHARS.sub("\ufffd", text)


def html_text(text: str) -> str:
    """``text`` safe as HTML content or an attribute value."""
    return html.escape(plain_text(text), quote=True)


def markdown_text(text: str) -> str:
    """``text`` that renders as itself in Markdown: no link, image, HTML or block of its own."""
    unlinked = _AUTOLINKS.sub(_ZERO_WIDTH_SPACE, plain_text(text))
    return _MARKDOWN_PUNCTUATION.sub(r"\\\1", unlinked)


def markdown_answer(text: str) -> str:
    """Markdown from the server (an answer, a model's content) with its emphasis, lists, quotes
    and code, but without raw HTML, links or images: parsed as CommonMark, those become their
    text (a bare URL is broken as in ``markdown_text``), and the rest is written back as
    Markdown with what would be read as syntax escaped. Code stays code: nothing in it is
    rendered."""
    from markdown_it import MarkdownIt
    from mdformat.renderer import MDRenderer

    parser = MarkdownIt("commonmark")
    tokens = [_inert_block(token) for token in parser.parse(plain_text(text))]
    return str(MDRenderer().render(tokens, parser.options, {})).rstrip("\n")


def _inert_block(token: Token) -> Token:
    """``token`` with no raw HTML block, and its inline children with no link, image or HTML."""
    from markdown_it.token import Token

    if token.type == "html_block":
        token = Token("inline", "", 0, content=token.content, children=[], map=token.map)
        token.children = _inert_inline([_text_token(token.content.rstrip("\n"))])
        return token
    if token.type == "fence" and not _LANGUAGE.fullmatch(token.info.strip()):
        token.info = ""  # an info string names a language, or it goes (it becomes a class)
    if token.children is not None:
        token.children = _inert_inline(token.children)
    return token


def _inert_inline(children: list[Token]) -> list[Token]:
    """A link becomes its text and its address in brackets, an image its alt text, HTML its
    text; in every text a bare address is broken so that no renderer links it."""
    targets: list[str] = []  # the addresses of the links we are inside
    kept = []
    for token in children:
        content = None
        if token.type == "link_open":
            href = str(token.attrs.get("href") or "")
            targets.append("" if token.markup == "autolink" else f" ({href})")
            content = ""
        elif token.type == "link_close":
            content = targets.pop() if targets else ""
        elif token.type == "image":
            content = token.content  # its alt text
        elif token.type in ("html_inline", "text"):
            content = token.content
        if content is None:
            kept.append(token)
        elif content:
            kept.append(_text_token(_AUTOLINKS.sub(_ZERO_WIDTH_SPACE, content)))
    return kept


def _text_token(content: str) -> Token:
    from markdown_it.token import Token

    return Token("text", "", 0, content=content)


def prompt_text(text: str) -> str:
    """``text`` that cannot open or close a ``<memories>``/``<mental_models>`` block."""
    return _BLOCK_TAG.sub(r"&lt;\1&gt;", plain_text(text))


_OFFSET_PERIOD_S = 900  # UTC offsets change only at quarter hours (DST, zone changes)
_local_zone: tuple[int, timezone] = (-1, timezone.utc)  # (quarter hour, its local zone)


def parse_iso(stamp: str | None) -> datetime | None:
    """ISO 8601 text as an aware time (``Z`` accepted, no offset taken as UTC); None if not one."""
    if not stamp:
        return None
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


def utc_minute(moment: datetime | None = None) -> str:
    """``YYYY-MM-DD HH:MM`` in UTC, of ``moment`` or now (a naive time is taken as UTC)."""
    if moment is None:
        moment = datetime.now(timezone.utc)
    elif moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M")


def utc_minute_text(stamp: str | None, suffix: str = "") -> str:
    """A server's ISO time as ``utc_minute`` + ``suffix``; '' when missing, unparsable as given."""
    if not stamp:
        return ""
    moment = parse_iso(stamp)
    return stamp if moment is None else utc_minute(moment) + suffix


def local_second(epoch: float) -> str:
    """``YYYY-MM-DD HH:MM:SS`` in the kernel's local time, of ``time.time()`` seconds."""
    return datetime.fromtimestamp(epoch).astimezone().strftime("%Y-%m-%d %H:%M:%S")


def local_clock(epoch: float | None = None) -> str:
    """``HH:MM:SS`` in the kernel's local time, of ``time.time()`` seconds or now."""
    moment = datetime.now() if epoch is None else datetime.fromtimestamp(epoch)
    return moment.astimezone().strftime("%H:%M:%S")


def _local_zone_at(epoch: float) -> timezone:
    """The kernel's local UTC offset at ``epoch``, looked up once per quarter hour
    (``astimezone()`` asks the C library each time: most of a timestamp's cost)."""
    global _local_zone
    quarter = int(epoch // _OFFSET_PERIOD_S)
    if _local_zone[0] != quarter:
        offset = timedelta(seconds=time.localtime(epoch).tm_gmtoff)
        _local_zone = (quarter, timezone(offset))
    return _local_zone[1]


def local_timestamp(moment: datetime | float | None = None) -> str:
    """Local time with its UTC offset, ISO 8601, milliseconds dropped when zero.

    ``moment`` is a datetime, ``time.time()`` seconds, or None for now.
    """
    if isinstance(moment, datetime):
        moment = moment.astimezone()
    else:
        epoch = time.time() if moment is None else moment
        moment = datetime.fromtimestamp(epoch, _local_zone_at(epoch))
    spec = "seconds" if moment.microsecond < 1000 else "milliseconds"
    return moment.isoformat(timespec=spec)
