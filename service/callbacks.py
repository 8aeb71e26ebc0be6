"""``callback_url`` checks shared by jobs and sessions."""

from flask import current_app

from workers.callbacks import callback_target_error, callback_url_error

from .errors import ApiError


def check_callback_url(url):
    """Refuse a malformed callback_url, or one naming a loopback, private or link-local host.

    The rules are the worker's own (:mod:`workers.callbacks`), so what is
    accepted here is what the worker will deliver to.

    Parameters
    ----------
    url : str or None
        The request's ``callback_url`` (already an http(s) URL by the
        schema); None passes. The form is checked here (port in 1-65535, no
        ``user:password@``, IPv4 hosts in dotted-quad form) whatever the
        deployment allows; literal addresses and local names too, unless
        ``SHOAL_CALLBACK_ALLOW_PRIVATE`` is set. The worker resolves other
        names and checks them again before sending.

    Raises
    ------
    ApiError
        422 ``invalid_callback_url`` with the pointer ``/callback_url``.
    """
    if url is None:
        return
    malformed = callback_url_error(url)
    if malformed:
        raise ApiError(422, "invalid_callback_url", f"callback_url refused: {malformed}",
                       errors={"/callback_url": [malformed]})
    refused = callback_target_error(url, allow_private=current_app.config["SHOAL_CALLBACK_ALLOW_PRIVATE"])
    if refused:
        raise ApiError(422, "invalid_callback_url", f"callback_url refused: {refused}",
                       errors={"/callback_url": [f"{refused}; callbacks go to public addresses only"]})
