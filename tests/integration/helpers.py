"""HTTP helpers for the end-to-end tests (real gunicorn, Redis and Celery worker)."""

import time
from contextlib import contextmanager

import requests


def metric_values(text):
    """Prometheus text -> {(sample name, sorted label items): value}."""
    from prometheus_client.parser import text_string_to_metric_families

    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def metric(values, name, **labels):
    """One sample of :func:`metric_values`' output (0 when absent)."""
    return values.get((name, tuple(sorted(labels.items()))), 0.0)


def scrape(base):
    r = requests.get(f"{base}/metrics", timeout=30)
    assert r.status_code == 200, r.text
    return metric_values(r.text)


def upload(base, X, y=None, item_ids=None, name="test"):
    body = {"name": name, "data": [list(map(float, r)) for r in X]}
    if y is not None:
        body["labels"] = [int(v) for v in y]
    if item_ids is not None:
        body["item_ids"] = item_ids
    r = requests.post(f"{base}/v1/datasets", json=body, timeout=30)
    assert r.status_code == 201, r.text
    return r.json()["id"]


def submit(base, **body):
    r = requests.post(f"{base}/v1/jobs", json=body, timeout=30)
    assert r.status_code == 202, r.text
    return r


def wait_done(base, job_id, timeout=90):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = requests.get(f"{base}/v1/jobs/{job_id}", timeout=30).json()
        if job["done"]:
            return job
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} not done after {timeout} s: {job}")


class WebhookReceiver:
    """A local HTTP server that records the webhook events POSTed to it.

    ``with WebhookReceiver() as hook:`` gives ``hook.url``; ``hook.wait(pred)``
    returns the first ``(headers, body)`` (headers lower-cased, body text) whose
    parsed JSON body satisfies ``pred``. ``WebhookReceiver(fail_first=n)``
    answers the first n POSTs with 503 and keeps them in ``hook.failed``; with
    ``hold`` (a ``threading.Event``) it answers each of them only once ``hold`` is set
    (at most 5 s later), so a test can act while an attempt is under way.
    """

    def __init__(self, fail_first=0, hold=None):
        self.fail_first = fail_first  # answer 503 to this many POSTs first (the sender retries)
        self.hold = hold

    def __enter__(self):
        import threading
        from http.server import BaseHTTPRequestHandler, HTTPServer

        received = self.received = []
        failed = self.failed = []
        fail_first, hold = self.fail_first, self.hold

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["content-length"])).decode()
                headers = {k.lower(): v for k, v in self.headers.items()}
                if len(failed) < fail_first:
                    failed.append((headers, body))
                    if hold is not None:
                        hold.wait(5)
                    self.send_response(503)
                else:
                    received.append((headers, body))
                    self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    def wait(self, pred, timeout=60):
        import json

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for headers, body in list(self.received):
                if pred(json.loads(body)):
                    return headers, body
            time.sleep(0.05)
        raise AssertionError(f"no matching webhook event after {timeout} s: {self.received}")


def signature_ok(headers, body, secret=None):
    """Standard Webhooks check as a receiver makes it: ``standardwebhooks.Webhook(secret).verify``.

    ``secret`` defaults to the stack's ``SHOAL_WEBHOOK_SECRET`` (``whsec_<base64>``).
    """
    from standardwebhooks import Webhook, WebhookVerificationError

    from tests.conftest import TEST_ENV

    try:
        Webhook(secret or TEST_ENV["SHOAL_WEBHOOK_SECRET"]).verify(body, headers)
    except WebhookVerificationError:
        return False
    return True


@contextmanager
def own_stack(env, log_dir, *, web_workers=2, concurrency=1):
    """A stack of its own for a test that changes timings: a fresh Redis (not the session's), one
    Celery worker of ``concurrency`` pool processes and gunicorn, every process with the settings
    ``env``; yields ``(stack, base_url)``."""
    from scripts.stack import Stack, wait_ready

    st = Stack(env=env, log_dir=log_dir)
    st.env.pop("REDIS_URL", None)
    st.redis_url = None
    try:
        st.start_redis()
        st.start_worker(concurrency=concurrency)
        base = st.start_web(workers=web_workers)
        wait_ready(base, timeout=90)
        yield st, base
    finally:
        st.stop()
