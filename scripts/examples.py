"""Record the examples of ``openapi.yaml`` from a real stack: ``python -m scripts.examples > schemas/examples.py``.

Starts Redis, a worker and gunicorn (:class:`scripts.stack.Stack`), walks a small dataset through
every operation of the API (dataset, jobs, a prediction, a constraint check, a session with
answers, the catalogue, the probes) and prints a Python module whose ``EXAMPLES`` map
``"METHOD /path"`` to the request body and the 2xx responses it got. :class:`service.ShoalApi`
puts them into the spec. Long lists (the catalogue, metrics) are cut to their first entries.
"""

import io
import pprint
import sys
import time

import numpy as np
import requests

from scripts.stack import Stack, wait_ready

#: 12 points in three groups of four, with labels and item ids.
X = np.round(np.vstack([np.random.default_rng(7).normal(c, 0.3, (4, 2)) for c in [(0, 0), (3, 3), (0, 3)]]), 2)
Y = [0] * 4 + [1] * 4 + [2] * 4


#: The recording stack's admin key (tenant "acme"): the admin routes need one, and so, once keys are on, does
#: every other route.
ADMIN_KEY = "acme:" + "k" * 32


class Recorder:
    def __init__(self, base):
        self.base, self.examples = base, {}
        self.auth = {"Authorization": "Bearer " + ADMIN_KEY.partition(":")[2]}

    def call(self, method, path, template=None, body=None, params=None, record=True):
        r = requests.request(method, self.base + path, json=body, params=params, timeout=60, headers=self.auth)
        assert r.status_code < 300, (method, path, r.status_code, r.text)
        if record:
            entry = self.examples.setdefault(f"{method} {template or path}", {"responses": {}})
            if body is not None:
                entry["request"] = body
            if r.content:
                entry["responses"][str(r.status_code)] = r.json() if "json" in r.headers["Content-Type"] else r.text
        return r.json() if r.content and "json" in r.headers["Content-Type"] else r.text

    def wait(self, path, done):
        for _ in range(600):
            view = self.call("GET", path, record=False)
            if done(view):
                return view
            time.sleep(0.2)
        raise TimeoutError(path)


