"""MCP tools without a server: contracts from annotations, names, filters, schemas, errors.

Pure functions of the workflow side (``tools._mcp``, ``tools._jsonschema``,
``agent.mcp``) and the worker side's classification and rendering.
"""

from __future__ import annotations

import pytest
from mcp import MCPError
from mcp.types import (
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    TextContent,
    TextResourceContents,
)

from smyth_temporal import AgentConfig, ApprovalPolicy, ConfigurationError, tool
from smyth_temporal.agent.mcp import build_mcp_tools
from smyth_temporal.exceptions import ToolArgumentsError
from smyth_temporal.mcp import HttpServer, StdioServer, parse_server, secret
from smyth_temporal.mcp._activities import classify, render_result
from smyth_temporal.security import Secrets
from smyth_temporal.tools import MCPTool, effect_from_annotations, is_destructive
from smyth_temporal.types.mcp import MCPToolAnnotations, MCPToolInfo, MCPToolList


def hints(**values: bool) -> MCPToolAnnotations:
    return MCPToolAnnotations(**values)


@pytest.mark.parametrize(
    ("annotations", "effect", "destructive"),
    [
        (None, "side_effect", True),  # the specification's defaults: the safe side
        (hints(), "side_effect", True),
        (hints(read_only_hint=True), "read_only", False),
        (hints(read_only_hint=True, destructive_hint=True), "read_only", False),
        (hints(idempotent_hint=True), "idempotent", True),
        (hints(idempotent_hint=True, destructive_hint=False), "idempotent", False),
        (hints(destructive_hint=False), "side_effect", False),
    ],
)
def test_annotations_imply_effect_and_approval(
    annotations: MCPToolAnnotations | None, effect: str, destructive: bool
) -> None:
    assert effect_from_annotations(annotations) == effect
    assert is_destructive(annotations) is destructive


def listing(server: str, *names: str, **annotations: MCPToolAnnotations) -> MCPToolList:
    return MCPToolList(
        server=server,
        tools=[
            MCPToolInfo(
                name=name,
                description=f"{name} of {server}",
                input_schema={"type": "object", "properties": {"x": {"type": "integer"}}},
                annotations=annotations.get(name),
            )
            for name in names
        ],
    )


@tool
async def status(x: int) -> str:
    """A local tool that takes a name a server uses too."""
    return str(x)


def test_names_are_namespaced_only_where_they_collide() -> None:
    config = AgentConfig(model="m", mcp_servers=["git", "hg", "web"])
    lists = [listing("git", "log", "diff"), listing("hg", "log"), listing("web", "status", "a.b")]
    tools = build_mcp_tools(config, lists, reserved=["status"])
    assert [(t.name, t.qualified_name) for t in tools] == [
        ("git__log", "git.log"),
        ("diff", "git.diff"),
        ("hg__log", "hg.log"),
        ("web__status", "web.status"),
        ("a_b", "web.a.b"),  # the model's APIs accept no dots
    ]
    assert all(t.activity_name == f"smyth.mcp.{t.server}.call_tool" for t in tools)


def test_filters_and_overrides_win_over_annotations() -> None:
    config = AgentConfig(
        model="m",
        mcp_servers=["git"],
        mcp_allow={"git": ["git_*"]},
        mcp_deny={"git": ["git_checkout"]},
        mcp_approval={"git_commit": True, "git.git_reset": False},
        mcp_effects={"git_add": "idempotent"},
    )
    read_only = hints(read_only_hint=True)
    lists = [
        listing(
            "git",
            "git_status",
            "git_commit",
            "git_reset",
            "git_add",
            "git_checkout",
            "push",
            git_status=read_only,
            git_commit=hints(destructive_hint=False),
        )
    ]
    warnings: list[dict[str, object]] = []
    tools = build_mcp_tools(config, lists, (), lambda event, **f: warnings.append(f))
    policy = {t.name: (t.effect, t.requires_approval) for t in tools}
    assert policy == {
        "git_status": ("read_only", False),
        "git_commit": ("side_effect", True),  # not destructive, yet the config gates it
        "git_reset": ("side_effect", False),  # destructive by default, released by name
        "git_add": ("idempotent", True),
    }
    assert warnings == []


def test_an_mcp_override_may_be_an_approval_policy() -> None:
    two = ApprovalPolicy(quorum=2, roles=("operator", "approver"))
    config = AgentConfig(model="m", mcp_servers=["git"], mcp_approval={"git.git_push": two})
    tools = build_mcp_tools(
        config, [listing("git", "git_push", "git_log")], (), lambda e, **f: None
    )
    gated = {t.name: t.approval_policy for t in tools}
    assert gated == {"git_push": two, "git_log": None}
    [push] = [t for t in tools if t.name == "git_push"]
    assert push.needs_approval({}) and push.approval_policy is not None
    assert push.approval_policy.rule().quorum == 2


