"""Static checks of the production deployment files.

``docker-compose.yml``, ``Dockerfile`` and ``.dockerignore`` are checked for structural
validity and for coherence with each other and with ``pyproject.toml``. No container engine
is needed: the compose file is read with ``yaml.safe_load`` and checked by hand.

Every checker returns a list of problems; each one is run against the real files (expecting
no problems) and against deliberately broken copies (expecting the breakage to be reported),
so that none of these tests can pass vacuously.
"""

from __future__ import annotations

import copy
import fnmatch
import json
import re
import shlex
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_PATH = ROOT / "docker-compose.yml"
DOCKERFILE_PATH = ROOT / "Dockerfile"
DOCKERIGNORE_PATH = ROOT / ".dockerignore"
PYPROJECT_PATH = ROOT / "pyproject.toml"

Compose = dict[str, Any]

TOP_LEVEL_KEYS = {
    "version",
    "name",
    "include",
    "services",
    "networks",
    "volumes",
    "configs",
    "secrets",
    "models",
}
DEPENDS_ON_CONDITIONS = {
    "service_started",
    "service_healthy",
    "service_completed_successfully",
}
TEMPORAL_SERVER_IMAGES = {"temporalio/server", "temporalio/auto-setup"}
TEMPORAL_POSTGRES_PLUGINS = {"postgres12", "postgres12_pgx"}
SEARCH_ATTRIBUTES = {
    "SmythStatus": "Keyword",
    "SmythPendingApprovals": "Int",
    "SmythTenant": "Keyword",
    "SmythApprovalProgress": "KeywordList",
}

# [host_ip:][host_port[-range]:]container_port[-range][/protocol]
PORT_RE = re.compile(
    r"^(?:(?P<ip>\d{1,3}(?:\.\d{1,3}){3}|\[[0-9A-Fa-f:]+\]):)?"
    r"(?:(?P<host>\d+(?:-\d+)?):)?"
    r"(?P<container>\d+(?:-\d+)?)"
    r"(?:/(?P<proto>tcp|udp|sctp))?$"
)
TAG_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")


# --------------------------------------------------------------------------- loading


def load_compose() -> Compose:
    data = yaml.safe_load(COMPOSE_PATH.read_text(encoding="utf-8"))
    assert isinstance(data, dict), "docker-compose.yml must be a YAML mapping"
    return data


def load_pyproject() -> dict[str, Any]:
    with PYPROJECT_PATH.open("rb") as f:
        return tomllib.load(f)


@pytest.fixture
def compose() -> Compose:
    return load_compose()


@pytest.fixture(scope="module")
def pyproject() -> dict[str, Any]:
    return load_pyproject()


# --------------------------------------------------------------------------- helpers


def services_of(compose: Compose) -> dict[str, dict[str, Any]]:
    services = compose.get("services")
    return services if isinstance(services, dict) else {}


def env_of(service: dict[str, Any]) -> dict[str, str | None]:
    """Normalise a service's ``environment`` (mapping or ``KEY=VALUE`` list) to a dict."""
    env = service.get("environment") or {}
    if isinstance(env, list):
        result: dict[str, str | None] = {}
        for item in env:
            key, sep, value = str(item).partition("=")
            result[key] = value if sep else None
        return result
    return {str(k): (None if v is None else str(v)) for k, v in env.items()}


def depends_on_of(service: dict[str, Any]) -> dict[str, str]:
    """Normalise ``depends_on`` (list or mapping) to ``{target: condition}``."""
    deps = service.get("depends_on") or {}
    if isinstance(deps, list):
        return {str(name): "service_started" for name in deps}
    return {
        str(name): str((spec or {}).get("condition", "service_started"))
        for name, spec in deps.items()
    }


def image_repo(image: str) -> str:
    """``registry/name:tag@digest`` -> ``registry/name``."""
    name = image.split("@", 1)[0]
    head, sep, tag = name.rpartition(":")
    return head if sep and "/" not in tag else name


def image_tag(image: str) -> str | None:
    """The tag of an image reference, or None when it has none."""
    name = image.split("@", 1)[0]
    head, sep, tag = name.rpartition(":")
    if not sep or not head or "/" in tag:
        return None
    return tag


def services_by_image(compose: Compose, repos: set[str]) -> list[str]:
    return [
        name
        for name, svc in services_of(compose).items()
        if isinstance(svc.get("image"), str) and image_repo(svc["image"]) in repos
    ]


def single_service(compose: Compose, repos: set[str]) -> str:
    names = services_by_image(compose, repos)
    assert len(names) == 1, f"expected exactly one service running {sorted(repos)}, got {names}"
    return names[0]


