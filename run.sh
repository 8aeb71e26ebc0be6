#!/usr/bin/env bash
# ./run.sh                      cluster wine (100 random constraints) end to end over HTTP
# ./run.sh --dataset NAME --method M --constraints N
# ./run.sh serve                start Redis, a worker and the API; print the base URL; Ctrl-C stops
set -euo pipefail
cd "$(dirname "$0")"
source scripts/bootstrap.sh bench
exec .venv/bin/python -m scripts.demo "$@"
