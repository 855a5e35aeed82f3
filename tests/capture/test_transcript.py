"""Cells → transcript text: skip rules, caps, memory-tag stripping, redaction (pure functions)."""

from __future__ import annotations

import collections
import itertools
import json
import os
import random
import re
import textwrap
from collections.abc import Callable
from pathlib import Path

import pandas
import pytest
from helpers import run_script
from IPython.lib.pretty import pretty

from hindsight_magic._capture.autoretain import plain_outputs
from hindsight_magic._capture.derived import words_of
from hindsight_magic._capture.redact import (
    CREDENTIAL_SHAPES,
    REDACTED,
    _detected,
    redact,
    secret_values,
)
from hindsight_magic._capture.transcript import (
    ERROR_CAP,
    PIECE_CHARS,
    RESULT_CAP,
    SOURCE_CAP,
    STREAM_CAP,
    CellText,
    ShownTexts,
    cap,
    cell_pieces,
    count_cells,
    format_cell,
    is_own_result,
    is_skipped,
    pack_pieces,
    strip_memory_tags,
)

# -- is_skipped ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "",
        "   ",
        "\n\n\t \n",
        "# hindsight: skip\nx = 1",
        "# hindsight: skip",
        "#hindsight:skip\nsecret_stuff()",
        "  #   HINDSIGHT  :   Skip\nx = 1",
        "# Hindsight: SKIP (scratch work)\nx = 1\ny = 2",
        "%retain The churn table double-counts Q3 refunds.",
        "%recall churn data quality",
        "%reflect what did we decide?",
        "%hindsight status",
        "%hindsight autoretain off",
        "  %retain indented",
        "memories = %recall churn",
        "m=%recall --budget high outliers",
        "self.notes = %recall churn",
        "%%reflect\nWhat did we learn about refunds?\nx = 1",
        "%%retain --split\nUse 5-fold CV.\n\nClip at 3 sigma.",
        "%%recall --max-tokens 512\nrefunds",
        "%load_ext hindsight_magic",
        "# set up memory\n%load_ext hindsight_magic",
        "%reload_ext hindsight_magic",
        "%unload_ext hindsight_magic",
        "# remember this\n%retain A fact.\n\n# and look up that\n%recall B",
        "%retain one\n%retain two\n%hindsight flush",
    ],
)
def test_skipped_cells(source: str) -> None:
    assert is_skipped(source)


@pytest.mark.parametrize(
    "source",
    [
        "x = 1",
        "x = 1\n# hindsight: skip",  # the marker only counts on the first line
        "import pandas as pd\n# hindsight: skip\ndf = pd.DataFrame()",
        "# hindsight skip\nx = 1",  # no colon: not the marker
        "# hindsight: skipping ahead\nx = 1",
        "%retain A fact.\nx = 1",  # our magic mixed with code
        "x = 1\n%recall churn",
        "%retainer x",
        "%recalled",
        "%reflection",
        "%hindsightful",
        "%%timeit\n%retain x",
        "%load_ext autoreload",
        "%load_ext hindsight_magic_extra",
        "print('%retain not a magic here')",
        "%time x = 1",
    ],
)
def test_cells_that_are_not_skipped(source: str) -> None:
    assert not is_skipped(source)


# -- cap -------------------------------------------------------------------------------------


def test_cap_keeps_short_text_and_marks_what_it_cuts() -> None:
    assert cap("hello", 10) == "hello"
    assert cap("x" * 10, 10) == "x" * 10
    assert cap("abcdefghij", 4) == "abcd …[6 more characters]"
    assert cap("abc   defgh", 5) == "abc …[6 more characters]"  # trailing space of the cut trimmed
    long = "y" * 5000
    capped = cap(long, SOURCE_CAP)
    assert capped.startswith("y" * SOURCE_CAP)
    assert capped.endswith(f"…[{5000 - SOURCE_CAP} more characters]")


# -- strip_memory_tags -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "tag", ["memories", "mental_models", "hindsight_memories", "relevant_memories"]
)
def test_strip_memory_tags_removes_each_kind(tag: str) -> None:
    text = f"before\n<{tag}>\n- recalled fact one\n- recalled fact two\n</{tag}>\nafter"
    assert strip_memory_tags(text) == "before\n\nafter"


