# Worker image for smyth-temporal.
#
#   docker build -t smyth-temporal .
#   docker run --rm -e TEMPORAL_ADDRESS=host:7233 smyth-temporal \
#       smyth worker examples.market_monitor.workflows:MarketMonitor
#
# The project is installed with pip (`pip install .`), which puts the `smyth` console
# script on PATH. Agent modules that are not part of the installed package (for example
# `examples/`) are imported from the copied source tree through PYTHONPATH=/app.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONPATH=/app

WORKDIR /app

# Unprivileged runtime user with its own writable home directory.
RUN groupadd --system --gid 10001 smyth \
    && useradd --system --uid 10001 --gid smyth --create-home --home-dir /home/smyth \
       --shell /usr/sbin/nologin smyth

COPY . /app

# The server extra (FastAPI, uvicorn) lets the same image run the gateway, `smyth serve`;
# the otel extra lets workers send traces (`smyth worker --tracing`).
RUN pip install --no-cache-dir . ".[server,otel]" \
    && mkdir -p /app/.smyth \
    && chown smyth:smyth /app/.smyth

USER smyth

# Agent import paths ("module:Class") are passed as arguments, e.g. by docker-compose.yml.
CMD ["smyth", "worker"]
