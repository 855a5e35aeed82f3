"""Which LLM ``server start --llm`` gives the local server: the provider, model, address and
key it passes on, from the options or Hindsight's own settings; Ollama found on its port."""

from __future__ import annotations

import http.server
import json
import socket
import threading
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest

from hindsight_magic._localserver import ServerError
from hindsight_magic._localserver import llm as server_llm
from hindsight_magic._localserver.launcher import without_credentials
from hindsight_magic._localserver.llm import LlmChoice, chosen, server_env


def test_options_win_over_hindsights_own_settings() -> None:
    environ = {
        "HINDSIGHT_API_LLM_PROVIDER": "groq",
        "HINDSIGHT_API_LLM_MODEL": "their-model",
        "GROQ_API_KEY": "gsk-1",
    }
    assert chosen(None, None, None, {}) is None  # nothing asked: the server runs the mock
    assert chosen(None, None, None, environ) == LlmChoice("groq", "their-model")
    assert chosen("Anthropic", "claude-x", None, environ) == LlmChoice("anthropic", "claude-x")
    _, env = server_env(chosen(None, None, None, environ) or LlmChoice(""), environ)
    assert env == {
        "HINDSIGHT_API_LLM_PROVIDER": "groq",
        "HINDSIGHT_API_ENABLE_BANK_LLM_HEALTH": "true",  # what `doctor` asks
        "HINDSIGHT_API_LLM_MODEL": "their-model",
        "HINDSIGHT_API_LLM_API_KEY": "gsk-1",
    }


@pytest.mark.parametrize(
    ("provider", "environ", "key"),
    [
        ("openai", {"OPENAI_API_KEY": "sk-o"}, "sk-o"),
        ("anthropic", {"ANTHROPIC_API_KEY": "sk-ant"}, "sk-ant"),
        ("gemini", {"GOOGLE_API_KEY": "g-2"}, "g-2"),
        ("gemini", {"GEMINI_API_KEY": "g-1", "GOOGLE_API_KEY": "g-2"}, "g-1"),
        ("groq", {"GROQ_API_KEY": "gsk"}, "gsk"),
        ("openai", {"OPENAI_API_KEY": "sk-o", "HINDSIGHT_API_LLM_API_KEY": "hs"}, "hs"),
    ],
)
def test_the_key_comes_from_the_providers_usual_variable(
    provider: str, environ: dict[str, str], key: str
) -> None:
    _, env = server_env(LlmChoice(provider), environ)
    assert env["HINDSIGHT_API_LLM_API_KEY"] == key


def test_a_missing_key_is_one_line_and_a_local_endpoint_needs_none() -> None:
    with pytest.raises(ServerError) as raised:
        server_env(LlmChoice("gemini"), {})
    assert str(raised.value) == (
        "--llm gemini needs an API key: set GEMINI_API_KEY or GOOGLE_API_KEY or "
        "HINDSIGHT_API_LLM_API_KEY in the environment (never in a notebook cell), then start again"
    )
    vllm = LlmChoice("openai", "qwen", "http://127.0.0.1:8000/v1")
    assert server_env(vllm, {})[1] == {
        "HINDSIGHT_API_LLM_PROVIDER": "openai",
        "HINDSIGHT_API_ENABLE_BANK_LLM_HEALTH": "true",
        "HINDSIGHT_API_LLM_MODEL": "qwen",
        "HINDSIGHT_API_LLM_BASE_URL": "http://127.0.0.1:8000/v1",
        "HINDSIGHT_API_LLM_API_KEY": "none",  # the client must send one; the server asks none
    }


def _port_free(port: int) -> bool:
    with socket.socket() as sock:  # a port left in TIME_WAIT by a test here is free
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.fixture
def ollama_port() -> int:
    if not _port_free(11434):
        pytest.skip("something listens on Ollama's port here")
    return 11434


class _Ollama(http.server.BaseHTTPRequestHandler):
    """A stand-in for Ollama's model list (``GET /api/tags``), with the models given."""

    models: ClassVar[list[str]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        body = json.dumps({"models": [{"name": name} for name in self.models]}).encode()
        self.send_response(200 if self.path == "/api/tags" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def ollama(ollama_port: int) -> Iterator[type[_Ollama]]:
    handler = type("Ollama", (_Ollama,), {"models": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", ollama_port), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield handler
    finally:
        server.shutdown()
        server.server_close()


def test_ollama_is_found_on_its_port_with_a_model_it_has(ollama: type[_Ollama]) -> None:
    ollama.models = ["llama3.2:3b", server_llm.OLLAMA_DEFAULT_MODEL]
    choice, env = server_env(LlmChoice("ollama"), {})
    assert choice == LlmChoice("ollama", "gemma3:12b", "http://127.0.0.1:11434/v1")
    assert env["HINDSIGHT_API_LLM_BASE_URL"] == "http://127.0.0.1:11434/v1"
    assert "HINDSIGHT_API_LLM_API_KEY" not in env  # Ollama asks for none
    ollama.models = ["llama3.2:3b"]  # without Hindsight's default: the one it has
    assert server_env(LlmChoice("ollama"), {})[0].model == "llama3.2:3b"
    assert server_env(LlmChoice("ollama", "qwen3:8b"), {})[0].model == "qwen3:8b"
    ollama.models = []
    with pytest.raises(ServerError, match=r"^--llm ollama: the Ollama at .* has no model yet; "):
        server_env(LlmChoice("ollama"), {})


def test_no_ollama_is_one_line(ollama_port: int) -> None:
    with pytest.raises(ServerError) as raised:
        server_env(LlmChoice("ollama"), {})
    assert str(raised.value) == (
        "--llm ollama: no Ollama answers at http://127.0.0.1:11434; start it (`ollama serve`) "
        "or give its address with --base-url"
    )


def test_the_no_llm_notice_names_every_provider_the_server_starts_with() -> None:
    """What reflect says without an LLM offers each provider ``server start --llm`` takes."""
    from hindsight_magic._memory.llm import NoLlm

    how = NoLlm("mock", local=True).how()
    assert how.endswith("(or anthropic, gemini, groq, ollama, lmstudio)"), how
    assert all(name in how for name in server_llm.NAMES)


def test_the_state_file_records_an_address_without_its_password() -> None:
    assert without_credentials("http://me:s3cret@10.0.0.5:8000/v1") == "http://10.0.0.5:8000/v1"
    assert without_credentials("https://api.groq.com/openai/v1") == "https://api.groq.com/openai/v1"
