"""Fleet-wide model rate limits and tenant fairness, held by the server: ``LimitsClient``.

Agents send their model calls to their own task queue (``<queue>-models``, see
``model_task_queue``) with the tenant as fairness key, while that queue has a limit or
a weight (workers read its config every ``MODEL_LIMITS_REFRESH``; without any, the calls
stay on the agents' queue, dispatched eagerly: see ``smyth_temporal._model_queue``).
The server's task-queue config for that queue then limits model calls for every worker
at once, and shares them between tenants by weight: nothing here counts or queues, and
nothing retries. This is what ``temporal task-queue config set`` does, for the model
queue.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Literal, TypeVar

import structlog
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import RateLimit, RateLimitConfig, TaskQueue
from temporalio.api.workflowservice.v1 import (
    DescribeTaskQueueRequest,
    UpdateTaskQueueConfigRequest,
)
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from smyth_temporal.clients._identity import Identity
from smyth_temporal.exceptions import ClientError
from smyth_temporal.types.model import model_task_queue

__all__ = ["DEFAULT", "LimitsClient", "ModelLimits"]

log = structlog.get_logger("smyth_temporal.clients")

DEFAULT: Literal["default"] = "default"
"""Give this instead of a number to remove a limit or a weight (the server's default)."""

Limit = float | Literal["default"] | None
"""A new rate (requests per second), ``"default"`` to remove it, ``None`` to keep it."""

_T = TypeVar("_T")

_ACTIVITY = TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY
_Update = UpdateTaskQueueConfigRequest.RateLimitUpdate


@dataclass(frozen=True)
class ModelLimits:
    """The model-call limits the server holds for one agent task queue.

    Added in 0.5.0.
    """

    task_queue: str
    """The model task queue the limits are set on (``<agent queue>-models``)."""
    model_rps: float | None = None
    """Model calls per second for the whole fleet (``None``: no limit)."""
    per_tenant_rps: float | None = None
    """Model calls per second for each tenant, times its weight (``None``: no limit)."""
    tenant_weights: dict[str, float] = field(default_factory=dict)
    """Tenants whose share is not 1: a tenant of weight 2 gets twice the calls of one
    of weight 1 when both wait."""
    reason: str = ""
    """Why the fleet-wide limit was set, as last recorded."""


class LimitsClient:
    """Read and set the fleet-wide model-call limits of an agent task queue.

    ```python
    await agents.limits.set(model_rps=5, per_tenant_rps=1, tenant_weights={"acme": 2})
    ```

    Added in 0.5.0.
    """

    def __init__(self, client: Client, *, task_queue: str, identity: Identity) -> None:
        self.client = client
        self.task_queue = task_queue
        self.identity = identity

    async def get(self, task_queue: str | None = None) -> ModelLimits:
        """The limits the server holds for the model calls of agents on ``task_queue``.

        Raises:
            AccessDeniedError: The caller's key may not read them.
        """
        self.identity.permit("read")
        queue = model_task_queue(task_queue or self.task_queue)
        response = await self._call(
            self.client.workflow_service.describe_task_queue(
                DescribeTaskQueueRequest(
                    namespace=self.client.namespace,
                    task_queue=TaskQueue(name=queue),
                    task_queue_type=_ACTIVITY,
                    report_config=True,
                )
            )
        )
        config = response.config
        queue_limit = config.queue_rate_limit
        return ModelLimits(
            task_queue=queue,
            model_rps=_rate(queue_limit),
            per_tenant_rps=_rate(config.fairness_keys_rate_limit_default),
            tenant_weights=dict(config.fairness_weight_overrides),
            reason=queue_limit.metadata.reason,
        )

    async def set(
        self,
        *,
        model_rps: Limit = None,
        per_tenant_rps: Limit = None,
        tenant_weights: dict[str, float | Literal["default"]] | None = None,
        reason: str | None = None,
        task_queue: str | None = None,
    ) -> ModelLimits:
        """Change the limits of the model calls of agents on ``task_queue``.

        Args:
            model_rps: Model calls per second for the whole fleet.
            per_tenant_rps: Model calls per second for each tenant (times its weight).
            tenant_weights: Weights by tenant (``"default"``: back to 1).
            reason: Why, recorded by the server.
            task_queue: The agents' task queue (default: the client's).

        Returns:
            The limits now in force.

        Raises:
            ClientError: A rate or weight is not a positive number.
            AccessDeniedError: The caller's key is not an admin's.
        """
        self.identity.permit("admin")
        queue = model_task_queue(task_queue or self.task_queue)
        weights = tenant_weights or {}
        for name, value in (("model_rps", model_rps), ("per_tenant_rps", per_tenant_rps)):
            _check_positive(name, value)
        for tenant, weight in weights.items():
            _check_positive(f"the weight of {tenant!r}", weight)
        request = UpdateTaskQueueConfigRequest(
            namespace=self.client.namespace,
            identity=self._who(),
            task_queue=queue,
            task_queue_type=_ACTIVITY,
            set_fairness_weight_overrides={t: float(w) for t, w in weights.items() if w != DEFAULT},
            unset_fairness_weight_overrides=[t for t, w in weights.items() if w == DEFAULT],
        )
        why = reason or "set with smyth limits"
        if model_rps is not None:
            request.update_queue_rate_limit.CopyFrom(_update(model_rps, why))
        if per_tenant_rps is not None:
            request.update_fairness_key_rate_limit_default.CopyFrom(_update(per_tenant_rps, why))
        await self._call(self.client.workflow_service.update_task_queue_config(request))
        log.info(
            "limits.set",
            task_queue=queue,
            model_rps=model_rps,
            per_tenant_rps=per_tenant_rps,
            tenant_weights=weights,
        )
        return await self.get(task_queue)

    async def clear(self, task_queue: str | None = None) -> ModelLimits:
        """Remove every limit and weight of the model calls on ``task_queue``."""
        current = await self.get(task_queue)
        return await self.set(
            model_rps=DEFAULT,
            per_tenant_rps=DEFAULT,
            tenant_weights={t: DEFAULT for t in current.tenant_weights},
            reason="cleared with smyth limits",
            task_queue=task_queue,
        )

    def _who(self) -> str:
        principal = self.identity.principal
        return f"smyth:{principal.name}" if principal is not None else "smyth"

    @staticmethod
    async def _call(call: Awaitable[_T]) -> _T:
        try:
            return await call
        except RPCError as exc:
            if exc.status == RPCStatusCode.UNIMPLEMENTED:
                raise ClientError(
                    f"this Temporal server cannot hold task-queue limits ({exc.message}); "
                    "it needs server 1.29+ (or Temporal Cloud)"
                ) from exc
            if exc.status == RPCStatusCode.INVALID_ARGUMENT:
                raise ClientError(f"the server refused the limits: {exc.message}") from exc
            raise


def _rate(config: RateLimitConfig) -> float | None:
    return config.rate_limit.requests_per_second if config.HasField("rate_limit") else None


def _update(value: float | Literal["default"], reason: str) -> _Update:
    if value == DEFAULT:
        return _Update(reason=reason)  # no rate: back to the server's default
    return _Update(rate_limit=RateLimit(requests_per_second=float(value)), reason=reason)


def _check_positive(name: str, value: object) -> None:
    if value is None or value == DEFAULT:
        return
    if not isinstance(value, int | float) or isinstance(value, bool) or not value > 0:
        raise ClientError(f"{name} must be a positive number or 'default', not {value!r}")
