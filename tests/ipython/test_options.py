"""Magic-line parsing: leading ``--options``, verbatim free text, one-line ``UsageError``s."""

from __future__ import annotations

import re
from typing import Any

import pytest
from IPython.core.error import UsageError

from hindsight_magic._converters import choice, identifier, positive_int, tag_list
from hindsight_magic._ipython.parsing import (
    FLAG,
    SubcommandParser,
    Verbs,
    Words,
    arg,
    argument_type,
    parse_options,
    positive_float,
    setting_assignment,
)

USAGE = "%recall [--budget low|mid|high] [--max-tokens N] QUERY"
SPEC: dict[str, Any] = {
    "budget": choice("low", "mid", "high"),
    "max_tokens": positive_int,
    "types": tag_list,
    "var": identifier,
    "context": str,
    "split": FLAG,
}


def parse(line: str) -> tuple[dict[str, Any], str]:
    return parse_options(line, SPEC, USAGE)


def usage_error(line: str) -> str:
    """The UsageError message for ``line`` (checked to be one line, never SystemExit)."""
    with pytest.raises(UsageError) as info:
        parse(line)
    message = str(info.value)
    assert "\n" not in message
    return message


# -- options --------------------------------------------------------------------------------------


def test_no_options_and_empty_line() -> None:
    assert parse("") == ({}, "")
    assert parse("   ") == ({}, "")
    assert parse("what did we learn") == ({}, "what did we learn")


def test_space_separated_value() -> None:
    assert parse("--budget high what is X") == ({"budget": "high"}, "what is X")


def test_equals_value() -> None:
    assert parse("--budget=low what is X") == ({"budget": "low"}, "what is X")


def test_dashed_name_maps_to_underscored_key() -> None:
    assert parse("--max-tokens 512 q") == ({"max_tokens": 512}, "q")
    assert parse("--max-tokens=7 q") == ({"max_tokens": 7}, "q")


def test_several_options_then_text() -> None:
    options, text = parse("  --budget mid --max-tokens=20   --var out  the question")
    assert options == {"budget": "mid", "max_tokens": 20, "var": "out"}
    assert text == "the question"


@pytest.mark.parametrize("quote", ['"', "'"])
def test_quoted_value_with_spaces(quote: str) -> None:
    line = f"--context {quote}two  words here{quote} then the text"
    assert parse(line) == ({"context": "two  words here"}, "then the text")
    assert parse(f"--context={quote}a b{quote} x") == ({"context": "a b"}, "x")


def test_quoted_value_may_contain_the_other_quote() -> None:
    assert parse('--context "it\'s fine" q') == ({"context": "it's fine"}, "q")


def test_double_dash_ends_options() -> None:
    assert parse("-- --budget high") == ({}, "--budget high")
    assert parse("--budget low -- --not-an-option  here") == (
        {"budget": "low"},
        "--not-an-option  here",
    )
    assert parse("--budget low --") == ({"budget": "low"}, "")


def test_flag_takes_no_value() -> None:
    assert parse("--split first. second.") == ({"split": True}, "first. second.")
    assert parse("--split") == ({"split": True}, "")
    assert parse("--split --budget high q") == ({"split": True, "budget": "high"}, "q")


def test_converters_are_applied() -> None:
    options, _ = parse("--types world,experience --max-tokens 3 q")
    assert options == {"types": ("world", "experience"), "max_tokens": 3}


# -- free text verbatim ---------------------------------------------------------------------------


def test_free_text_keeps_spacing_and_dashes() -> None:
    assert parse("Revenue  fell -3% in Q3") == ({}, "Revenue  fell -3% in Q3")
    assert parse("-3% is the change") == ({}, "-3% is the change")
    assert parse("-x and -y") == ({}, "-x and -y")


def test_options_after_text_are_text() -> None:
    line = "--budget high revenue fell --not-an-option -3%  'quoted \"stuff'"
    assert parse(line) == ({"budget": "high"}, "revenue fell --not-an-option -3%  'quoted \"stuff'")


def test_text_keeps_newlines_and_trailing_spaces() -> None:
    assert parse("--budget low line one\n  line two  ") == (
        {"budget": "low"},
        "line one\n  line two  ",
    )


# -- errors ---------------------------------------------------------------------------------------


def test_unknown_option_lists_the_valid_ones() -> None:
    message = usage_error("--bogus 1 text")
    assert message.startswith("Unknown option --bogus.")
    for name in ("--budget", "--max-tokens", "--types", "--var", "--context", "--split"):
        assert name in message
    assert USAGE in message


