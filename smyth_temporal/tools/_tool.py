"""The ``@tool`` decorator and the ``Tool`` it makes.

A ``Tool`` is plain data plus the user's function: workflow code reads its schema,
validates the model's arguments with it and schedules its activity by name; only the
worker ever calls the function (in ``_activity.py``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import dataclasses
import functools
import inspect
import itertools
import json
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, cast, get_type_hints, overload

import pydantic
from temporalio import workflow
from temporalio.common import RetryPolicy

from smyth_temporal.exceptions import ToolArgumentsError, ToolDefinitionError
from smyth_temporal.tools._policy import ApprovalPolicy, ApprovalRequirement
from smyth_temporal.tools._reconcile import (
    ReconcileFunction,
    check_reconcile,
    reconcile_activity_name,
)
from smyth_temporal.types.secrets import SECRET_NAME_PATTERN
from smyth_temporal.types.tools import OnTimeout, ToolEffect

__all__ = [
    "ACTIVITY_EXECUTOR",
    "ARGUMENT_BOUNDS_PATCH",
    "DEFAULT_TOOL_HEARTBEAT_TIMEOUT",
    "DEFAULT_TOOL_MAX_OUTPUT_CHARS",
    "DEFAULT_TOOL_TIMEOUT",
    "LOCAL_TOOL_MAX_TIMEOUT",
    "MAX_ARGUMENT_CHARS",
    "MAX_ARGUMENT_DEPTH",
    "TOOL_THREADS",
    "ApprovalPolicy",
    "ApprovalRequirement",
    "Bounded",
    "Tool",
    "run_blocking",
    "tool",
]

DEFAULT_TOOL_TIMEOUT = timedelta(minutes=5)
"""How long one attempt of a tool may run (activity start-to-close timeout)."""

DEFAULT_TOOL_HEARTBEAT_TIMEOUT = timedelta(seconds=2)
"""How soon a tool attempt on a crashed worker is retried elsewhere.

Tool activities heartbeat automatically (every half second) while the function runs,
and a plain ``def`` tool runs in a thread, so this bounds crash recovery without
bounding how long a tool may take. An ``async def`` tool must not block its event loop
for this long (``time.sleep``, CPU work): that stops the heartbeats of every activity
on the worker, and the server re-runs them. Changed in 0.5.0: 2 s (was 5 s).
"""

DEFAULT_TOOL_MAX_OUTPUT_CHARS = 20_000
"""Tool output longer than this is truncated (with a note to the model).

It keeps the prompt within reason and every activity result far below Temporal's
payload limit (2 MiB), past which a result fails with a *retryable* error forever.
"""

_DEFAULT_RETRY = RetryPolicy(
    # The first retry is the re-run of an attempt lost with its worker: a quarter of a
    # second, so recovery is not a second slower than it needs to be. The steeper
    # backoff keeps the whole budget near what it was (about 10 s over 5 attempts).
    initial_interval=timedelta(milliseconds=250),
    backoff_coefficient=3.0,
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=5,
)

ToolFunction = Callable[..., Awaitable[Any]] | Callable[..., Any]
"""An ``async def`` function, or (added in 0.5.0) a plain ``def`` one run in a thread."""

LOCAL_TOOL_MAX_TIMEOUT = timedelta(seconds=10)
"""A ``read_only`` tool whose ``timeout`` is at most this runs as a local activity unless
``@tool(local=False)`` says otherwise. Added in 0.4.0."""

ACTIVITY_EXECUTOR = "activity"
"""The executor of ``@tool`` functions: each call is the tool's own activity."""

MAX_ARGUMENT_DEPTH = 32
"""Arguments nested deeper than this (objects and arrays, the arguments object counted)
are refused, before any parser or hash walks them. Added in 0.8.0.

Validation, hashing, redaction and the payload converter all recurse over a value: a
model that writes 5,000 nested brackets made one of them raise ``RecursionError`` in
workflow code, and the workflow task failed forever.
"""

