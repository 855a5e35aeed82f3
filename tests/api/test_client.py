"""``HindsightClient`` against ``httpx.MockTransport``: headers, paths, bodies, timeouts, errors."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from helpers import RequestRecorder

from hindsight_magic._api.banks import ensure_bank
from hindsight_magic._api.client import BankExtraction, HindsightClient, Timeouts
from hindsight_magic._errors import HindsightError
from hindsight_magic._machine import EMBEDDED_CHARS
from hindsight_magic._version import __version__

BASE = "http://hindsight.test:8888"
SECRET = "sk-very-secret-key-123"
HTML_404 = "<html><body><h1>404 Not Found</h1><p>Page not found</p></body></html>"

Handler = Callable[[httpx.Request], httpx.Response]


def make(
    reply: Handler | httpx.Response | None = None,
    *,
    key: str | None = None,
    base: str = BASE,
    timeouts: Timeouts | None = None,
) -> tuple[HindsightClient, RequestRecorder]:
    recorder = RequestRecorder(reply)
    client = HindsightClient(
        base, key, timeouts or Timeouts(), transport=httpx.MockTransport(recorder)
    )
    return client, recorder


def raw_path(request: httpx.Request) -> str:
    return request.url.raw_path.decode("ascii")


def call_every_endpoint(client: HindsightClient) -> None:
    client.health()
    client.identity()
    client.create_bank("b")
    client.list_banks()
    client.retain_batch("b", [{"content": "x", "timestamp": "2024-01-01T00:00:00Z"}])
    client.recall("b", "q")
    client.reflect("b", "q")
    client.operation("b", "op-1")


def universal_reply(request: httpx.Request) -> httpx.Response:
    return httpx.Response(
        200, json={"api_version": "1.1.0", "success": True, "banks": [], "results": [], "id": "x"}
    )


# -- headers, repr, URL ---------------------------------------------------------------------------


def test_every_request_carries_user_agent_and_json_content_type() -> None:
    client, rec = make(universal_reply)
    call_every_endpoint(client)
    assert len(rec.requests) == 8
    methods = {r.method for r in rec.requests}
    assert {"GET", "PUT", "POST"} <= methods
    for request in rec.requests:
        assert request.headers["User-Agent"] == f"hindsight-magic/{__version__}"
        assert request.headers["Content-Type"] == "application/json"
        assert "Authorization" not in request.headers


def test_bearer_header_only_with_a_key() -> None:
    client, rec = make(universal_reply, key=SECRET)
    call_every_endpoint(client)
    assert client.has_key
    for request in rec.requests:
        assert request.headers["Authorization"] == f"Bearer {SECRET}"

    empty, rec2 = make(universal_reply, key="")
    empty.health()
    assert not empty.has_key
    assert "Authorization" not in rec2.last.headers


def test_repr_never_contains_the_key() -> None:
    client, _ = make(key=SECRET)
    text = repr(client)
    assert SECRET not in text
    assert "sk-" not in text
    assert BASE in text
    assert "with key" in text
    assert "no key" in repr(make()[0])


def test_trailing_slashes_are_stripped_from_the_base_url() -> None:
    client, rec = make(universal_reply, base=BASE + "///")
    assert client.base_url == BASE
    client.health()
    assert str(rec.last.url) == f"{BASE}/health"


def test_base_url_with_a_path_prefix_is_kept() -> None:
    client, rec = make(universal_reply, base=BASE + "/hindsight/")
    client.list_banks()
    assert str(rec.last.url) == f"{BASE}/hindsight/v1/default/banks"


def test_bank_ids_are_percent_encoded_in_paths() -> None:
    client, rec = make(universal_reply)
    client.create_bank("a b/c")
    assert raw_path(rec.last) == "/v1/default/banks/a%20b%2Fc"
    client.recall("a b/c", "q")
    assert raw_path(rec.last) == "/v1/default/banks/a%20b%2Fc/memories/recall"
    client.reflect("a b/c", "q")
    assert raw_path(rec.last) == "/v1/default/banks/a%20b%2Fc/reflect"
    client.retain_batch("a b/c", [])
    assert raw_path(rec.last) == "/v1/default/banks/a%20b%2Fc/memories"
    client.operation("a b/c", "op/1?x")
    assert raw_path(rec.last) == "/v1/default/banks/a%20b%2Fc/operations/op%2F1%3Fx"
    client.cancel_operation("a b/c", "op/../1?x")
    assert rec.last.method == "DELETE"
    assert raw_path(rec.last) == "/v1/default/banks/a%20b%2Fc/operations/op%2F..%2F1%3Fx"


@pytest.mark.parametrize("dots", [".", ".."])
def test_a_segment_of_dots_cannot_climb_the_path(dots: str) -> None:
    client, rec = make(universal_reply)
    client.document("bank", dots)
    client.get_mental_model(dots, dots)
    spelled = "%2E" * len(dots)
    assert raw_path(rec.requests[-2]) == f"/v1/default/banks/bank/documents/{spelled}"
    assert (
        raw_path(rec.last).split("?")[0] == f"/v1/default/banks/{spelled}/mental-models/{spelled}"
    )


def test_endpoints_use_the_documented_methods_and_paths() -> None:
    client, rec = make(universal_reply)
    call_every_endpoint(client)
    seen = [(r.method, raw_path(r)) for r in rec.requests]
    assert seen == [
        ("GET", "/health"),
        ("GET", "/version"),
        ("PUT", "/v1/default/banks/b"),
        ("GET", "/v1/default/banks"),
        ("POST", "/v1/default/banks/b/memories"),
        ("POST", "/v1/default/banks/b/memories/recall"),
        ("POST", "/v1/default/banks/b/reflect"),
        ("GET", "/v1/default/banks/b/operations/op-1"),
    ]


# -- error message shapes -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"detail": "bad budget", "message": "ignored"}, "reflect failed: bad budget"),
        ({"detail": None, "message": "from message"}, "reflect failed: from message"),
        ({"message": "from message"}, "reflect failed: from message"),
        ({"error": "x"}, 'reflect failed: {"error": "x"}'),
        ("plain json string", "reflect failed: plain json string"),
    ],
)
def test_http_error_detail_precedence(body: Any, expected: str) -> None:
    client, _ = make(httpx.Response(400, json=body))
    with pytest.raises(HindsightError) as info:
        client.reflect("b", "q")
    assert str(info.value) == expected
    assert info.value.kind == "http"
    assert info.value.status_code == 400
    assert info.value.operation == "reflect"


def test_http_error_details_attribute_is_the_chosen_detail() -> None:
    client, _ = make(httpx.Response(422, json={"detail": [{"loc": ["body"], "msg": "required"}]}))
    with pytest.raises(HindsightError) as info:
        client.reflect("b", "q")
    error = info.value
    assert error.details == [{"loc": ["body"], "msg": "required"}]
    assert str(error) == "reflect failed: required"  # FastAPI's list, readable (loc: msg)


def test_validation_errors_read_as_field_and_message() -> None:
    detail = [
        {"loc": ["body", "items", 0, "timestamp"], "msg": "Value error, Invalid timestamp 'x'."},
        {"loc": ["body", "items", 1, "content"], "msg": "Field required"},
    ]
    client, _ = make(httpx.Response(422, json={"detail": detail}))
    with pytest.raises(HindsightError) as info:
        client.retain_batch("b", [{"content": "a"}])
    assert str(info.value) == (
        "retainBatch failed: items.0.timestamp: Invalid timestamp 'x'.; "
        "items.1.content: Field required"
    )
    assert info.value.details == detail
    assert not info.value.transient


def test_raw_text_is_the_detail_when_the_body_is_not_json() -> None:
    client, _ = make(httpx.Response(502, text="Bad Gateway from proxy"))
    with pytest.raises(HindsightError) as info:
        client.recall("b", "q")
    assert str(info.value) == "recall failed: Bad Gateway from proxy"
    assert info.value.details == "Bad Gateway from proxy"
    assert info.value.status_code == 502


def test_empty_error_body_falls_back_to_the_reason_phrase() -> None:
    client, _ = make(httpx.Response(503, content=b""))
    with pytest.raises(HindsightError) as info:
        client.reflect("b", "q")
    assert str(info.value) == "reflect failed: Service Unavailable"


def test_timeout_message_uses_rounded_seconds_of_the_operation() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("read timed out", request=request)

    client, _ = make(handler, timeouts=Timeouts(request=1.0, retain=2.0, recall=7.6, reflect=90.0))
    with pytest.raises(HindsightError) as info:
        client.recall("b", "q")
    error = info.value
    assert str(error) == "recall request timed out after 8s"  # round(), not int()
    assert error.kind == "timeout"
    assert error.status_code is None
    assert isinstance(error.details, httpx.ReadTimeout)
    assert error.transient

    with pytest.raises(HindsightError, match=r"^reflect request timed out after 90s$"):
        client.reflect("b", "q")
    with pytest.raises(HindsightError, match=r"^retainBatch request timed out after 2s$"):
        client.retain_batch("b", [])


def test_connect_error_message() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("boom", request=request)

    client, _ = make(handler)
    with pytest.raises(HindsightError) as info:
        client.create_bank("b")
    error = info.value
    assert str(error) == "createBank request failed: boom"
    assert error.kind == "connect"
    assert error.status_code is None
    assert isinstance(error.details, httpx.ConnectError)
    assert error.transient


def test_the_client_notes_when_nobody_answers_and_when_a_reply_comes_again() -> None:
    faults: list[type[httpx.TransportError]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if faults:
            raise faults.pop(0)("fault", request=request)
        return httpx.Response(500, json={"detail": "failing, but answering"})

    client, _ = make(handler)
    assert client.unreachable_since is None  # nothing asked yet
    faults += [httpx.ReadTimeout, httpx.RemoteProtocolError]  # slow or cut off: not "nobody"
    for _ in range(2):
        with pytest.raises(HindsightError):
            client.list_banks()
    assert client.unreachable_since is None
    faults += [httpx.ConnectError, httpx.ConnectTimeout]
    with pytest.raises(HindsightError):
        client.list_banks()
    since = client.unreachable_since
    assert since is not None
    assert since <= time.time()
    with pytest.raises(HindsightError):
        client.list_banks()
    assert client.unreachable_since == since  # since the first, for as long as it lasts
    with pytest.raises(HindsightError, match="failing, but answering"):
        client.list_banks()
    assert client.unreachable_since is None


def test_connect_error_without_text_names_the_error_type() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("", request=request)

    client, _ = make(handler)
    with pytest.raises(HindsightError, match=r"^listBanks request failed: ConnectError$"):
        client.list_banks()


@pytest.mark.parametrize(
    ("status", "transient"),
    [
        (400, False),
        (401, False),
        (404, False),
        (422, False),
        (408, True),
        (429, True),
        (500, True),
        (502, True),
        (503, True),
    ],
)
def test_transient_statuses(status: int, transient: bool) -> None:
    client, _ = make(httpx.Response(status, json={"detail": "nope"}))
    with pytest.raises(HindsightError) as info:
        client.reflect("b", "q")
    assert info.value.status_code == status
    assert info.value.details == "nope"
    assert info.value.transient is transient


def test_html_error_body_is_not_hindsight() -> None:
    client, _ = make(httpx.Response(401, html="<html><body>Login required</body></html>"))
    with pytest.raises(HindsightError) as info:
        client.reflect("b", "q")
    assert info.value.kind == "not_hindsight"
    assert info.value.status_code == 401
    assert str(info.value).startswith("reflect failed: ")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("op", ["recall", "reflect", "retain"])
@pytest.mark.parametrize(
    "reply",
    [
        httpx.Response(200, html="<html><body>Jupyter</body></html>"),
        httpx.Response(200, text="OK"),
        httpx.Response(200, content=b""),
        httpx.Response(200, json="just a string"),
        httpx.Response(200, json=42),
    ],
)
def test_2xx_non_json_reply_is_never_accepted(op: str, reply: httpx.Response) -> None:
    client, _ = make(reply)
    calls = {
        "recall": lambda: client.recall("b", "q"),
        "reflect": lambda: client.reflect("b", "q"),
        "retain": lambda: client.retain_batch("b", [{"content": "x"}]),
    }
    with pytest.raises(HindsightError) as info:
        calls[op]()
    # a retain may have been accepted behind an unreadable 2xx: re-sent under its operation_id
    assert info.value.kind == ("unconfirmed" if op == "retain" else "not_hindsight")
    assert info.value.transient is (op == "retain")
    assert info.value.status_code == 200
    assert "\n" not in str(info.value)


def test_html_reply_names_the_content_type() -> None:
    client, _ = make(httpx.Response(200, html="<html></html>"))
    with pytest.raises(HindsightError) as info:
        client.recall("b", "q")
    assert str(info.value).startswith("recall failed: the reply was not Hindsight JSON (HTTP 200")
    assert "text/html" in str(info.value)


def test_garbage_json_with_500_gives_one_line() -> None:
    body = '{"detail": "database exploded\n  at line 3\r\n\t{"trunc'
    client, _ = make(httpx.Response(500, text=body))
    with pytest.raises(HindsightError) as info:
        client.recall("b", "q")
    message = str(info.value)
    assert message.startswith("recall failed: ")
    assert "database exploded" in message
    assert "\n" not in message
    assert "\r" not in message
    assert "\t" not in message
    assert info.value.status_code == 500
    assert info.value.transient


def test_long_detail_is_cut_to_one_bounded_line() -> None:
    client, _ = make(httpx.Response(500, json={"detail": "x" * 5000}))
    with pytest.raises(HindsightError) as info:
        client.reflect("b", "q")
    message = str(info.value)
    assert len(message) < 400
    assert message.endswith("…")
    assert info.value.details == "x" * 5000  # the full detail stays available


# -- recall 404 -----------------------------------------------------------------------------------


def test_recall_on_a_missing_bank_returns_none() -> None:
    client, rec = make(httpx.Response(404, json={"detail": "Bank 'x' not found"}))
    assert client.recall("x", "q") is None
    assert len(rec.requests) == 1


def test_recall_404_html_page_raises() -> None:
    client, _ = make(httpx.Response(404, html=HTML_404))
    with pytest.raises(HindsightError) as info:
        client.recall("x", "q")
    assert info.value.kind == "not_hindsight"
    assert info.value.status_code == 404


def test_recall_404_other_json_detail_raises() -> None:
    client, _ = make(httpx.Response(404, json={"detail": "no such route"}))
    with pytest.raises(HindsightError, match=r"^recall failed: no such route$"):
        client.recall("x", "q")


def test_reflect_404_for_a_missing_bank_raises() -> None:
    client, _ = make(httpx.Response(404, json={"detail": "Bank 'x' not found"}))
    with pytest.raises(HindsightError, match=r"^reflect failed: Bank 'x' not found$"):
        client.reflect("x", "q")


def test_operation_returns_none_on_404() -> None:
    client, _ = make(httpx.Response(404, json={"detail": "Operation not found"}))
    assert client.operation("b", "op") is None


# -- bodies ---------------------------------------------------------------------------------------


def test_retain_batch_body_and_reply() -> None:
    reply = {"success": True, "operation_id": "op-1", "items_count": 2}
    client, rec = make(httpx.Response(200, json=reply))
    items = [
        {"content": "a", "timestamp": "t1"},
        {"content": "b", "timestamp": "t2", "tags": ["x"]},
    ]
    assert client.retain_batch("b", items, operation_id="op-1").operation_id == "op-1"
    assert rec.body() == {"items": items, "async": True, "operation_id": "op-1"}


def test_retain_batch_without_operation_id_and_sync() -> None:
    client, rec = make(httpx.Response(200, json={"success": True}))
    client.retain_batch("b", [], async_=False)
    assert rec.body() == {"items": [], "async": False}


@pytest.mark.parametrize("reply", [{"success": False}, [{"success": True}]])
def test_retain_batch_unsuccessful_reply_raises(reply: Any) -> None:
    client, _ = make(httpx.Response(200, json=reply))
    with pytest.raises(HindsightError) as info:
        client.retain_batch("b", [{"content": "x"}])
    assert str(info.value).startswith("retainBatch failed: unexpected reply")
    assert info.value.kind == "not_hindsight"
    assert info.value.details == reply


def test_create_bank_omits_empty_missions() -> None:
    client, rec = make(httpx.Response(200, json={"bank_id": "b"}))
    client.create_bank("b")
    assert rec.body() == {}
    client.create_bank("b", reflect_mission="   ", retain_mission="\n")
    assert rec.body() == {}
    client.create_bank("b", reflect_mission="  Be helpful.  ", retain_mission="\tKeep facts\n")
    assert rec.body() == {"reflect_mission": "Be helpful.", "retain_mission": "Keep facts"}
    client.create_bank("b", retain_mission="only retain")
    assert rec.body() == {"retain_mission": "only retain"}
    assert all(r.method == "PUT" for r in rec.requests)


def test_the_extraction_setting_is_written_once_per_bank_and_value() -> None:
    """``retain_extraction=chunks`` sets the bank's mode and a chunk the embedding model reads
    whole; ``server`` leaves the bank's own; a changed setting is written again."""
    client, rec = make(httpx.Response(200, json={"bank_id": "b"}))
    bank = f"extraction-{id(rec)}"
    assert ensure_bank(client, bank, extraction="server")
    assert rec.body() == {}
    assert ensure_bank(client, bank, extraction="chunks")
    assert rec.body() == {"retain_extraction_mode": "chunks", "retain_chunk_size": EMBEDDED_CHARS}
    assert ensure_bank(client, bank, extraction="chunks")
    assert len(rec.requests) == 2  # once per bank and value
    assert ensure_bank(client, bank, extraction="concise")
    assert rec.body() == {"retain_extraction_mode": "concise"}
    assert BankExtraction.of("server") is None


