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

from smyth_temporal.settings import deployment_version

__all__ = ["DEFAULT_VERSIONING_BEHAVIOR", "deployment_config", "deployment_version"]

DEFAULT_VERSIONING_BEHAVIOR = VersioningBehavior.PINNED
"""How the workflows of a versioned worker move between builds unless their
``@workflow.defn(versioning_behavior=...)`` says otherwise: they do not (pinned)."""


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