MAX_ARGUMENT_CHARS = 256 * 1024
"""Arguments longer than this (characters of JSON) are refused. Added in 0.8.0.

They cross to the tool's activity and, for a gated call, into the approval request
and the run's memo; this keeps one call far below Temporal's payload limits.
"""

ARGUMENT_BOUNDS_PATCH = "smyth-argument-bounds"
"""The ``workflow.patched`` id agents pass as ``bounded``: runs started before 0.8.0
validated without bounds, and replay their recorded calls that way. Added in 0.8.0."""

Bounded = bool | Callable[[], bool]
"""Whether ``Tool.validate_arguments`` refuses arguments past the bounds: a flag, or a
callable asked only when they are. Added in 0.8.0."""


@dataclass(frozen=True)
class Tool:
    """A function the model can call, run as its own Temporal activity.

    Made by ``@tool``; see there for the options. Calling a ``Tool`` calls the function
    directly (handy in unit tests); agents never do that, they schedule its activity.

    Added in 0.1.0.
    """

    fn: ToolFunction
    """The decorated function (``async def``, or a plain ``def`` run in a thread)."""
    name: str
    """The name the model calls the tool by; also the stable part of its activity name."""
    description: str
    """What the model is told the tool does (the docstring's summary by default)."""
    arguments_model: type[pydantic.BaseModel]
    """A pydantic model of the parameters, built from the type hints."""
    effect: ToolEffect = "read_only"
    """See ``ToolEffect``."""
    timeout: timedelta = DEFAULT_TOOL_TIMEOUT
    """Start-to-close timeout of one attempt."""
    heartbeat_timeout: timedelta = DEFAULT_TOOL_HEARTBEAT_TIMEOUT
    """Heartbeat timeout of one attempt (heartbeats are sent automatically)."""
    retry: RetryPolicy = field(default_factory=lambda: _DEFAULT_RETRY)
    """Retry policy of the tool's activity."""
    max_output_chars: int = DEFAULT_TOOL_MAX_OUTPUT_CHARS
    """Output past this many characters is truncated with a note to the model."""
    requires_approval: ApprovalRequirement = False
    """Whether a call waits for a person's decision before it runs (see
    ``ApprovalRequirement``; changed in 0.9.0: an ``ApprovalPolicy``)."""
    approval_timeout: timedelta | None = None
    """How long a request waits (default: the agent's ``approval_timeout``)."""
    on_timeout: OnTimeout | None = None
    """What happens at the deadline (default: the agent's ``on_approval_timeout``)."""
    executor: str = ACTIVITY_EXECUTOR
    """What runs a call: ``activity`` (the tool's own activity on a worker, for every
    ``@tool``), or the name of an executor of the agent runtime (``memory`` and
    ``delegate`` for the built-in tools). Added in 0.3.0."""
    secrets: tuple[str, ...] = ()
    """Secrets the tool reads through ``tool_context().secrets``, resolved on the worker
    for each call. Added in 0.4.0."""
    local: bool = False
    """Run each call as a Temporal local activity (see ``@tool(local=...)``). Added in 0.4.0."""
    reconcile: ReconcileFunction | None = None
    """Asks whether a call already happened (see ``@tool(reconcile=...)``). Added in 0.10.0."""

    def needs_approval(self, arguments: Mapping[str, Any]) -> bool:
        """Whether this call (with validated JSON ``arguments``) needs a decision first."""
        if isinstance(self.requires_approval, ApprovalPolicy):
            return self.requires_approval.gates(self.bind_arguments(arguments))
        if callable(self.requires_approval):
            return bool(self.requires_approval(**self.bind_arguments(arguments)))
        return bool(self.requires_approval)

    @property
    def approval_policy(self) -> ApprovalPolicy | None:
        """The tool's ``ApprovalPolicy``, if ``requires_approval`` is one. Added in 0.9.0."""
        policy = self.requires_approval
        return policy if isinstance(policy, ApprovalPolicy) else None

    @property
    def activity_name(self) -> str:
        """The tool's activity type name: stable, so running agents survive deploys."""
        return f"smyth.tool.{self.name}"

    @property
    def reconcile_activity_name(self) -> str:
        """The activity type of the tool's reconcile hook. Added in 0.10.0."""
        return reconcile_activity_name(self.name)

    @property
    def read_only(self) -> bool:
        """Whether the tool may run concurrently with other read-only calls."""
        return self.effect == "read_only"

    def schema(self) -> dict[str, Any]:
        """The tool's definition in the chat-completions ``tools`` shape (read-only)."""
        return self._schema

    @functools.cached_property
    def _schema(self) -> dict[str, Any]:
        # Built once per tool: every model turn (and every replay of one) sends the
        # schemas, and generating them costs about 0.4 ms per tool.
        parameters = self.arguments_model.model_json_schema()
        parameters.pop("title", None)
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": parameters,
            },
        }

    def validate_arguments(
        self, raw: str | Mapping[str, Any], *, bounded: Bounded = True
    ) -> dict[str, Any]:
        """Validate the model's arguments against the schema.

        Args:
            raw: The arguments as the model wrote them (a JSON object) or a mapping.
            bounded: Refuse arguments past the bounds (see ``check_bounds``).

        Returns:
            The validated arguments in JSON form, ready to cross the activity boundary.

        Raises:
            ToolArgumentsError: The arguments are not a JSON object, are too large or
                too deeply nested, or do not fit; the message is written for the
                model, so it can correct the call.

        Changed in 0.8.0: bounded in size and depth, ``bounded``.
        """
        self.check_bounds(raw, bounded)
        try:
            if isinstance(raw, str):
                parsed = self.arguments_model.model_validate_json(raw or "{}")
            else:
                parsed = self.arguments_model.model_validate(dict(raw))
        except pydantic.ValidationError as exc:
            problems = [
                f"{'.'.join(str(p) for p in err['loc']) or '(arguments)'}: {err['msg']}"
                for err in exc.errors(include_url=False)
            ]
            raise self.arguments_error(problems) from None
        return parsed.model_dump(mode="json")

    def check_bounds(self, raw: str | Mapping[str, Any], bounded: Bounded = True) -> None:
        """Refuse arguments past ``MAX_ARGUMENT_CHARS`` or ``MAX_ARGUMENT_DEPTH``.

        Checked without recursion (JSON text is scanned, not parsed), so it is safe on
        any input; every ``validate_arguments`` calls it first. ``bounded`` may be a
        callable, asked only for arguments past the bounds (the agent runtime passes a
        ``workflow.patched`` check, so a run started before 0.8.0 replays as recorded).

        Added in 0.8.0.

        Raises:
            ToolArgumentsError: The arguments are too large or too deeply nested.
        """
        problem = _bounds_problem(raw)
        if problem is not None and (bounded() if callable(bounded) else bounded):
            raise self.arguments_error([f"(arguments): {problem}"])

    def arguments_error(self, problems: Sequence[str]) -> ToolArgumentsError:
        """The error that tells the model what is wrong with its arguments, and the schema."""
        return ToolArgumentsError(
            f"Invalid arguments for tool '{self.name}': {'; '.join(problems)}. "
            "Expected a JSON object matching: "
            + json.dumps(self.schema()["function"]["parameters"])
        )

    @property
    def qualified_name(self) -> str:
        """The tool's name across agents: its ``name`` (``server.tool`` for MCP tools).

        Sub-agent limits (``AgentLimits.tools``) are written in these names, so a child
        gets the same MCP tool whatever name it offers the tool under.
        """
        return self.name

    def bind_arguments(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Turn validated JSON arguments back into the function's keyword arguments."""
        parsed = self.arguments_model.model_validate(dict(arguments))
        return {name: getattr(parsed, name) for name in type(parsed).model_fields}

    @property
    def blocking(self) -> bool:
        """Whether the function is a plain ``def``, run in a thread.

        A call that blocks (I/O without ``await``, CPU work) then leaves the event loop
        free to heartbeat. Added in 0.5.0.
        """
        return not inspect.iscoroutinefunction(self.fn)

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the function directly, outside any agent (a plain ``def`` in a thread)."""
        if self.blocking:
            return await run_blocking(self.fn, *args, **kwargs)
        return await self.fn(*args, **kwargs)


def _bounds_problem(raw: str | Mapping[str, Any]) -> str | None:
    if isinstance(raw, str) and len(raw) > MAX_ARGUMENT_CHARS:
        return f"{len(raw):,} characters long, at most {MAX_ARGUMENT_CHARS:,} allowed"
    depth = json_depth(raw) if isinstance(raw, str) else value_depth(raw, MAX_ARGUMENT_DEPTH)
    if depth > MAX_ARGUMENT_DEPTH:
        return f"nested more than {MAX_ARGUMENT_DEPTH} levels deep"
    if not isinstance(raw, str):
        size = len(json.dumps(raw, ensure_ascii=False, default=str))
        if size > MAX_ARGUMENT_CHARS:
            return f"{size:,} characters long, at most {MAX_ARGUMENT_CHARS:,} allowed"
    return None


# A JSON string to its closing quote (or the end of an unterminated one: possessive,
# so scanning stays linear whatever the quotes and backslashes), and what is not a bracket.
_JSON_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+(?:"|\\?\Z)', re.DOTALL)
_NOT_BRACKETS = re.compile(r"[^\[\]{}]++")
_NESTING = {"[": 1, "{": 1, "]": -1, "}": -1}


def json_depth(text: str) -> int:
    """How deeply JSON ``text`` nests arrays and objects, scanned without parsing it.

    Brackets inside strings do not count. Linear in the text and free of recursion,
    so it can size any input before a recursive parser sees it. Malformed text gets
    some number, which its parser then refuses anyway.

    Added in 0.8.0.
    """
    brackets = _NOT_BRACKETS.sub("", _JSON_STRING.sub("", text))
    return max(itertools.accumulate(map(_NESTING.__getitem__, brackets)), default=0)


def value_depth(value: object, limit: int) -> int:
    """How deeply ``value`` nests dicts, lists and tuples, counting at most to ``limit + 1``.

    Iterative, so a value nested past the interpreter's recursion limit is measured too.

    Added in 0.8.0.
    """
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Iterable[object] = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


async def run_blocking(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run a plain function in a worker thread and wait for it, context variables and all.

    ``tool_context()`` (a context variable) reads the same in the thread. The thread
    cannot be interrupted: if the activity is cancelled, the call runs on to its end
    and its result is dropped.

    Added in 0.5.0.
    """
    context = contextvars.copy_context()
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(
        _blocking_executor(), functools.partial(context.run, fn, *args, **kwargs)
    )


TOOL_THREADS = 100
"""Threads that run plain ``def`` tools in one worker process (as many as temporalio's
default ``max_concurrent_activities``, so a call never waits for a thread). Added in 0.5.0."""

_executor: concurrent.futures.ThreadPoolExecutor | None = None


def _blocking_executor() -> concurrent.futures.ThreadPoolExecutor:
    """The process's thread pool for plain ``def`` tools, made at its first use.

    Not asyncio's default executor: that one has ``cpu_count + 4`` threads (6 on two
    cores), so a few slow blocking tools would hold up every other one.
    """
    global _executor
    if _executor is None:
        _executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=TOOL_THREADS, thread_name_prefix="smyth-tool"
        )
    return _executor