NO_ENTITIES = {"entities": None}


def test_recall_body_minimal() -> None:
    client, rec = make(httpx.Response(200, json={"results": []}))
    assert client.recall("b", "what happened?") == []
    # the entities' observations are never shown: not asked for
    assert rec.body() == {"query": "what happened?", "budget": "mid", "include": NO_ENTITIES}


def test_recall_body_full_with_tags() -> None:
    client, rec = make(httpx.Response(200, json={"results": [{"text": "t"}]}))
    reply = client.recall(
        "b",
        "q",
        budget="high",
        max_tokens=1024,
        types=("world", "experience"),
        tags=("project:demo",),
        tags_match="any",
        min_semantic=0.0,
    )
    assert [memory.text for memory in reply or ()] == ["t"]
    assert rec.body() == {
        "query": "q",
        "budget": "high",
        "include": NO_ENTITIES,
        "min_scores": {"semantic": 0.0},
        "max_tokens": 1024,
        "types": ["world", "experience"],
        "tags": ["project:demo"],
        "tags_match": "any",
    }


def test_recall_tags_match_only_with_tags() -> None:
    client, rec = make(httpx.Response(200, json={"results": []}))
    client.recall("b", "q", tags=None, tags_match="any")
    assert "tags" not in rec.body()
    assert "tags_match" not in rec.body()
    client.recall("b", "q", tags=(), tags_match="any")
    assert "tags" not in rec.body()
    assert "tags_match" not in rec.body()
    client.recall("b", "q", tags=["t"])
    assert rec.body()["tags"] == ["t"]
    assert "tags_match" not in rec.body()