def record(base):
    rec = Recorder(base)
    ds = rec.call("POST", "/v1/datasets", body={"name": "points", "data": X.tolist(), "labels": Y,
                                                 "item_ids": [f"item-{i}" for i in range(len(Y))]})
    did = ds["id"]
    rec.call("GET", f"/v1/datasets/{did}", "/v1/datasets/{dataset_id}")
    npy = io.BytesIO()
    np.save(npy, X.astype(np.float32), allow_pickle=False)
    up = rec.call("POST", "/v1/uploads", body={"content_type": "application/x-npy", "length": len(npy.getvalue())})
    r = requests.patch(f"{base}/v1/uploads/{up['id']}", data=npy.getvalue(), timeout=60,
                       headers={**rec.auth, "Upload-Offset": "0", "Content-Type": "application/offset+octet-stream"})
    assert r.status_code == 204, r.text
    rec.call("GET", f"/v1/uploads/{up['id']}", "/v1/uploads/{upload_id}")
    binary = rec.call("POST", "/v1/datasets", body={"upload_id": up["id"], "name": "points-f32"}, record=False)
    rec.call("PATCH", f"/v1/datasets/{binary['id']}", "/v1/datasets/{dataset_id}",
             body={"labels": Y, "item_ids": [f"item-{i}" for i in range(len(Y))]})
    rec.call("PUT", f"/v1/datasets/{did}/items", "/v1/datasets/{dataset_id}/items", body={"items": [
        {"text": f"Point {i} of group {y}", "fields": {"group": str(y)}} for i, y in enumerate(Y)]})
    job = rec.call("POST", "/v1/jobs", body={
        "dataset_id": did, "method": "e2cp", "n_clusters": 3, "scale": "zscore", "random_state": 0,
        "constraints": {"must_link": [[0, 1], [4, 5]], "cannot_link": [[0, 8]]}})
    jid = job["id"]
    rec.wait(f"/v1/jobs/{jid}", lambda j: j["done"])
    rec.call("GET", f"/v1/jobs/{jid}", "/v1/jobs/{job_id}")
    rec.call("GET", f"/v1/jobs/{jid}/result", "/v1/jobs/{job_id}/result")
    rec.call("GET", f"/v1/jobs/{jid}/affinity", "/v1/jobs/{job_id}/affinity", params={"top_k": 2})
    rec.call("POST", f"/v1/jobs/{jid}/cancel", "/v1/jobs/{job_id}/cancel")
    triplets = [[0, 1, 4, "yes"], [4, 5, 8, "yes"], [8, 9, 0, "yes"], [1, 2, 9, "yes"], [5, 6, 10, "yes"],
                [0, 8, 2, "no"], [9, 10, 3, "yes"], [2, 3, 7, "dont_know"]]
    dcrc = rec.call("POST", "/v1/jobs", record=False, body={
        "dataset_id": did, "method": "dcrc", "n_clusters": 3, "random_state": 0, "constraints": {"triplets": triplets}})
    rec.wait(f"/v1/jobs/{dcrc['id']}", lambda j: j["done"])
    rec.call("POST", f"/v1/jobs/{dcrc['id']}/predict", "/v1/jobs/{job_id}/predict",
             body={"data": [[0.1, -0.2], [2.9, 3.2]], "item_ids": ["new-0", "new-1"]})
    rec.call("GET", "/v1/jobs", params={"page_size": 2})
    rec.call("POST", "/v1/constraints/check", body={
        "dataset_id": did, "constraints": {"must_link": [[0, 1], [1, 4]], "cannot_link": [[0, 4]]}})
    ses = rec.call("POST", "/v1/sessions", body={"dataset_id": did, "n_clusters": 3, "budget": 10})
    sid = ses["id"]
    path = f"/v1/sessions/{sid}"
    for _ in range(600):
        lease = rec.call("POST", f"{path}/questions", "/v1/sessions/{session_id}/questions",
                         body={"count": 2, "worker_id": "w1"})
        if lease["questions"]:
            break
        time.sleep(0.2)
    answers = [{"question_id": q["question_id"], "worker_id": "w1", "assignment_id": f"a{i}",
                "answer": "must_link" if Y[q["items"][0]] == Y[q["items"][1]] else "cannot_link"}
               for i, q in enumerate(lease["questions"])]
    rec.call("POST", f"{path}/answers", "/v1/sessions/{session_id}/answers", body={"answers": answers})
    rec.wait(path, lambda s: s["observed_revision"] == s["revision"])
    more = rec.call("POST", f"{path}/questions", body={"count": 1, "worker_id": "w2"}, record=False)["questions"]
    csv = "question_id,items,worker_id,assignment_id,answer\n" + "".join(
        f"{q['question_id']},{q['items'][0]} {q['items'][1]},w2,w2/{q['question_id']},"
        f"{'must_link' if Y[q['items'][0]] == Y[q['items'][1]] else 'cannot_link'}\n" for q in more)
    r = requests.post(f"{base}{path}/answers/import", params={"format": "csv"}, data=csv, timeout=60,
                      headers={**rec.auth, "Content-Type": "text/csv"})
    assert r.status_code == 200, r.text
    rec.examples["POST /v1/sessions/{session_id}/answers/import"] = {"responses": {"200": r.json()}}
    rec.wait(path, lambda s: s["observed_revision"] == s["revision"])
    rec.call("GET", path, "/v1/sessions/{session_id}")
    rec.call("POST", f"{path}/gold", "/v1/sessions/{session_id}/gold",
             body={"questions": [{"items": [0, 1], "answer": "must_link"}, {"items": [0, 8], "answer": "cannot_link"}],
                   "every": 5, "first": 2})
    rec.call("POST", f"{path}/annotators", "/v1/sessions/{session_id}/annotators",
             body={"worker_id": "alice", "expires_in": 86400, "quota": 20,
                   "completion_url": "https://app.prolific.com/submissions/complete?cc=C1A2B3"})
    rec.call("GET", f"{path}/annotators", "/v1/sessions/{session_id}/annotators")
    rec.call("GET", f"{path}/workers", "/v1/sessions/{session_id}/workers")
    rec.call("GET", f"{path}/questions", "/v1/sessions/{session_id}/questions", params={"page_size": 2})
    rec.call("GET", f"{path}/model", "/v1/sessions/{session_id}/model")
    refit = rec.call("POST", f"{path}/refit", "/v1/sessions/{session_id}/refit",
                     body={"method": "auto", "random_state": 0})
    rec.wait(f"/v1/jobs/{refit['id']}", lambda j: j["done"])
    rec.call("GET", "/v1/sessions", params={"page_size": 1})
    rec.call("GET", "/v1/datasets", params={"page_size": 1})
    key = rec.call("POST", "/v1/admin/keys", body={"tenant": "acme", "scopes": ["read", "write"],
                                                    "name": "crowd connector"})
    rec.call("GET", "/v1/admin/keys", params={"tenant": "acme"})
    rec.call("GET", f"/v1/admin/keys/{key['id']}", "/v1/admin/keys/{key_id}")
    rec.call("POST", f"/v1/admin/keys/{key['id']}/rotate", "/v1/admin/keys/{key_id}/rotate",
             body={"grace_seconds": 3600})
    rec.call("PUT", "/v1/admin/tenants/acme/limits", "/v1/admin/tenants/{tenant}/limits",
             body={"requests_per_second": 20, "burst": 40, "max_active_jobs": 50})
    rec.call("GET", "/v1/admin/tenants/acme/limits", "/v1/admin/tenants/{tenant}/limits")
    rec.call("GET", "/v1/methods")
    rec.call("GET", "/healthz")
    rec.call("GET", "/readyz")
    rec.call("GET", "/metrics")
    return _trimmed(rec.examples)


