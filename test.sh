#!/usr/bin/env bash
# ./test.sh [pytest args]   install what is needed, run the whole suite against a real Redis
# server and real Celery workers (started by the test fixtures), fail if anything fails or no test ran.
set -euo pipefail
cd "$(dirname "$0")"
source scripts/bootstrap.sh test
set +e
.venv/bin/python -m pytest "$@"
rc=$?
set -e
if [ "$rc" = "5" ]; then
  echo "no test ran" >&2
  exit 1
fi
exit "$rc"
