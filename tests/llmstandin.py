"""A stand-in for an OpenAI-compatible LLM endpoint, for testing ``server start --llm``.

It is not a model and pretends to be none: no provider can be reached from the test machines,
so this answers ``POST /v1/chat/completions`` (and ``GET /v1/models``) with fixed, rule-made
content in the shapes Hindsight 1.1.0's OpenAI provider parses, so that a local server started
with ``--llm openai --base-url <its URL> --model stand-in`` runs every path a real LLM would:

- fact extraction (the prompt's ``Content:`` split into sentences, one fact each, as JSON);
- reflect's tool loop (it calls the tool it is told to, ``recall`` with the question until a
  memory was found, then ``done`` with an answer that quotes the first memory the tools
  returned);
- a mental model's refresh (``done`` with a one-section document quoting that memory);
- anything else that asks for JSON (consolidation …): the smallest object its schema allows;
- the connection check (``Say 'ok'``): ``ok``.

Every answer starts with ``STAND_IN`` so a test can tell it from any other text. A request
without the accepted key (``Authorization: Bearer …``) is refused with OpenAI's 401 body;
``accepted_key`` can be changed while it runs (a key revoked). ``calls`` records what was asked,
one word per request (``extraction``, ``reflect``, ``document``, ``json``, ``text``).
"""

from __future__ import annotations

import http.server
import json
import re
import threading
from typing import Any

STAND_IN = "Stand-in"  # the first word of every answer it writes
SCHEMA_MARK = "You must respond with valid JSON matching this schema:\n"
REFUSED = {
    "error": {
        "message": "Incorrect API key provided.",
        "type": "invalid_request_error",
        "code": "invalid_api_key",
    }
}


