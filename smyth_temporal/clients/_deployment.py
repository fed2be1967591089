"""Workers as Temporal Worker Deployment Versions: agent runs pinned to their build.

A worker started with a deployment name and a build id (``smyth worker --deployment
NAME --build-id ID``) polls as that version. Agent workflows are ``PINNED`` by default:
a run keeps running on the build that started it, whatever is deployed after it, and
moves to the deployment's current version only at a continue-as-new (see
``smyth_temporal.agent.lifecycle``) or when an operator moves it. New runs start on
the current version, which the ``temporal`` CLI sets:

```
temporal worker deployment set-current-version --deployment-name NAME --build-id ID
```

Added in 0.5.0.
"""

from __future__ import annotations

from temporalio.common import VersioningBehavior, WorkerDeploymentVersion
from temporalio.worker import WorkerDeploymentConfig

from smyth_temporal.exceptions import ConfigurationError

__all__ = ["DEFAULT_VERSIONING_BEHAVIOR", "deployment_config", "deployment_version"]

DEFAULT_VERSIONING_BEHAVIOR = VersioningBehavior.PINNED
"""How the workflows of a versioned worker move between builds unless their
``@workflow.defn(versioning_behavior=...)`` says otherwise: they do not (pinned)."""


def deployment_version(
    deployment: str | None, build_id: str | None
) -> WorkerDeploymentVersion | None:
    """The version a worker serves as, from its deployment name and build id.

    Args:
        deployment: The Worker Deployment's name (``None``: no versioning).
        build_id: The build's id within it (a git sha, a release tag).

    Returns:
        The version, or ``None`` when neither is given.

    Raises:
        ConfigurationError: Only one of them is given, or one is blank.

    Added in 0.5.0.
    """
    if deployment is None and build_id is None:
        return None
    if not deployment or not deployment.strip() or not build_id or not build_id.strip():
        raise ConfigurationError(
            "a versioned worker needs both a deployment name and a build id "
            "(--deployment NAME --build-id ID)"
        )
    if "." in deployment:
        # Temporal writes a version as NAME.BUILD_ID; a dot in the name is ambiguous.
        raise ConfigurationError(f"the deployment name {deployment!r} must not contain '.'")
    return WorkerDeploymentVersion(deployment_name=deployment.strip(), build_id=build_id.strip())


def deployment_config(version: WorkerDeploymentVersion) -> WorkerDeploymentConfig:
    """The ``Worker(deployment_config=...)`` of an agent worker serving ``version``.

    Worker Versioning on, workflows pinned by default (``DEFAULT_VERSIONING_BEHAVIOR``).

    Added in 0.5.0.
    """
    return WorkerDeploymentConfig(
        version=version,
        use_worker_versioning=True,
        default_versioning_behavior=DEFAULT_VERSIONING_BEHAVIOR,
    )