def test_reflect_body() -> None:
    client, rec = make(httpx.Response(200, json={"text": "answer"}))
    assert client.reflect("b", "why?").text == "answer"
    assert rec.body() == {"query": "why?", "budget": "mid"}
    client.reflect(
        "b", "why?", budget="low", context="notebook", tags=["project:p"], tags_match="any"
    )
    assert rec.body() == {
        "query": "why?",
        "budget": "low",
        "context": "notebook",
        "tags": ["project:p"],
        "tags_match": "any",
    }
    client.reflect("b", "why?", context="", tags_match="any")
    assert rec.body() == {"query": "why?", "budget": "mid"}


def test_list_banks_accepts_object_or_list() -> None:
    client, _ = make(httpx.Response(200, json={"banks": [{"bank_id": "a"}]}))
    assert [bank.bank_id for bank in client.list_banks()] == ["a"]
    client2, _ = make(httpx.Response(200, json=[{"bank_id": "b", "fact_count": 3}]))
    assert [(bank.bank_id, bank.fact_count) for bank in client2.list_banks()] == [("b", 3)]


def test_a_reply_that_does_not_fit_its_model_is_one_line_not_hindsight() -> None:
    recall, _ = make(httpx.Response(200, json={"results": [{"text": ["not", "a", "text"]}]}))
    with pytest.raises(HindsightError, match=r"^recall failed: unexpected reply \(text: "):
        recall.recall("b", "q")
    client, _ = make(httpx.Response(200, json={"banks": [{"name": "no id"}]}))
    with pytest.raises(HindsightError) as info:
        client.list_banks()
    assert info.value.kind == "not_hindsight"
    assert str(info.value) == "listBanks failed: unexpected reply (bank_id: Field required)"
    stats, _ = make(httpx.Response(200, json={"total_nodes": "many"}))
    unexpected = r"^bankStats failed: unexpected reply \(total_nodes: "
    with pytest.raises(HindsightError, match=unexpected):
        stats.bank_stats("b")