def test_strip_memory_tags_several_blocks_non_greedy() -> None:
    text = (
        "A <memories>first</memories> B <mental_models>\nmodel\n</mental_models> C "
        "<memories>second\nline</memories> D"
    )
    assert strip_memory_tags(text) == "A  B  C  D"


def test_strip_memory_tags_leaves_other_and_unbalanced_tags() -> None:
    for text in (
        "<notes>keep me</notes>",
        "<memories>unterminated block",
        "<memories>mismatched</mental_models>",
        "plain text about memories and mental models",
    ):
        assert strip_memory_tags(text) == text


def test_in_a_cell_s_output_any_case_and_a_block_cut_short_are_removed() -> None:
    assert strip_memory_tags("a <MEMORIES x=1>fact</ Memories > b", output=True) == "a  b"
    cut = "prompt: <memories>\nRelevant memories from past conver"  # r.as_context()[:40]
    assert strip_memory_tags(cut, output=True) == "prompt: "
    assert strip_memory_tags(cut) == cut  # a cell's own source keeps an unclosed tag


# -- secret_values ---------------------------------------------------------------------------


def test_secret_values_collects_key_and_credential_env_values_longest_first() -> None:
    environ = {
        "MY_API_TOKEN": "tok-12345678",
        "db_password": "hunter2hunter2hunter2",
        "Aws_Secret_Access_Key": "wJalrXUtnFEMI/K7MDENG",
        "OPENAI_API_KEY": "sk-abcdefghijklmnopqrstu",
        "GITHUB_TOKEN": "short",  # under 8 characters: ignored
        "EXACTLY_KEY": "12345678",  # exactly 8: kept
        "HOME": "/home/someone/long/path",
        "PATH": "/usr/local/bin:/usr/bin",
    }
    values = secret_values("hs-api-key-0001", environ)
    assert set(values) == {
        "hs-api-key-0001",
        "tok-12345678",
        "hunter2hunter2hunter2",
        "wJalrXUtnFEMI/K7MDENG",
        "sk-abcdefghijklmnopqrstu",
        "12345678",
    }
    lengths = [len(v) for v in values]
    assert lengths == sorted(lengths, reverse=True)


def test_secret_values_without_key_and_no_duplicates() -> None:
    assert secret_values(None, {}) == []
    assert secret_values("", {"SOME_TOKEN": "abc"}) == []
    assert secret_values("same-value-123", {"X_SECRET": "same-value-123"}) == ["same-value-123"]


def test_secret_values_reads_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZZ_TEST_PASSWORD", "correct-horse-battery")
    assert "correct-horse-battery" in secret_values()


# -- redact ----------------------------------------------------------------------------------

SHAPES = {
    "openai": "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2",
    "anthropic": "sk-ant-api03-" + "Xy9_Zw8-Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe",
    "openai-project": "sk-proj-" + "AbCdEfGhIjKlMnOpQrStUvWx0123",
    "github-classic": "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "github-oauth": "gho_" + "16C7e42F292c6912E7710c838347Ae178B4a",
    "github-fine-grained": "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789",
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "slack": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "google": "AIza" + "SyDaGmWKa4JsXZ5HjGw7ISLn3namBGewQeA",
}


@pytest.mark.parametrize("name", list(SHAPES))
def test_redact_credential_shapes(name: str) -> None:
    token = SHAPES[name]
    text = f'client = Client(key="{token}")\nprint({token!r}) # {token}'
    redacted = redact(text)
    assert token not in redacted
    assert token[6:14] not in redacted
    assert redacted == f"client = Client(key=\"{REDACTED}\")\nprint('{REDACTED}') # {REDACTED}"


def test_google_key_shape_is_exactly_39_characters() -> None:
    assert len(SHAPES["google"]) == 39


def test_redact_bearer_token_keeps_the_word() -> None:
    text = "headers = {'Authorization': 'Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig-_+/='}"
    assert redact(text) == f"headers = {{'Authorization': 'Bearer {REDACTED}'}}"
    assert redact("curl -H 'Authorization: Bearer abcdef123456'") == (
        f"curl -H 'Authorization: Bearer {REDACTED}'"
    )


