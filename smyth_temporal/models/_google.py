"""The Google model provider: Gemini through the ``google-genai`` package.

Needs the ``google`` extra (``pip install 'smyth-temporal[google]'``); importing this
module without it fails with that command. Agents name its models ``google:NAME``
(``AgentConfig(model="google:gemini-2.5-pro")``). The Gemini API and Vertex AI are
both served, by the same SDK (``vertexai=True``, or a ready ``client=``).

What Gemini has and chat completions do not, kept here:

* **Thought signatures.** A thinking model signs its turn (a ``thoughtSignature`` on
  a part) and wants the turn back exactly as given. When an answer has a signature
  or a thought part, all its parts are kept in the assistant message's
  ``provider_items`` (``{"type": "gemini_part", "part": ...}``, the SDK's shape) and
  sent back unchanged in later requests.
* **Context caching.** Gemini caches prompt prefixes on its own (implicit caching,
  reported as ``cachedContentTokenCount``): the system instruction and the function
  declarations (sorted by name) are built the same way every step, and the
  conversation only grows, so each prompt starts with the last one. With
  ``context_cache=True`` the stable prefix (the instructions, the tools, and the
  conversation up to the latest compaction summary) is also put in an explicit cache
  (``cachedContents``), created once and reused while the prefix is byte-identical,
  which guarantees the discount; a new summary starts a new cache once.
* **Errors.** Classified for Temporal's retry (the SDK's own retries are off): 429
  ``RESOURCE_EXHAUSTED`` retryable after its ``RetryInfo`` delay; 503 ``UNAVAILABLE``
  retryable as ``ModelOverloaded`` (moves the turn to a fallback model); a prompt over
  the context window final as ``ModelContextTooLong`` (the agent compacts); other 4xx
  final; 5xx, timeouts and lost connections retryable.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import httpx
import pydantic
import structlog
from temporalio.exceptions import ApplicationError

from smyth_temporal._redaction import masked_cause
from smyth_temporal.models._errors import capped_delay, status_failure, to_application_error
from smyth_temporal.models._keys import provider_key
from smyth_temporal.models._messages import arguments_object, leading_system
from smyth_temporal.models._provider import TextSink
from smyth_temporal.security import Secrets
from smyth_temporal.settings import ModelSettings
from smyth_temporal.types.messages import Message, ToolCall, Usage
from smyth_temporal.types.model import ModelRequest, ModelResponse
from smyth_temporal.types.secrets import SecretRef

try:
    from google import genai
    from google.genai import errors as genai_errors
    from google.genai import types as genai_types
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "the Google model provider needs the google-genai package: "
        "pip install 'smyth-temporal[google]'"
    ) from exc

__all__ = ["GEMINI_PART", "GoogleProvider"]

GEMINI_PART = "gemini_part"
"""The ``type`` of a ``provider_items`` entry holding one part of a Gemini answer."""

_DEFAULT_TIMEOUT = 120.0
_DEFAULT_CACHE_TTL = timedelta(hours=1)

# Without ``max_output_tokens`` Gemini stops at the model's own output limit (thinking
# included): 8,192 tokens for the 1.x and 2.0 models, 65,536 for 2.5 and later; a
# model not listed gets the largest, so a budget never reserves less than it may pay.
_OUTPUT_LIMITS = (("gemini-1.", 8_192), ("gemini-2.0-", 8_192))
_LARGEST_OUTPUT_LIMIT = 65_536
# A cache this close to its expiry is not used: the request could reach the API after.
_CACHE_MARGIN = 60.0

# The API's finish reasons in the chat-completions words the rest of the SDK reads.
_FINISH_REASONS = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "MODEL_ARMOR": "content_filter",
}

# Finish reasons of an answer Gemini could not put together (a function call it could
# not parse, or one to no declared tool).
_UNREADABLE = frozenset({"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "MALFORMED_RESPONSE"})

# Chat-completions settings under their Gemini names; other keys pass as they are
# (``thinking_config``, ``top_k``, ``safety_settings``, ...).
_SETTINGS = {"max_tokens": "max_output_tokens", "stop": "stop_sequences"}

_log = structlog.get_logger("smyth_temporal.model")


def _httpx_errors() -> tuple[tuple[type[Exception], ...], tuple[type[Exception], ...]]:
    """Timeouts and transport errors of each HTTP client the SDK may use.

    With ``httpx2`` (a fork of httpx under its own name) installed, the SDK sends with it,
    and its errors are not httpx's.
    """
    timeouts: list[type[Exception]] = [httpx.TimeoutException]
    transport: list[type[Exception]] = [httpx.TransportError]
    try:
        import httpx2
    except ImportError:
        pass
    else:
        timeouts.append(httpx2.TimeoutException)
        transport.append(httpx2.TransportError)
    return tuple(timeouts), tuple(transport)


_TIMEOUTS, _TRANSPORT_ERRORS = _httpx_errors()


@dataclass(frozen=True)
class _Cache:
    name: str | None  # None: the API refused to cache this prefix (too small)
    expires: float  # time.monotonic() seconds


class GoogleProvider:
    """Gemini's ``generateContent``, with thought signatures and context caching.

    The key comes from the argument, or ``GOOGLE_API_KEY``/``GEMINI_API_KEY`` on the
    worker (read by ``ModelSettings``); it never enters a workflow's history. With
    ``vertexai=True`` the client authenticates to Vertex AI with the worker's Google
    credentials instead. The SDK's retries are off: Temporal's retry policy on the
    model activity is the only retry loop. Request settings pass through
    (``max_tokens`` as ``max_output_tokens``, ``stop`` as ``stop_sequences``).

    Added in 0.10.0.
    """

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | SecretRef | None = None,
        timeout: float = _DEFAULT_TIMEOUT,
        client: genai.Client | None = None,
        vertexai: bool = False,
        project: str | None = None,
        location: str | None = None,
        context_cache: bool = False,
        cache_ttl: timedelta = _DEFAULT_CACHE_TTL,
        secrets: Secrets | None = None,
    ) -> None:
        """Configure the provider; the key is checked now, so a worker fails at start.

        Args:
            base_url: The endpoint (default: ``GOOGLE_GEMINI_BASE_URL`` for the Gemini
                API, else Google's).
            api_key: The key, or ``secret("NAME")`` resolved on the worker with
                ``secrets`` (default: ``GOOGLE_API_KEY``, else ``GEMINI_API_KEY``).
                Masked in logs (a plain key from 12 characters).
            timeout: Seconds per HTTP request.
            client: A ready ``genai.Client`` (its retry setting is left as the
                caller made it: pass ``HttpRetryOptions(attempts=1)``).
            vertexai: Call Vertex AI with the worker's Google credentials (no key).
            project: The Vertex AI project (default: the SDK's ``GOOGLE_CLOUD_PROJECT``).
            location: The Vertex AI region (default: the SDK's ``GOOGLE_CLOUD_LOCATION``).
            context_cache: Put the stable prefix in an explicit cache (see the module).
            cache_ttl: How long an explicit cache lives after it is created.
            secrets: What resolves a ``secret("NAME")`` key (default: ``Secrets.from_env()``).

        Raises:
            ConfigurationError: No key given and neither variable is set (for the
                Gemini API), or the secret named is not allowed or not set.
        """
        if client is None:
            client = _client(base_url, api_key, timeout, vertexai, project, location, secrets)
        self._client = client
        self._context_cache = context_cache
        self._cache_ttl = cache_ttl
        self._caches: dict[str, _Cache] = {}
        self._cache_locks: dict[str, asyncio.Lock] = {}

    def reply_bound(self, request: ModelRequest) -> int:
        """The most reply tokens ``request`` allows, as sent or as Gemini applies them.

        That is the ``max_output_tokens`` sent (its ``max_tokens`` or
        ``max_output_tokens`` setting, the later if both), else the model's own output
        limit, which Gemini applies when none is sent. A budget reserves this many reply
        tokens (see ``BoundedReplies``). Added in 0.10.0.
        """
        given = _config(request).get("max_output_tokens")  # as sent, whichever name won
        if given:
            return int(given)
        return next(
            (limit for prefix, limit in _OUTPUT_LIMITS if prefix in request.model),
            _LARGEST_OUTPUT_LIMIT,
        )

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Send one ``generateContent`` request.

        Raises:
            temporalio.exceptions.ApplicationError: Classified retryable or not.
        """
        params: dict[str, Any] = {}
        try:
            params = await self._cached_params(request)
            answer = await self._client.aio.models.generate_content(**params)
        except Exception as exc:
            raise self._classify(exc, params) from masked_cause(exc)
        return to_model_response(answer, request)

    async def stream(self, request: ModelRequest, on_text: TextSink) -> ModelResponse:
        """Send one ``streamGenerateContent`` request, streaming its text to ``on_text``.

        Raises:
            temporalio.exceptions.ApplicationError: Classified as ``complete`` classifies.
        """
        parts = _Parts()
        last: Any = None
        params: dict[str, Any] = {}
        try:
            params = await self._cached_params(request)
            chunks = await self._client.aio.models.generate_content_stream(**params)
            async for chunk in chunks:
                last = chunk if last is None else _later(last, chunk)
                for part in _candidate_parts(chunk):
                    if part.text and not part.thought:
                        on_text(part.text)
                    parts.add(part)
        except Exception as exc:
            raise self._classify(exc, params) from masked_cause(exc)
        if last is None:
            raise to_application_error(ValueError("the Gemini stream ended without an answer"))
        return to_model_response(last, request, parts=parts.parts)

    def params(self, request: ModelRequest) -> dict[str, Any]:
        """The ``generate_content`` arguments for ``request`` (no explicit cache)."""
        leading = leading_system(request.messages)
        config = _config(request)
        if leading:
            config["system_instruction"] = {"parts": [{"text": m.content or ""} for m in leading]}
        tools = _tools(request.tools)
        if tools:
            config["tools"] = tools
        contents = _contents(request.messages[len(leading) :])
        return {"model": request.model, "contents": contents, "config": config}

    async def _cached_params(self, request: ModelRequest) -> dict[str, Any]:
        """``params``, the stable prefix moved into an explicit cache when asked for."""
        params = self.params(request)
        if not self._context_cache or request.purpose != "turn":
            return params
        conversation = request.messages[len(leading_system(request.messages)) :]
        cut = _stable_length(conversation)
        config = params["config"]
        sent_ids: dict[str, str | None] = {}
        prefix = {
            "system_instruction": config.get("system_instruction"),
            "tools": config.get("tools"),
            "contents": _contents(conversation[:cut], sent_ids),
        }
        name = await self._cache_for(request.model, prefix)
        if name is None:
            return params
        for key in ("system_instruction", "tools"):
            config.pop(key, None)
        config["cached_content"] = name
        params["contents"] = _contents(conversation[cut:], sent_ids)
        return params

    async def _cache_for(self, model: str, prefix: dict[str, Any]) -> str | None:
        """The explicit cache of ``prefix``, created on first use; None if refused."""
        key = hashlib.sha256(
            json.dumps([model, prefix], sort_keys=True, default=str).encode()
        ).hexdigest()
        lock = self._cache_locks.setdefault(key, asyncio.Lock())
        async with lock:  # one creation per prefix, however many calls wait for it
            found = self._caches.get(key)
            if found is not None and found.expires - _CACHE_MARGIN > time.monotonic():
                return found.name
            ttl = self._cache_ttl.total_seconds()
            config = {k: v for k, v in prefix.items() if v}
            config["ttl"] = f"{ttl:g}s"
            try:
                cache = await self._client.aio.caches.create(
                    model=model, config=genai_types.CreateCachedContentConfig.model_validate(config)
                )
            except genai_errors.ClientError as exc:
                if exc.code != 400 or "too small" not in (exc.message or "").lower():
                    raise
                # Under the model's minimum: asked again only when the prefix changes.
                self._caches[key] = _Cache(None, float("inf"))
                return None
            _log.info("model.cache_created", model=model, cache=cache.name, ttl=ttl)
            now = time.monotonic()
            # A long-lived worker meets a new prefix at every compaction: keep the live ones.
            for stale in [k for k, v in self._caches.items() if v.expires <= now]:
                del self._caches[stale]
                self._cache_locks.pop(stale, None)
            self._caches[key] = _Cache(cache.name, now + ttl)
            return cache.name

    def _classify(self, exc: Exception, params: dict[str, Any]) -> ApplicationError:
        """``classify``, forgetting a named cache the API no longer has."""
        name = params.get("config", {}).get("cached_content")
        if name is None or not _cache_gone(exc):
            return classify(exc)
        # Expired or deleted early: the next attempt makes it again. Not an overloaded
        # model: the turn stays on this model (no fallback) and is simply retried.
        self._caches = {k: v for k, v in self._caches.items() if v.name != name}
        assert isinstance(exc, genai_errors.APIError)
        return ApplicationError(
            f"the context cache {name} is gone ({exc.code} {exc.status})",
            {"status_code": exc.code, "error_type": exc.status},
            type="ModelCacheMissing",
        )


def _client(
    base_url: str | None,
    api_key: str | SecretRef | None,
    timeout: float,
    vertexai: bool,
    project: str | None,
    location: str | None,
    secrets: Secrets | None,
) -> genai.Client:
    """A client with the SDK's retries off, its key from the argument or the worker."""
    endpoint = ModelSettings.load()
    # GOOGLE_GEMINI_BASE_URL names a Gemini API endpoint, never Vertex AI's.
    default_url = None if vertexai else endpoint.google_base_url
    options = genai_types.HttpOptions(
        base_url=base_url or default_url or None,
        timeout=int(timeout * 1000),
        # Set, so that the SDK never retries on its own (without it, its aiohttp path
        # retries a lost connection after up to ten seconds).
        retry_options=genai_types.HttpRetryOptions(attempts=1),
    )
    if vertexai:
        return genai.Client(vertexai=True, project=project, location=location, http_options=options)
    key = provider_key(
        api_key,
        endpoint.google_api_key or endpoint.gemini_api_key,
        secrets,
        variable="GOOGLE_API_KEY",
        missing="the Google model provider needs an API key: set GOOGLE_API_KEY (or "
        "GEMINI_API_KEY), pass api_key=secret('NAME'), or use vertexai=True",
    )
    return genai.Client(api_key=key, http_options=options)


def classify(exc: BaseException) -> ApplicationError:
    """An error of the ``google-genai`` package as a retryable or final ``ApplicationError``.

    Types: ``ModelOverloaded`` (503 ``UNAVAILABLE``, retryable), ``ModelContextTooLong``
    (the input token count exceeds the model's maximum, final), ``ModelHTTPError``
    (others by status: 408/409/429/5xx retryable, 429 after its ``RetryInfo`` delay),
    ``ModelTimeout`` and ``ModelConnectionError`` (retryable); a request the SDK
    refuses to build (a setting it does not know) is final.
    """
    if isinstance(exc, genai_errors.APIError):
        message = exc.message or str(exc.details)
        return status_failure(
            exc.code,
            message,
            error_type=exc.status,
            request_id=_header(exc, "x-request-id"),
            retry_after=_retry_delay(exc),
            overloaded=exc.code == 503 or exc.status == "UNAVAILABLE",
            too_long=_too_long(message),
        )
    if isinstance(exc, _TIMEOUTS):
        return ApplicationError(
            "model request timed out before the endpoint answered",
            {"exception_type": type(exc).__name__},
            type="ModelTimeout",
        )
    if isinstance(exc, _TRANSPORT_ERRORS):
        return ApplicationError(
            f"could not connect to the Gemini endpoint ({type(exc).__name__})",
            {"exception_type": type(exc).__name__},
            type="ModelConnectionError",
        )
    if isinstance(exc, pydantic.ValidationError):
        # The same settings fail the same way on every attempt.
        return ApplicationError(
            f"the Gemini request is not valid: {exc.errors(include_url=False)[0]['msg']}",
            type="ModelRequestInvalid",
            non_retryable=True,
        )
    return to_application_error(exc)


def _cache_gone(exc: BaseException) -> bool:
    """Whether the API refused a request because its named cache does not exist."""
    if not isinstance(exc, genai_errors.ClientError) or exc.code not in (400, 403, 404):
        return False
    return "cachedcontent" in (exc.message or "").lower().replace(" ", "")


def _retry_delay(exc: genai_errors.APIError) -> timedelta | None:
    """The wait the API asked for: a ``RetryInfo`` detail, else ``Retry-After``."""
    error = exc.details.get("error", exc.details) if isinstance(exc.details, dict) else {}
    for detail in error.get("details") or [] if isinstance(error, dict) else []:
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("RetryInfo"):
            try:
                return capped_delay(float(str(detail.get("retryDelay", "")).rstrip("s")))
            except ValueError:
                return None
    after = _header(exc, "retry-after")
    try:
        return capped_delay(float(after)) if after is not None else None
    except ValueError:
        return None


def _header(exc: genai_errors.APIError, name: str) -> str | None:
    headers = getattr(exc.response, "headers", None)
    value = headers.get(name) if headers is not None else None
    return str(value) if value is not None else None


def _too_long(message: str) -> bool:
    """Whether the API's message says the prompt exceeds the context window."""
    lowered = message.lower()
    return "exceeds the maximum number of tokens" in lowered or "input token count" in lowered


def to_model_response(
    answer: Any, request: ModelRequest, *, parts: Sequence[Any] | None = None
) -> ModelResponse:
    """The ``ModelResponse`` for a ``GenerateContentResponse`` (its parts given when streamed)."""
    candidate = answer.candidates[0] if answer.candidates else None
    if parts is None:
        parts = list(_candidate_parts(answer))
    texts: list[str] = []
    calls: list[ToolCall] = []
    for part in parts:
        if part.text and not part.thought:
            texts.append(part.text)
        elif part.function_call is not None:
            call = part.function_call
            calls.append(
                ToolCall(
                    id=call.id or f"call_{request.step}_{len(calls)}",
                    name=call.name or "",
                    arguments=json.dumps(call.args or {}),
                )
            )
    kept: list[dict[str, Any]] = []
    if any(part.thought or part.thought_signature for part in parts):
        kept = [
            {"type": GEMINI_PART, "part": part.model_dump(mode="json", exclude_none=True)}
            for part in parts
        ]
    reason = candidate.finish_reason if candidate is not None else None
    name = getattr(reason, "value", reason)
    if name in _UNREADABLE and not texts and not calls:
        # Nothing to act on, and the same request usually succeeds when sent again:
        # retried, rather than ended as an empty answer.
        raise ApplicationError(
            f"the model's answer could not be read ({name})",
            {"finish_reason": name},
            type="ModelMalformedAnswer",
        )
    if answer.prompt_feedback is not None and answer.prompt_feedback.block_reason is not None:
        finish: str | None = "content_filter"  # the prompt itself was blocked
    elif name == "STOP" and calls:
        finish = "tool_calls"
    else:
        finish = _FINISH_REASONS.get(str(name), str(name).lower()) if name else None
    usage = answer.usage_metadata
    return ModelResponse(
        message=Message(
            role="assistant",
            content="".join(texts) or None,
            tool_calls=calls,
            step=request.step,
            provider_items=kept,
        ),
        usage=Usage(
            requests=1,
            # The prompt's count includes what came from the cache.
            input_tokens=(usage.prompt_token_count or 0) if usage else 0,
            output_tokens=(
                (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0)
                if usage
                else 0
            ),
            cached_tokens=(usage.cached_content_token_count or 0) if usage else 0,
        ),
        finish_reason=finish,
        model=answer.model_version or request.model,
    )


def _candidate_parts(answer: Any) -> list[Any]:
    candidate = answer.candidates[0] if answer.candidates else None
    content = candidate.content if candidate is not None else None
    return list(content.parts or []) if content is not None else []


def _later(last: Any, chunk: Any) -> Any:
    """The chunk that tells how a stream ended: the later one, keeping earlier usage."""
    if chunk.usage_metadata is None and last.usage_metadata is not None:
        chunk.usage_metadata = last.usage_metadata
    if not chunk.candidates and last.candidates:
        chunk.candidates = last.candidates
    return chunk


class _Parts:
    """A streamed answer's parts put back together: each text part's pieces joined.

    A signature comes with the last piece of its part; a new part starts after a
    signed one, at a change between thought and answer, and at a function call.
    """

    def __init__(self) -> None:
        self.parts: list[Any] = []
        self._open = False  # the last part is text that more pieces may extend

    def add(self, part: Any) -> None:
        if part.text is None or part.function_call is not None:
            self.parts.append(part)
            self._open = False
            return
        last = self.parts[-1] if self.parts else None
        if self._open and last is not None and bool(last.thought) == bool(part.thought):
            self.parts[-1] = last.model_copy(
                update={"text": last.text + part.text, "thought_signature": part.thought_signature}
            )
        else:
            self.parts.append(part)
        self._open = part.thought_signature is None


def _config(request: ModelRequest) -> dict[str, Any]:
    config: dict[str, Any] = {_SETTINGS.get(k, k): v for k, v in request.settings.items()}
    # The tools are declarations; the SDK must not try to call Python functions itself.
    config["automatic_function_calling"] = {"disable": True}
    if request.output is not None:
        config["response_mime_type"] = "application/json"
        config["response_json_schema"] = request.output.json_schema
    return config


def _tools(tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The function declarations, sorted by name (a stable prefix), as one tool."""
    declarations = []
    for tool in tools:
        function = tool.get("function", tool)
        declaration: dict[str, Any] = {"name": function["name"]}
        if function.get("description"):
            declaration["description"] = function["description"]
        parameters = function.get("parameters")
        if parameters:
            declaration["parameters_json_schema"] = parameters
        declarations.append(declaration)
    declarations.sort(key=lambda d: str(d["name"]))
    return [{"function_declarations": declarations}] if declarations else []


def _stable_length(conversation: Sequence[Message]) -> int:
    """How many messages stay the same until the next compaction: up to its summary.

    Zero without a summary, and never all of them (a request needs contents of its own).
    """
    summary = max((i for i, m in enumerate(conversation) if m.compaction is not None), default=-1)
    cut = summary + 1
    return cut if cut < len(conversation) else 0


def _contents(
    messages: Sequence[Message], sent_ids: dict[str, str | None] | None = None
) -> list[dict[str, Any]]:
    """Messages as Gemini contents: tool results in user turns, same roles merged.

    ``sent_ids`` maps a call's id in the run to the id Gemini saw for it (``None``: it
    gave none), filled from the assistant messages and read by the tool results.
    """
    sent_ids = {} if sent_ids is None else sent_ids
    contents: list[dict[str, Any]] = []
    for message in messages:
        role = "model" if message.role == "assistant" else "user"
        parts = _parts(message, sent_ids)
        if not parts:
            continue
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": parts})
    return contents


def _parts(message: Message, sent_ids: dict[str, str | None]) -> list[dict[str, Any]]:
    """One message's parts; an answer Gemini signed goes back exactly as it came."""
    if message.role == "tool":
        response: dict[str, Any] = {
            "name": message.name or "",
            "response": {"output": message.content or ""},
        }
        call_id = sent_ids.get(message.tool_call_id or "", message.tool_call_id)
        if call_id is not None:
            response["id"] = call_id
        return [{"function_response": response}]
    kept = [item["part"] for item in message.provider_items if item.get("type") == GEMINI_PART]
    calls = [part["function_call"] for part in kept if "function_call" in part]
    if kept and len(calls) == len(message.tool_calls):
        for call, sent in zip(message.tool_calls, calls, strict=True):
            sent_ids[call.wire_id] = sent.get("id")
        return [dict(part) for part in kept]
    parts: list[dict[str, Any]] = []
    if message.content:
        # A system message after the conversation began (a recalled memory, a summary)
        # is the user's text: Gemini has a system instruction, not system turns.
        text = message.content if message.role != "system" else f"[system] {message.content}"
        parts.append({"text": text})
    for call in message.tool_calls:
        sent_ids[call.wire_id] = call.wire_id
        parts.append(
            {
                "function_call": {
                    "id": call.wire_id,
                    "name": call.name,
                    "args": arguments_object(call),
                }
            }
        )
    return parts
