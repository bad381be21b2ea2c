"""LLMs: the one seam between HiveMem and a chat model.

Whatever needs a language model (extraction, consolidation, summaries) asks through one
narrow protocol, ``complete(messages, schema=None)``: chat messages in, the reply's text
out or, given a JSON schema, the parsed JSON value that fits it. ``get_llm(name)`` finds
providers among entry points of the group ``hivemem.llms`` and the built-ins:

- ``openai``: any OpenAI-compatible chat endpoint (OpenAI, Ollama, vLLM, a llama.cpp
  server) through the ``openai`` client's ``base_url`` (extra: ``hivemem[openai]``).
  Structured output asks for ``response_format={"type": "json_schema", ...}``; a server
  that refuses it (400/422) is remembered and asked in the prompt instead.
- ``anthropic``: the Anthropic Messages API (``pip install 'hivemem[anthropic]'``), schema in
  the prompt.

Replies are read by ``parse_json_reply`` (code fences, prose around the JSON and trailing
commas tolerated) and checked by ``schema_errors``; a reply that fails is sent back once
with its problem, then ``LLMError``. Timeouts, connection failures and 5xx are retried by
the client (``max_retries``), then ``LLMError`` naming endpoint and model. Constructors
are cheap and side-effect free: the client is imported and built on first use.
"""

from __future__ import annotations

import importlib.metadata
import itertools
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from ..errors import HiveMemError, InvalidInput, MissingDependency

ENTRY_POINT_GROUP = "hivemem.llms"
ROLES = ("system", "user", "assistant")
Message = dict[str, str]


class LLMError(HiveMemError):
    """The model could not be reached, or gave no usable reply."""


@runtime_checkable
class LLM(Protocol):
    """What HiveMem needs from a chat model."""

    @property
    def identity(self) -> str:
        """``"<provider>:<model>"``, recorded with whatever the model produced."""
        ...

    def complete(
        self, messages: Sequence[Mapping[str, str]], schema: Mapping[str, Any] | None = None
    ) -> Any:
        """The reply's text; with ``schema``, the parsed JSON value matching it."""
        ...


def get_llm(name: str, **options: Any) -> LLM:
    """The LLM registered under ``name`` (entry point group ``hivemem.llms``, or a built-in)."""
    found = {ep.name: ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}
    if name in found:
        return found[name].load()(**options)
    if name in BUILTIN_LLMS:
        return BUILTIN_LLMS[name](**options)
    known = sorted({*found, *BUILTIN_LLMS})
    raise InvalidInput("llm", f"unknown LLM provider {name!r}; known: {known}")


# ----------------------------------------------------------------------------- replies


_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)
_CLOSE_AHEAD = re.compile(r"\s*[}\]]")
_CLOSERS = {"{": "}", "[": "]"}
_MAX_STARTS = 32  # brackets tried as the JSON's start: bounds the work on truncated replies


def parse_json_reply(text: str) -> Any:
    """The JSON value in a model's reply: the whole reply, else a fenced block, else the
    first balanced ``{...}`` or ``[...]`` that parses; trailing commas are forgiven and
    ``<think>`` blocks of reasoning models skipped. ``LLMError`` quotes the reply's start."""
    for value in json_candidates(text):
        return value
    raise _no_json(text)


def _no_json(text: str) -> LLMError:
    return LLMError(f"the reply holds no JSON: {text[:200]!r}")


def json_candidates(text: str) -> Iterator[Any]:
    """Every JSON value ``parse_json_reply`` would consider, best first, found lazily: a
    caller with a schema takes the first that fits (prose may hold a "[1]" before it)."""
    body = _THINK.sub("", text).strip()
    fenced = (block.strip() for block in _FENCE.findall(body))
    spans = (body[start:end] for start, end in _balanced_spans(body))
    for candidate in itertools.chain([body], fenced, spans):
        for attempt in (candidate, _drop_trailing_commas(candidate)):
            try:
                yield json.loads(attempt)
                break
            except ValueError:
                continue


