"""Automatic reviewers of approval requests, as activities (``smyth.reviewer.<name>``).

A ``Reviewer`` named by an ``ApprovalPolicy`` is a Python function or a model with a
prompt; the worker runs it when a request appears. A function gets the
``ReviewRequest`` and answers an ``ApprovalReview``; a model is asked through the
worker's model provider for a JSON verdict. A reviewer that fails (or a model that
answers something else) abstains: the people decide, as they would without it.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable
from typing import Any

import pydantic
import structlog
from temporalio import activity

from smyth_temporal.activities._heartbeat import auto_heartbeat
from smyth_temporal.models import ModelProvider
from smyth_temporal.tools import DEFAULT_REVIEW_PROMPT, Reviewer
from smyth_temporal.types.approvals import ApprovalReview, ReviewRequest, ReviewVerdict
from smyth_temporal.types.messages import Message
from smyth_temporal.types.model import ModelRequest, OutputSchema

__all__ = ["reviewer_activities"]

_log = structlog.get_logger("smyth_temporal.review")


class _Verdict(pydantic.BaseModel):
    """What a model reviewer is asked to answer."""

    verdict: ReviewVerdict
    reason: str


_SCHEMA = OutputSchema(name="review", json_schema=_Verdict.model_json_schema())


def reviewer_activities(
    reviewers: Iterable[Reviewer], provider: ModelProvider
) -> list[Callable[..., Any]]:
    """One activity per reviewer.

    Args:
        reviewers: The reviewers the worker's agents name.
        provider: What model reviewers are asked through.
    """
    return [_activity(reviewer, provider) for reviewer in reviewers]


def _activity(reviewer: Reviewer, provider: ModelProvider) -> Callable[[ReviewRequest], Any]:
    @activity.defn(name=reviewer.activity_name)
    async def review(request: ReviewRequest) -> ApprovalReview:
        log = _log.bind(
            reviewer=reviewer.name, workflow_id=request.workflow_id, request_id=request.request.id
        )
        async with auto_heartbeat():
            if reviewer.fn is not None:
                answer = reviewer.fn(request)
                verdict = await answer if inspect.isawaitable(answer) else answer
            else:
                verdict = await _ask_model(reviewer, provider, request)
        checked = ApprovalReview.model_validate(verdict)
        log.info("review.verdict", verdict=checked.verdict)
        return checked

    return review


async def _ask_model(
    reviewer: Reviewer, provider: ModelProvider, request: ReviewRequest
) -> ApprovalReview:
    call = request.request
    shown = {
        "agent": request.agent,
        "tool": call.tool,
        "arguments": call.arguments,
        "reason": call.reason,
    }
    messages = [
        Message(role="system", content=f"{DEFAULT_REVIEW_PROMPT}\n\n{reviewer.prompt}".strip()),
        Message(role="user", content=json.dumps(shown, ensure_ascii=False)),
    ]
    response = await provider.complete(
        ModelRequest(
            model=reviewer.model or "",
            messages=messages,
            agent=request.agent,
            step=call.step,
            purpose="review",
            output=_SCHEMA,
        )
    )
    text = response.message.content or ""
    try:
        said = _Verdict.model_validate_json(text)
    except pydantic.ValidationError:
        # A model that answers something else says nothing: the people decide.
        return ApprovalReview(verdict="abstain", reason=f"the reviewer answered {text[:200]!r}")
    return ApprovalReview(verdict=said.verdict, reason=said.reason)