# -- identity -------------------------------------------------------------------------------------


def test_identity_is_cached_after_success() -> None:
    client, rec = make(httpx.Response(200, json={"api_version": "1.1.0", "features": {}}))
    first = client.identity()
    assert first.api_version == "1.1.0"
    assert raw_path(rec.last) == "/version"
    assert client.identity() == first
    assert len(rec.requests) == 1


def test_identity_requires_api_version() -> None:
    client, rec = make(httpx.Response(200, json={"version": "7.0", "name": "jupyter"}))
    with pytest.raises(HindsightError) as info:
        client.identity()
    assert info.value.kind == "not_hindsight"
    assert str(info.value) == f"{BASE} answered but is not a Hindsight server"
    with pytest.raises(HindsightError):
        client.identity()
    assert len(rec.requests) == 2  # a failure is not cached


def test_identity_html_reply_is_not_hindsight() -> None:
    client, _ = make(httpx.Response(200, html="<html>Jupyter Server</html>"))
    with pytest.raises(HindsightError) as info:
        client.identity()
    assert info.value.kind == "not_hindsight"


def test_identity_error_is_not_cached_then_success_is() -> None:
    replies = iter(
        [
            httpx.Response(503, json={"detail": "starting"}),
            httpx.Response(200, json={"api_version": "1"}),
        ]
    )
    client, rec = make(lambda request: next(replies))
    with pytest.raises(HindsightError, match=r"^version failed: starting$"):
        client.identity()
    assert client.identity().api_version == "1"
    assert client.identity().api_version == "1"
    assert len(rec.requests) == 2


