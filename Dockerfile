# dsh-memory-worker: one image for every role (migrate, worker, daemon/watcher).
#   docker build -t dsh-memory-worker .
#   docker run --rm dsh-memory-worker config
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# 1. The dependencies, from the two pyproject.toml files alone (the worker's runtime set and
#    `distributed` extra, hypatia-lite's runtime set; hypatia-lite itself is built from this
#    repository in step 2, never taken from an index), at the versions constraints.txt pins (the
#    ones the tests passed with; regenerate it with
#    `.venv/bin/python deploy/constraints.py > constraints.txt`). This layer is rebuilt only when
#    one of these three files changes, never for a code change.
COPY pyproject.toml constraints.txt ./
COPY hypatia-lite/pyproject.toml ./hypatia-lite/
RUN python -c "import tomllib; p = tomllib.load(open('pyproject.toml', 'rb'))['project']; \
lite = tomllib.load(open('hypatia-lite/pyproject.toml', 'rb'))['project']; \
worker = [d for d in p['dependencies'] if not d.startswith(lite['name'])]; \
print('\n'.join(worker + p['optional-dependencies']['distributed'] + lite['dependencies']))" \
        > /tmp/requirements.txt \
    && pip install -c constraints.txt -r /tmp/requirements.txt \
    && rm /tmp/requirements.txt

# 2. The code, installed without touching the dependencies: the two wheels, hypatia-lite's and
#    the worker's (one import name, dsh_memory_worker, over the folders: setup.py), built from
#    the checkout. The Alembic revisions (migrations/) and the demo fixtures are package data:
#    the installed package has them.
COPY setup.py README.md LICENSE alembic.ini ./
COPY dsh_memory_worker ./dsh_memory_worker
COPY migrations ./migrations
COPY hypatia-lite/hypatia_lite ./hypatia-lite/hypatia_lite
COPY hypatia-lite/README.md hypatia-lite/LICENSE ./hypatia-lite/
COPY memory ./memory
COPY worker ./worker
RUN pip install --no-deps ./hypatia-lite . \
    && pip check \
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
