"""``scripts/smoke.py``, the deployment check README and docker/compose.yaml point to, on the test stack."""

import json

import pytest
import requests

from scripts import smoke

pytestmark = pytest.mark.integration


def test_smoke_runs_every_method_and_both_session_kinds_and_leaves_nothing(live, capsys):
    methods = {m["id"] for m in requests.get(f"{live}/v1/methods", timeout=30).json()["methods"]}
    before = {d["id"] for d in requests.get(f"{live}/v1/datasets?page_size=100", timeout=30).json()["datasets"]}

    assert smoke.main([live, "--min-ari", "0.5"]) == 0

    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["failed"] == []
    assert set(summary["ari"]) == methods | {"session_pairwise", "session_triplet"}
    assert all(ari >= 0.5 for ari in summary["ari"].values())
    after = {d["id"] for d in requests.get(f"{live}/v1/datasets?page_size=100", timeout=30).json()["datasets"]}
    assert [d for d in after - before if _name(live, d) == "smoke-wine"] == []  # deleted what it created


def _name(base, dataset_id):
    return requests.get(f"{base}/v1/datasets/{dataset_id}", timeout=30).json().get("name")