def test_unknown_option_with_empty_spec() -> None:
    with pytest.raises(UsageError, match=r"Unknown option --x\. Options: none\."):
        parse_options("--x q", {}, "u")


def test_option_names_are_case_sensitive() -> None:
    assert usage_error("--Budget high q").startswith("Unknown option --Budget.")


def test_malformed_option_is_unknown() -> None:
    assert usage_error("--budget:high q").startswith("Unknown option --budget:high.")
    assert usage_error("--3% drop").startswith("Unknown option --3%.")


@pytest.mark.parametrize(
    "line", ["--budget", "--budget   ", "--budget=", "--budget '' q", '--var "" q']
)
def test_missing_value(line: str) -> None:
    message = usage_error(line)
    assert "needs a value" in message
    assert USAGE in message


@pytest.mark.parametrize("quote", ['"', "'"])
def test_unclosed_quote(quote: str) -> None:
    message = usage_error(f"--context {quote}never closed text")
    assert message.startswith(f"Unclosed {quote}")


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("--budget max q", "Invalid --budget 'max': use one of low, mid, high."),
        ("--max-tokens 0 q", "Invalid --max-tokens '0': must be at least 1."),
        ("--max-tokens -1 q", "Invalid --max-tokens '-1': must be at least 1."),
        ("--max-tokens abc q", "Invalid --max-tokens 'abc': "),
        ("--types , q", "Invalid --types ',': give at least one tag."),
        ("--types ' , ' q", "Invalid --types ' , ': give at least one tag."),
        ("--var 1x q", "Invalid --var '1x': not a valid Python variable name."),
        ("--var a-b q", "Invalid --var 'a-b': not a valid Python variable name."),
    ],
)
def test_converter_errors(line: str, expected: str) -> None:
    message = usage_error(line)
    assert message.startswith(expected)
    assert message.endswith(f"Usage: {USAGE}")


@pytest.mark.parametrize("line", ["--bogus", "--budget", "--budget max", "--context 'x"])
def test_errors_are_usage_errors_never_system_exit(line: str) -> None:
    with pytest.raises(BaseException) as info:  # noqa: PT011 - the exact type is the assertion
        parse(line)
    assert type(info.value) is UsageError


# -- converters -----------------------------------------------------------------------------------


def test_converter_functions() -> None:
    assert choice("a", "b")("b") == "b"
    assert positive_int("12") == 12
    assert positive_float("0.5") == 0.5
    with pytest.raises(ValueError, match="greater than 0"):
        positive_float("0")
    with pytest.raises(ValueError, match="greater than 0"):
        positive_float("-2")
    assert tag_list(" a, ,b ,") == ("a", "b")
    assert identifier("_out1") == "_out1"


# -- SubcommandParser (for %hindsight subcommands) ------------------------------------------------


def parser() -> SubcommandParser:
    made = SubcommandParser("server start", "u")
    made.add_argument("words", nargs="*")
    made.add_argument("--port", type=argument_type(positive_int))
    made.add_argument("--verbose", action="store_true")
    return made


def test_subcommand_options_anywhere_and_quotes() -> None:
    parsed = parser().parse_line("start --port 8899 now --verbose")
    assert (parsed.port, parsed.verbose, parsed.words) == (8899, True, ["start", "now"])
    parsed = parser().parse_line("logs --port=9 'two words'")
    assert (parsed.port, parsed.words) == (9, ["logs", "two words"])


def test_subcommand_errors_are_one_usage_error_line() -> None:
    with pytest.raises(UsageError, match=r"^Unknown option --nope\. Options: --port, --verbose\."):
        parser().parse_line("x --nope")
    with pytest.raises(UsageError, match=r"^--port needs a value\. Usage: u$"):
        parser().parse_line("x --port")
    with pytest.raises(UsageError, match=r"^Invalid --port '0': must be at least 1\. Usage: u$"):
        parser().parse_line("x --port 0")
    with pytest.raises(UsageError) as info:
        parser().parse_line("x 'unclosed")
    assert "\n" not in str(info.value)
    assert str(info.value).endswith("Usage: u")


# -- Words and Verbs: the subcommands' declarations -----------------------------------------------

VERBS = Verbs(
    {
        "show": Words(arg("id", metavar="ID")),
        "refresh": Words(arg("id", nargs="?", metavar="ID")),
        "list": Words(),
        "wait": Words(arg("--seconds", type=positive_float)),
    },
    default="list",
    usage="%hindsight things [list | show ID | refresh [ID] | wait [--seconds S]]",
)


