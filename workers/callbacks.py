"""Where a job's ``callback_url`` may point, and how the worker reaches it.

No loopback, private or link-local targets unless the operator allows them
(server-side request forgery guard). The worker resolves the host once, checks
every address, and then connects to a checked address itself, so a name that
resolves to a public address for the check and to a private one a moment later
(DNS rebinding) cannot redirect the POST.
"""

import ipaddress
import socket
from urllib.parse import urlsplit

_LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".localdomain")


def _not_public(address):
    mapped = getattr(address, "ipv4_mapped", None)  # ::ffff:127.0.0.1 is loopback too
    return not (mapped or address).is_global


def callback_target_error(url, *, allow_private):
    """Why ``url`` may not receive a callback, judged without a DNS lookup, or None.

    Refuses local names (``localhost``, ``*.local``, ``*.internal``, ...) and
    literal addresses that are not globally routable. The service calls it at
    submission (no DNS in a request); the worker also resolves names, see
    :func:`pinned_address`.

    Parameters
    ----------
    url : str
        An http(s) URL (the schema has already checked the scheme).
    allow_private : bool
        Accept every target (``SHOAL_CALLBACK_ALLOW_PRIVATE=1``: tests, private
        deployments whose clients live on the same network).

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
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    return f"{address} is not a public address" if _not_public(address) else None


class CallbackRefused(Exception):
    """The callback target is not allowed; the message names the reason."""


def pinned_address(url, *, allow_private):
    """The address the worker connects to for ``url``, after checking them all.

    Parameters
    ----------
    url : str
        An http(s) URL.
    allow_private : bool
        Skip the check (``SHOAL_CALLBACK_ALLOW_PRIVATE=1``).

    Returns
    -------
    str
        The host's first address (a literal address is returned as given).

    Raises
    ------
    CallbackRefused
        The host is a local name, or one of its addresses is not public.
    OSError
        The name does not resolve (possibly transient: the caller retries).
    """
    host = (urlsplit(url).hostname or "").rstrip(".").lower()
    reason = callback_target_error(url, allow_private=allow_private)
    if reason:
        raise CallbackRefused(reason)
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    addresses = [ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos]
    if not allow_private:
        for address in addresses:  # one private address is enough to refuse
            if _not_public(address):
                raise CallbackRefused(f"{address} is not a public address ({host})")
    return str(addresses[0])


def post_pinned(url, address, body, headers, *, timeout, ca_certs=None):
    """POST ``body`` to ``url`` over a connection to ``address``; redirects are not followed.

    The request carries the URL's own ``Host`` header, and for https the TLS
    server name and certificate check use the URL's host name, not the address.

    Parameters
    ----------
    url : str
        http(s) URL of the callback.
    address : str
        IPv4 or IPv6 address to connect to (from :func:`pinned_address`).
    body : str
        Request body (UTF-8).
    headers : dict
        Extra request headers.
    timeout : float
        Connect and read timeout, seconds.
    ca_certs : str or None
        CA bundle for https (default: certifi's).

    Returns
    -------
    int
        The HTTP status code.

    Raises
    ------
    urllib3.exceptions.HTTPError
        Connection, TLS or timeout failure.
    """
    import urllib3

    parts = urlsplit(url)
    https = parts.scheme == "https"
    port = parts.port or (443 if https else 80)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    host = parts.hostname
    host_header = host if ":" not in host else f"[{host}]"
    if parts.port:
        host_header += f":{parts.port}"
    if https:
        import certifi

        pool = urllib3.HTTPSConnectionPool(address, port, timeout=timeout, retries=False, cert_reqs="CERT_REQUIRED",
                                           ca_certs=ca_certs or certifi.where(), server_hostname=host,
                                           assert_hostname=host)
    else:
        pool = urllib3.HTTPConnectionPool(address, port, timeout=timeout, retries=False)
    try:
        resp = pool.urlopen("POST", path, body=body.encode(), headers={**headers, "Host": host_header},
                            redirect=False, retries=False, assert_same_host=False)
        return resp.status
    finally:
        pool.close()