# -- timeouts -------------------------------------------------------------------------------------


def test_per_operation_timeouts() -> None:
    timeouts = Timeouts(request=11.0, retain=22.0, recall=3.0, reflect=44.0)
    client, rec = make(universal_reply, timeouts=timeouts)
    call_every_endpoint(client)
    by_path = {raw_path(r): r.extensions["timeout"] for r in rec.requests}

    def read(path: str) -> float:
        return by_path[path]["read"]

    assert read("/health") == 5.0  # health is capped at 5 s
    assert read("/version") == 11.0
    assert read("/v1/default/banks/b") == 11.0
    assert read("/v1/default/banks") == 11.0
    assert read("/v1/default/banks/b/memories") == 22.0
    assert read("/v1/default/banks/b/memories/recall") == 3.0
    assert read("/v1/default/banks/b/reflect") == 44.0
    assert read("/v1/default/banks/b/operations/op-1") == 11.0
    # connect is capped at 10 s, and never longer than the operation's deadline
    assert by_path["/v1/default/banks/b/reflect"]["connect"] == 10.0
    assert by_path["/v1/default/banks/b/memories/recall"]["connect"] == 3.0
    reflect = by_path["/v1/default/banks/b/reflect"]
    assert reflect["write"] == 44.0
    assert reflect["pool"] == 44.0