@pytest.mark.parametrize(
    "kind", ["RSA PRIVATE KEY", "PRIVATE KEY", "OPENSSH PRIVATE KEY", "EC PRIVATE KEY"]
)
def test_redact_pem_private_key_block(kind: str) -> None:
    body = "MIIEowIBAAKCAQEA0Z3VS5\nJJcds3xfn/ygWyF0"
    block = f"-----BEGIN {kind}-----\n{body}\n-----END {kind}-----"
    text = f"key = '''\n{block}\n'''\nprint('after the key')"
    redacted = redact(text)
    assert redacted == f"key = '''\n{REDACTED}\n'''\nprint('after the key')"
    assert "MIIE" not in redacted


def test_redact_unterminated_pem_block_to_the_end() -> None:
    text = "before\n-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nmore base64"
    assert redact(text) == f"before\n{REDACTED}"


def test_redact_explicit_secret_values_anywhere() -> None:
    secrets = ["hunter2hunter2"]
    assert redact("pw = 'hunter2hunter2'", secrets) == f"pw = '{REDACTED}'"
    assert redact("xxhunter2hunter2yy and hunter2hunter2", secrets) == (
        f"xx{REDACTED}yy and {REDACTED}"
    )
    assert redact("a URL: https://u:hunter2hunter2@db/x", secrets) == (
        f"a URL: https://u:{REDACTED}@db/x"
    )


def test_redact_longest_secret_first_leaves_no_partial_leftover() -> None:
    environ = {"SHORT_TOKEN": "abcdefgh", "LONG_TOKEN": "abcdefgh-and-the-rest-of-it"}
    text = "value: abcdefgh-and-the-rest-of-it; other: abcdefgh"
    assert redact(text, secret_values(None, environ)) == f"value: {REDACTED}; other: {REDACTED}"


def test_redact_ignores_empty_secret_values() -> None:
    assert redact("plain words", ["", "not-present-here"]) == "plain words"


# common notebook secrets no credential shape catches: found by detect-secrets' plugins
ASSIGNED = {
    "aws-secret": ("aws_secret_access_key = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'", 1),
    "url-password": ("engine = create_engine('postgresql://ana:hunter2pass@db.lab/prod')", 1),
    "password": ("password = 'correct-horse-9'", 1),
    "passwd": ('passwd = "s3cr3t!xy"', 1),
    "pwd": ("pwd = 'abcDEF123'", 1),
    "secret": ("secret = 'zzTopSecret42'", 1),
    "env-style": ('DB_PASSWORD="tiger-lily-77"', 1),
}


@pytest.mark.parametrize("name", list(ASSIGNED))
def test_redact_common_notebook_secrets(name: str) -> None:
    line, count = ASSIGNED[name]
    value = re.findall(r"'([^']+)'|\"([^\"]+)\"", line)[0]
    secret = {"url-password": "hunter2pass"}.get(name) or next(v for v in value if v)
    text = f"{line}\nprint('loaded')"
    redacted = redact(text)
    assert secret not in redacted, redacted
    assert redacted.count(REDACTED) == count
    assert redacted.endswith("\nprint('loaded')")


def test_redact_leaves_words_about_passwords_alone() -> None:
    for text in ("my password is on the wiki", "config['password'] = pw", "x = 1  # key"):
        assert redact(text) == text


# a credential said in words: its value goes, the sentence stays
PROSE = {
    "the warehouse password is hunter2secret": "the warehouse password is {}",
    "The password for the prod warehouse is Hx9-22kq, rotate it.": (
        "The password for the prod warehouse is {}, rotate it."
    ),
    "token: abc123def456": "token: {}",
    "pw Tr0ub4dor&3 for the VPN": "pw {} for the VPN",
    "passphrase correct-horse-9": "passphrase {}",
    "the api key is sk_live_abc12345.": "the api key is {}.",
    "API key: AbCdEfGh12": "API key: {}",
    "the password was set to Winter2024! yesterday": "the password was set to {}! yesterday",
    "DB_PASSWORD: tiger-lily-77": "DB_PASSWORD: {}",
    "the secret is 'abcdefgh'": "the secret is '{}'",
    "secret=abc123xyz and auth token: qq1234567": "secret={} and auth token: {}",
    "the wifi passcode is 12345678": "the wifi passcode is {}",
}
ORDINARY = (
    "the password policy changed",
    "my password is on the wiki",
    "the token is stored in the vault",
    "passwords expire every 90 days",
    "max token: 128000",
    "the api key rotates monthly",
    "the secret is XGBoost tuned well",
    "token = get_token()",
    "pw = cfg.pw2",
    "print(f'token: {tok}')",
    # a token or secret followed by a word, with no "is" or ":" between, is not its value
    "secret 2024-Q3 roadmap",
    "access token TTL=3600s",
)