def verbs_error(text: str) -> str:
    with pytest.raises(UsageError) as info:
        VERBS.parse("things", text)
    return str(info.value)


def test_verbs_pick_their_words_and_default() -> None:
    assert VERBS.parse("things", "").verb == "list"
    parsed = VERBS.parse("things", "show 'my model'")
    assert (parsed.verb, parsed.id) == ("show", "my model")
    assert VERBS.parse("things", "refresh").id is None
    assert VERBS.parse("things", "show -x").id == "-x"  # no options declared: a word
    assert VERBS.parse("things", "wait --seconds 2").seconds == 2.0


def test_verb_mistakes_are_one_line_ending_in_the_usage() -> None:
    assert verbs_error("fly") == (
        "Unknown things action 'fly'; actions: show, refresh, list, wait. "
        "Usage: %hindsight things [list | show ID | refresh [ID] | wait [--seconds S]]"
    )
    assert verbs_error("show") == "Missing ID. Usage: %hindsight things show ID"
    assert verbs_error("refresh a b") == "Unexpected 'b'. Usage: %hindsight things refresh [ID]"
    assert verbs_error("list --help") == "Unexpected '--help'. Usage: %hindsight things list"
    assert verbs_error("wait --seconds 0") == (
        "Invalid --seconds '0': must be greater than 0. "
        "Usage: %hindsight things wait [--seconds SECONDS]"
    )
    assert verbs_error("show 'x").startswith("No closing quotation. Usage: %hindsight things [")


def test_verbatim_words_keep_the_rest_of_the_line() -> None:
    words = Words(arg("setting", nargs="?", type=setting_assignment), verbatim=True)
    assert words.parse("config", "   ").setting is None
    assert words.parse("config", "name").setting == ("name", None)
    assert words.parse("config", "name=").setting == ("name", "")
    assert words.parse("config", "a=it's  -3% \\x").setting == ("a", "it's  -3% \\x")
    assert words.parse("config", "a='quoted value'").setting == ("a", "quoted value")


def test_each_subcommand_usage_and_summary_syntax_is_made_from_its_arguments() -> None:
    """Every word a subcommand takes shows in its usage, which no row writes by hand (the
    server's comes from the local server's actions), and no summary restates the syntax:
    ``%hindsight help`` adds it, made from the same words."""
    from hindsight_magic._ipython.subcommands import SUBCOMMANDS

    for name, row in SUBCOMMANDS.items():
        words = row.words() if callable(row.words) else row.words
        declared = [*words.verbs.values()] if isinstance(words, Verbs) else [words]
        if name != "server":
            assert words is None or words.usage is None, name
            assert all(w is None or w.usage is None for w in declared), name
        for each in declared:
            if each is None:
                continue
            for names, keywords in each.arguments:
                flag = max(names, key=len)
                shown = keywords.get("metavar") or (flag if flag.startswith("-") else flag.upper())
                assert shown in row.syntax(name), (name, shown)
        assert not re.search(r"[\[|]|--", row.summary), (name, row.summary)
        syntax = row.syntax(name).removeprefix(name).strip()
        assert not syntax or syntax not in row.summary, name
        assert row.line(name) == (f"{row.summary}: {row.syntax(name)}" if syntax else row.summary)


@pytest.mark.parametrize("magic", ["retain", "recall", "reflect"])
def test_a_magic_states_its_options_once(magic: str) -> None:
    """The parser, the usage line and the docstring's Options paragraph come from one
    declaration: each option is parsed, shown in the usage and described in ``%magic?``."""
    from hindsight_magic._ipython import magics

    declared = getattr(magics, f"{magic.upper()}_OPTIONS")
    doc = getattr(magics.HindsightMagics, magic).__doc__ or ""
    assert "{options}" not in doc
    assert doc.startswith(declared.operation.summary)  # what it does, declared once too
    assert declared.options
    for option in declared.options:
        assert option.word in declared.spec
        assert f"[{option.flag}]" in declared.usage
        assert f"``{option.flag}``" in doc.replace("\n        ", " "), option.flag