def command_text(service: dict[str, Any]) -> str:
    parts = [service.get("entrypoint"), service.get("command")]
    text = []
    for part in parts:
        if isinstance(part, list):
            text.extend(str(p) for p in part)
        elif part is not None:
            text.append(str(part))
    return "\n".join(text)


def command_argv(service: dict[str, Any]) -> list[str]:
    command = service.get("command")
    if isinstance(command, str):
        return shlex.split(command)
    if isinstance(command, list):
        return [str(c) for c in command]
    return []


def split_address(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    assert sep and host and port.isdigit(), f"not a host:port address: {address!r}"
    return host, int(port)


def container_ports(service: dict[str, Any]) -> set[int]:
    result = set()
    for entry in service.get("ports") or []:
        match = PORT_RE.match(str(entry))
        if match and "-" not in match["container"]:
            result.add(int(match["container"]))
    return result


def transitive_deps(compose: Compose, name: str) -> set[str]:
    services = services_of(compose)
    seen: set[str] = set()
    stack = [name]
    while stack:
        for dep in depends_on_of(services.get(stack.pop(), {})):
            if dep not in seen:
                seen.add(dep)
                stack.append(dep)
    return seen


def pyproject_scripts(pyproject: dict[str, Any]) -> dict[str, str]:
    return dict(pyproject["project"].get("scripts", {}))


# --------------------------------------------------------------------------- compose checkers


def check_top_level(compose: Compose) -> list[str]:
    problems = []
    if not isinstance(compose.get("services"), dict) or not compose["services"]:
        problems.append("top-level 'services' must be a non-empty mapping")
    if not isinstance(compose.get("volumes"), dict):
        problems.append("top-level 'volumes' must be a mapping")
    for key in compose:
        if key not in TOP_LEVEL_KEYS and not str(key).startswith("x-"):
            problems.append(f"unknown top-level key {key!r}")
    for name, svc in services_of(compose).items():
        if not isinstance(svc, dict):
            problems.append(f"service {name!r} must be a mapping")
    return problems


def check_image_or_build(compose: Compose) -> list[str]:
    return [
        f"service {name!r} has neither 'image' nor 'build'"
        for name, svc in services_of(compose).items()
        if not svc.get("image") and not svc.get("build")
    ]


def check_depends_on(compose: Compose) -> list[str]:
    services = services_of(compose)
    problems = []
    for name, svc in services.items():
        for target, condition in depends_on_of(svc).items():
            if target not in services:
                problems.append(f"{name!r} depends on undefined service {target!r}")
                continue
            if target == name:
                problems.append(f"{name!r} depends on itself")
            if condition not in DEPENDS_ON_CONDITIONS:
                problems.append(f"{name!r} -> {target!r}: unknown condition {condition!r}")
            target_svc = services[target]
            healthcheck = target_svc.get("healthcheck") or {}
            if condition == "service_healthy" and (
                not healthcheck.get("test") or healthcheck.get("disable")
            ):
                problems.append(f"{name!r} waits for {target!r} to be healthy: no healthcheck")
            if condition == "service_completed_successfully" and target_svc.get("restart") in {
                "always",
                "unless-stopped",
            }:
                problems.append(f"{name!r} waits for {target!r} to exit, but it always restarts")
    for name in services:
        if name in transitive_deps(compose, name):
            problems.append(f"dependency cycle through {name!r}")
    return problems


def named_volumes_used(service: dict[str, Any]) -> list[str]:
    names = []
    for entry in service.get("volumes") or []:
        if isinstance(entry, dict):
            if entry.get("type", "volume") == "volume" and entry.get("source"):
                names.append(str(entry["source"]))
            continue
        parts = str(entry).split(":")
        if len(parts) >= 2 and not parts[0].startswith((".", "/", "~", "$")):
            names.append(parts[0])
    return names


def check_volumes(compose: Compose) -> list[str]:
    declared = set((compose.get("volumes") or {}).keys())
    used: set[str] = set()
    problems = []
    for name, svc in services_of(compose).items():
        for volume in named_volumes_used(svc):
            used.add(volume)
            if volume not in declared:
                problems.append(f"service {name!r} uses undeclared named volume {volume!r}")
        for entry in svc.get("volumes") or []:
            if isinstance(entry, str) and ":" not in entry:
                problems.append(f"service {name!r} has an anonymous volume {entry!r}")
    problems.extend(f"volume {v!r} is declared but never used" for v in declared - used)
    return problems


def check_configs(compose: Compose) -> list[str]:
    declared = compose.get("configs") or {}
    problems = []
    for name, svc in services_of(compose).items():
        for entry in svc.get("configs") or []:
            source = entry.get("source") if isinstance(entry, dict) else entry
            if source not in declared:
                problems.append(f"service {name!r} uses undeclared config {source!r}")
    for name, spec in declared.items():
        if not isinstance(spec, dict) or not (
            {"file", "content", "environment", "external"} & set(spec)
        ):
            problems.append(f"config {name!r} has no source")
    return problems


def check_ports(compose: Compose) -> list[str]:
    problems = []
    seen: dict[tuple[str, str], str] = {}
    for name, svc in services_of(compose).items():
        for entry in svc.get("ports") or []:
            if not isinstance(entry, str):
                problems.append(f"service {name!r}: port {entry!r} must be a quoted string")
                continue
            match = PORT_RE.match(entry)
            if not match:
                problems.append(f"service {name!r}: malformed port mapping {entry!r}")
                continue
            numbers = [
                int(n) for key in ("host", "container") for n in (match[key] or "").split("-") if n
            ]
            if any(not 1 <= n <= 65535 for n in numbers):
                problems.append(f"service {name!r}: port out of range in {entry!r}")
            if match["host"] is None:
                problems.append(f"service {name!r}: {entry!r} publishes a random host port")
                continue
            key = (match["host"], match["proto"] or "tcp")
            if key in seen:
                problems.append(
                    f"host port {key[0]}/{key[1]} published by both {seen[key]!r} and {name!r}"
                )
            seen[key] = name
    return problems


def check_pinned_images(compose: Compose) -> list[str]:
    problems = []
    for name, svc in services_of(compose).items():
        image = svc.get("image")
        if image is None:
            continue
        if not isinstance(image, str) or "$" in image:
            problems.append(f"service {name!r}: image {image!r} must be a literal reference")
            continue
        if "@sha256:" in image:
            continue
        tag = image_tag(image)
        if tag is None:
            problems.append(f"service {name!r}: image {image!r} has no tag")
        elif tag == "latest" or not TAG_RE.match(tag) or not re.search(r"\d", tag):
            problems.append(f"service {name!r}: image {image!r} is not pinned to a version")
    return problems


def check_temporal_coherence(compose: Compose) -> list[str]:
    services = services_of(compose)
    temporal = single_service(compose, TEMPORAL_SERVER_IMAGES)
    postgres = single_service(compose, {"postgres"})
    env = env_of(services[temporal])
    pg_env = env_of(services[postgres])
    problems = []
    if env.get("DB") not in TEMPORAL_POSTGRES_PLUGINS:
        problems.append(
            f"temporal DB={env.get('DB')!r}, expected one of {TEMPORAL_POSTGRES_PLUGINS}"
        )
    if env.get("POSTGRES_SEEDS") != postgres:
        problems.append(f"temporal POSTGRES_SEEDS={env.get('POSTGRES_SEEDS')!r} != {postgres!r}")
    if env.get("DB_PORT", "5432") != "5432":
        problems.append(f"temporal DB_PORT={env.get('DB_PORT')!r}, postgres listens on 5432")
    if env.get("POSTGRES_USER") != pg_env.get("POSTGRES_USER"):
        problems.append("temporal POSTGRES_USER differs from the postgres service's")
    if env.get("POSTGRES_PWD") != pg_env.get("POSTGRES_PASSWORD"):
        problems.append("temporal POSTGRES_PWD differs from the postgres service's password")
    if postgres not in transitive_deps(compose, temporal):
        problems.append(f"temporal does not (even indirectly) depend on {postgres!r}")
    if 7233 not in container_ports(services[temporal]):
        problems.append("temporal does not publish the frontend port 7233")
    # temporalio/server does not create the schema itself: an admin-tools job must, against
    # the same database, before the server starts.
    if image_repo(services[temporal]["image"]) == "temporalio/server":
        schema_jobs = [
            name
            for name in services_by_image(compose, {"temporalio/admin-tools"})
            if "temporal-sql-tool" in command_text(services[name])
        ]
        if not schema_jobs:
            problems.append("no admin-tools service sets up the Temporal SQL schema")
        for job in schema_jobs:
            text = command_text(services[job])
            if f"--ep {postgres}" not in text and f"--endpoint {postgres}" not in text:
                problems.append(f"schema job {job!r} does not target {postgres!r}")
            if env_of(services[job]).get("SQL_PASSWORD") != pg_env.get("POSTGRES_PASSWORD"):
                problems.append(f"schema job {job!r} uses a different database password")
            if depends_on_of(services[temporal]).get(job) != "service_completed_successfully":
                problems.append(f"temporal does not wait for schema job {job!r} to finish")
        dyn_path = env.get("DYNAMIC_CONFIG_FILE_PATH")
        mounted = {
            c.get("target") for c in services[temporal].get("configs") or [] if isinstance(c, dict)
        }
        volume_targets = {
            str(v).split(":")[1] for v in services[temporal].get("volumes") or [] if ":" in str(v)
        }
        if not dyn_path or not any(
            dyn_path == t or dyn_path.startswith(f"{t}/") for t in mounted | volume_targets
        ):
            problems.append("temporal's DYNAMIC_CONFIG_FILE_PATH is not provided by a mount")
    return problems


def check_address_points_at_temporal(compose: Compose, service_name: str) -> list[str]:
    services = services_of(compose)
    temporal = single_service(compose, TEMPORAL_SERVER_IMAGES)
    address = env_of(services[service_name]).get("TEMPORAL_ADDRESS")
    if not address:
        return [f"{service_name!r} has no TEMPORAL_ADDRESS"]
    host, port = split_address(address)
    problems = []
    if host != temporal:
        problems.append(f"{service_name!r} TEMPORAL_ADDRESS host {host!r} != {temporal!r}")
    if port not in container_ports(services[temporal]):
        problems.append(f"{service_name!r} TEMPORAL_ADDRESS port {port} is not temporal's")
    if temporal not in depends_on_of(services[service_name]):
        problems.append(f"{service_name!r} does not depend on {temporal!r}")
    return problems


def check_worker(compose: Compose, pyproject: dict[str, Any]) -> list[str]:
    services = services_of(compose)
    worker = services.get("worker")
    if worker is None:
        return ["no 'worker' service"]
    problems = check_address_points_at_temporal(compose, "worker")
    build = worker.get("build")
    context = build.get("context") if isinstance(build, dict) else build
    dockerfile = build.get("dockerfile", "Dockerfile") if isinstance(build, dict) else "Dockerfile"
    if context not in {".", "./"}:
        problems.append(f"worker builds from {context!r}, expected the repository root '.'")
    elif not (ROOT / dockerfile).is_file():
        problems.append(f"worker's Dockerfile {dockerfile!r} does not exist")

    argv = command_argv(worker)
    scripts = pyproject_scripts(pyproject)
    if len(argv) < 3 or argv[0] not in scripts or argv[1] != "worker":
        problems.append(f"worker command {argv!r} is not '<console script> worker <agents>'")
    for agent in argv[2:]:
        if not re.fullmatch(r"(\$\{[^}]+\}|[\w.]+:\w+)", agent):
            problems.append(f"worker agent {agent!r} is not a 'module:Class' import path")

    env = env_of(worker)
    expected = {"TEMPORAL_NAMESPACE": "default", "SMYTH_TASK_QUEUE": "smyth-agents"}
    for key, value in expected.items():
        if env.get(key) != value:
            problems.append(f"worker {key}={env.get(key)!r}, expected {value!r}")
    for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        if not re.fullmatch(rf"\$\{{{key}(:?-[^}}]*)?\}}", env.get(key) or ""):
            problems.append(f"worker {key} must be passed through from the host (${{{key}:-}})")

    qdrant = single_service(compose, {"qdrant/qdrant"})
    match = re.fullmatch(r"http://([\w.-]+):(\d+)/?", env.get("QDRANT_URL") or "")
    if not match:
        problems.append(f"worker QDRANT_URL={env.get('QDRANT_URL')!r} is not http://host:port")
    elif match[1] != qdrant or int(match[2]) not in container_ports(services[qdrant]):
        problems.append(f"worker QDRANT_URL does not point at the {qdrant!r} service")
    if qdrant not in depends_on_of(worker):
        problems.append(f"worker does not depend on {qdrant!r}")
    if worker.get("restart") != "unless-stopped":
        problems.append("worker must be 'restart: unless-stopped'")
    if "container_name" in worker:
        problems.append("worker must not set container_name (it prevents scaling)")
    return problems


def registers_search_attribute(script: str, name: str, kind: str) -> bool:
    """``name`` is paired with ``kind`` (``Name:Kind`` or ``--name Name --type Kind``)."""
    return re.search(rf"\b{name}\b\W+(?:--type\W+)?{kind}\b", script) is not None


def check_search_attribute_setup(compose: Compose) -> list[str]:
    services = services_of(compose)
    jobs = [
        name
        for name in services_by_image(compose, {"temporalio/admin-tools"})
        if "search-attribute create" in command_text(services[name])
    ]
    if not jobs:
        return ["no admin-tools service registers the Smyth search attributes"]
    problems = []
    for job in jobs:
        text = command_text(services[job])
        for attr, kind in SEARCH_ATTRIBUTES.items():
            if not registers_search_attribute(text, attr, kind):
                problems.append(f"{job!r} does not register {attr} as {kind}")
        problems.extend(check_address_points_at_temporal(compose, job))
    worker = services.get("worker", {})
    if not any(depends_on_of(worker).get(j) == "service_completed_successfully" for j in jobs):
        problems.append("worker does not wait for the search attributes to be registered")
    return problems


# --------------------------------------------------------------------------- compose tests


def test_compose_parses_to_mapping(compose: Compose) -> None:
    assert set(services_of(compose)) >= {
        "postgresql",
        "temporal",
        "temporal-ui",
        "qdrant",
        "worker",
    }


COMPOSE_CHECKERS: dict[str, Callable[[Compose], list[str]]] = {
    "top_level": check_top_level,
    "image_or_build": check_image_or_build,
    "depends_on": check_depends_on,
    "volumes": check_volumes,
    "configs": check_configs,
    "ports": check_ports,
    "pinned_images": check_pinned_images,
    "temporal": check_temporal_coherence,
    "ui": lambda c: check_address_points_at_temporal(c, "temporal-ui"),
    "search_attributes": check_search_attribute_setup,
}


@pytest.mark.parametrize("checker", COMPOSE_CHECKERS.values(), ids=COMPOSE_CHECKERS.keys())
def test_compose_is_valid(compose: Compose, checker: Callable[[Compose], list[str]]) -> None:
    assert checker(compose) == []


def test_worker_service(compose: Compose, pyproject: dict[str, Any]) -> None:
    assert check_worker(compose, pyproject) == []


def test_postgres_service(compose: Compose) -> None:
    svc = services_of(compose)["postgresql"]
    assert "pg_isready" in " ".join(map(str, svc["healthcheck"]["test"]))
    assert any(str(v).endswith(":/var/lib/postgresql/data") for v in svc["volumes"]), (
        "postgres data must live on a named volume"
    )
    assert "ports" not in svc, "the database should not be published on the host"


def test_qdrant_service(compose: Compose) -> None:
    svc = services_of(compose)["qdrant"]
    assert container_ports(svc) == {6333, 6334}
    assert any(str(v).endswith(":/qdrant/storage") for v in svc["volumes"])


def test_compose_header_documents_search_attributes() -> None:
    header = COMPOSE_PATH.read_text(encoding="utf-8").split("\nservices:")[0]
    assert "temporal operator search-attribute create --namespace default" in header
    assert "--name SmythStatus --type Keyword" in header
    assert "--name SmythPendingApprovals --type Int" in header
    assert "docker compose up" in header


def _mutate(path: str, value: Any) -> Callable[[Compose], None]:
    """Build a mutation that sets (or, with value=DELETE, removes) a dotted path."""

    def apply(compose: Compose) -> None:
        *parents, last = path.split(".")
        node: Any = compose
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        if value is DELETE:
            del node[last]
        elif isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return apply


DELETE = object()

BROKEN_COMPOSE = {
    "no services": ("top_level", _mutate("services", {})),
    "no volumes": ("top_level", _mutate("volumes", DELETE)),
    "typo top-level": ("top_level", _mutate("service", {})),
    "no image": ("image_or_build", _mutate("services.qdrant.image", DELETE)),
    "missing dep": ("depends_on", _mutate("services.worker.depends_on.qdrant_db", {})),
    "healthy w/o check": ("depends_on", _mutate("services.postgresql.healthcheck", DELETE)),
    "dep cycle": (
        "depends_on",
        _mutate("services.postgresql.depends_on", {"worker": {"condition": "service_started"}}),
    ),
    "bad condition": (
        "depends_on",
        _mutate("services.worker.depends_on.qdrant", {"condition": "service_ready"}),
    ),
    "undeclared volume": (
        "volumes",
        _mutate("services.qdrant.volumes.0", "qdrant:/qdrant/storage"),
    ),
    "unused volume": ("volumes", _mutate("volumes.orphan", None)),
    "undeclared config": (
        "configs",
        _mutate("services.temporal.configs.0.source", "missing-config"),
    ),
    "int port": ("ports", _mutate("services.temporal-ui.ports.0", 8080)),
    "malformed port": ("ports", _mutate("services.temporal-ui.ports.0", "80:80:80:80")),
    "port range": ("ports", _mutate("services.temporal-ui.ports.0", "70000:8080")),
    "duplicate port": ("ports", _mutate("services.temporal-ui.ports.0", "127.0.0.1:7233:8080")),
    "latest tag": ("pinned_images", _mutate("services.qdrant.image", "qdrant/qdrant:latest")),
    "no tag": ("pinned_images", _mutate("services.temporal-ui.image", "temporalio/ui")),
    "floating tag": ("pinned_images", _mutate("services.postgresql.image", "postgres:alpine")),
    "registry port": (
        "pinned_images",
        _mutate("services.postgresql.image", "registry:5000/postgres"),
    ),
    "wrong DB": ("temporal", _mutate("services.temporal.environment.DB", "mysql8")),
    "wrong seeds": ("temporal", _mutate("services.temporal.environment.POSTGRES_SEEDS", "db")),
    "wrong pwd": ("temporal", _mutate("services.temporal.environment.POSTGRES_PWD", "x")),
    "no schema wait": ("temporal", _mutate("services.temporal.depends_on", {})),
    "no dyn config": ("temporal", _mutate("services.temporal.configs", [])),
    "ui address": ("ui", _mutate("services.temporal-ui.environment.TEMPORAL_ADDRESS", "tmp:7233")),
    "ui port": (
        "ui",
        _mutate("services.temporal-ui.environment.TEMPORAL_ADDRESS", "temporal:7234"),
    ),
    "SA type": (
        "search_attributes",
        _mutate(
            "services.temporal-setup.command.0",
            "temporal operator search-attribute create --name SmythStatus --type Text"
            " --name SmythPendingApprovals --type Int",
        ),
    ),
}


@pytest.mark.parametrize(
    ("checker", "mutation"), BROKEN_COMPOSE.values(), ids=BROKEN_COMPOSE.keys()
)
def test_compose_checkers_catch_breakage(
    compose: Compose, checker: str, mutation: Callable[[Compose], None]
) -> None:
    broken = copy.deepcopy(compose)
    mutation(broken)
    assert COMPOSE_CHECKERS[checker](broken) != []


BROKEN_WORKER = {
    "build elsewhere": _mutate("services.worker.build", "./docker"),
    "missing dockerfile": _mutate("services.worker.build", {"context": ".", "dockerfile": "Nope"}),
    "wrong script": _mutate("services.worker.command", "python -m smyth worker a.b:C"),
    "no agents": _mutate("services.worker.command", "smyth worker"),
    "bad agent": _mutate("services.worker.command", "smyth worker examples/market_monitor.py"),
    "temporal host": _mutate("services.worker.environment.TEMPORAL_ADDRESS", "localhost:7233"),
    "temporal port": _mutate("services.worker.environment.TEMPORAL_ADDRESS", "temporal:7000"),
    "namespace": _mutate("services.worker.environment.TEMPORAL_NAMESPACE", "prod"),
    "task queue": _mutate("services.worker.environment.SMYTH_TASK_QUEUE", DELETE),
    "literal key": _mutate("services.worker.environment.OPENAI_API_KEY", "sk-123"),
    "qdrant url": _mutate("services.worker.environment.QDRANT_URL", "http://localhost:6333"),
    "qdrant dep": _mutate("services.worker.depends_on.qdrant", DELETE),
    "temporal dep": _mutate("services.worker.depends_on.temporal", DELETE),
    "restart": _mutate("services.worker.restart", "no"),
    "container_name": _mutate("services.worker.container_name", "worker"),
}


@pytest.mark.parametrize("mutation", BROKEN_WORKER.values(), ids=BROKEN_WORKER.keys())
def test_worker_checker_catches_breakage(
    compose: Compose, pyproject: dict[str, Any], mutation: Callable[[Compose], None]
) -> None:
    broken = copy.deepcopy(compose)
    mutation(broken)
    assert check_worker(broken, pyproject) != []


def test_search_attribute_matcher() -> None:
    one_line = "create --name SmythStatus --type Keyword --name SmythPendingApprovals --type Int"
    assert registers_search_attribute(one_line, "SmythStatus", "Keyword")
    assert registers_search_attribute(one_line, "SmythPendingApprovals", "Int")
    assert not registers_search_attribute(one_line, "SmythStatus", "Int")
    assert registers_search_attribute("for s in SmythStatus:Keyword; do", "SmythStatus", "Keyword")
    assert not registers_search_attribute("SmythStatus:Text", "SmythStatus", "Keyword")


@pytest.mark.parametrize(
    ("image", "tag"),
    [
        ("postgres:16.11", "16.11"),
        ("qdrant/qdrant:v1.19.1", "v1.19.1"),
        ("temporalio/server", None),
        ("localhost:5000/temporalio/server", None),
        ("localhost:5000/temporalio/server:1.31.0", "1.31.0"),
    ],
)
def test_image_tag_parsing(image: str, tag: str | None) -> None:
    assert image_tag(image) == tag


# --------------------------------------------------------------------------- Dockerfile


def parse_dockerfile(text: str) -> list[tuple[str, str]]:
    """Return ``(INSTRUCTION, arguments)`` pairs, with continuation lines joined."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1].rstrip() + " "
            continue
        line = pending + line
        pending = ""
        keyword, _, args = line.partition(" ")
        instructions.append((keyword.upper(), args.strip()))
    return instructions


def dockerfile_env(instructions: list[tuple[str, str]]) -> dict[str, str]:
    env: dict[str, str] = {}
    for keyword, args in instructions:
        if keyword == "ENV":
            for token in shlex.split(args):
                key, sep, value = token.partition("=")
                if sep:
                    env[key] = value
    return env


def check_dockerfile(text: str, pyproject: dict[str, Any]) -> list[str]:
    instructions = parse_dockerfile(text)
    keywords = [k for k, _ in instructions]
    problems = []

    froms = [args for k, args in instructions if k == "FROM"]
    if len(froms) != 1 or not re.fullmatch(r"python:3\.(\d+)(\.\d+)?-slim(-\w+)?", froms[0]):
        problems.append(f"FROM {froms!r} is not a single python:3.x-slim base")
    else:
        minor = int(re.findall(r"python:3\.(\d+)", froms[0])[0])
        required = re.fullmatch(r">=\s*3\.(\d+)", pyproject["project"]["requires-python"])
        if required and minor < int(required[1]):
            problems.append(f"{froms[0]} does not satisfy requires-python")

    workdir = next((args for k, args in instructions if k == "WORKDIR"), None)
    copies = [shlex.split(args) for k, args in instructions if k == "COPY"]
    if not any(c[:1] == ["."] and c[-1] in {".", "./", workdir} for c in copies):
        problems.append("the repository is not copied into the image (COPY . <workdir>)")

    installs = [
        i for i, (k, args) in enumerate(instructions) if k == "RUN" and "pip install" in args
    ]
    project_install = [
        i
        for i in installs
        if re.search(
            r"pip install(?: --?[\w-]+)* (\.|" + re.escape(workdir or ".") + r")(\s|$)",
            instructions[i][1],
        )
    ]
    if not project_install:
        problems.append("no RUN pip install . of the project")
    elif "--no-cache-dir" not in instructions[project_install[0]][1]:
        problems.append("pip install must use --no-cache-dir")

    users = [(i, args) for i, (k, args) in enumerate(instructions) if k == "USER"]
    if not users or users[-1][1].split(":")[0] in {"root", "0"}:
        problems.append("the image must end up running as a non-root USER")
    elif project_install and users[-1][0] < project_install[0]:
        problems.append("USER must come after the pip install")
    if users and not re.search(rf"useradd\b.*\b{re.escape(users[-1][1].split(':')[0])}\b", text):
        problems.append(f"user {users[-1][1]!r} is never created")

    cmds = [args for k, args in instructions if k == "CMD"]
    if "ENTRYPOINT" in keywords:
        problems.append("no ENTRYPOINT expected: compose overrides CMD with 'smyth worker ...'")
    if not cmds:
        problems.append("no CMD")
    else:
        try:
            cmd = json.loads(cmds[-1])
        except json.JSONDecodeError:
            cmd = None
        if not isinstance(cmd, list):
            problems.append(f"CMD {cmds[-1]!r} must be in exec (JSON) form")
        elif len(cmd) < 2 or cmd[0] not in pyproject_scripts(pyproject) or cmd[1] != "worker":
            problems.append(f"CMD {cmd!r} does not run '<console script> worker'")

    # Agent modules outside the installed packages (examples/, workers/) are imported from
    # the copied source tree, so the working directory must be on PYTHONPATH.
    pythonpath = dockerfile_env(instructions).get("PYTHONPATH", "").split(":")
    if workdir not in pythonpath:
        problems.append(f"PYTHONPATH {pythonpath!r} does not contain WORKDIR {workdir!r}")
    return problems


def test_dockerfile_is_valid(pyproject: dict[str, Any]) -> None:
    assert check_dockerfile(DOCKERFILE_PATH.read_text(encoding="utf-8"), pyproject) == []


def test_console_script_is_smyth(pyproject: dict[str, Any]) -> None:
    scripts = pyproject_scripts(pyproject)
    assert scripts.get("smyth") == "smyth_temporal.cli.main:main"
    cmd = [args for k, args in parse_dockerfile(DOCKERFILE_PATH.read_text()) if k == "CMD"]
    assert json.loads(cmd[-1])[0] == "smyth"


def test_worker_default_agent_is_not_an_installed_package(
    compose: Compose, pyproject: dict[str, Any]
) -> None:
    """The default agent lives in ``examples/``: setuptools does not install it.

    This is why the Dockerfile puts the source tree on PYTHONPATH (checked above); if
    ``examples`` ever becomes an installed package this test shows the workaround can go.
    """
    argv = command_argv(services_of(compose)["worker"])
    default_agent = re.sub(r"^\$\{[A-Z_]+:-(.*)\}$", r"\1", argv[2])
    top_package = default_agent.split(":")[0].split(".")[0]
    includes = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    assert not any(fnmatch.fnmatch(top_package, pattern) for pattern in includes)


def test_worker_default_agent_module_exists(compose: Compose) -> None:
    argv = command_argv(services_of(compose)["worker"])
    default_agent = re.sub(r"^\$\{[A-Z_]+:-(.*)\}$", r"\1", argv[2])
    module = default_agent.split(":")[0]
    path = ROOT.joinpath(*module.split("."))
    if not path.parent.is_dir():
        pytest.skip(f"{path.parent.relative_to(ROOT)}/ is not in this checkout yet")
    assert path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


BROKEN_DOCKERFILES = {
    "alpine base": ("FROM python:3.11-slim", "FROM python:3.11-alpine"),
    "old python": ("FROM python:3.11-slim", "FROM python:3.10-slim"),
    "no pip install": ("pip install --no-cache-dir .", "pip install --no-cache-dir -r req.txt"),
    "pip cache": ("pip install --no-cache-dir .", "pip install ."),
    "root user": ("USER smyth", "USER root"),
    "no user": ("USER smyth", ""),
    "shell cmd": ('CMD ["smyth", "worker"]', "CMD smyth worker"),
    "other cmd": ('CMD ["smyth", "worker"]', 'CMD ["python", "-m", "smyth_temporal"]'),
    "no pythonpath": ("PYTHONPATH=/app", "PYTHONPATH=/src"),
    "no copy": ("COPY . /app", "COPY pyproject.toml /app/"),
}


@pytest.mark.parametrize(("old", "new"), BROKEN_DOCKERFILES.values(), ids=BROKEN_DOCKERFILES.keys())
def test_dockerfile_checker_catches_breakage(pyproject: dict[str, Any], old: str, new: str) -> None:
    text = DOCKERFILE_PATH.read_text(encoding="utf-8")
    assert old in text, f"test fixture out of date: {old!r} not in Dockerfile"
    assert check_dockerfile(text.replace(old, new), pyproject) != []


def test_parse_dockerfile_joins_continuations() -> None:
    text = 'FROM x:1\n# c\nRUN a \\\n    && b \\\n    # inner comment\n    && c\nCMD ["d"]\n'
    assert parse_dockerfile(text) == [
        ("FROM", "x:1"),
        ("RUN", "a && b && c"),
        ("CMD", '["d"]'),
    ]


# --------------------------------------------------------------------------- .dockerignore


def dockerignore_patterns() -> list[str]:
    lines = DOCKERIGNORE_PATH.read_text(encoding="utf-8").splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.strip().startswith("#")]


def is_ignored(path: str, patterns: list[str]) -> bool:
    ignored = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        pattern = pattern.lstrip("!").strip("/")
        candidates = [pattern, pattern.removeprefix("**/")]
        parts = path.split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        if any(fnmatch.fnmatch(p, c) for c in candidates for p in prefixes + parts):
            ignored = not negate
    return ignored


@pytest.mark.parametrize(
    "path", [".venv", ".git", ".smyth", ".env", ".pytest_cache", "smyth_temporal/__pycache__"]
)
def test_dockerignore_excludes_local_state(path: str) -> None:
    assert is_ignored(path, dockerignore_patterns())


@pytest.mark.parametrize(
    "path",
    ["pyproject.toml", "README.md", "smyth_temporal/cli/main.py", "examples/market_monitor"],
)
def test_dockerignore_keeps_build_inputs(path: str) -> None:
    assert not is_ignored(path, dockerignore_patterns())


def test_dockerignore_matcher() -> None:
    assert is_ignored("a/__pycache__/x.pyc", ["**/__pycache__"])
    assert not is_ignored("src/app.py", ["*.md", ".venv"])
    assert not is_ignored("keep.md", ["*.md", "!keep.md"])


def test_compose_file_matches_the_official_compose_specification() -> None:
    """The compose-spec JSON schema, bundled offline by check-jsonschema."""
    import subprocess
    import sys

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "check_jsonschema",
            "--builtin-schema",
            "vendor.compose-spec",
            str(ROOT / "docker-compose.yml"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
