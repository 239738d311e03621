#!/usr/bin/env bash
# hypatia-lite alone (issue 36): build its wheel from hypatia-lite/, install it (with its own
# extras, `postgresql` and `semantic`, which its tests exercise) and pytest + pytest-timeout into
# a fresh venv outside the checkout, and nothing of the worker; check that the wheel put exactly
# `hypatia_lite` into site-packages (no worker, no memory) and run hypatia-lite/tests there,
# against the installed package (pytest's importlib mode: the checkout is not on sys.path; the
# run's header, shown without -q, names where hypatia_lite came from: it must be the venv).
# PostgreSQL: the local server (HYPATIA_LITE_TEST_PG, see hypatia-lite/tests/conftest.py).
# Prints `lite alone: …` lines; exit 1 when anything failed.
set -uo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
started=$(date +%s)

python3 -m venv "$T/venv" || { echo "lite alone: cannot create a venv" >&2; exit 1; }
PIP=("$T/venv/bin/python" -m pip -q --disable-pip-version-check)
"${PIP[@]}" wheel --no-deps -w "$T/dist" "$REPO/hypatia-lite" >"$T/pip.log" 2>&1 \
  && wheel="$(ls "$T"/dist/hypatia_lite-*.whl)" \
  && "${PIP[@]}" install --no-compile "$wheel[postgresql,semantic]" \
       pytest pytest-timeout >>"$T/pip.log" 2>&1 \
  || { cat "$T/pip.log" >&2; echo "lite alone: building or installing the wheel failed" >&2; exit 1; }
echo "lite alone: wheel installed in $(( $(date +%s) - started ))s" >&2

failures=0
site="$("$T/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
# What the wheel installed under site-packages: its RECORD's top-level names.
top="$(cut -d, -f1 "$site"/hypatia_lite-*.dist-info/RECORD | grep -v '^\.\./' | cut -d/ -f1 | sort -u \
  | grep -v '^hypatia_lite-.*\.dist-info$' | tr '\n' ' ')"
if [ "$top" != "hypatia_lite " ]; then
  echo "lite alone: the wheel installed [$top] into site-packages, not exactly hypatia_lite" >&2
  failures=$((failures + 1))
fi
if (cd "$T" && "$T/venv/bin/python" -c 'import importlib.util as u, sys
sys.exit(not any(u.find_spec(n) for n in ("worker", "memory", "dsh_memory_worker")))'); then
  echo "lite alone: worker, memory or dsh_memory_worker is importable beside hypatia-lite" >&2
  failures=$((failures + 1))
fi

# Only this run's settings (the PostgreSQL server's URL aside).
for var in $(env | grep -oE '^(MEMORY_WORKER_|HYPATIA_LITE_|PYTHON)[A-Z_]*' | grep -vx HYPATIA_LITE_TEST_PG); do
  unset "$var"
done
(cd "$REPO/hypatia-lite" && HOME="$T/home" "$T/venv/bin/pytest" -p no:cacheprovider) >"$T/pytest.log" 2>&1
rc=$?
if [ "$rc" -ne 0 ]; then
  tail -n 40 "$T/pytest.log" >&2
  echo "lite alone: hypatia-lite/tests failed (pytest exit $rc)" >&2
  failures=$((failures + 1))
fi
if ! grep -qx "hypatia_lite [0-9.]* from $site/hypatia_lite" "$T/pytest.log"; then
  grep "^hypatia_lite " "$T/pytest.log" >&2
  echo "lite alone: the tests did not run against the installed hypatia_lite ($site)" >&2
  failures=$((failures + 1))
fi
echo "lite alone: $(tail -n 1 "$T/pytest.log")"
echo "lite alone: $failures failure(s) in $(( $(date +%s) - started ))s"
[ "$failures" -eq 0 ]
