"""The public Python API (``hindsight_magic.retain/recall/reflect/flush/status``).

Against the real server: in a real Jupyter kernel (the kernel's session, loaded on first use,
shared with the magics) and in a plain Python process (one session per process, no hook).
Without a server: bad input is one clear ``ValueError`` line and nothing is queued.
"""

from __future__ import annotations

import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import RunningServer, run_script
from kernels import Kernel

import hindsight_magic as hm
from hindsight_magic._errors import InputError


@pytest.fixture
def kernel(tmp_path: Path, hindsight_server: RunningServer) -> Iterator[Kernel]:
    env = {
        "HINDSIGHT_API_URL": hindsight_server.url,
        "HINDSIGHT_BANK_ID": f"api-{uuid.uuid4().hex[:10]}",
        "HINDSIGHT_JOURNAL_PATH": str(tmp_path / "journal.db"),
    }
    started = Kernel(env, tmp_path)
    yield started
    started.close()


@pytest.mark.integration
def test_the_api_retains_and_recalls_in_a_real_kernel(kernel: Kernel) -> None:
    fact = f"The churn table double-counts refunds in quarter {uuid.uuid4().hex[:6]}."
    out = kernel.run(
        "import hindsight_magic as hm\n"
        f"print(hm.retain({fact!r}, tags='data-quality, churn'))\n"
        "print('loaded:', 'HindsightMagics' in get_ipython().magics_manager.registry)"
    )
    assert "1 memory queued." in out
    assert "loaded: True" in out
    held = kernel.run(
        "from hindsight_magic.testing import Driver\n"
        "session = get_ipython().magics_manager.registry['HindsightMagics'].session\n"
        "queued = Driver(session).queued()\n"
        "print(sorted({t for route, _ in queued for t in (route.tags or ())}))"
    )
    assert "'churn', 'data-quality'" in held  # a comma-separated string is two tags
    out = kernel.run(
        "found = hm.recall('churn table refunds')\n"
        f"print('FOUND' if any({fact!r} in t for t in found.texts) else found.texts)\n"
        "print(type(found).__name__, len(found.as_context()) > 0)"
    )
    assert "FOUND" in out, out
    assert "RecallResult True" in out
    # the magics use the same session: what the API queued is what %recall sees
    assert fact in kernel.run("%recall churn table refunds")
    status = kernel.run("print(hm.status(check_server=False))")
    assert "accepted" in status
    assert "api-" in status  # the bank this kernel's session uses


@pytest.mark.integration
def test_the_api_works_in_a_plain_python_process(
    tmp_path: Path, hindsight_server: RunningServer
) -> None:
    bank = f"script-{uuid.uuid4().hex[:10]}"
    fact = f"Script fact {uuid.uuid4().hex[:8]}: the dashboard refresh runs at 06:00 UTC."
    script = textwrap.dedent(
        f"""
        import sys
        import hindsight_magic as hm

        print(hm.retain({fact!r}, context="nightly job"))
        print(hm.flush(timeout=30))
        found = hm.recall("dashboard refresh time")
        print("FOUND" if any({fact!r} in t for t in found.texts) else found.texts)
        print("IPython imported:", "IPython" in sys.modules)
        """
    )
    env = {
        "HINDSIGHT_API_URL": hindsight_server.url,
        "HINDSIGHT_BANK_ID": bank,
        "HINDSIGHT_JOURNAL_PATH": str(tmp_path / "journal.db"),
        "PATH": "/usr/bin:/bin",
        "HINDSIGHT_MAGIC_DATA_DIR": str(tmp_path / "data"),
    }
    done = run_script(script, env, tmp_path)
    assert "1 memory queued." in done.stdout
    assert "accepted by the server" in done.stdout
    assert "FOUND" in done.stdout, done.stdout
    assert "IPython imported: False" in done.stdout  # no kernel, no IPython needed


