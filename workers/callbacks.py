"""Where a job's ``callback_url`` may point, and how the worker reaches it.

No loopback, private or link-local targets unless the operator allows them
(server-side request forgery guard). The worker resolves the host once, checks
every address, and then connects to a checked address itself, so a name that
resolves to a public address for the check and to a private one a moment later
(DNS rebinding) cannot redirect the POST.
"""

import ipaddress
import re
import socket
import threading
from urllib.parse import quote, urlsplit

_LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".localdomain")
# A last label that is a number (decimal, or 0x hex) makes a host an IPv4 address to URL parsers
# (WHATWG URL "ends in a number"), never a DNS name.
_NUMERIC_LABEL = re.compile(r"[0-9]+|0x[0-9a-f]*")
# C0 and C1 controls, DEL and the space: no HTTP request line can carry them, encoded or not
_CONTROL = re.compile(r"[\x00-\x20\x7f-\x9f]")
# kept as they are in a request target (RFC 3986 reserved, unreserved and "%"); other characters are
# percent-encoded as UTF-8, as browsers and HTTP clients send an IRI's path and query
_TARGET_SAFE = "!#$&'()*+,/:;=?@[]~-._%"


_NAT64 = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052: the last 32 bits are the IPv4 address


def _not_public(address):
    """Whether ``address`` (or an IPv4 address it carries) is not a public unicast address.

    IPv6 forms that carry an IPv4 address are judged by it too: IPv4-mapped (``::ffff:127.0.0.1``), NAT64
    (``64:ff9b::7f00:1``), 6to4 (``2002:7f00:1::``) and Teredo (its client). Multicast is not a POST target.
    """
    carried = [address]
    if address.version == 6:
        carried += [address.ipv4_mapped, address.sixtofour, (address.teredo or (None, None))[1]]
        if address in _NAT64:
            carried.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return any(not a.is_global or a.is_multicast for a in carried if a is not None)


def _ipv4_like(host):
    """Would a resolver or URL parser read ``host`` as an IPv4 address, in any notation?"""
    if ":" in host:  # an IPv6 literal (its last group may look like a number)
        return False
    if _NUMERIC_LABEL.fullmatch(host.rsplit(".", 1)[-1]):
        return True
    try:  # glibc also reads 2130706433, 0x7f000001, 0177.0.0.1, 127.1 and "1.2.3.4 junk" as addresses
        socket.inet_aton(host)
        return True
    except (OSError, ValueError):  # ValueError: an embedded NUL
        return False


def callback_url_error(url):
    """Why ``url`` cannot be a callback URL in any deployment, or None.

    The form of the URL, not where it points: the scheme is http or https;
    the port, if given, is in 1-65535; there are no credentials
    (``user:password@``), which would be stored with the job or session and
    shown in every view of it; and a host that reads as an IPv4 address is
    one in canonical dotted-quad form (``2130706433``, ``0x7f000001``,
    ``0177.0.0.1``, ``127.1`` and ``256.1.1.1`` are refused: resolvers read
    such forms differently, and some of them as loopback). Shared by the
    service (a 422 at submission) and the worker (which then drops the
    callback instead of retrying it).

    A URL with a control character (which no request line can carry) is
    refused too, and so is a host name that has no IDNA (``xn--``) form;
    other non-ASCII characters are sent percent-encoded
    (:func:`request_target`, :func:`ascii_host`).

    Parameters
    ----------
    url : str

    Returns
    -------
    str or None
        A sentence naming the reason, e.g. ``"port 0 is outside 1-65535"``.
    """
    control = _CONTROL.search(url)
    if control:
        return (f"the URL holds {control.group()!r} (a space or control character) at position {control.start()}; "
                "percent-encode it")
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # e.g. unbalanced [ ] around an IPv6 address
        return f"the URL cannot be parsed: {exc}"
    try:
        port = parts.port
    except ValueError:  # above 65535 or not a number
        return f"port {parts.netloc.rpartition(':')[2][:20]!r} is not a number in 1-65535"
    if parts.scheme not in ("http", "https"):
        return "only http and https URLs receive callbacks"
    if parts.username is not None or parts.password is not None:
        return ("the URL carries credentials (user:password@): they would be stored with the job and shown in "
                "its views; authenticate callbacks by their webhook-signature header instead")
    if port is not None and not 1 <= port <= 65535:
        return f"port {port} is outside 1-65535"
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        return "the URL has no host"
    try:
        ascii_host(host)
    except UnicodeError as exc:
        return f"host {host!r} has no IDNA (xn--) form: {exc}"
    if _ipv4_like(host):
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            return (f"{host} is not an IPv4 address in dotted-quad form (four numbers 0-255 without leading "
                    "zeros); write the address as a.b.c.d or use a host name")
    return None


