"""``hindsight_magic.__all__`` lists what a user calls, types or catches, each for a reason.

The face once grew to fit the plumbing: every type a ``Session`` method took or returned was
exported (``UpdateMode``, ``MemorySource``, ``FlushOutcome`` …), 69 names. Here each exported
name says why a user needs it; a name added without a reason, or a reason left for a name that
went, fails. The lazy table (``_LAZY``) and ``dir()`` agree with ``__all__``.
"""

from __future__ import annotations

import pytest

import hindsight_magic as hm

CALLED = "a function a notebook or script calls as hm.NAME"
RESULT = "what a public function returns: kept, inspected, annotated"
ERROR = "raised to the user, caught with except hm.NAME"

WHY: dict[str, str] = {
    # the functions (README's "Python API" table)
    "retain": CALLED,
    "recall": CALLED,
    "reflect": CALLED,
    "flush": CALLED,
    "status": CALLED,
    "latest": CALLED,
    "context": CALLED,
    "timeline": CALLED,
    "memory_map": CALLED,
    "forget": CALLED,
    "restore": CALLED,
    "correct": CALLED,
    "history": CALLED,
    "forgotten": CALLED,
    "delete": CALLED,
    "purge_matching": CALLED,
    "dedupe": CALLED,
    "verify": CALLED,
    "snapshot": CALLED,
    "clone": CALLED,
    "layers": CALLED,
    "add_layer": CALLED,
    "remove_layer": CALLED,
    "project_session": CALLED + ": a session for a project folder, passed as session=",
    # a session of one's own
    "Session": "built by a script or a test: hm.Session(hm.Settings(...)) in a with block",
    "Settings": "every option as a keyword, to build a Session",
    # what the functions return, and the values those hand out
    "RetainResult": RESULT + " (retain)",
    "RecallResult": RESULT + " (recall, latest)",
    "RecalledMemory": "each memory of a RecallResult, iterated and passed to hm.forget",
    "Provenance": "RecalledMemory.provenance: where a recalled memory came from",
    "Evidence": "Provenance.evidence: the data files a memory rests on",
    "ReflectResult": RESULT + " (reflect)",
    "Sources": "ReflectResult.based_on: what an answer rests on",
    "FlushResult": RESULT + " (flush)",
    "Report": RESULT + " (status)",
    "Outcome": RESULT + " (forget, restore, correct, delete, snapshot, clone …)",
    "Timeline": RESULT + " (timeline)",
    "MemoryMap": RESULT + " (memory_map)",
    "LayerList": RESULT + " (layers, add_layer, remove_layer)",
    # what they raise
    "Error": ERROR + ": every error of the package",
    "InputError": ERROR + ": bad input (also a ValueError)",
    "HindsightError": ERROR + ": the server failed or could not be reached",
    "SettingsError": ERROR + ": a bad setting",
    "CurationError": ERROR + ": forget/correct/delete given what it cannot take",
    "ArchiveError": ERROR + ": a snapshot or clone that cannot be done",
    "LayerError": ERROR + ": a layer that cannot be added or removed",
    "WhenError": ERROR + ": since=/until=/as_of= that is no time",
    "OverviewError": ERROR + ": timeline/memory_map given what it cannot draw",
    "QueueFullError": ERROR + ": retain when the queue takes no more",
    "QueueClosedError": ERROR + ": retain after the session closed",
    "__version__": "what a bug report quotes",
}


def test_every_exported_name_says_why_a_user_needs_it() -> None:
    assert sorted(WHY) == sorted(hm.__all__), (
        f"exported without a reason here: {sorted(set(hm.__all__) - set(WHY))}; "
        f"a reason for a name no longer exported: {sorted(set(WHY) - set(hm.__all__))}"
    )


def test_every_exported_name_resolves_and_dir_lists_exactly_them() -> None:
    for name in hm.__all__:
        assert getattr(hm, name) is not None, name
    assert dir(hm) == sorted(hm.__all__)
    lazy = hm._LAZY  # noqa: SLF001  the lazy table itself is what this checks
    assert set(lazy) <= set(hm.__all__), "the lazy table names an unexported type"


@pytest.mark.parametrize(
    "name", ["UpdateMode", "MemorySource", "AgentOrigin", "FlushOutcome", "QueueStats", "Budget"]
)
def test_a_type_only_a_session_signature_names_is_not_exported(name: str) -> None:
    with pytest.raises(AttributeError):
        getattr(hm, name)