@pytest.mark.integration
def test_a_project_session_works_like_a_kernel_started_in_that_folder(
    tmp_path: Path, hindsight_server: RunningServer
) -> None:
    project = tmp_path / f"survey{uuid.uuid4().hex[:6]}"
    project.mkdir()
    profile = tmp_path / "ipython" / "profile_default"
    profile.mkdir(parents=True)
    bank = f"cfg-{uuid.uuid4().hex[:10]}"
    (profile / "ipython_kernel_config.py").write_text(f"c.HindsightMagics.bank_id = {bank!r}\n")
    fact = f"Agent fact {uuid.uuid4().hex[:8]}: the survey table is weekly."
    script = textwrap.dedent(
        f"""
        import hindsight_magic as hm

        session = hm.project_session({str(project)!r})
        print("SCOPE", session.scope.bank_id, session.scope.retain_tags)
        print(hm.retain({fact!r}, agent="claude-code", agent_version="2.0", wait=True,
                        session=session))
        newest = hm.latest(5, session=session)
        print("NEWEST" if any({fact!r} == m.text for m in newest) else newest.texts)
        print("LINE", [m.provenance_line() for m in newest if m.text == {fact!r}])
        print("CONTEXT", "<memories>" in hm.context(session=session))
        session.close()
        """
    )
    env = {
        "HINDSIGHT_API_URL": hindsight_server.url,
        "HINDSIGHT_JOURNAL_PATH": str(tmp_path / "journal.db"),
        "HINDSIGHT_MAGIC_DATA_DIR": str(tmp_path / "data"),
        "IPYTHONDIR": str(tmp_path / "ipython"),
        "PATH": "/usr/bin:/bin",
    }
    done = run_script(script, env, tmp_path)
    assert f"SCOPE {bank} ('project:{project.name}',)" in done.stdout
    assert "NEWEST" in done.stdout, done.stdout
    assert "agent (claude-code)" in done.stdout
    assert "CONTEXT True" in done.stdout


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: hm.retain("   "), "Nothing to retain"),
        (lambda: hm.retain("x" * 1_000_001), "Too large to retain: 1,000,001 characters"),
        (lambda: hm.recall(""), "Nothing to search for"),
        (lambda: hm.recall("churn", budget="huge"), "Invalid budget 'huge'"),
        (lambda: hm.reflect("\n"), "Nothing to reflect on"),
        (lambda: hm.flush(timeout=0), "greater than 0"),
        (lambda: hm.recall("churn", max_tokens=0), "Invalid max_tokens 0"),
        (lambda: hm.retain("x", tags=["ok", "bell\x07"]), "Invalid tag 'bell\\x07'"),
        (lambda: hm.retain("x", tags="a\nb"), "no control characters"),
        (lambda: hm.retain("x", tags=["t" * 257]), "at most 256 characters"),
        (lambda: hm.retain("x", tags=[3]), "Invalid tag 3: a tag is text"),  # type: ignore[list-item]
        (lambda: hm.recall("x", types=["world\x00"]), "Invalid type"),
        (lambda: hm.recall("flux", since="soonish"), "Cannot read 'soonish' as a time for --since"),
        (lambda: hm.recall("flux", since="today", until="2020-01-01"), "is not before --until"),
        (lambda: hm.recall("flux", until=3), "--until is text or a datetime, not int"),  # type: ignore[arg-type]
        (lambda: hm.retain("x", agent=" "), "Invalid agent"),
        (lambda: hm.latest(0), "Invalid limit 0"),
        (lambda: hm.latest(101), "Invalid limit 101: use a whole number from 1 to 100."),
        (lambda: hm.latest(None), "Invalid limit None"),  # type: ignore[arg-type]
        (lambda: hm.memory_map(top=0), "Invalid top 0: use a whole number from 1 to 200."),
        (lambda: hm.project_session("/no/such/folder"), "No such project folder"),
    ],
)
def test_bad_input_is_one_value_error_line_before_any_session(call: Any, message: str) -> None:
    with pytest.raises(InputError) as info:
        call()
    assert isinstance(info.value, ValueError)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_a_session_unregistered_behind_ipythons_back_is_an_error_of_the_family(
    notebook: Any, dead_url: str
) -> None:
    from hindsight_magic._functions import SESSIONS

    notebook.load(api_url=dead_url, auto_retain="false", mental_models="false")
    attached = SESSIONS.unregister(notebook.ip)  # IPython still counts the extension loaded
    try:
        with pytest.raises(hm.Error, match=r"not loaded here: run %reload_ext hindsight_magic"):
            hm.status(check_server=False)
    finally:
        assert attached is not None
        SESSIONS.register(notebook.ip, attached)


