"""``callback_url`` checks shared by jobs and sessions."""

from flask import current_app

from workers.callbacks import callback_target_error

from .errors import ApiError


def check_callback_url(url):
    """422 for a callback_url naming a loopback, private or link-local host (a
    literal address or local name; the worker resolves names before sending)."""
    if url is None:
        return
    refused = callback_target_error(url, allow_private=current_app.config["SHOAL_CALLBACK_ALLOW_PRIVATE"])
    if refused:
        raise ApiError(422, "invalid_callback_url", f"callback_url refused: {refused}",
                       errors={"/callback_url": [f"{refused}; callbacks go to public addresses only"]})