def test_the_wiring_is_not_on_the_public_face() -> None:
    # IPython finds its protocol by name; a user types %load_ext, never calls these
    assert callable(hm.load_ipython_extension)
    assert callable(hm.unload_ipython_extension)
    assert "load_ipython_extension" not in hm.__all__
    # the shell's hook is wired by the extension, not called through a session
    assert not hasattr(hm.Session, "post_run_cell")
    assert not hasattr(hm.Session, "read_outputs_with")


USE = "what a script, a test or an agent does with its own session (the panel's buttons too)"
READ = "read by a script or the panel: what the session holds, without a change"
UI = "the panel and the agents reach a session through its public methods (docs: one door)"

# ``hm.Session``'s public methods and properties, each for a reason. What only the extension's
# own front ends call (the magics' notices, the public functions' delivery wait and the
# data files of the running cell, the shell's hook) is in ``_session.wiring``, not here.
SESSION_WHY: dict[str, str] = {
    # writing and reading, as hm.* does
    "retain": USE + ": a text, its tags, context, time, an id of one's own",
    "recall": USE,
    "reflect": USE,
    "latest": USE,
    "timeline": USE,
    "entity_map": USE,
    "prompt_context": USE + ": the block for an LLM prompt (hm.context)",
    "flush": USE + ": send now and wait (a script before it exits)",
    "send_now": USE + ": send without waiting (the panel's Send button)",
    "retry_failed": USE + ": re-send what the server refused (%hindsight retry)",
    "drop_failed": USE + ": discard what the server refused for good",
    "clear_local": USE + ": forget the last recall and the notices",
    "document": READ + ": a retain id's text as the bank stores it",
    # curation and transfers
    "forget": USE,
    "restore_memory": USE,
    "correct": USE,
    "history": USE,
    "forgotten": USE,
    "verify": USE,
    "delete": USE,
    "dedupe": USE,
    "purge_matching": USE,
    "snapshot": USE,
    "restore_archive": USE,
    "clone": USE,
    # layers
    "layers": USE,
    "add_layer": USE,
    "add_layer_archive": USE,
    "remove_layer": USE,
    # mental models
    "models_enabled": READ,
    "list_models": USE,
    "model": USE,
    "refresh_model": USE,
    "refresh_auto_models": USE,
    "seed_models": USE,
    "model_history": USE,
    "reload_models": USE,
    "delete_model": USE,
    "operation_ended": UI + ": how a refresh_model operation ended",
    # auto-retain and the queue
    "pause_autoretain": USE + " (the panel's Pause button)",
    "retain_cells_now": USE,
    "autoretain_status": READ,
    "queue_stats": READ,
    "memories_indexing": UI + ": whether what was just retained is findable yet",
    "in_background": UI + ": a job on the session's worker (a network read off the kernel)",
    # where it runs, its state, its lifecycle
    "api_url": READ,
    "notebook": READ,
    "set_project": USE + ": another project's bank and tags (%hindsight scope --project)",
    "new_bank": READ + ": whether the scope's bank is new, and close names",
    "not_answering": READ + ": whether the server stopped answering (a retain's line)",
    "status": READ + ": the typed status every form renders",
    "check_server": USE + ": ask the server now",
    "explain": USE + ": an error as the line the user reads",
    "closed": READ,
    "close": USE + ": a script's session, flushed at the end",
}


def test_every_public_method_of_a_session_says_why_a_user_calls_it() -> None:
    public = {name for name in dir(hm.Session) if not name.startswith("_")}
    assert sorted(SESSION_WHY) == sorted(public), (
        f"public on Session without a reason here: {sorted(public - set(SESSION_WHY))}; "
        f"a reason for a method no longer public: {sorted(set(SESSION_WHY) - public)}"
    )


@pytest.mark.parametrize(
    "name", ["deliver", "take_notices", "notice", "cell_evidence", "cell_hook", "queue_memory"]
)
def test_the_extensions_own_calls_are_not_methods_of_a_session(name: str) -> None:
    assert not hasattr(hm.Session, name)


def test_a_sessions_retain_takes_what_a_user_passes() -> None:
    import inspect

    keywords = set(inspect.signature(hm.Session.retain).parameters) - {"self", "content"}
    assert keywords == {"context", "tags", "timestamp", "document_id"}
