"""``callback_url`` checks shared by jobs and sessions."""

from flask import current_app

from workers.callbacks import callback_target_error

from .errors import ApiError


def check_callback_url(url):
    """Refuse a callback_url naming a loopback, private or link-local host.

    Parameters
    ----------
    url : str or None
        The request's ``callback_url`` (already a syntactically valid http(s)
        URL); None passes. Literal addresses and local names are checked here;
        the worker resolves other names and checks them again before sending.

    Raises
    ------
    ApiError
        422 ``invalid_callback_url`` with the pointer ``/callback_url``, unless
        the app's ``SHOAL_CALLBACK_ALLOW_PRIVATE`` is set.
    """
    if url is None:
        return
    refused = callback_target_error(url, allow_private=current_app.config["SHOAL_CALLBACK_ALLOW_PRIVATE"])
    if refused:
        raise ApiError(422, "invalid_callback_url", f"callback_url refused: {refused}",
                       errors={"/callback_url": [f"{refused}; callbacks go to public addresses only"]})
