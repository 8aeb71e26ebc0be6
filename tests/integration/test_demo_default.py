"""``./run.sh`` (``scripts/demo.py``) with no arguments shows what constraints do.

It starts its own stack (Redis, a worker, gunicorn), as a user's ``./run.sh`` does, clusters its
default dataset with and without constraints, and prints one JSON line last.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.demo import DEFAULT

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(900)
def test_default_run_lifts_the_ari_by_at_least_0_15():
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}  # its own Redis, as ./run.sh starts
    env["OPENBLAS_NUM_THREADS"] = "1"
    proc = subprocess.run([sys.executable, "-m", "scripts.demo"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=850)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = json.loads(proc.stdout.strip().splitlines()[-1])
    assert list(line) == ["dataset", "method", "n_constraints", "ari", "ari_unconstrained", "seconds"]
    assert (line["dataset"], line["method"], line["n_constraints"]) == (
        DEFAULT["dataset"], DEFAULT["method"], DEFAULT["constraints"])
    assert line["ari"] >= line["ari_unconstrained"] + 0.15, line
    assert f"preset {DEFAULT['preset']}" in proc.stdout