@overload
def tool(fn: ToolFunction, /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    effect: ToolEffect = "read_only",
    timeout: timedelta | None = None,
    heartbeat_timeout: timedelta | None = None,
    retry: RetryPolicy | None = None,
    max_output_chars: int | None = None,
    requires_approval: ApprovalRequirement = False,
    approval_timeout: timedelta | None = None,
    on_timeout: OnTimeout | None = None,
    executor: str = ACTIVITY_EXECUTOR,
    secrets: Sequence[str] = (),
    local: bool | None = None,
    reconcile: ReconcileFunction | None = None,
) -> Callable[[ToolFunction], Tool]: ...


def tool(
    fn: ToolFunction | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    effect: ToolEffect = "read_only",
    timeout: timedelta | None = None,
    heartbeat_timeout: timedelta | None = None,
    retry: RetryPolicy | None = None,
    max_output_chars: int | None = None,
    requires_approval: ApprovalRequirement = False,
    approval_timeout: timedelta | None = None,
    on_timeout: OnTimeout | None = None,
    executor: str = ACTIVITY_EXECUTOR,
    secrets: Sequence[str] = (),
    local: bool | None = None,
    reconcile: ReconcileFunction | None = None,
) -> Tool | Callable[[ToolFunction], Tool]:
    """Turn a function into a tool the model can call.

    The name defaults to the function's name, the description to the docstring's
    summary, and the JSON schema comes from the type hints (parameter descriptions from
    a Google-style ``Args:`` section). Every call runs as its own activity, named
    ``smyth.tool.<name>``; inside it, ``tool_context()`` gives the call's idempotency key.
    An ``async def`` function runs on the worker's event loop; a plain ``def`` one runs
    in a thread (``TOOL_THREADS`` of them per worker process), so a tool that blocks
    keeps heartbeating.

    Args:
        fn: The function, when used as a bare ``@tool``.
        name: The tool's name (letters, digits, ``_`` and ``-``).
        description: What the model is told the tool does.
        effect: ``read_only`` (default), ``idempotent`` or ``side_effect``; see ``ToolEffect``.
        timeout: Start-to-close timeout of one attempt (default 5 minutes).
        heartbeat_timeout: How soon an attempt on a crashed worker is retried (default 2 s).
        retry: Retry policy; the default makes 5 attempts, the first retry after 250 ms,
            then backing off (3 times longer each time).
        max_output_chars: Truncate longer output, with a note to the model.
        requires_approval: ``True``, or a deterministic predicate over the validated
            arguments (``lambda order: order.amount > 10_000``): such calls wait for a
            person's decision (see ``ApprovalDecision``) before they run. Or an
            ``ApprovalPolicy``: which calls, which roles, how many approvers, by when,
            escalation and the timeout policy.
        approval_timeout: How long a request waits (default: the agent's setting).
        on_timeout: ``"reject"``, ``"approve"`` or ``"fail"`` at the deadline
            (default: the agent's setting, itself ``"reject"``).
        executor: What runs a call: ``"activity"`` (default, the function on a worker)
            or the name of an executor the agent class provides in
            ``AgentWorkflow.tool_executors`` (a tool run by workflow code, from its
            state and building blocks; the function is then only its signature).
        secrets: Names of secrets the tool reads with ``tool_context().secrets[NAME]``;
            the worker resolves them per call (its environment or secrets file, within
            its allow-list) and masks their values in the tool's result and errors.
        local: Run each call as a Temporal local activity: in the worker that runs the
            agent, recorded as a marker, without the round trip through the server's
            task queue (about 4 ms instead of about 50 ms a call on the dev server).
            For short, cheap, retry-safe calls; a local call cannot heartbeat, and a
            crash re-runs it when the run resumes (same idempotency key). Default
            (``None``): local when the tool is ``read_only`` with a ``timeout`` of at
            most ``LOCAL_TOOL_MAX_TIMEOUT`` (10 s), else an ordinary activity.
        reconcile: ``fn(idempotency_key, arguments)`` (``async def`` or plain ``def``)
            that looks up whether a call with that key already happened and returns a
            ``Reconciled``. Asked when a rewound run makes a call the rewind could not
            undo (under the abandoned call's key), and when Temporal retries an attempt
            that may have acted (its worker died, its heartbeat timed out): ``done``
            reuses its result, ``not_done`` runs the tool, ``unknown`` asks a person.
            Only ``side_effect`` tools take one.

    Returns:
        A ``Tool``, or a decorator that makes one.

    Raises:
        ToolDefinitionError: The function is a generator, a parameter has no type
            hint, or ``reconcile`` is given to a tool that is not ``side_effect``.

    Added in 0.1.0. Changed in 0.3.0: ``executor``. Changed in 0.4.0: ``secrets``,
    ``local``. Changed in 0.5.0: plain ``def`` functions (run in a thread); a 2 s
    heartbeat timeout and a 250 ms first retry by default. Changed in 0.9.0:
    ``requires_approval`` takes an ``ApprovalPolicy``. Changed in 0.10.0: ``reconcile``.
    """
    check_reconcile(reconcile, effect)
    bad = [n for n in secrets if not re.match(SECRET_NAME_PATTERN, n)]
    if bad or isinstance(secrets, str):
        raise ToolDefinitionError(
            f"@tool(secrets=...) takes a list of names like WEATHER_KEY, not {secrets!r}"
        )

    def make(fn: ToolFunction) -> Tool:
        options: tuple[object, ...] = (name, description, effect, timeout, heartbeat_timeout)
        options += (retry, max_output_chars, approval_timeout, on_timeout, executor)
        options += (tuple(secrets), local)
        key = (*_where_defined(fn), repr(options), *_where_defined(requires_approval))
        key += _where_defined(reconcile)
        sandboxed = workflow.unsafe.in_sandbox()
        if sandboxed and key in _BUILT:
            return _BUILT[key]
        built = _build(fn)
        if not sandboxed:
            _BUILT[key] = built
        return built

    def _build(fn: ToolFunction) -> Tool:
        spec = _make_tool(
            fn,
            name=name,
            description=description,
            effect=effect,
            timeout=timeout,
            heartbeat_timeout=heartbeat_timeout,
            retry=retry,
            max_output_chars=max_output_chars,
        )
        return dataclasses.replace(
            spec,
            requires_approval=requires_approval,
            approval_timeout=approval_timeout,
            on_timeout=on_timeout,
            executor=executor,
            secrets=tuple(secrets),
            reconcile=reconcile,
            local=(
                local
                if local is not None
                else spec.effect == "read_only" and spec.timeout <= LOCAL_TOOL_MAX_TIMEOUT
            ),
        )

    return make(fn) if fn is not None else make