def _balanced_spans(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each bracketed span that closes, in order of start; strings skipped."""
    starts = [index for index, char in enumerate(text) if char in _CLOSERS][:_MAX_STARTS]
    for start in starts:
        stack, in_string, escaped = [_CLOSERS[text[start]]], False, False
        for index in range(start + 1, len(text)):
            char = text[index]
            if in_string:
                escaped, in_string = (not escaped and char == "\\"), (escaped or char != '"')
            elif char == '"':
                in_string = True
            elif char in _CLOSERS:
                stack.append(_CLOSERS[char])
            elif char in "}]":
                if char != stack.pop():
                    break
                if not stack:
                    yield start, index + 1
                    break


def _drop_trailing_commas(text: str) -> str:
    """``text`` without commas directly before ``}`` or ``]`` (outside strings)."""
    out, in_string, escaped = [], False, False
    for index, char in enumerate(text):
        if in_string:
            escaped, in_string = (not escaped and char == "\\"), (escaped or char != '"')
        elif char == '"':
            in_string = True
        elif char == "," and _CLOSE_AHEAD.match(text, index + 1):
            continue
        out.append(char)
    return "".join(out)


_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and v.is_integer())
    ),
}


def schema_errors(value: Any, schema: Mapping[str, Any], path: str = "$") -> list[str]:
    """What is wrong with ``value`` under the JSON schema subset models are asked for:
    ``type``, ``enum``, ``required``, ``properties`` and ``items``, recursively. Empty
    when it fits. Not a full validator: keywords outside that subset are ignored."""
    expected = schema.get("type")
    if expected is not None:
        names = [expected] if isinstance(expected, str) else list(expected)
        if not any(_TYPES.get(name, lambda v: True)(value) for name in names):
            return [f"{path}: expected {' or '.join(names)}, got {type(value).__name__}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{path}: {value!r} is not one of {schema['enum']!r}"]
    problems = []
    if isinstance(value, dict):
        missing = [key for key in schema.get("required", ()) if key not in value]
        problems += [f"{path}: missing key {key!r}" for key in missing]
        properties = schema.get("properties")
        for key, subschema in properties.items() if isinstance(properties, Mapping) else ():
            if key in value and isinstance(subschema, Mapping):
                problems += schema_errors(value[key], subschema, f"{path}.{key}")
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            problems += schema_errors(item, schema["items"], f"{path}[{index}]")
    return problems


# ----------------------------------------------------------------------------- shared steps


def check_messages(messages: Sequence[Mapping[str, str]]) -> list[Message]:
    """Plain ``{"role", "content"}`` dicts, or ``InvalidInput`` naming the bad field."""
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence) or not messages:
        raise InvalidInput("messages", "expected a non-empty list of {role, content} messages")
    out = []
    for index, message in enumerate(messages):
        field = f"messages[{index}]"
        if not isinstance(message, Mapping):
            raise InvalidInput(field, "expected a mapping with 'role' and 'content'")
        if extra := sorted(set(message) - {"role", "content"}):
            raise InvalidInput(field, f"unexpected keys {extra}; only 'role' and 'content'")
        if message.get("role") not in ROLES:
            raise InvalidInput(f"{field}.role", f"expected one of {list(ROLES)}")
        if not isinstance(message.get("content"), str):
            raise InvalidInput(f"{field}.content", "expected a string")
        out.append({"role": message["role"], "content": message["content"]})
    return out


def _check_schema(schema: Any) -> Mapping[str, Any]:
    try:
        json.dumps(schema)
    except (TypeError, ValueError):
        schema = None
    if not isinstance(schema, Mapping):
        raise InvalidInput("schema", "expected a JSON schema (a JSON-able mapping) or None")
    return schema


def _with_instruction(messages: list[Message], schema: Mapping[str, Any]) -> list[Message]:
    """``messages`` with the schema added to the system prompt (first message): chat
    templates of local models often refuse a system message anywhere else."""
    text = (
        "Reply with only a JSON value, no prose and no code fences, that matches this "
        f"JSON schema:\n{json.dumps(schema)}"
    )
    if messages[0]["role"] == "system":
        first = {"role": "system", "content": f"{messages[0]['content']}\n\n{text}"}
        return [first, *messages[1:]]
    return [{"role": "system", "content": text}, *messages]


def _structured(ask: Callable[[list[Message]], str], messages: list[Message], schema: Any) -> Any:
    """Ask, parse and check; a reply that fails is sent back once with its problem."""
    text = ask(messages)
    value, problem = _fit(text, schema)
    if problem is None:
        return value
    retry = (
        f"That reply could not be used ({problem}). Reply again with only a JSON value "
        f"matching this JSON schema:\n{json.dumps(schema)}"
    )
    answer = {"role": "assistant", "content": text}
    text = ask([*messages, answer, {"role": "user", "content": retry}])
    value, problem = _fit(text, schema)
    if problem is None:
        return value
    raise LLMError(f"no valid structured reply after 2 attempts: {problem}")


def _fit(text: str, schema: Any) -> tuple[Any, str | None]:
    """The first JSON value in ``text`` that fits ``schema`` (prose may hold a "[1]" before
    it), or what is wrong, to tell the model: the first candidate's problems."""
    told: list[str] = []
    for value in json_candidates(text):
        if not (problems := schema_errors(value, schema)):
            return value, None
        told = told or problems
    if told:
        return None, f"the reply does not match the schema: {'; '.join(told[:5])}"
    return None, str(_no_json(text))


