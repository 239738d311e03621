#!/usr/bin/env bash
# The base install, as a user gets it: build the two wheels from this checkout (hypatia-lite's,
# from hypatia-lite/, and the worker's), install both with no extra into a fresh venv outside
# the checkout (`mktemp -d`; dependencies at the versions constraints.txt pins, the image's,
# from pip's cache when they are there), and run every command an embedded user may type on a
# demo home. Each command
# must exit with the status written next to it and print no traceback; `daemon`, `worker` and
# `--workers` must answer in one line naming the distributed extra, exit 2. The model is the
# echo server of tests/support/model_server.py (stdlib only), run by this venv's Python.
# Prints one line per failure and `base install: N failure(s)`; exit 1 when any failed.
set -uo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
T="$(mktemp -d)"
server=""
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
started=$(date +%s)

python3 -m venv "$T/venv" || { echo "base install: cannot create a venv" >&2; exit 1; }
PIP=("$T/venv/bin/python" -m pip -q --disable-pip-version-check)
"${PIP[@]}" wheel --no-deps -w "$T/dist" "$REPO/hypatia-lite" "$REPO" >"$T/pip.log" 2>&1 \
  && "${PIP[@]}" install --no-compile -c "$REPO/constraints.txt" "$T"/dist/hypatia_lite-*.whl "$T"/dist/dsh_memory_worker-*.whl >>"$T/pip.log" 2>&1 \
  || { cat "$T/pip.log" >&2; echo "base install: building or installing the wheels failed" >&2; exit 1; }
if "$T/venv/bin/python" -c 'import importlib.util as u, sys
sys.exit(not any(u.find_spec(n) for n in ("celery", "kombu", "psycopg")))'; then
  echo "base install: celery, kombu or psycopg is installed without the distributed extra" >&2
  exit 1
fi

echo "base install: wheels installed in $(( $(date +%s) - started ))s" >&2
cd "$T" || exit 1
# Only this run's settings: nothing from the caller's environment or config reaches it.
for var in $(env | grep -oE '^(MEMORY_WORKER_|HYPATIA_LITE_|DSH_|PYTHON)[A-Z_]*'); do unset "$var"; done
export HOME="$T/home" MEMORY_WORKER_CONFIG="" MEMORY_WORKER_DATA_DIR="$T/data" \
  MEMORY_WORKER_LITE_HOME="$T/lite" HYPATIA_LITE_HOME="$T/lite" MEMORY_WORKER_DSH_HOME="$T/dsh" \
  BASE_INSTALL_MODEL_KEY="sk-base-install-check"
mkdir -p "$HOME"
"$T/venv/bin/python" "$REPO/tests/support/model_server.py" "$T/model-url" & server=$!
for _ in $(seq 1 100); do [ -s "$T/model-url" ] && break; sleep 0.1; done
ROUTES="[{\"base_url\": \"$(cat "$T/model-url")\", \"model\": \"echo\", \"api_key_env\": \"BASE_INSTALL_MODEL_KEY\"}]"

failures=0
MW="$T/venv/bin/memory-worker"
# expect STATUS ARGS…: run memory-worker ARGS…, check the status and that no traceback shows.
expect() {
  local want="$1"; shift
  local began=$SECONDS
  "$MW" "$@" >"$T/out" 2>&1
  local got=$?
  [ -n "${BASE_INSTALL_TIMES:-}" ] && echo "$((SECONDS - began))s memory-worker $*" >&2
  local what="exited $got (expected $want)"
  grep -q "Traceback" "$T/out" && what="$what with a traceback"
  if [ "$got" -ne "$want" ] || grep -q "Traceback" "$T/out"; then
    echo "base install: \`memory-worker $*\` $what:" >&2
    tail -n 5 "$T/out" | sed 's/^/    /' >&2
    failures=$((failures + 1))
  fi
}
# refused CMD ARGS…: exit 2 with exactly one line naming the distributed extra.
refused() {
  expect 2 "$@"
  if [ "$(wc -l <"$T/out")" -ne 1 ] || ! grep -q "dsh-memory-worker\[distributed\]" "$T/out"; then
    echo "base install: \`memory-worker $*\` did not answer in one line naming the extra" >&2
    failures=$((failures + 1))
  fi
}

