"""The client's annotations hold: ``mypy --strict`` (configured in client/pyproject.toml) finds no issue."""

import subprocess
import sys
from pathlib import Path

CLIENT = Path(__file__).resolve().parents[2] / "client"


def test_mypy_strict_finds_no_issue_in_the_client():
    out = subprocess.run([sys.executable, "-m", "mypy", "shoal_client"], cwd=CLIENT, capture_output=True,
                         text=True, timeout=240)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Success: no issues found" in out.stdout