def _check_options(model: Any, timeout: Any, max_retries: Any) -> str:
    if not isinstance(model, str) or not model.strip():
        raise InvalidInput("model", "expected the chat model's name")
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise InvalidInput("timeout", "expected seconds, a number > 0")
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
        raise InvalidInput("max_retries", "expected a whole number >= 0")
    return model.strip()


class _ChatLLM:
    """What the built-ins share: options, message checks, the structured-output loop and
    the translation of the SDKs' errors (both SDKs name them alike)."""

    provider = ""
    default_endpoint = ""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 2,
        temperature: float | None = 0.0,
        max_tokens: int | None = None,
    ) -> None:
        self.model = _check_options(model, timeout, max_retries)
        self.base_url = base_url
        self._api_key = api_key
        self.timeout = timeout
        self.max_retries = max_retries
        self.temperature = temperature
        self.max_tokens = max_tokens
        self._client: Any = None

    @property
    def identity(self) -> str:
        return f"{self.provider}:{self.model}"

    @property
    def endpoint(self) -> str:
        return f"model {self.model} at {self.base_url or self.default_endpoint}"

    def complete(
        self, messages: Sequence[Mapping[str, str]], schema: Mapping[str, Any] | None = None
    ) -> Any:
        """The reply's text; with ``schema``, the parsed JSON value matching it."""
        chat = check_messages(messages)
        if schema is None:
            return self._ask(chat)
        schema = _check_schema(schema)
        return _structured(lambda m: self._ask_structured(m, schema), chat, schema)

    def _ask_structured(self, messages: list[Message], schema: Mapping[str, Any]) -> str:
        return self._ask(_with_instruction(messages, schema))

    def _ask(self, messages: list[Message], **extra: Any) -> str:
        raise NotImplementedError

    def _failure(self, sdk: Any, exc: Exception) -> LLMError:
        if isinstance(exc, sdk.APITimeoutError):
            return LLMError(f"{self.endpoint} timed out after {self.timeout}s")
        if isinstance(exc, sdk.APIConnectionError):
            return LLMError(f"{self.endpoint} could not be reached: {exc}")
        if isinstance(exc, sdk.BadRequestError | sdk.UnprocessableEntityError):
            return LLMError(f"{self.endpoint} refused the request: {exc}")
        return LLMError(f"{self.endpoint} failed: {exc}")

    def _reply_text(self, text: str | None) -> str:
        if not (text or "").strip():
            raise LLMError(f"{self.endpoint} gave an empty reply")
        return text or ""


# ----------------------------------------------------------------------------- OpenAI-compatible


class _FormatRefused(Exception):
    """The server answered 400/422 to a request carrying ``response_format``."""


