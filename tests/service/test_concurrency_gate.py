"""The per-key gate on requests in progress (service.concurrency): keys are gated, addresses are not."""

import threading

from service.concurrency import ConcurrencyGate


def _blocking_app(started, release):
    def app(environ, start_response):
        started.release()
        release.wait(5)
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"ok"]
    return app


def _call(gate, headers, out):
    environ = {"PATH_INFO": "/v1/jobs", "REMOTE_ADDR": "10.0.0.1", **headers}
    statuses = []
    body = gate(environ, lambda status, hdrs: statuses.append((status, dict(hdrs))))
    out.append((statuses[0], b"".join(body)))


def _run(headers, n, limit=2):
    started, release = threading.Semaphore(0), threading.Event()
    gate, out = ConcurrencyGate(_blocking_app(started, release), limit=limit), []
    threads = [threading.Thread(target=_call, args=(gate, headers, out)) for _ in range(n)]
    for t in threads:
        t.start()
    admitted = sum(started.acquire(timeout=2) for _ in range(min(n, limit + 1)))
    release.set()
    for t in threads:
        t.join(5)
    return admitted, sorted(s[0][0] for s in out), out


def test_a_key_has_at_most_limit_requests_in_progress_and_the_next_is_a_429():
    admitted, codes, out = _run({"HTTP_AUTHORIZATION": "Bearer k" * 3}, 4)
    assert admitted == 2 and codes == ["200 OK"] * 2 + ["429 Too Many Requests"] * 2
    refused = [hdrs for (status, hdrs), _ in out if status.startswith("429")][0]
    assert refused["Retry-After"] == "1" and refused["RateLimit-Policy"] == '"concurrency";q=2'


def test_requests_without_a_key_are_not_gated_by_their_address():
    """Every client behind one proxy shares an address: a crowd answering through it must not be refused."""
    admitted, codes, _ = _run({}, 5)
    assert admitted == 3 and codes == ["200 OK"] * 5
