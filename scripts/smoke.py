"""Smoke-test a running Shoal deployment over HTTP: every method once, and a session of each kind.

Run it against any base URL, e.g. after ``docker compose -f docker/compose.yaml up``::

    .venv/bin/python -m scripts.smoke http://localhost:8000 [--api-key KEY]

It uploads scikit-learn's bundled ``wine`` data (178 x 13, 3 classes; no download), submits one job
per method that ``GET /v1/methods`` lists, with 60 ground-truth pairs or triplets of the kind the
method takes, polls each to its end, fetches its result (and its affinity where the method has
one), then runs a pairwise (URASC) and a triplet (DCRC) session of 30 questions with a
ground-truth oracle. It prints one line per check, deletes what it created, and exits 1 if any job
or session did not succeed, or ended with an adjusted Rand index below ``--min-ari``. The last line
printed is a JSON summary.
"""

import argparse
import json
import sys
import time

import numpy as np
import requests
from sklearn.datasets import load_wine

PAIRS = 60


class Client:
    """A requests session bound to a base URL, sending the API key when one is given."""

    def __init__(self, base, api_key=None, timeout=30):
        self.base = base.rstrip("/")
        self.http = requests.Session()
        self.timeout = timeout
        if api_key:
            self.http.headers["Authorization"] = f"Bearer {api_key}"

    def call(self, method, path, expect, **kwargs):
        """One request; raises RuntimeError (status and the body's start) unless its status is in ``expect``.

        Parameters
        ----------
        method : str
        path : str
            Below the base URL, e.g. ``/v1/jobs``.
        expect : tuple of int
            Accepted status codes.
        **kwargs
            Passed to :meth:`requests.Session.request` (``json=`` ...).

        Returns
        -------
        requests.Response
        """
        r = self.http.request(method, self.base + path, timeout=self.timeout, **kwargs)
        if r.status_code not in expect:
            raise RuntimeError(f"{method} {path}: {r.status_code} {r.text[:300]}")
        return r

    def wait(self, path, done, timeout):
        """GET ``path`` until ``done(body)``; raise after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            body = self.call("GET", path, (200,)).json()
            if done(body):
                return body
            if time.monotonic() > deadline:
                raise RuntimeError(f"{path} not done after {timeout} s: {json.dumps(body)[:300]}")
            time.sleep(0.5)


def constraints_for(kinds, y, rng):
    """Ground-truth side information of the first kind a method takes (``{}`` for none).

    Parameters
    ----------
    kinds : list of str
        The method's ``constraints`` in ``GET /v1/methods`` (``pairwise``, ``relative``, ``triplets``, ...).
    y : ndarray of shape (n_samples,), int
        The classes.
    rng : numpy.random.Generator

    Returns
    -------
    dict
        ``must_link`` / ``cannot_link`` from up to ``PAIRS`` random distinct pairs, or ``PAIRS``
        ``relative`` ab|c triplets (a, b of one class, c of another), as the job body's ``constraints``.
    """
    n = len(y)
    if "pairwise" in kinds:
        pairs = rng.choice(n, size=(4 * PAIRS, 2))
        pairs = pairs[pairs[:, 0] != pairs[:, 1]][:PAIRS]
        same = y[pairs[:, 0]] == y[pairs[:, 1]]
        return {"must_link": pairs[same].tolist(), "cannot_link": pairs[~same].tolist()}
    if "relative" in kinds or "triplets" in kinds:
        relative = []
        while len(relative) < PAIRS:
            a, b, c = (int(i) for i in rng.choice(n, size=3, replace=False))
            if y[a] == y[b] != y[c]:
                relative.append([a, b, c])
        return {"relative": relative}
    return {}


def run_job(client, dataset_id, method, y, rng, timeout):
    """Submit one job of ``method`` (an entry of ``GET /v1/methods``), wait for it, fetch its result.

    Returns ``(job_url, ari)``: the job's path and its adjusted Rand index against ``y``. Raises
    RuntimeError if the job did not succeed, returned the wrong number of labels, or took longer
    than ``timeout`` seconds.
    """
    body = {"dataset_id": dataset_id, "method": method["id"], "n_clusters": int(len(set(y))),
            "constraints": constraints_for(method["constraints"], y, rng), "scale": "zscore", "random_state": 0}
    job_url = client.call("POST", "/v1/jobs", (202,), json=body).headers["Location"]
    job = client.wait(job_url, lambda j: j["done"], timeout)
    if job["state"] != "SUCCEEDED":
        raise RuntimeError(f"{method['id']}: {job['state']} {json.dumps(job.get('error'))[:300]}")
    result = client.call("GET", job_url + "/result", (200,)).json()
    if len(result["labels"]) != len(y):
        raise RuntimeError(f"{method['id']}: {len(result['labels'])} labels for {len(y)} rows")
    if "affinity" in method["outputs"]:
        client.call("GET", job_url + "/affinity?top_k=5", (200,))
    return job_url, result["metrics"]["ari"]


def answer(question_type, items, y):
    """The ground-truth answer to a session question: ``must_link`` / ``cannot_link`` for a pair
    (``items`` = [a, b]), ``yes`` / ``no`` / ``dont_know`` for a triplet ("is a closer to b than to c?")."""
    if question_type == "pairwise":
        return "must_link" if y[items[0]] == y[items[1]] else "cannot_link"
    a, b, c = items
    if y[a] == y[b] != y[c]:
        return "yes"
    if y[a] == y[c] != y[b]:
        return "no"
    return "dont_know"


def run_session(client, dataset_id, question_type, y, budget, timeout):
    """Open a session of ``budget`` questions, answer every leased question from ``y`` until it is done.

    Returns ``(session_url, accepted, ari)``: the session's path, the answers accepted and the model's
    adjusted Rand index once it is up to date. Raises RuntimeError if the session FAILED or took longer
    than ``timeout`` seconds.
    """
    body = {"dataset_id": dataset_id, "question_type": question_type, "n_clusters": int(len(set(y))),
            "budget": budget, "pool_size": 10}
    url = client.call("POST", "/v1/sessions", (201,), json=body).headers["Location"]
    deadline = time.monotonic() + timeout
    asked = 0
    while True:
        session = client.call("GET", url, (200,)).json()
        if session["state"] in ("COMPLETED", "FAILED"):
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"{question_type} session not done after {timeout} s")
        batch = client.call("POST", url + "/questions", (200,), json={"count": 10, "worker_id": "smoke"})
        questions = batch.json()["questions"]
        if not questions:
            time.sleep(float(batch.headers.get("Retry-After", 0.5)))
            continue
        answers = [{"question_id": q["question_id"], "answer": answer(question_type, q["items"], y),
                    "worker_id": "smoke", "assignment_id": f"smoke-{q['question_id']}"} for q in questions]
        outcomes = client.call("POST", url + "/answers", (200,), json={"answers": answers}).json()
        asked += sum(item["outcome"] == "accepted" for item in outcomes["results"])
    if session["state"] != "COMPLETED":
        raise RuntimeError(f"{question_type} session {session['state']}: {json.dumps(session)[:300]}")
    model = client.wait(url + "/model", lambda m: m["observed_revision"] == session["revision"], timeout)
    return url, asked, model["metrics"]["ari"]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("base_url")
    p.add_argument("--api-key", default=None, help="sent as Authorization: Bearer KEY")
    p.add_argument("--min-ari", type=float, default=0.3, help="a job or session below it fails the check")
    p.add_argument("--timeout", type=float, default=300, help="seconds per job or session")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    client = Client(args.base_url, args.api_key)
    ready = client.call("GET", "/readyz", (200, 503)).json()
    print(f"readyz: {json.dumps(ready)}")
    X, y = load_wine(return_X_y=True)
    rng = np.random.default_rng(args.seed)
    dataset = client.call("POST", "/v1/datasets", (201,),
                          json={"data": X.tolist(), "labels": y.tolist(), "name": "smoke-wine"}).json()
    created, failures, summary = [], [], {}
    start = time.monotonic()
    try:
        for method in client.call("GET", "/v1/methods", (200,)).json()["methods"]:
            try:
                url, ari = run_job(client, dataset["id"], method, y, rng, args.timeout)
                created.append(url)
                summary[method["id"]] = round(ari, 3)
                ok = ari >= args.min_ari
            except RuntimeError as exc:
                summary[method["id"]], ok = None, False
                print(f"job {method['id']}: {exc}")
            print(f"job {method['id']:<18} {'ok' if ok else 'FAILED'}  ari={summary[method['id']]}")
            failures += [] if ok else [method["id"]]
        for question_type in ("pairwise", "triplet"):
            name = f"session_{question_type}"
            try:
                url, asked, ari = run_session(client, dataset["id"], question_type, y, 30, args.timeout)
                created.append(url)
                summary[name] = round(ari, 3)
                ok = ari >= args.min_ari
            except RuntimeError as exc:
                summary[name], asked, ok = None, 0, False
                print(f"{name}: {exc}")
            print(f"{name:<22} {'ok' if ok else 'FAILED'}  ari={summary[name]} after {asked} answers")
            failures += [] if ok else [name]
    finally:
        for url in reversed(created):
            client.http.delete(client.base + url, timeout=client.timeout)
        client.http.delete(f"{client.base}/v1/datasets/{dataset['id']}", timeout=client.timeout)
    print(json.dumps({"ari": summary, "failed": failures, "seconds": round(time.monotonic() - start, 1)}))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