def test_an_override_that_matches_no_tool_is_reported() -> None:
    config = AgentConfig(model="m", mcp_servers=["git"], mcp_approval={"git_comit": True})
    warnings: list[dict[str, object]] = []
    build_mcp_tools(config, [listing("git", "git_commit")], (), lambda e, **f: warnings.append(f))
    assert warnings == [{"option": "mcp_approval", "keys": ["git_comit"]}]


def test_an_mcp_tool_tells_the_model_what_to_fix() -> None:
    spec = MCPTool.listed(
        name="git_status",
        description="status",
        server="git",
        mcp_name="git_status",
        input_schema={
            "type": "object",
            "properties": {"repo_path": {"type": "string"}},
            "required": ["repo_path"],
            "title": "statusArguments",
        },
    )
    assert spec.validate_arguments('{"repo_path": "."}') == {"repo_path": "."}
    with pytest.raises(ToolArgumentsError) as caught:
        spec.validate_arguments("[1]")
    assert str(caught.value).startswith(
        "Invalid arguments for tool 'git_status': (arguments): expected a JSON object. "
        'Expected a JSON object matching: {"type": "object"'
    )
    assert "title" not in spec.schema()["function"]["parameters"]


def test_agent_config_refuses_bad_mcp_settings() -> None:
    with pytest.raises(ConfigurationError, match="not server names"):
        AgentConfig(model="m", mcp_servers=["git.hub"])
    with pytest.raises(ConfigurationError, match="takes a list"):
        AgentConfig(model="m", mcp_servers="git")
    with pytest.raises(ConfigurationError, match=r"mcp_deny names servers \['web'\]"):
        AgentConfig(model="m", mcp_servers=["git"], mcp_deny={"web": ["*"]})
    with pytest.raises(ConfigurationError, match="mcp_effects"):
        AgentConfig(model="m", mcp_effects={"x": "harmless"})  # type: ignore[dict-item]


def test_worker_side_server_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    name, server = parse_server("git=uvx mcp-server-git --repository '/my repo'")
    assert (name, server) == (
        "git",
        StdioServer(["uvx", "mcp-server-git", "--repository", "/my repo"]),
    )
    assert parse_server("search=https://mcp.internal/mcp") == (
        "search",
        HttpServer("https://mcp.internal/mcp"),
    )
    with pytest.raises(ConfigurationError, match="NAME=COMMAND"):
        parse_server("uvx mcp-server-git")
    token = HttpServer("https://u:p@mcp.internal:8443/mcp?k=v", headers={"A": secret("TOKEN")})
    assert token.describe() == "https://mcp.internal:8443/mcp"  # no credentials in logs
    with pytest.raises(ConfigurationError, match="TOKEN is not set"):
        token.request_headers(Secrets())
    monkeypatch.setenv("TOKEN", "s3cret")
    assert token.request_headers(Secrets()) == {"A": "s3cret"}
    assert token.secret_names() == {"TOKEN"}
    assert "s3cret" not in repr(token)


@pytest.mark.parametrize(
    ("error", "effect", "retryable"),
    [
        (MCPError(CONNECTION_CLOSED, "Connection closed"), "side_effect", True),
        (MCPError(INTERNAL_ERROR, "boom"), "read_only", True),
        (MCPError(INTERNAL_ERROR, "boom"), "idempotent", True),
        (MCPError(INTERNAL_ERROR, "boom"), "side_effect", False),  # it may have acted
        (MCPError(INVALID_PARAMS, "bad"), "read_only", False),
        (ExceptionGroup("tg", [ConnectionError("refused")]), "side_effect", True),
        (ConfigurationError("secret X is not set"), "read_only", False),
    ],
)
def test_failures_are_classified_for_temporal(
    error: BaseException, effect: str, retryable: bool
) -> None:
    classified = classify(error, "git", effect)  # type: ignore[arg-type]
    assert classified.type == "MCPServerError"
    assert classified.non_retryable is not retryable
    assert classified.message.startswith("MCP server 'git': ")


def test_results_become_text_for_the_model() -> None:
    result = CallToolResult(
        content=[
            TextContent(type="text", text="hello"),
            ImageContent(type="image", data="aGVsbG8h", mime_type="image/png"),
            EmbeddedResource(
                type="resource",
                resource=TextResourceContents(
                    uri="file:///a", text="inside", mime_type="text/plain"
                ),
            ),
        ]
    )
    assert render_result(result) == "hello\n[image: image/png, 6 bytes not shown]\ninside"
    structured = CallToolResult(content=[], structured_content={"n": 1})
    assert render_result(structured) == '{"n": 1}'