class OpenAIChatLLM(_ChatLLM):
    """Any OpenAI-compatible chat endpoint — OpenAI, Ollama, vLLM, a llama.cpp server —
    through the ``openai`` client's ``base_url`` (extra: ``hivemem[openai]``). Local
    servers ignore the API key; pass ``api_key`` for hosted ones. ``temperature=None``
    or ``max_tokens=None`` leave the server's default."""

    provider = "openai"
    default_endpoint = "the OpenAI API"
    _native_schema: bool | None = None  # does this server take json_schema? None: not known

    def _ask_structured(self, messages: list[Message], schema: Mapping[str, Any]) -> str:
        if self._native_schema is False:
            return super()._ask_structured(messages, schema)
        name = re.sub(r"[^A-Za-z0-9_-]", "_", str(schema.get("title") or "reply"))[:64]
        response_format = {
            "type": "json_schema",
            "json_schema": {"name": name, "schema": dict(schema), "strict": False},
        }
        try:
            text = self._ask(messages, response_format=response_format)
        except _FormatRefused:
            # trigger: 400/422 to json_schema, never accepted before by this instance's
            # server; why: older Ollama / llama.cpp builds reject it; outcome: the schema
            # goes in the prompt, and from now on too once that request succeeds (if it
            # fails as well, the 400 was about something else and nothing is remembered).
            text = super()._ask_structured(messages, schema)
            self._native_schema = False
            return text
        self._native_schema = True
        return text

    def _connect(self) -> Any:
        if self._client is None:
            try:
                import openai
            except ImportError:
                raise MissingDependency(
                    "the OpenAI-compatible LLM", "pip install 'hivemem[openai]'"
                ) from None
            self._client = openai.OpenAI(
                base_url=self.base_url,
                api_key=self._api_key or "no-key",
                timeout=self.timeout,
                max_retries=self.max_retries,
            )
        return self._client

    def _ask(self, messages: list[Message], **extra: Any) -> str:
        client = self._connect()
        import openai

        if self.temperature is not None:
            extra["temperature"] = self.temperature
        if self.max_tokens is not None:
            extra["max_tokens"] = self.max_tokens
        try:
            response = client.chat.completions.create(model=self.model, messages=messages, **extra)
        except openai.APIError as exc:
            refused = isinstance(exc, openai.BadRequestError | openai.UnprocessableEntityError)
            if refused and "response_format" in extra and self._native_schema is None:
                raise _FormatRefused from exc
            raise self._failure(openai, exc) from exc
        message = response.choices[0].message if response.choices else None
        refusal = getattr(message, "refusal", None)
        if refusal:
            raise LLMError(f"{self.endpoint} refused to answer: {refusal}")
        return self._reply_text(message.content if message else None)


# ----------------------------------------------------------------------------- Anthropic


class AnthropicLLM(_ChatLLM):
    """The Anthropic Messages API (``pip install 'hivemem[anthropic]'``). System messages
    become the ``system`` argument; structured output is asked for in it and parsed tolerantly. The
    client reads ``ANTHROPIC_API_KEY`` when no ``api_key`` is given."""

    provider = "anthropic"
    default_endpoint = "the Anthropic API"
    default_max_tokens = 1024  # the API requires a limit; used when max_tokens is None

    def _connect(self) -> Any:
        if self._client is None:
            try:
                import anthropic
            except ImportError:
                raise MissingDependency(
                    "the Anthropic LLM", "pip install 'hivemem[anthropic]'"
                ) from None
            self._client = anthropic.Anthropic(
                api_key=self._api_key,
                base_url=self.base_url,
                timeout=self.timeout,
                max_retries=self.max_retries,
            )
        return self._client

    def _ask(self, messages: list[Message], **extra: Any) -> str:
        client = self._connect()
        import anthropic

        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        if system:
            extra["system"] = system
        if self.temperature is not None:
            extra["temperature"] = self.temperature
        try:
            response = client.messages.create(
                model=self.model,
                max_tokens=self.max_tokens or self.default_max_tokens,
                messages=[m for m in messages if m["role"] != "system"],
                **extra,
            )
        except anthropic.APIError as exc:
            raise self._failure(anthropic, exc) from exc
        return self._reply_text(
            "".join(b.text for b in response.content if getattr(b, "type", "") == "text")
        )


BUILTIN_LLMS: dict[str, Callable[..., LLM]] = {"openai": OpenAIChatLLM, "anthropic": AnthropicLLM}
