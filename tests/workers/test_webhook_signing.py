"""Outgoing event signatures verified as a receiver verifies them: with ``standardwebhooks``."""

import base64
import time

import pytest
from standardwebhooks import Webhook, WebhookVerificationError

from workers.config import Settings
from workers.webhook_signing import is_legacy_secret, new_secret, sign_webhook, signing_key

BODY = '{"type":"session.completed","session_id":"s-1","state":"COMPLETED"}'


def _headers(secret, msg_id="msg_1", ts=None):
    ts = str(int(time.time()) if ts is None else ts)
    return {"webhook-id": msg_id, "webhook-timestamp": ts, "webhook-signature": sign_webhook(secret, msg_id, ts, BODY)}


def test_a_whsec_secret_verifies_with_the_standard_library():
    secret = new_secret()
    assert secret.startswith("whsec_") and len(base64.b64decode(secret[6:])) == 32
    headers = _headers(secret)
    assert headers["webhook-signature"].startswith("v1,")
    assert Webhook(secret).verify(BODY, headers)["session_id"] == "s-1"


@pytest.mark.parametrize("tamper", ["body", "id", "timestamp", "secret"])
def test_anything_changed_fails_verification(tamper):
    secret = new_secret()
    headers, body = _headers(secret), BODY
    if tamper == "body":
        body = BODY.replace("COMPLETED", "FAILED")
    elif tamper == "id":
        headers["webhook-id"] = "msg_2"
    elif tamper == "timestamp":
        headers["webhook-timestamp"] = str(int(headers["webhook-timestamp"]) - 1)
    else:
        secret = new_secret()
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(body, headers)


def test_an_old_attempt_is_refused_by_the_receiver():
    secret = new_secret()
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(BODY, _headers(secret, ts=int(time.time()) - 600))


def test_the_deprecated_raw_secret_signs_with_its_utf8_bytes():
    raw = "0f" * 32  # openssl rand -hex 32, as earlier docs said
    assert is_legacy_secret(raw) and not is_legacy_secret(new_secret())
    headers = _headers(raw)
    assert Webhook(raw.encode()).verify(BODY, headers)
    assert Webhook("whsec_" + base64.b64encode(raw.encode()).decode()).verify(BODY, headers)


@pytest.mark.parametrize("secret, reason", [("whsec_not*base64", "not base64"),
                                            ("whsec_" + base64.b64encode(b"short").decode(), "24-64 bytes")])
def test_a_malformed_whsec_secret_stops_the_start(secret, reason, monkeypatch):
    with pytest.raises(ValueError, match=reason):
        signing_key(secret)
    monkeypatch.setenv("SHOAL_WEBHOOK_SECRET", secret)
    with pytest.raises(ValueError, match="SHOAL_WEBHOOK_SECRET"):
        Settings.from_env()