@pytest.mark.parametrize("text", list(PROSE))
def test_redact_a_secret_said_in_prose(text: str) -> None:
    assert redact(text) == PROSE[text].format(REDACTED, REDACTED)


@pytest.mark.parametrize("text", ORDINARY)
def test_redact_leaves_prose_about_credentials_alone(text: str) -> None:
    assert redact(text) == text


def test_prose_naming_a_secret_does_not_import_the_plugins(tmp_path: Path) -> None:
    # a kernel's first %retain of such prose, before the worker's warm-up had imported
    # detect-secrets (and requests with it), paid that import on the kernel thread: 70-140 ms
    script = (
        "import sys\n"
        "from hindsight_magic._capture.redact import redact\n"
        "text = 'The weather API key rotates monthly; the job reads it from the vault.'\n"
        "assert redact(text) == text\n"
        "print(sorted(name for name in ('detect_secrets', 'requests') if name in sys.modules))\n"
    )
    done = run_script(script, dict(os.environ), tmp_path)
    assert done.stdout.strip() == "[]", done.stdout


SECRET_WORDS = (
    "password", "passwd", "pwd", "secret", "api_key", "apikey", "auth_key", "private_key",
    "db_pass", "client_key", "aws_secret_access_key", "contraseña", "token", "credentials",
)  # fmt: skip
UNQUOTED_FORMS = (
    "{w} = {v}", "{w}={v}", "{w}: {v}", "{w} := {v}", "{w} => {v}", "{w} == {v}", "{w} != {v}",
    "{v} == {w}", "{w}({v});", "{w} {v};", "{w}[0] = {v}", "export {W}={v}", "set {w} to {v}",
    "{w}.assign({v})", "https://{w}.example.org/{v}", "postgresql://ana:{v}/{w}",
)  # fmt: skip
VALUES = ("hunter2hunter2", "tiger-lily-77", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")


def test_the_plugins_find_nothing_on_a_line_they_are_not_given() -> None:
    # lines that name a secret but hold no quote, no "@" and no AWS key id are not given to
    # detect-secrets' plugins (_FINDABLE): they must find nothing there, in every form
    from hindsight_magic._capture.redact import _FINDABLE, _plugins

    skipped = quoted = 0
    for word, form, value in itertools.product(SECRET_WORDS, UNQUOTED_FORMS, VALUES):
        line = form.format(w=word, W=word.upper(), v=value)
        assert _FINDABLE.search(line) is None, line
        found = [s for p in _plugins() for s in p.analyze_line(filename="cell.py", line=line)]
        assert not found, (line, found)
        skipped += 1
        # the same forms quoted are given to them, and the assignments are found
        line = form.format(w=word, W=word.upper(), v=f'"{value}"')
        assert _FINDABLE.search(line), line
        quoted += value not in redact(line)
    assert skipped == len(SECRET_WORDS) * len(UNQUOTED_FORMS) * len(VALUES)
    assert quoted > skipped // 4  # not a vacuous grid: quoted, many of these are secrets


DATAFRAME_REPR = (
    "   customer_id  token_count  sk  password_length  api_key_set\n"
    "0         1001            3   1               12         True\n"
    "1         1002            5   0                9        False\n"
    "2         1003            8   1               16         True"
)


@pytest.mark.parametrize(
    "text",
    [
        "skip",
        "token_count = 3",
        "sk = 1",
        "sk-short",
        "task-list of the risk-free items",
        "AKIA",
        "AKIA1234",
        "ghp_short",
        "Bearer",
        "Authorization: Bearer",
        "the Bearer scheme",
        "password_length = 12",
        "api_key = os.environ['OPENAI_API_KEY']",
        "secret_santa = ['ann', 'bob']",
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
        DATAFRAME_REPR,
    ],
)
def test_redact_leaves_ordinary_text_alone(text: str) -> None:
    assert redact(text) == text
    assert redact(text, ["not-in-the-text-at-all"]) == text


# -- format_cell -----------------------------------------------------------------------------

CELL = CellText(
    7, "df.describe()\nraise_if_bad()", result="count 42", error="ValueError: bad row", stdout="hi"
)


def test_format_cell_outputs_none() -> None:
    assert format_cell(CELL, "none") == "[cell 7]\ndf.describe()\nraise_if_bad()"


def test_format_cell_outputs_result() -> None:
    assert format_cell(CELL, "result") == (
        "[cell 7]\ndf.describe()\nraise_if_bad()\n[result]\ncount 42\n[error]\nValueError: bad row"
    )
    assert format_cell(CELL) == format_cell(CELL, "result")  # the default


def test_format_cell_outputs_all_adds_stdout() -> None:
    assert format_cell(CELL, "all") == (
        "[cell 7]\ndf.describe()\nraise_if_bad()\n[result]\ncount 42\n"
        "[error]\nValueError: bad row\n[output]\nhi"
    )


def test_format_cell_only_source() -> None:
    assert format_cell(CellText(1, "  x = 1  \n"), "all") == "[cell 1]\nx = 1"


def test_format_cell_caps_each_part_with_the_marker() -> None:
    source = "s" * (SOURCE_CAP + 50)
    result = "r" * (RESULT_CAP + 60)
    error = "E" * (ERROR_CAP + 70)
    stdout = "o" * (STREAM_CAP + 80)
    entry = format_cell(CellText(3, source, result, error, stdout), "all")
    assert entry == "\n".join(
        [
            "[cell 3]",
            "s" * SOURCE_CAP + " …[50 more characters]",
            "[result]",
            "r" * RESULT_CAP + " …[60 more characters]",
            "[error]",
            "E" * ERROR_CAP + " …[70 more characters]",
            "[output]",
            "o" * STREAM_CAP + " …[80 more characters]",
        ]
    )


def test_format_cell_drops_outputs_without_letters_or_digits() -> None:
    cell = CellText(4, "show()", result="...", error=None, stdout="----\n  \n___")
    assert format_cell(cell, "all") == "[cell 4]\nshow()"


def test_format_cell_strips_memory_tags_from_source_and_outputs() -> None:
    cell = CellText(
        5,
        "prompt = ctx + q\n<memories>old fact in the source</memories>",
        result="<memories>\n- recalled: churn is 5%\n</memories>\nAnswer: 42",
        stdout="<mental_models>model text</mental_models>printed",
    )
    entry = format_cell(cell, "all")
    assert "recalled" not in entry
    assert "old fact" not in entry
    assert "model text" not in entry
    assert entry == "[cell 5]\nprompt = ctx + q\n[result]\nAnswer: 42\n[output]\nprinted"


@pytest.mark.parametrize(
    ("source", "kept"),
    [
        ("%recall which tenure cut-off do we use?\ndf = load()", "df = load()"),
        ("df = load()\nfound = %recall tenure cut-off\nfound[0]", "df = load()\nfound[0]"),
        ("m=%recall --budget high outliers\nplot(m)", "plot(m)"),
        ("%reflect what did we decide?\nsummary()", "summary()"),
        (
            "%retain Churn means 90 days without an order.\nchurned = days > 90",
            "churned = days > 90",
        ),
        (
            "%hindsight flush\n# the split\ntrain, test = split(df)",
            "# the split\ntrain, test = split(df)",
        ),
        ("  %recall indented question\nx = fit()", "x = fit()"),
        ("%load_ext hindsight_magic\nimport pandas as pd", "import pandas as pd"),
        # not ours: kept as written
        ("%time fit()\n%load_ext autoreload", "%time fit()\n%load_ext autoreload"),
        (
            "%matplotlib inline\nprint('%recall in a string')",
            "%matplotlib inline\nprint('%recall in a string')",
        ),
    ],
)
def test_a_cell_mixing_our_magics_with_code_keeps_only_the_code(source: str, kept: str) -> None:
    """The question a user asked (``%recall``/``%reflect``) is not a memory of what they decided,
    and a ``%retain`` text is its own memory already: only the cell's code is its memory."""
    assert not is_skipped(source)
    assert format_cell(CellText(9, source), "none") == f"[cell 9]\n{kept}"


def test_format_cell_result_that_is_only_memories_is_dropped() -> None:
    cell = CellText(6, "m.as_context()", result="<memories>\n- a\n- b\n</memories>")
    assert format_cell(cell) == "[cell 6]\nm.as_context()"


@pytest.mark.parametrize(
    "source", ["", "   \n", "...", "<memories>only recalled text</memories>", "# ---\n"]
)
def test_format_cell_source_that_becomes_empty_gives_nothing(source: str) -> None:
    assert format_cell(CellText(8, source, result="42", stdout="out"), "all") == ""


# -- cell_pieces, pack_pieces, count_cells -------------------------------------------------


def test_a_cell_that_fits_is_one_piece_with_its_number() -> None:
    cell = CellText(7, "threshold = 3.5  # sigma, agreed with the lab", result="3.5")
    assert cell_pieces(cell) == [
        "[cell 7]\nthreshold = 3.5  # sigma, agreed with the lab\n[result]\n3.5"
    ]


def test_a_long_cell_is_cut_at_lines_and_every_part_keeps_its_cell_number() -> None:
    lines = [
        f"step_{n} = compute_the_monthly_summary(table_{n}, window={n})  # step {n}"
        for n in range(40)
    ]
    cell = CellText(12, "\n".join(lines), error="ValueError: the dates in visits.csv are day-first")
    pieces = cell_pieces(cell, limit=PIECE_CHARS)
    assert len(pieces) > 3
    for n, piece in enumerate(pieces, 1):
        assert piece.startswith(f"[cell 12, part {n} of {len(pieces)}]\n")
        assert len(piece) <= PIECE_CHARS
    bodies = [piece.split("\n", 1)[1] for piece in pieces]
    assert "\n".join(bodies).splitlines() == [*lines, "[error]", cell.error]  # no line lost or cut
    assert count_cells(pieces) == 1


def test_a_line_longer_than_a_piece_is_cut_at_spaces_and_nothing_is_lost() -> None:
    words = [f"word{n}" for n in range(400)]
    pieces = cell_pieces(CellText(3, " ".join(words)), limit=200)
    assert all(len(piece) <= 200 for piece in pieces)
    assert " ".join(piece.split("\n", 1)[1] for piece in pieces).split() == words


def test_pack_pieces_keeps_small_cells_together_and_cut_cells_apart() -> None:
    small = [(n, [f"[cell {n}]\nx_{n} = {n}"]) for n in (1, 2)]
    cut = (3, ["[cell 3, part 1 of 2]\n" + "a" * 50, "[cell 3, part 2 of 2]\n" + "b" * 50])
    packed = pack_pieces([*small, cut, (4, ["[cell 4]\ny = 4"])], limit=120)
    assert packed == [
        ((1, 2), "[cell 1]\nx_1 = 1\n\n[cell 2]\nx_2 = 2"),
        ((3,), cut[1][0]),
        ((3,), cut[1][1]),
        ((4,), "[cell 4]\ny = 4"),
    ]
    assert count_cells(text for _, text in packed) == 4


# -- redaction inside format_cell ----------------------------------------------------------


def test_redact_google_key_ending_with_a_dash() -> None:
    token = "AIza" + "SyDaGmWKa4JsXZ5HjGw7ISLn3namBGewQe-"
    assert len(token) == 39
    assert redact(f"key = '{token}'") == f"key = '{REDACTED}'"
    assert redact(f"{token}") == REDACTED


def test_format_cell_redacts_every_part() -> None:
    secret = "env-secret-value-123"
    cell = CellText(
        2,
        f"key = {secret!r}",
        result=f"'{secret}'",
        error=f"ValueError: bad key {secret}",
        stdout="token sk-abcdefghijklmnopqrstuvwxyz printed",
    )
    entry = format_cell(cell, "all", [secret])
    assert secret not in entry
    assert "sk-abcdef" not in entry
    assert entry == (
        f"[cell 2]\nkey = '{REDACTED}'\n[result]\n'{REDACTED}'\n"
        f"[error]\nValueError: bad key {REDACTED}\n[output]\ntoken {REDACTED} printed"
    )


@pytest.mark.parametrize("offset", [1, 6, 12, 20])
def test_a_secret_cut_by_the_cap_is_not_leaked(offset: int) -> None:
    """Redaction runs before the cap: a cap must never leave the head of a secret behind."""
    secret = "tok3n-value-from-the-env-0123456789"
    shaped = "sk-" + "q" * 30
    for value, secrets in ((secret, [secret]), (shaped, [])):
        source = "x" * (SOURCE_CAP - offset - 1) + " " + value + " tail"
        entry = format_cell(CellText(1, source), "none", secrets)
        body = entry.removeprefix("[cell 1]\n")
        assert body.startswith("x" * (SOURCE_CAP - offset - 1) + " ")
        kept = body[SOURCE_CAP - offset :].split(" …[", 1)[0]
        assert kept
        assert not value.startswith(kept), f"leaked {kept!r}"
        assert REDACTED.startswith(kept) or kept.startswith(REDACTED)


def test_redact_skipping_text_without_a_shape_marker_changes_nothing() -> None:
    # redact runs the credential pattern only on text holding one of SHAPE_MARKERS; a shape
    # whose marker were missing there would slip through. Texts mixing every sample token,
    # their pieces and ordinary words must come out exactly as the pattern alone makes them.
    rng = random.Random(13)
    pieces = [*SHAPES.values(), *(token[: len(token) // 2] for token in SHAPES.values())]
    pieces += ["Bearer ", "Bearer abcdef123456", "-----BEGIN RSA PRIVATE KEY-----\nMIIE", " "]
    pieces += ["the", "churn", "=", "'", "\n", "sk", "-", "_", "AK", "IA", "gh", "p_", "x0"]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))
        assert redact(text) == CREDENTIAL_SHAPES.sub(REDACTED, _detected(text)), text


# -- the extension's own results -------------------------------------------------------------


def test_a_shown_result_is_cut_out_of_what_a_cell_printed() -> None:
    shown = ShownTexts(size=2, head=16)
    table = "Found 1 relevant memory:\n\n- The pump runs at 40 Hz " + "x" * 100
    shown.add(table)
    shown.add("short")  # under ten characters: too short to tell from the user's own text
    printed = f"before\n{table}\nafter short"
    assert shown.strip(printed) == "before\n\nafter short"
    shown.add("second result text")
    shown.add("third result text")  # the oldest is forgotten
    assert table in shown.strip(printed)


def test_a_cell_whose_value_is_a_result_of_ours_keeps_no_value() -> None:
    class Ours:
        _hindsight_result_ = True

        def __repr__(self) -> str:
            return "Found 1 relevant memory"

    class Cell:
        result = Ours()
        error_in_exec = error_before_exec = None

    assert is_own_result(Ours())
    assert not is_own_result("Found 1 relevant memory")
    assert plain_outputs(Cell()) == (None, None, None)
    Cell.result = 42  # type: ignore[assignment]
    assert plain_outputs(Cell()) == ("42", None, None)


MEMORY = "The walrus census moved to drones in March because the boats scared the herd away."
CELL_MEMORY = (  # an auto-retained cell, as recall returns it
    "[cell 4]\ntenure_cutoff_months = 3  # churn: customers under 3 months of tenure are"
    " trials, dropped"
)


def _words(text: str) -> list[str]:
    return text.split()


DERIVED_FORMS: dict[str, Callable[[str], object]] = {  # what a user makes of a recalled text
    "upper": str.upper,  # r[0].text.upper()
    "f-string": lambda text: f"Note to self: {text.lower()}",
    "first characters, twice": lambda text: [text[:60], text[:60]],  # [m.text[:60] for m in r]
    "split": _words,  # r[0].text.split(), which IPython shows one word to a line
    "splitlines": str.splitlines,
    "tuple of words": lambda text: tuple(_words(text)),
    "set of words": lambda text: set(_words(text)),
    "sorted words": lambda text: sorted(_words(text)),
    "sorted lower-cased words": lambda text: sorted({w.lower().strip(".,:") for w in text.split()}),
    "reversed words, joined": lambda text: " ".join(reversed(_words(text))),
    "Counter of words": lambda text: collections.Counter(_words(text)),
    "enumerated words": lambda text: list(enumerate(_words(text))),
    "characters": list,  # list(text): spells it out one character to a line
    "textwrap.wrap": lambda text: textwrap.wrap(text, 30),
    "textwrap.fill": lambda text: textwrap.fill(text, 30),
    "pandas Series": lambda text: pandas.Series([text, text.upper()]),
    "pandas DataFrame": lambda text: pandas.DataFrame({"text": [text], "type": ["world"]}),
    "dict by id": lambda text: {"4b00730f-a031": text, "66f52acf-b3d5": text[:50]},
    "JSON": lambda text: json.dumps([{"id": "4b00730f", "text": text}]),
    "JSON, indented": lambda text: json.dumps({"memories": [{"text": text}]}, indent=2),
}


@pytest.mark.parametrize("memory", [MEMORY, CELL_MEMORY], ids=["sentence", "cell"])
@pytest.mark.parametrize("form", DERIVED_FORMS, ids=list(DERIVED_FORMS))
def test_a_line_derived_from_a_recalled_memory_is_cut_out(form: str, memory: str) -> None:
    """Whatever a cell makes of a recalled text, shown as IPython shows a value (a long list one
    item to a line), none of the text's words are left; the cell's own lines around it are."""
    shown = ShownTexts()
    shown.add(memory)  # as a recalled memory registers its text
    derived = DERIVED_FORMS[form](memory)
    printed = derived if isinstance(derived, str) else pretty(derived)
    before, after = "rows loaded: 120", "mean OD 0.412 at 6 h"
    kept = shown.strip(f"{before}\n{printed}\n{after}").split("\n")
    assert kept[0] == before, kept
    assert kept[-1] == after, kept
    # at most an id, a header, a dtype, or a number beside one (``Counter({'3': 2,``)
    left = words_of("\n".join(kept[1:-1]))
    assert len(left) <= 4, kept
    assert not {word for word in left if not word.isdigit()} & set(words_of(memory)), kept


def test_a_cell_whose_output_was_cut_keeps_it_as_shown_for_its_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A recall that showed a cell's memory makes the cell's own value a shown text: the value
    is cut out of what is sent, and ``as_shown`` keeps the cell as it showed it (what tells an
    unchanged re-run from a new version); a cell nothing was cut from has none."""
    from hindsight_magic._capture import transcript

    value = "'churned customers order less often, complain more and leave within weeks'"
    shown = ShownTexts()
    monkeypatch.setattr(transcript, "SHOWN", shown)
    shown.add(f"[cell 2]\nsummary\n[result]\n{value}")  # the cell's memory, recalled
    cleaned = transcript.clean_cell(CellText(2, "summary", result=value))
    assert cleaned is not None
    assert cleaned.result is None
    assert cleaned.as_shown == CellText(2, "summary", result=value)
    plain = transcript.clean_cell(CellText(3, "total = 2 + 2\ntotal", result="4"))
    assert plain is not None
    assert plain.as_shown is None


def test_the_user_s_own_lines_stay_even_when_they_share_a_few_words() -> None:
    shown = ShownTexts()
    shown.add(MEMORY)
    own = "the census moved to a new schedule; walrus counts are in table 3"
    assert shown.strip(own) == own
    assert ShownTexts().strip(MEMORY) == MEMORY  # nothing shown: nothing is derived


def test_what_is_left_of_a_list_once_its_items_are_cut_goes_with_them() -> None:
    shown = ShownTexts()
    shown.add(MEMORY)
    assert shown.strip(pretty(list(MEMORY))) == ""  # no ``' ',`` and ``'.']`` lines left
    words = pretty(MEMORY.split())
    assert shown.strip(f"rows: 3\n{words}\n\n{words}\n---") == "rows: 3"
    assert shown.strip(f"{words}\n\ndone") == "\ndone"  # a blank line before one's own stays


TRIPS = pandas.DataFrame(
    {"trips": [120, 98, 143, 77], "duration": [12.3, 11.0, 14.2, 9.8]},
    index=pandas.Index(["north", "south", "east", "west"], name="region"),
)


@pytest.mark.parametrize(
    ("recalled", "own"),
    [
        # a re-run's new values under the labels of the table a recalled cell showed
        (f"[cell 12]\nsummary\n[result]\n{TRIPS!r}", repr(TRIPS + 7)),
        (f"[result]\n{TRIPS[['trips']]!r}", repr(TRIPS[["trips"]] + 7)),
        # the user's own list of words, many of them the recalled text's
        (MEMORY, pretty(["walrus", "herd", "boats", "census", "march", "drones", "seals", "ice"])),
        # a new table of the regions a recalled cell named
        (
            "[cell 3]\nregions = ['north', 'south', 'east', 'west']  # the four sales regions",
            pretty({"north": 130, "south": 98, "east": 143, "west": 77, "total sales": 448}),
        ),
    ],
    ids=["re-run table", "re-run column", "own word list", "new table of named rows"],
)
def test_the_user_s_own_output_stays_beside_what_it_shares_with_a_recalled_text(
    recalled: str, own: str
) -> None:
    shown = ShownTexts()
    shown.add(recalled)
    assert shown.strip(own) == own
