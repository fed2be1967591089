"""Process entry points for deployments (``python -m workers.agent_worker ...``)."""