_BUILT: dict[tuple[object, ...], Tool] = {}
"""Tools the worker built, by where their function is defined and their options.

The workflow sandbox re-imports an agent's module for every run it starts, and with it
each ``@tool`` there: each would build its pydantic arguments model again, the largest
part of a parked agent's memory (10 tools: some 200 KiB a run). In workflow code a tool
is only a description (name, schema, options; the function runs in an activity), so a
run reuses the ``Tool`` the worker built when it imported the same module. A key names
the function's file, line and name, and every option, so a different tool never matches.
"""


def _where_defined(target: object) -> tuple[object, ...]:
    """Where a function is defined; ``(repr,)`` for a value.

    Module, name, file and line, and its annotations (which a factory may vary).
    """
    if isinstance(target, ApprovalPolicy):
        # Its repr holds the predicate's address, which differs in every sandbox.
        return (repr(dataclasses.replace(target, when=None)), *_where_defined(target.when))
    code = getattr(target, "__code__", None)
    if code is None:
        return (repr(target) if not callable(target) else id(target),)
    return (
        getattr(target, "__module__", None),
        getattr(target, "__qualname__", None),
        code.co_filename,
        code.co_firstlineno,
        repr(getattr(target, "__annotations__", None)),
    )


_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_EFFECTS: tuple[ToolEffect, ...] = ("read_only", "idempotent", "side_effect")