class StandInLLM:
    """The endpoint, on 127.0.0.1 at a free port (``url`` ends in ``/v1``), until ``close``."""

    def __init__(self, accepted_key: str, port: int = 0) -> None:
        self.accepted_key = accepted_key
        self.calls: list[str] = []
        self.texts: list[str] = []  # what each extraction was asked to read
        self.requests: list[dict[str, Any]] = []  # every request's body, in order
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        stand_in = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _allowed(self) -> bool:
                said = self.headers.get("Authorization", "")
                return said == f"Bearer {stand_in.accepted_key}"

            def do_GET(self) -> None:
                if not self._allowed():
                    return self._send(401, REFUSED)
                if self.path.rstrip("/").endswith("/models"):
                    return self._send(200, {"object": "list", "data": [_model()]})
                return self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                request = json.loads(self.rfile.read(length) or b"{}")
                if not self._allowed():
                    return self._send(401, REFUSED)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    return self._send(404, {"error": {"message": "not found"}})
                stand_in.requests.append(request)
                message, kind = stand_in.answer(request)
                stand_in.calls.append(kind)
                return self._send(200, _completion(request, message))

        return Handler

    def answer(self, request: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """The assistant message for ``request``, and what kind of request it was."""
        messages = request.get("messages") or []
        tools = {tool["function"]["name"]: tool["function"] for tool in request.get("tools") or ()}
        if tools:
            return self._tool_turn(messages, tools, request.get("tool_choice"))
        schema = _schema(request, messages)
        if schema is not None:
            properties = schema.get("properties") or {}
            if "facts" in properties:
                text = _content_of(_user_text(messages))
                self.texts.append(text)
                return _text_message(json.dumps({"facts": _facts(text)})), "extraction"
            return _text_message(json.dumps(_smallest(schema))), "json"
        if "say 'ok'" in _user_text(messages).lower():
            return _text_message("ok"), "text"
        return _text_message(f"{STAND_IN} reply."), "text"

    def _tool_turn(
        self, messages: list[dict[str, Any]], tools: dict[str, Any], choice: Any
    ) -> tuple[dict[str, Any], str]:
        question = _user_text(messages)[:200]
        named = (choice or {}).get("function", {}).get("name") if isinstance(choice, dict) else None
        if named is None and not {"done", "recall"} & set(tools):  # one search it must make
            named = next(iter(tools))
        if named and named != "done":
            return _tool_call(named, {"reason": STAND_IN, "query": question}), "reflect"
        texts, ids = _found([m for m in messages if m.get("role") == "tool"])
        called = {
            call.get("function", {}).get("name")
            for m in messages
            if m.get("role") == "assistant"
            for call in m.get("tool_calls") or ()
        }
        if not texts and "recall" in tools and "recall" not in called:  # search first
            return _tool_call("recall", {"reason": STAND_IN, "query": question}), "reflect"
        quoted = texts[0] if texts else "no memory was found"
        done = tools.get("done") or {}
        properties = (done.get("parameters") or {}).get("properties") or {}
        arguments: dict[str, Any] = {"memory_ids": ids[:3], "answer_found": bool(texts)}
        if "document" in properties:  # a mental model's refresh: a structured document
            block = f"{STAND_IN} summary (a test endpoint, not a model): {quoted}"
            arguments["document"] = {"sections": [{"heading": "", "level": 2, "blocks": [block]}]}
            return _tool_call("done", arguments), "document"
        arguments["answer"] = f"{STAND_IN} answer (a test endpoint, not a model): {quoted}"
        return _tool_call("done", arguments), "reflect"


def _model() -> dict[str, Any]:
    return {"id": "stand-in", "object": "model", "owned_by": "tests"}


def _completion(request: dict[str, Any], message: dict[str, Any]) -> dict[str, Any]:
    reason = "tool_calls" if message.get("tool_calls") else "stop"
    return {
        "id": "chatcmpl-stand-in",
        "object": "chat.completion",
        "created": 0,
        "model": request.get("model") or "stand-in",
        "choices": [{"index": 0, "message": message, "finish_reason": reason}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def _text_message(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def _tool_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    call = {"id": f"call_{name}", "type": "function"}
    call["function"] = {"name": name, "arguments": json.dumps(arguments)}  # type: ignore[assignment]
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def _user_text(messages: list[dict[str, Any]]) -> str:
    """The last user message's text."""
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, list):
            return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
        return str(content or "")
    return ""


def _schema(request: dict[str, Any], messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The JSON schema asked for: strict (``response_format``) or in the prompt (soft)."""
    strict = (request.get("response_format") or {}).get("json_schema") or {}
    if strict.get("schema"):
        return dict(strict["schema"])
    for message in messages:
        content = message.get("content")
        if isinstance(content, str) and SCHEMA_MARK in content:
            text = content.split(SCHEMA_MARK, 1)[1]
            try:
                return dict(json.JSONDecoder().raw_decode(text)[0])
            except ValueError:
                return {}
    if (request.get("response_format") or {}).get("type") == "json_object":
        return {}
    return None


def _content_of(prompt: str) -> str:
    """The chunk an extraction prompt carries (after ``Content:``)."""
    return prompt.split("Content:\n", 1)[1] if "Content:\n" in prompt else prompt


def _facts(text: str) -> list[dict[str, Any]]:
    """One fact per sentence of ``text``: what the stand-in "extracts"."""
    sentences = [s.strip() for s in re.split(r"(?<=\.)\s+|\n+", text) if len(s.strip()) > 10]
    return [
        {
            "what": sentence,
            "when": "N/A",
            "where": "N/A",
            "who": "N/A",
            "why": "N/A",
            "fact_kind": "conversation",
            "fact_type": "world",
            "entities": [{"text": w} for w in dict.fromkeys(re.findall(r"\b[A-Z]\w+", sentence))],
        }
        for sentence in sentences[:10]
    ]


def _found(results: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """The memory texts and ids the tools returned, in order."""
    texts: list[str] = []
    ids: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if isinstance(value.get("text"), str) and value["text"].strip():
                texts.append(value["text"].strip())
                if isinstance(value.get("id"), str):
                    ids.append(value["id"])
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for result in results:
        try:
            walk(json.loads(result.get("content") or "null"))
        except ValueError:
            continue
    return texts, ids


def _smallest(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> Any:
    """The smallest value ``schema`` allows: required properties only, empty lists, first
    enum values, zeros and empty strings."""
    defs = defs if defs is not None else schema.get("$defs") or schema.get("definitions") or {}
    if "$ref" in schema:
        return _smallest(defs.get(schema["$ref"].rsplit("/", 1)[-1], {}), defs)
    for union in ("anyOf", "oneOf", "allOf"):
        if schema.get(union):
            return _smallest(schema[union][0], defs)
    if "enum" in schema:
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        return {name: _smallest(properties[name], defs) for name in schema.get("required") or ()}
    return {"array": [], "string": "", "integer": 0, "number": 0, "boolean": False}.get(str(kind))
