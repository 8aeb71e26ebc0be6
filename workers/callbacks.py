"""Where a job's ``callback_url`` may point: no loopback, private or link-local
targets unless the operator allows them (server-side request forgery guard)."""

import ipaddress
import socket
from urllib.parse import urlsplit

_LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".localdomain")


def callback_target_error(url, *, allow_private, resolve):
    """Why ``url`` may not receive a callback, or None when it may.

    Parameters
    ----------
    url : str
        An http(s) URL (the schema has already checked the scheme).
    allow_private : bool
        Accept every target (``SHOAL_CALLBACK_ALLOW_PRIVATE=1``: tests, private
        deployments whose clients live on the same network).
    resolve : bool
        Also resolve a host name and refuse it when any of its addresses is not
        globally routable. The service passes False (no DNS in a request; a
        literal address or local name is refused at submission), the worker
        True before every delivery.

    Returns
    -------
    str or None
        A sentence naming the reason, e.g. ``"127.0.0.1 is not a public
        address"``.
    """
    if allow_private:
        return None
    host = (urlsplit(url).hostname or "").rstrip(".").lower()
    if not host:
        return "the URL has no host"
    if host == "localhost" or host.endswith(_LOCAL_SUFFIXES):
        return f"{host} is a local name"
    try:
        addresses = [ipaddress.ip_address(host)]
    except ValueError:
        if not resolve:
            return None
        try:
            infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
        except OSError as exc:
            return f"{host} does not resolve ({exc.strerror or exc})"
        addresses = [ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos]
    for address in addresses:
        mapped = getattr(address, "ipv4_mapped", None)
        if not (mapped or address).is_global:
            return f"{address} is not a public address" + ("" if str(address) == host else f" ({host})")
    return None
