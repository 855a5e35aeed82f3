"""Which LLM the local server runs: ``server start --llm PROVIDER [--model NAME] [--base-url URL]``.

Without one the server runs Hindsight's ``mock`` (``launcher.child_env``): recall works, and
the extension shows memories where an LLM would write. With one, the server extracts facts from
what is retained (the bank's extraction mode follows the server unless ``retain_extraction``
says otherwise), writes reflect's answers and the mental models' summaries.

The providers a notebook user is likely to have, by Hindsight 1.1.0's own names (its
``HINDSIGHT_API_LLM_PROVIDER`` values): ``openai`` (also any OpenAI-compatible endpoint given
``--base-url``: vLLM, llama.cpp's server), ``anthropic``, ``gemini``, ``groq``, ``ollama`` (found
on its default port when no URL is given) and ``lmstudio``. Without ``--llm``, the same
``HINDSIGHT_API_LLM_PROVIDER`` / ``_MODEL`` / ``_BASE_URL`` settings in the environment choose.

The key comes from the provider's usual variable (``OPENAI_API_KEY`` …) or
``HINDSIGHT_API_LLM_API_KEY``, and goes to the server process's environment only: never to the
state file (which records the provider and model), a log line or a memory.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .._machine import LLM_PROVIDERS as PROVIDERS
from .._machine import OLLAMA, OLLAMA_URL, Provider
from . import ServerError

ENV_PROVIDER = "HINDSIGHT_API_LLM_PROVIDER"
ENV_MODEL = "HINDSIGHT_API_LLM_MODEL"
ENV_BASE_URL = "HINDSIGHT_API_LLM_BASE_URL"
ENV_KEY = "HINDSIGHT_API_LLM_API_KEY"
ENV_HEALTH = "HINDSIGHT_API_ENABLE_BANK_LLM_HEALTH"  # the probe `doctor` asks for
OLLAMA_DEFAULT_MODEL = "gemma3:12b"  # Hindsight's default for ollama
NO_KEY_NEEDED = "none"  # the key a local OpenAI-compatible server is given (it asks for none)
PROBE_TIMEOUT_S = 2.0


NAMES = tuple(PROVIDERS)  # the providers, as declared in ``_machine`` (the notices name them)


@dataclass(frozen=True)
class LlmChoice:
    """The LLM the server is started with: a provider (Hindsight's name), a model ("" for the
    provider's default) and a base URL ("" for the provider's own)."""

    provider: str
    model: str = ""
    base_url: str = ""

    def words(self) -> str:
        """``openai (gpt-4o-mini)``: as the state file and the status line name it."""
        return f"{self.provider} ({self.model})" if self.model else self.provider


def chosen(
    provider: str | None, model: str | None, base_url: str | None, environ: Mapping[str, str]
) -> LlmChoice | None:
    """The LLM asked for: the options, else Hindsight's own settings in ``environ``; None when
    neither names a provider (the server then runs the mock)."""
    provider = (provider or environ.get(ENV_PROVIDER) or "").strip().lower()
    if not provider:
        return None
    model = (model or environ.get(ENV_MODEL) or "").strip()
    base_url = (base_url or environ.get(ENV_BASE_URL) or "").strip().rstrip("/")
    return LlmChoice(provider, model, base_url)


def server_env(choice: LlmChoice, environ: Mapping[str, str]) -> tuple[LlmChoice, dict[str, str]]:
    """The server's LLM settings for ``choice`` (its key read from ``environ``), and the choice
    as it will run (Ollama's URL and model, when they were found here). ``ServerError`` (one
    line) for a key that is not set or an Ollama that does not answer."""
    known = PROVIDERS.get(choice.provider, Provider(choice.provider))
    if choice.provider == OLLAMA and not choice.base_url:
        choice = _ollama(choice)
    env = {ENV_PROVIDER: choice.provider, ENV_HEALTH: "true"}
    if choice.model:
        env[ENV_MODEL] = choice.model
    if choice.base_url:
        env[ENV_BASE_URL] = choice.base_url
    key = next(
        (environ[name] for name in (ENV_KEY, *known.keys) if environ.get(name, "").strip()), ""
    )
    if key:
        env[ENV_KEY] = key.strip()
    elif known.needs_key and choice.base_url:  # a local OpenAI-compatible server needs none
        env[ENV_KEY] = NO_KEY_NEEDED
    elif known.needs_key:
        names = " or ".join((*known.keys, ENV_KEY))
        raise ServerError(
            f"--llm {choice.provider} needs an API key: set {names} in the environment "
            "(never in a notebook cell), then start again"
        )
    return choice, env


def _ollama(choice: LlmChoice) -> LlmChoice:
    """Ollama on its default port: its URL, and the model (the one asked for, else
    Hindsight's default when it is pulled, else the first one Ollama has)."""
    import httpx

    try:
        reply = httpx.get(f"{OLLAMA_URL}/api/tags", timeout=PROBE_TIMEOUT_S, trust_env=False)
        reply.raise_for_status()
        names = [str(m.get("name")) for m in reply.json().get("models") or () if m.get("name")]
    except (httpx.HTTPError, ValueError, AttributeError):
        raise ServerError(
            f"--llm ollama: no Ollama answers at {OLLAMA_URL}; start it (`ollama serve`) or "
            "give its address with --base-url"
        ) from None
    model = choice.model
    if not model:
        if not names:
            raise ServerError(
                f"--llm ollama: the Ollama at {OLLAMA_URL} has no model yet; pull one "
                f"(`ollama pull {OLLAMA_DEFAULT_MODEL}`) or name one with --model"
            )
        model = OLLAMA_DEFAULT_MODEL if OLLAMA_DEFAULT_MODEL in names else names[0]
    return LlmChoice(OLLAMA, model, f"{OLLAMA_URL}/v1")