S=44444444-4444-4444-8444-444444444444  # a demo session
expect 0 --version
expect 0 demo-home "$T/dsh"
expect 0 config
expect 0 migrate upgrade
expect 0 migrate current
expect 0 inspect "$T/dsh"
# No model route (the default): logging runs; what needs a model says so, relog still scrubs.
expect 0 run --once
expect 0 status
expect 1 reconsolidate "$S" --wait
expect 1 reconsolidate --replace --all --dry-run
expect 0 relog --all --dry-run
expect 0 relog --all --wait
export MEMORY_WORKER_MODEL_ROUTES="$ROUTES"
expect 0 reconsolidate --all --wait
expect 0 reconsolidate "$S"
expect 0 run --once
expect 0 reconsolidate --replace --all --force --dry-run
expect 0 reconsolidate --replace "$S" --force --wait
expect 0 reconsolidate --replace --stale --dry-run
expect 0 reconsolidate --replace --stale --wait
expect 0 reconsolidate --replace --all --force
expect 0 run --once
expect 0 reconsolidate --replace --all --force --wait --max-calls 3
expect 0 relog --all --dry-run
expect 0 relog "$S" --wait
expect 0 relog --all
expect 0 run --once
expect 0 retract --all --dry-run
expect 0 retract --all
expect 0 forget "$S" --dry-run
expect 0 forget "$S"
expect 0 verify-forgetting
expect 0 segments prune
expect 0 status
refused daemon
refused worker
refused reconsolidate --replace --all --workers
refused relog --all --workers --wait
# One import name each: the two wheels put exactly dsh_memory_worker and hypatia_lite into
# site-packages (the console scripts aside).
tops=$("$T/venv/bin/python" -c 'import importlib.metadata as m
print(" ".join(sorted({f.parts[0] for d in ("dsh-memory-worker", "hypatia-lite")
    for f in m.distribution(d).files if f.parts[0] != ".." and not f.parts[0].endswith(".dist-info")})))')
if [ "$tops" != "dsh_memory_worker hypatia_lite" ]; then
  echo "base install: the wheels install the top-level names '$tops', not 'dsh_memory_worker hypatia_lite'" >&2
  failures=$((failures + 1))
fi
"$T/venv/bin/python" -m dsh_memory_worker --version >"$T/out" 2>&1 \
  || { echo "base install: python -m dsh_memory_worker failed:" >&2; tail -n 5 "$T/out" >&2; failures=$((failures + 1)); }
# The MCP transport, with hypatia-lite's MCP server as the store (a home of its own).
MEMORY_WORKER_STORE_TRANSPORT=mcp MEMORY_WORKER_STORE_BINARY="$T/venv/bin/hypatia-lite" \
  MEMORY_WORKER_DATA_DIR="$T/data-mcp" MEMORY_WORKER_LITE_HOME="$T/lite-mcp" HYPATIA_LITE_HOME="$T/lite-mcp" \
  expect 0 run --once
grep -q ", 0 failed" "$T/out" || { echo "base install: run --once over MCP failed jobs:" >&2; tail -n 3 "$T/out" >&2; failures=$((failures + 1)); }
# The service unit runs this install's memory-worker.
expect 0 service install --print --manager systemd
grep -q "^ExecStart=\"$T/venv/bin/memory-worker\" \"run\"" "$T/out" \
  || { echo "base install: the service unit does not run $T/venv/bin/memory-worker:" >&2; grep ExecStart "$T/out" >&2; failures=$((failures + 1)); }
"$T/venv/bin/hypatia-lite" --version >"$T/out" 2>&1 \
  && "$T/venv/bin/hypatia-lite" search "build" >"$T/out" 2>&1 \
  || { echo "base install: hypatia-lite failed:" >&2; tail -n 5 "$T/out" >&2; failures=$((failures + 1)); }

echo "base install: $failures failure(s) in $(( $(date +%s) - started ))s"
[ "$failures" -eq 0 ]
