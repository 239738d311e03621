# dsh-memory-worker: one image for every role (migrate, worker, daemon/watcher).
#   docker build -t dsh-memory-worker .
#   docker run --rm dsh-memory-worker config
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# Dependencies first (cached while only the code changes), then the project itself.
COPY pyproject.toml README.md ./
COPY memory ./memory
COPY worker ./worker
COPY alembic.ini ./
# The Alembic revisions and the demo fixtures are package data: the installed package has them.
RUN pip install ".[distributed]" \
    && useradd --create-home --uid 10001 memory \
    && mkdir -p /data/worker /data/hypatia \
    && chown -R memory:memory /data

ENV MEMORY_WORKER_DATA_DIR=/data/worker \
    MEMORY_WORKER_LITE_HOME=/data/hypatia \
    DSH_HOME=/dsh

USER memory
VOLUME ["/data"]
ENTRYPOINT ["memory-worker"]
CMD ["--help"]
