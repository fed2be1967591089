"""Approval notifications on the worker side: channels, and the activity that sends.

Workflow code never imports this package: a policy names channels, the run starts one
``smyth.notify.approval`` activity per channel (``smyth_temporal.agent.notifications``)
and does not wait for it; the worker resolves each name here. URLs, the webhook
secret and SMTP credentials stay on the worker and never enter history.

```python
notifications = Notifications.parse(
    ["webhook=https://hooks.example.com/T0/B0", "oncall=ops@example.com"],
    webhook_secret=os.environ["SMYTH_WEBHOOK_SECRET"],
    smtp_url=os.environ["SMYTH_SMTP_URL"],
    console_url="https://agents.example.com/console",
)
client = await Client.connect(address, plugins=[SmythPlugin(notifications=notifications)])
```

- ``Notifications``, ``WebhookChannel``, ``EmailChannel``, ``SmtpServer``,
  ``parse_channel``: what the channels stand for.
- ``NotificationActivities``: the activity (``SmythPlugin`` registers it).
- ``verify_signature``, ``SIGNATURE_HEADER``: for receivers of the webhook.

E-mail needs the ``email`` extra (``pip install 'smyth-temporal[email]'``). Only
``NotificationActivities`` imports an HTTP client, when first named: modules that
workflow code imports (the ones naming ``SmythPlugin``) may import this package.

Added in 0.9.0.
"""

from typing import TYPE_CHECKING, Any

from smyth_temporal.notifications._config import (
    CONSOLE_URL_ENV,
    SMTP_URL_ENV,
    WEBHOOK_SECRET_ENV,
    EmailChannel,
    Notifications,
    SmtpServer,
    WebhookChannel,
    parse_channel,
)
from smyth_temporal.notifications._message import console_link
from smyth_temporal.notifications._signature import SIGNATURE_HEADER, sign, verify_signature

if TYPE_CHECKING:
    from smyth_temporal.notifications._activities import NotificationActivities

__all__ = [
    "CONSOLE_URL_ENV",
    "SIGNATURE_HEADER",
    "SMTP_URL_ENV",
    "WEBHOOK_SECRET_ENV",
    "EmailChannel",
    "NotificationActivities",
    "Notifications",
    "SmtpServer",
    "WebhookChannel",
    "console_link",
    "parse_channel",
    "sign",
    "verify_signature",
]


def __getattr__(name: str) -> Any:
    if name != "NotificationActivities":
        raise AttributeError(name)
    from smyth_temporal.notifications._activities import NotificationActivities

    return NotificationActivities