#: Operations that need an annotation platform's server (Label Studio) to answer: their examples are
#: written here, in the shapes the schemas give, not recorded.
PLATFORM_EXAMPLES = {
    "POST /v1/sessions/{session_id}/integrations": {
        "request": {"platform": "label_studio", "url": "http://label-studio.internal:8080",
                    "token_env": "SHOAL_INTEGRATION_TOKEN_LS", "batch_size": 20, "content_kind": "text"},
        "responses": {"201": {
            "id": "int_5b1f0c2a9d8e4f6a8b7c6d5e4f3a2b1c", "session_id": "ses_0d4c1e2f3a4b5c6d7e8f9a0b1c2d3e4f",
            "platform": "label_studio", "url": "http://label-studio.internal:8080", "project_id": 12, "batch_size": 20,
            "token_source": "environment",
            "webhook_url": "https://shoal.example/v1/integrations/int_5b1f0c2a9d8e4f6a8b7c6d5e4f3a2b1c/label-studio",
            "created_at": "2026-11-28T10:00:00Z", "tasks_sent": 20, "changed_answers": []}}},
    "GET /v1/sessions/{session_id}/integrations": {"responses": {"200": {"integrations": [{
        "id": "int_5b1f0c2a9d8e4f6a8b7c6d5e4f3a2b1c", "session_id": "ses_0d4c1e2f3a4b5c6d7e8f9a0b1c2d3e4f",
        "platform": "label_studio", "url": "http://label-studio.internal:8080", "project_id": 12, "batch_size": 20,
        "token_source": "environment",
        "webhook_url": "https://shoal.example/v1/integrations/int_5b1f0c2a9d8e4f6a8b7c6d5e4f3a2b1c/label-studio",
        "created_at": "2026-11-28T10:00:00Z", "tasks_sent": 40, "changed_answers": []}]}}},
    "POST /v1/integrations/{integration_id}/label-studio": {"responses": {"200": {
        "outcome": "accepted", "reason": None, "question_id": "q_3_77", "assignment_id": "ls-12-3051",
        "changed": False}}},
}


def _trimmed(examples):
    cat = examples["GET /v1/methods"]["responses"]["200"]
    cat["methods"] = [m for m in cat["methods"] if m["id"] == "e2cp"]
    cat["session_strategies"] = cat["session_strategies"][-1:]
    text = examples["GET /metrics"]["responses"]["200"]
    keep = [line for line in text.splitlines() if "shoal_jobs_submitted_total" in line or "shoal_workers" in line]
    examples["GET /metrics"]["responses"]["200"] = "\n".join(keep) + "\n"
    return examples


def main():
    with Stack() as stack:
        stack.env.pop("REDIS_URL", None)
        stack.redis_url = None
        stack.start_redis()
        stack.env["SHOAL_ADMIN_KEYS"] = ADMIN_KEY
        stack.start_worker(concurrency=1)
        base = stack.start_web()
        wait_ready(base)
        examples = {**record(base), **PLATFORM_EXAMPLES}
    sys.stdout.write('"""Examples of every request body and 2xx response in the OpenAPI document.\n\n'
                     "Recorded from a real stack by ``python -m scripts.examples > schemas/examples.py``; "
                     "do not edit by hand.\n\"\"\"\n\n")
    sys.stdout.write("EXAMPLES = " + pprint.pformat(examples, width=110, sort_dicts=True) + "\n")


if __name__ == "__main__":
    main()