def test_default_timeouts_match_the_design() -> None:
    assert Timeouts() == Timeouts(request=30.0, retain=60.0, recall=30.0, reflect=120.0)


def test_health_timeout_short_when_request_timeout_is_short() -> None:
    client, rec = make(universal_reply, timeouts=Timeouts(request=2.0))
    client.health()
    assert rec.last.extensions["timeout"]["read"] == 2.0


def test_close_then_reuse_opens_a_new_pool() -> None:
    client, rec = make(universal_reply)
    client.health()
    client.close()
    client.health()
    assert len(rec.requests) == 2


# -- curation -------------------------------------------------------------------------------------


def test_curation_endpoints_use_the_documented_methods_paths_and_bodies() -> None:
    client, rec = make(httpx.Response(200, json={"items": [], "total": 0}))
    client.get_memory("b", "m/1")
    client.update_memory("b", "m-1", state="invalidated", reason="wrong")
    client.list_memories(
        "b",
        q="sk-1",
        state="invalidated",
        document_id="d 1",
        tags=["p:x"],
        tags_match="any",
        limit=5,
        offset=10,
    )
    client.delete_document("b", "hm-1/..")
    client.document_history("b", "d-1")
    client.observation_history("b", "m-1")
    seen = [(r.method, raw_path(r)) for r in rec.requests]
    assert seen[:2] == [
        ("GET", "/v1/default/banks/b/memories/m%2F1"),
        ("PATCH", "/v1/default/banks/b/memories/m-1"),
    ]
    assert json.loads(rec.requests[1].content) == {"state": "invalidated", "reason": "wrong"}
    listed = rec.requests[2]
    assert listed.url.path == "/v1/default/banks/b/memories/list"
    assert dict(listed.url.params) == {
        "q": "sk-1", "state": "invalidated", "document_id": "d 1", "tags": "p:x",
        "tags_match": "any", "limit": "5", "offset": "10",
    }  # fmt: skip
    assert seen[3:] == [
        ("DELETE", "/v1/default/banks/b/documents/hm-1%2F.."),
        ("GET", "/v1/default/banks/b/documents/d-1/history"),
        ("GET", "/v1/default/banks/b/memories/m-1/history"),
    ]


def test_curation_reads_of_what_does_not_exist_are_none_or_empty() -> None:
    client, _ = make(httpx.Response(404, json={"detail": "Bank 'b' not found"}))
    assert client.get_memory("b", "m-1") is None
    assert client.delete_document("b", "d-1") is None
    assert client.document_history("b", "d-1") == []
    listed = client.list_memories("b")
    assert (listed.items, listed.total) == ([], 0)


def test_the_bank_llm_probe_posts_to_its_path_and_reads_each_operation() -> None:
    reply = {
        "bank_id": "b/1",
        "operations": [
            {"operation": "retain", "ok": True, "status": "connected", "latency_ms": 12.5},
            {"operation": "reflect", "ok": False, "status": "auth_failed"},
        ],
    }
    client, rec = make(httpx.Response(200, json=reply))
    assert client.bank_llm_health("b/1") == {"retain": "connected", "reflect": "auth_failed"}
    assert rec.last.method == "POST"
    assert raw_path(rec.last) == "/v1/default/banks/b%2F1/health/llm"
