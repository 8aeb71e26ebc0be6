"""Standard Webhooks signatures of Shoal's outgoing events (spec 1.0.0, ``standardwebhooks``).

A secret written ``whsec_<base64>`` is the spec's form: the HMAC key is the
decoded bytes, and receivers verify with ``standardwebhooks.Webhook(secret)``.
Any other text is the deprecated raw form (kept for one minor version): the key
is the text's UTF-8 bytes, which receivers verify with
``Webhook(secret.encode())`` or ``Webhook("whsec_" + base64(secret))``.
"""

import base64
import binascii
import secrets
from datetime import datetime, timezone

from standardwebhooks import Webhook

PREFIX = "whsec_"
MIN_KEY_BYTES = 24  # the spec: 24-64 random bytes
MAX_KEY_BYTES = 64


def is_legacy_secret(secret):
    """Whether ``secret`` is the deprecated raw form (not ``whsec_<base64>``)."""
    return bool(secret) and not secret.startswith(PREFIX)


def signing_key(secret):
    """The HMAC key of ``secret``.

    Parameters
    ----------
    secret : str
        ``whsec_<base64 of 24-64 bytes>``, or (deprecated) any other non-empty text.

    Returns
    -------
    bytes
        The decoded bytes of a ``whsec_`` secret; the UTF-8 bytes of a raw one.

    Raises
    ------
    ValueError
        A ``whsec_`` secret that is not base64 or decodes to fewer than 24 or
        more than 64 bytes.
    """
    if not secret.startswith(PREFIX):
        return secret.encode()
    try:
        key = base64.b64decode(secret[len(PREFIX):], validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"SHOAL_WEBHOOK_SECRET: the part after {PREFIX} is not base64 ({exc})") from exc
    if not MIN_KEY_BYTES <= len(key) <= MAX_KEY_BYTES:
        raise ValueError(f"SHOAL_WEBHOOK_SECRET: {PREFIX} secrets hold {MIN_KEY_BYTES}-{MAX_KEY_BYTES} bytes, "
                         f"this one {len(key)}")
    return key


def new_secret(n_bytes=32):
    """A fresh secret in the spec's form: ``whsec_`` + base64 of ``n_bytes`` random bytes."""
    return PREFIX + base64.b64encode(secrets.token_bytes(n_bytes)).decode()


def sign_webhook(secret, msg_id, timestamp, body):
    """The ``webhook-signature`` header of one delivery attempt.

    Parameters
    ----------
    secret : str
        ``SHOAL_WEBHOOK_SECRET`` (see :func:`signing_key`).
    msg_id : str
        ``webhook-id``, the same on every attempt of one message.
    timestamp : int or str
        ``webhook-timestamp``, Unix seconds of this attempt.
    body : str
        The exact request body.

    Returns
    -------
    str
        ``v1,<base64 HMAC-SHA256 of "id.timestamp.body">``, as ``standardwebhooks`` signs it.
    """
    when = datetime.fromtimestamp(int(timestamp), tz=timezone.utc)
    return Webhook(signing_key(secret)).sign(msg_id, when, body)


if __name__ == "__main__":  # python -m workers.webhook_signing: print a new secret
    print(new_secret())