def _make_tool(
    fn: ToolFunction,
    *,
    name: str | None,
    description: str | None,
    effect: ToolEffect,
    timeout: timedelta | None,
    heartbeat_timeout: timedelta | None,
    retry: RetryPolicy | None,
    max_output_chars: int | None,
) -> Tool:
    where = getattr(fn, "__qualname__", repr(fn))
    if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
        raise ToolDefinitionError(
            f"@tool needs a function that returns its result; {where} is a generator"
        )
    if not callable(fn):
        raise ToolDefinitionError(f"@tool needs a function, not {fn!r}")
    tool_name = name or fn.__name__
    if not _NAME_RE.match(tool_name):
        raise ToolDefinitionError(
            f"tool name {tool_name!r} must be 1-64 letters, digits, '_' or '-' ({where})"
        )
    if effect not in _EFFECTS:
        raise ToolDefinitionError(f"effect must be one of {_EFFECTS}, not {effect!r} ({where})")
    summary, arg_docs = _parse_docstring(inspect.getdoc(fn) or "")
    return Tool(
        fn=fn,
        name=tool_name,
        description=description or summary or tool_name,
        arguments_model=_arguments_model(fn, tool_name, arg_docs),
        effect=effect,
        timeout=timeout or DEFAULT_TOOL_TIMEOUT,
        heartbeat_timeout=heartbeat_timeout or DEFAULT_TOOL_HEARTBEAT_TIMEOUT,
        retry=retry or _DEFAULT_RETRY,
        max_output_chars=max_output_chars or DEFAULT_TOOL_MAX_OUTPUT_CHARS,
    )