def callback_target_error(url, *, allow_private):
    """Why ``url`` may not receive a callback, judged without a DNS lookup, or None.

    Refuses malformed URLs (:func:`callback_url_error`, whatever
    ``allow_private`` says), local names (``localhost``, ``*.local``,
    ``*.internal``, ...) and literal addresses that are not globally
    routable. The service calls it at submission (no DNS in a request); the
    worker also resolves names, see :func:`pinned_address`.

    Parameters
    ----------
    url : str
        An http(s) URL.
    allow_private : bool
        Accept private and local targets (``SHOAL_CALLBACK_ALLOW_PRIVATE=1``:
        tests, private deployments whose clients live on the same network).

    Returns
    -------
    str or None
        A sentence naming the reason, e.g. ``"127.0.0.1 is not a public
        address"``.
    """
    malformed = callback_url_error(url)
    if malformed or allow_private:
        return malformed
    host = urlsplit(url).hostname.rstrip(".").lower()
    if host == "localhost" or host.endswith(_LOCAL_SUFFIXES):
        return f"{host} is a local name"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    return f"{address} is not a public address" if _not_public(address) else None


def ascii_host(host):
    """``host`` as DNS and HTTP carry it: a name's IDNA (``xn--``) form, what name resolution uses too.

    Parameters
    ----------
    host : str
        A URL's host name or address literal (without brackets).

    Returns
    -------
    str
        ASCII; ``host`` itself when it is ASCII.

    Raises
    ------
    UnicodeError
        A label with no IDNA form (too long once encoded, or prohibited characters).
    """
    return host if host.isascii() else host.encode("idna").decode("ascii")


def request_target(parts):
    """The path and query of a callback URL as its request line carries them.

    Non-ASCII characters are percent-encoded as UTF-8 (``/hooks/café`` is
    sent as ``/hooks/caf%C3%A9``), as browsers and HTTP clients send them;
    escapes already there and reserved characters are kept. Such a URL used
    to be accepted and then never called (the request line took ASCII only).

    Parameters
    ----------
    parts : urllib.parse.SplitResult
        The split URL.

    Returns
    -------
    str
        ASCII, starting with ``/``.
    """
    return quote((parts.path or "/") + (f"?{parts.query}" if parts.query else ""), safe=_TARGET_SAFE)


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
        The URL is malformed (:func:`callback_url_error`), the host is a local
        name, or one of its addresses is not public.
    OSError
        The name does not resolve (possibly transient: the caller retries).
    """
    reason = callback_target_error(url, allow_private=allow_private)
    if reason:
        raise CallbackRefused(reason)
    host = urlsplit(url).hostname.rstrip(".").lower()
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
    Only the answer's status line and headers are read, within ``timeout``
    seconds of the start: a receiver that dribbles them out a byte at a time
    (each read under the timeout) is cut off, and its body, possibly endless,
    is never read.

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
        Bound on the whole exchange (connect, TLS, request, status and headers), seconds.
    ca_certs : str or None
        CA bundle for https (default: certifi's).

    Returns
    -------
    int
        The HTTP status code.

    Raises
    ------
    urllib3.exceptions.HTTPError
        Connection, TLS or protocol failure, or no answer within ``timeout``.
    """
    import http.client
    import ssl

    import urllib3
    import urllib3.util.ssl_match_hostname
    from urllib3.connection import HTTPConnection, HTTPSConnection

    parts = urlsplit(url)
    https = parts.scheme == "https"
    port = parts.port or (443 if https else 80)
    path = request_target(parts)
    host = ascii_host(parts.hostname)
    host_header = host if ":" not in host else f"[{host}]"
    if parts.port:
        host_header += f":{parts.port}"
    if https:
        import certifi

        conn = HTTPSConnection(address, port, timeout=timeout, cert_reqs="CERT_REQUIRED",
                               ca_certs=ca_certs or certifi.where(), server_hostname=host, assert_hostname=host)
    else:
        conn = HTTPConnection(address, port, timeout=timeout)
    deadline = _Deadline(conn, timeout)
    try:
        conn.request("POST", path, body=body.encode(), headers={**headers, "Host": host_header},
                     preload_content=False)
        status = conn.getresponse().status
    except urllib3.exceptions.HTTPError:
        raise
    except (ssl.CertificateError, urllib3.util.ssl_match_hostname.CertificateError) as exc:
        raise urllib3.exceptions.SSLError(exc) from exc  # ValueErrors, but TLS failures (retried), as others
    except (OSError, http.client.HTTPException) as exc:
        if deadline.fired:
            raise urllib3.exceptions.ReadTimeoutError(None, url, f"no answer within {timeout} s") from exc
        raise urllib3.exceptions.ProtocolError(f"{type(exc).__name__}: {exc}", exc) from exc
    finally:
        deadline.cancel()
        conn.close()
    if deadline.fired:  # cut off mid-headers: the end of the stream ended them, the answer is not whole
        raise urllib3.exceptions.ReadTimeoutError(None, url, f"no whole answer within {timeout} s")
    return status


class _Deadline:
    """Shut ``conn``'s socket down ``seconds`` from now, which ends whatever read or write waits on it."""

    def __init__(self, conn, seconds):
        self.conn, self.fired, self._cancelled = conn, False, False
        self._lock = threading.Lock()
        self._arm(seconds)

    def _arm(self, seconds):
        self._timer = threading.Timer(seconds, self._cut)
        self._timer.daemon = True
        self._timer.start()

    def _cut(self):
        with self._lock:
            if self._cancelled:
                return
            sock = self.conn.sock
            if sock is None:  # not connected yet (the connect has its own timeout): look again shortly
                self._arm(0.05)
                return
            self.fired = True
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cancel(self):
        with self._lock:
            self._cancelled = True
            self._timer.cancel()