def test_every_exported_error_is_named_where_the_user_imports_it() -> None:
    import pickle
    import traceback

    errors = [getattr(hm, name) for name in hm.__all__]
    errors = [value for value in errors if isinstance(value, type) and issubclass(value, Exception)]
    assert {"Error", "InputError", "HindsightError", "QueueFullError"} <= {
        e.__name__ for e in errors
    }
    for error in errors:
        # tracebacks, reprs and logs show the public path, not the module it lives in
        assert error.__module__ == "hindsight_magic", error
        assert repr(error) == f"<class 'hindsight_magic.{error.__name__}'>"
    shown = traceback.format_exception_only(hm.QueueFullError("the queue is full"))
    assert shown == ["hindsight_magic.QueueFullError: the queue is full\n"]
    assert type(pickle.loads(pickle.dumps(hm.WhenError("bad")))) is hm.WhenError


def test_recall_takes_the_options_its_declaration_names_in_its_order() -> None:
    import inspect

    from hindsight_magic._operations import RECALL

    # one declaration: an option %recall and the README name is hm.recall's keyword too
    declared = [param.name for param in RECALL.params if param.kind != "variable"]
    parameters = inspect.signature(hm.recall).parameters.values()
    keywords = [p.name for p in parameters if p.kind is p.KEYWORD_ONLY and p.name != "session"]
    assert keywords == declared
    undescribed = [name for name in declared if f"``{name}``" not in (hm.recall.__doc__ or "")]
    assert not undescribed, f"hm.recall's docstring should say what {undescribed} do"


@pytest.mark.parametrize(
    ("function", "request_type"), [("recall", "RecallRequest"), ("reflect", "ReflectRequest")]
)
def test_a_function_s_keywords_are_its_request_s_fields_with_their_defaults(
    function: str, request_type: str
) -> None:
    import dataclasses
    import inspect

    from hindsight_magic import _operations

    # hm.recall makes its request from its own arguments (from_arguments(locals())): a
    # keyword that is no field, or a field that is no keyword, would be dropped unsaid
    fields = {
        field.name: field.default
        for field in dataclasses.fields(getattr(_operations, request_type))
    }
    parameters = inspect.signature(getattr(hm, function)).parameters.values()
    keywords = {p.name: p.default for p in parameters if p.name != "session"}
    assert list(keywords) == list(fields)
    assert keywords == {
        name: inspect.Parameter.empty if default is dataclasses.MISSING else default
        for name, default in fields.items()
    }


def test_recall_s_docstring_says_each_option_in_its_declared_words() -> None:
    from hindsight_magic._operations import RecallRequest

    doc = " ".join((hm.recall.__doc__ or "").split())
    for name, param in list(RecallRequest.params.items())[1:]:
        assert f"``{name}`` ({param.value_name}): {param.description}" in doc, name
    assert "{keywords}" not in doc


@pytest.mark.parametrize(
    ("operation", "function"),
    [("RETAIN", "queue_text"), ("REFLECT", "reflect"), ("RECALL", "recall")],
)
def test_each_declared_magic_option_is_a_keyword_of_the_function_it_reaches(
    operation: str, function: str
) -> None:
    import inspect

    from hindsight_magic import _functions, _operations

    # %retain/%%reflect/%recall pass Operation.keywords(options) on: a declared option that
    # names no keyword of the function would fail only when a user typed it
    declared = getattr(_operations, operation)
    every_option = {param.name: True for param in declared.params}
    parameters = inspect.signature(getattr(_functions, function)).parameters.values()
    keywords = {p.name for p in parameters if p.kind is p.KEYWORD_ONLY}
    missing = set(declared.keywords(every_option)) - keywords
    assert not missing, f"{function} takes no keyword {sorted(missing)} that {operation} declares"


@pytest.mark.integration
def test_a_session_built_from_public_names_alone_remembers(
    tmp_path: Path, hindsight_server: RunningServer
) -> None:
    """What the README shows: ``hm.Session(hm.Settings(…))`` in a ``with`` block, no private
    name, finds what it retained."""
    bank = f"public-{uuid.uuid4().hex[:8]}"
    settings = hm.Settings(
        api_url=hindsight_server.url,
        bank_id=bank,
        scoping="global",
        auto_retain=False,
        mental_models=False,
        journal_path=str(tmp_path / "journal.sqlite3"),
    )
    with hm.Session(settings) as session:
        hm.retain("The cohort table starts in March, after the pilot.", session=session)
        found = hm.recall("When does the cohort table start?", budget="low", session=session)
        flushed = hm.flush(10, session=session)
    assert session.closed
    assert isinstance(found, hm.RecallResult)
    assert any("March" in text for text in found.texts), found.texts
    assert isinstance(flushed, hm.FlushResult)
    assert flushed.pending == 0