def _arguments_model(
    fn: ToolFunction, tool_name: str, arg_docs: Mapping[str, str]
) -> type[pydantic.BaseModel]:
    where = getattr(fn, "__qualname__", repr(fn))
    try:
        hints = get_type_hints(fn)
    except Exception as exc:
        raise ToolDefinitionError(f"cannot resolve the type hints of {where}: {exc}") from exc
    fields: dict[str, Any] = {}
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolDefinitionError(f"{where}: *args/**kwargs cannot be described to a model")
        if param.name not in hints:
            raise ToolDefinitionError(f"{where}: parameter {param.name!r} needs a type hint")
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (
            hints[param.name],
            pydantic.Field(default, description=arg_docs.get(param.name)),
        )
    # Models ask for exactly the declared parameters; "forbid" turns a misspelt
    # argument into an error the model can correct instead of a silently ignored key.
    model = pydantic.create_model(
        f"{tool_name}_arguments",
        __config__=pydantic.ConfigDict(extra="forbid"),
        **fields,
    )
    return cast(type[pydantic.BaseModel], model)


_SECTION_RE = re.compile(
    r"^(Args|Arguments|Parameters|Returns|Raises|Yields|Examples?|Notes?):\s*$"
)
_ARG_RE = re.compile(r"^\s+(\*{0,2}\w+)(?:\s*\([^)]*\))?:\s*(.*)$")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its summary and its ``Args:`` entries."""
    summary_lines: list[str] = []
    args: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    for line in doc.splitlines():
        header = _SECTION_RE.match(line.strip())
        if header and not line.startswith(" "):
            section, current = header.group(1), None
            continue
        if section is None:
            summary_lines.append(line)
        elif section in ("Args", "Arguments", "Parameters"):
            entry = _ARG_RE.match(line)
            if entry and len(line) - len(line.lstrip()) <= 4:
                current = entry.group(1).lstrip("*")
                args[current] = entry.group(2).strip()
            elif current and line.strip():
                args[current] = f"{args[current]} {line.strip()}"
    summary = "\n".join(summary_lines).strip()
    return summary, args