def test_an_option_spelled_apart_from_its_keyword_is_parsed_under_the_keyword() -> None:
    """``%retain --at WHEN`` is ``hm.retain(timestamp=WHEN)``; a text that starts with ``--at``
    is retained after ``--``, as any text that looks like an option."""
    from hindsight_magic._ipython.magics import RETAIN_OPTIONS

    assert RETAIN_OPTIONS.parse('--at "3 Nov 2025" --tags a The pump leaked.') == (
        {"timestamp": "3 Nov 2025", "tags": ("a",)},
        "The pump leaked.",
    )
    assert RETAIN_OPTIONS.parse("-- --at is an option of %retain") == (
        {},
        "--at is an option of %retain",
    )
    with pytest.raises(UsageError, match="Unknown option --timestamp"):
        RETAIN_OPTIONS.parse("--timestamp 2025-11-03 The pump leaked.")
    # a subcommand taking the same declared option reads it under the same name
    from hindsight_magic._ipython.parsing import Words, option
    from hindsight_magic._operations import TIMESTAMP

    assert Words(option(TIMESTAMP)).parse("x", "--at 3d").timestamp == "3d"


def test_each_verb_table_is_its_vocabulary_and_parses_to_a_member() -> None:
    """The verbs a handler compares with are the verbs its row declares: one list of words."""
    from hindsight_magic._ipython.parsing import Verbs
    from hindsight_magic._ipython.subcommands import (
        SUBCOMMANDS,
        AutoretainVerb,
        LayerVerb,
        ModelVerb,
        server_words,
    )
    from hindsight_magic._localserver.actions import ServerAction

    for name, words in (
        ("autoretain", AutoretainVerb),
        ("models", ModelVerb),
        ("layer", LayerVerb),
    ):
        declared = SUBCOMMANDS[name].words
        assert isinstance(declared, Verbs)
        assert list(declared.verbs) == list(words)
        assert SUBCOMMANDS[name].parse(name, "").verb == declared.default
    assert list(server_words().verbs) == list(ServerAction)
    assert SUBCOMMANDS["autoretain"].parse("autoretain", "every 4").verb == AutoretainVerb.EVERY


def test_tags_reach_a_recall_from_the_magic_python_and_the_panel_s_search_alike() -> None:
    from hindsight_magic._ipython.magics import RECALL_OPTIONS
    from hindsight_magic._operations import PANEL_SEARCH, RECALL, RecallRequest

    options, query = RECALL_OPTIONS.parse("--tags cold,lab freezer cores")
    assert (options, query) == ({"tags": ("cold", "lab")}, "freezer cores")
    assert RECALL.keywords(options) == {"tags": ("cold", "lab")}  # hm.recall's keyword
    from_python = RecallRequest("freezer cores", tags="cold, lab")
    from_panel = RecallRequest.parsed("tags:cold,lab  freezer cores", PANEL_SEARCH)
    assert from_python == from_panel == RecallRequest("freezer cores", tags=("cold", "lab"))
    assert RecallRequest.parsed("ratio:3 is fine", PANEL_SEARCH).query == "ratio:3 is fine"
    with pytest.raises(UsageError, match="give at least one tag"):
        RECALL_OPTIONS.parse("--tags , freezer")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"since": "not a date"}, "Cannot read 'not a date' as a time for --since: use an ISO"),
        ({"until": 3}, "--until is text or a datetime, not int: an ISO date like 2026-11-03"),
        ({"as_of": "2999-01-01"}, "--as-of (1 Jan 2999) is in the future: memory can be read"),
        ({"since": "today", "until": "2020-01-01"}, "is not before --until (1 Jan 2020): swap"),
    ],
)
def test_a_recall_s_bad_when_is_refused_when_the_request_is_made(
    fields: dict[str, Any], message: str
) -> None:
    """Python's keywords, an agent's arguments and the panel's boxes make the one request:
    a WHEN that cannot be read, or bounds that do not fit, are said then, before a session is
    made, an agent's call waits or the panel's search waits for indexing."""
    from hindsight_magic import WhenError
    from hindsight_magic._operations import AGENT_RECALL, PANEL_SEARCH, RecallRequest

    with pytest.raises(WhenError, match=re.escape(message)):
        RecallRequest("freezer cores", **fields)
    with pytest.raises(WhenError, match=re.escape(message)):
        AGENT_RECALL.requested({"query": "freezer cores", **fields})
    if all(isinstance(value, str) for value in fields.values()):
        with pytest.raises(WhenError, match=re.escape(message)):
            RecallRequest.parsed("freezer cores", PANEL_SEARCH, **fields)
    assert RecallRequest("freezer cores", since="3d", until="today").since == "3d"  # as given
