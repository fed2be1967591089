"""Where the remote A2A gateway of the A2A tests listens: one port per test session.

Chosen once and kept in the environment, so a worker process spawned by the test (which
imports the agents again) points its ``a2a_agent`` tool at the same gateway.
"""

from __future__ import annotations

import os

from tests.helpers.cli_support import free_port

PORT_ENV = "SMYTH_TEST_A2A_PORT"
KEY_SECRET = "SMYTH_TEST_A2A_KEY"
"""The worker secret (an environment variable) holding the remote gateway's key."""

REMOTE_PORT = int(os.environ.setdefault(PORT_ENV, str(free_port())))
REMOTE_URL = f"http://127.0.0.1:{REMOTE_PORT}/a2a/Operator"
