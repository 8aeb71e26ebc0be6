"""The Fernet key that encrypts platform tokens at rest (``SHOAL_INTEGRATION_KEY``): made and checked.

Imports nothing of ours, so that the settings (:mod:`workers.config`) check the key at start.
"""


def fernet(key):
    """The :class:`cryptography.fernet.Fernet` of ``key`` (str or bytes); ValueError for a malformed key."""
    from cryptography.fernet import Fernet

    return Fernet(key.encode() if isinstance(key, str) else key)


def check_integration_key(key):
    """Raise ValueError naming ``SHOAL_INTEGRATION_KEY`` unless ``key`` is a Fernet key (urlsafe base64 of 32 bytes)."""
    try:
        fernet(key)
    except ValueError as exc:
        raise ValueError(f"SHOAL_INTEGRATION_KEY is not a Fernet key (urlsafe base64 of 32 bytes): {exc}") from None
