"""A Label Studio server for the connector's tests: its own virtualenv, SQLite, loopback only.

``ensure_venv()`` creates ``.venv-label-studio`` (``pip install label-studio``,
a few minutes the first time; a stamp names the version, as scripts/bootstrap.sh
does for .venv). ``LabelStudioServer`` starts ``label-studio start`` on
127.0.0.1 with an admin whose legacy API token is known, and stops it.
Start-up flags and variables: docs/crowd-platforms.md.
"""

import os
import subprocess
import sys
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv-label-studio"
VERSION = "1.23.2"
STAMP = VENV / f".shoal-label-studio-{VERSION}"
ADMIN = "admin@shoal.test"
TOKEN = "5b1a2c3d4e5f60718293a4b5c6d7e8f901234567"  # DRF keys are 40 characters


def ensure_venv(log=None):
    """The ``label-studio`` command of ``.venv-label-studio``, installed first when the stamp is missing."""
    exe = VENV / "bin" / "label-studio"
    if STAMP.exists() and exe.exists():
        return exe
    if not (VENV / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    out = open(log, "ab") if log else subprocess.DEVNULL
    try:
        subprocess.run([str(VENV / "bin" / "python"), "-m", "pip", "install", "-q", f"label-studio=={VERSION}"],
                       check=True, stdout=out, stderr=out)
    finally:
        if log:
            out.close()
    STAMP.touch()
    return exe


class LabelStudioServer:
    """``label-studio start`` on 127.0.0.1:``port`` with its data (SQLite) in ``data_dir``.

    The admin ``ADMIN`` has the legacy token ``TOKEN`` (legacy tokens enabled at
    the organisation's creation); SSRF protection is off so that its webhooks may
    reach Shoal on loopback.
    """

    def __init__(self, port, data_dir, log_path):
        self.port, self.data_dir, self.log_path = port, Path(data_dir), Path(log_path)
        self.url = f"http://127.0.0.1:{port}"
        self.proc = None

    def start(self, timeout=600):
        exe = ensure_venv(self.log_path.with_suffix(".install.log"))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO", "LABEL_STUDIO"))}
        env.update(LABEL_STUDIO_BASE_DATA_DIR=str(self.data_dir), LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN="true",
                   SSRF_PROTECTION_ENABLED="false", DJANGO_DB="sqlite", LOG_LEVEL="WARNING",
                   LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK="true")
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [str(exe), "start", "--no-browser", "--internal-host", "127.0.0.1", "--port", str(self.port),
             "--username", ADMIN, "--password", "shoal-test-password", "--user-token", TOKEN],
            env=env, stdout=self.log, stderr=subprocess.STDOUT, cwd=self.data_dir, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"label-studio exited with {self.proc.returncode}; see {self.log_path}")
            try:
                r = requests.get(f"{self.url}/api/current-user/whoami", headers=self.headers, timeout=5)
                if r.status_code == 200:
                    return self
            except requests.RequestException:
                pass
            time.sleep(1)
        raise RuntimeError(f"label-studio not up after {timeout} s; see {self.log_path}")

    @property
    def headers(self):
        return {"Authorization": f"Token {TOKEN}"}

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, 15)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait()
        if self.proc is not None:
            self.log.close()
        self.proc = None
