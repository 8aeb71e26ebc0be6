"""The worker's callback target check (with name resolution) and its pinned POST."""

import http.server
import ipaddress
import json
import socket
import ssl
import subprocess
import threading

import pytest
import urllib3

from workers.callbacks import (
    CallbackRefused,
    callback_target_error,
    callback_url_error,
    pinned_address,
    post_pinned,
)


@pytest.fixture()
def fake_dns(monkeypatch):
    """Names resolve from this table (no network in tests); others fail."""
    table = {"intranet.example.com": ["10.0.0.7"], "hooks.example.com": ["93.184.216.34"],
             "mixed.example.com": ["93.184.216.34", "127.0.0.1"], "v6.example.com": ["fe80::1%eth0"],
             "localhost": ["127.0.0.1"]}
    calls = []
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        try:
            ipaddress.ip_address(host)
            return real(host, port, *args, **kwargs)  # a literal address (the pinned connection)
        except ValueError:
            pass
        calls.append(host)
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, 0))
                for a in table[host]]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return calls


@pytest.mark.parametrize("url, refused", [
    ("http://intranet.example.com/x", True),
    ("http://mixed.example.com/x", True),  # one private address is enough to refuse
    ("http://v6.example.com/x", True),
    ("http://192.168.1.1/x", True),
    ("http://LOCALHOST./x", True),
    ("http://[::ffff:127.0.0.1]/x", True),  # IPv4-mapped loopback
    ("http://[64:ff9b::7f00:1]/x", True),  # NAT64 of 127.0.0.1
    ("http://[64:ff9b::a00:7]/x", True),  # NAT64 of 10.0.0.7
    ("http://[2002:7f00:1::]/x", True),  # 6to4 of 127.0.0.1
    ("http://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/x", True),  # Teredo, client 10.0.0.1
    ("http://224.0.0.1/x", True),  # multicast
    ("http://[ff02::1]/x", True),
    ("http://hooks.example.com/x", False),
    ("http://93.184.216.34/x", False),
])
def test_worker_resolves_names_and_checks_every_address(fake_dns, url, refused):
    if refused:
        with pytest.raises(CallbackRefused, match="not a public address|local name"):
            pinned_address(url, allow_private=False)
    else:
        assert pinned_address(url, allow_private=False) == "93.184.216.34"
    pinned_address(url, allow_private=True)  # allowed: no error


def test_a_name_that_does_not_resolve_is_an_error_to_retry_not_a_refusal(fake_dns):
    with pytest.raises(OSError) as info:
        pinned_address("http://nowhere.example.com/x", allow_private=False)
    assert not isinstance(info.value, CallbackRefused)


def test_service_check_does_not_resolve_names(fake_dns):
    assert callback_target_error("http://intranet.example.com/x", allow_private=False) is None
    assert "not a public address" in callback_target_error("http://10.0.0.7/x", allow_private=False)
    assert fake_dns == []


# URLs no deployment may call back, with a word of the reason: bad ports, credentials, IPv4 hosts in
# notations other than a.b.c.d (resolvers read 2130706433 and 0x7f000001 as 127.0.0.1), bad quads.
MALFORMED = [
    ("http://example.org:99999/x", "1-65535"),
    ("http://example.org:0/x", "1-65535"),
    ("http://example.org:65536/x", "1-65535"),
    ("http://example.org:http/x", "1-65535"),
    ("https://user:pw@example.org/x", "credentials"),
    ("https://token@example.org/x", "credentials"),
    ("http://2130706433/x", "dotted-quad"),
    ("http://0x7f000001/x", "dotted-quad"),
    ("http://0x7f.0.0.1/x", "dotted-quad"),
    ("http://0177.0.0.1/x", "dotted-quad"),
    ("http://127.1/x", "dotted-quad"),
    ("http://256.1.1.1/x", "dotted-quad"),
    ("http://1.2.3.4.5/x", "dotted-quad"),
    ("http://example.123/x", "dotted-quad"),
    ("http://[::1/x", "cannot be parsed"),
    ("ftp://example.org/x", "http and https"),
    # no request line carries a control character (marshmallow's Url lets those that are not whitespace through)
    ("http://example.org/hooks/a\x00b", "control character"),
    ("http://example.org/hooks?q=\x7f", "control character"),
    ("http://" + "\u00fc" * 60 + ".org/x", "IDNA"),  # one label of 60 characters, too long once encoded
]
WELL_FORMED = ["http://example.org:65535/x", "http://example.org:1/x", "https://93.184.216.34/x",
               "http://93.184.216.34./x", "http://[2606:4700::1]:8443/x", "http://1.2.3.4.example.com/x",
               "https://hooks.example.com/x?token=abc"]


@pytest.mark.parametrize("url, reason", MALFORMED)
def test_a_malformed_url_is_refused_in_every_deployment_without_a_lookup(fake_dns, url, reason):
    assert reason in callback_url_error(url)
    for allow_private in (False, True):
        assert reason in callback_target_error(url, allow_private=allow_private)
        with pytest.raises(CallbackRefused, match=reason):  # the worker drops it: no retry would help
            pinned_address(url, allow_private=allow_private)
    assert fake_dns == []


@pytest.mark.parametrize("url", WELL_FORMED)
def test_well_formed_urls_pass_the_form_check(url):
    assert callback_url_error(url) is None


def test_the_worker_drops_a_malformed_callback_and_retries_a_failed_delivery(store, monkeypatch):
    """Celery's own apply(): a dropped callback ends the task, a connection error retries it."""
    from workers import tasks

    monkeypatch.setattr(tasks, "_store", store)  # the test stack's Redis (SHOAL_CALLBACK_ALLOW_PRIVATE=1)
    event = {"type": "session.completed", "session_id": "ses_x"}
    for url, _ in MALFORMED:
        run = tasks.deliver_session_webhook.apply(args=["ses_x", url, event])
        assert run.successful() and run.result is None, (url, run.result)
    with socket.socket() as s:  # a port nobody listens on: connection refused, a transient failure
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}/hook"
    run = tasks.deliver_session_webhook.apply(args=["ses_x", closed, event])
    assert not run.successful() and isinstance(run.result, urllib3.exceptions.HTTPError)  # retried, then failed


class _Recorder(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"])).decode()
        self.server.seen.append((self.path, self.headers["Host"], self.headers["webhook-id"], body))
        self.send_response(302 if self.path == "/moved" else 204)
        self.send_header("Location", "http://127.0.0.1:1/elsewhere")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def _serve(tls_context=None):
    """A local HTTP(S) server recording (path, Host header, webhook-id, body) in ``.seen``."""
    server = http.server.HTTPServer(("127.0.0.1", 0), _Recorder)
    server.seen = []
    if tls_context is not None:
        server.socket = tls_context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture()
def recorder():
    server = _serve()
    yield server
    server.shutdown()


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    """(server TLS context, CA file) for a self-signed certificate of hooks.example.com."""
    d = tmp_path_factory.mktemp("tls")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                    "/CN=hooks.example.com", "-addext", "subjectAltName=DNS:hooks.example.com",
                    "-keyout", str(d / "key.pem"), "-out", str(d / "cert.pem")], check=True, capture_output=True)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(d / "cert.pem", d / "key.pem")
    return ctx, str(d / "cert.pem")


def test_pinned_post_connects_to_the_checked_address_and_keeps_the_host_header(fake_dns, recorder):
    port = recorder.server_port
    body = json.dumps({"job_id": "j1"})
    status = post_pinned(f"http://hooks.example.com:{port}/hook?x=1", "127.0.0.1", body, {"webhook-id": "m1"},
                         timeout=5)
    assert status == 204
    assert recorder.seen == [("/hook?x=1", f"hooks.example.com:{port}", "m1", body)]
    assert fake_dns == []  # no second lookup: the name resolves nowhere near 127.0.0.1
    assert post_pinned(f"http://hooks.example.com:{port}/moved", "127.0.0.1", body, {"webhook-id": "m2"},
                       timeout=5) == 302  # not followed
    assert [s[0] for s in recorder.seen] == ["/hook?x=1", "/moved"]


def test_a_callback_url_with_non_ascii_characters_is_called_with_them_encoded(recorder):
    """An IRI (``/hooks/café``, ``?who=zoë``, an internationalised host name) passed the checks at
    submission and the worker dropped its every event: ``'ascii' codec can't encode character``.
    The path and query go percent-encoded as UTF-8 and the host in its IDNA form, as HTTP clients send them."""
    port = recorder.server_port
    url = f"http://b\u00fccher.example.com:{port}/hooks/caf\u00e9/a%20b?who=zo\u00eb&x=%2F"
    assert callback_url_error(url) is None
    assert post_pinned(url, "127.0.0.1", "{}", {"webhook-id": "m7"}, timeout=5) == 204
    assert recorder.seen == [("/hooks/caf%C3%A9/a%20b?who=zo%C3%AB&x=%2F", f"xn--bcher-kva.example.com:{port}",
                              "m7", "{}")]


def test_pinned_https_post_checks_the_certificate_against_the_host_name(fake_dns, tls):
    ctx, ca = tls
    server = _serve(ctx)
    try:
        port = server.server_port
        assert post_pinned(f"https://hooks.example.com:{port}/hook", "127.0.0.1", "{}", {"webhook-id": "m3"},
                           timeout=5, ca_certs=ca) == 204
        assert server.seen[-1][:3] == ("/hook", f"hooks.example.com:{port}", "m3")
        with pytest.raises(urllib3.exceptions.HTTPError):  # the certificate names another host
            post_pinned(f"https://other.example.com:{port}/hook", "127.0.0.1", "{}", {"webhook-id": "m4"},
                        timeout=5, ca_certs=ca)
        assert len(server.seen) == 1 and fake_dns == []
    finally:
        server.shutdown()


@pytest.mark.parametrize("literal", ["64:ff9b::5db8:d822", "2606:4700::1", "2002:5db8:d822::"])
def test_public_ipv6_including_forms_carrying_a_public_ipv4_pass(fake_dns, literal):
    assert pinned_address(f"http://[{literal}]/x", allow_private=False) == literal


def _dribbling_receiver(head, *, seconds=15.0):
    """A receiver that reads the request, sends ``head`` and then one byte every 0.2 s for ``seconds``
    (a header line that never ends, or a body that never ends); returns its port and a stop event."""
    import time

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    stop = threading.Event()

    def run():
        conn, _ = listener.accept()
        with conn, listener:
            conn.recv(65536)
            conn.sendall(head)
            end = time.monotonic() + seconds
            while not stop.is_set() and time.monotonic() < end:
                try:
                    conn.sendall(b"x")
                except OSError:  # the sender hung up
                    return
                stop.wait(0.2)

    threading.Thread(target=run, daemon=True).start()
    return listener.getsockname()[1], stop


def test_a_receiver_dribbling_its_answer_cannot_hold_the_worker_past_the_timeout():
    """Each read waits at most ``timeout``, but a receiver sending a byte of its header every 0.2 s held
    the POST (and the worker process, which also runs session passes) until it stopped: 50 s at
    timeout=2, and up to the task's hard time limit in production. The whole exchange is bounded."""
    import time

    port, stop = _dribbling_receiver(b"HTTP/1.1 200 OK\r\nX-Slow: ")
    t0 = time.monotonic()
    try:
        with pytest.raises(urllib3.exceptions.HTTPError):
            post_pinned(f"http://127.0.0.1:{port}/hook", "127.0.0.1", "{}", {"webhook-id": "m5"}, timeout=1)
    finally:
        stop.set()
    assert time.monotonic() - t0 < 3


def test_the_answer_body_is_not_read():
    """Only the status counts: a 200 followed by an endless body used to be read whole into memory
    (a receiver streaming one took a worker past 19 GiB in 30 s), and a slow one held the worker."""
    import time

    port, stop = _dribbling_receiver(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n")
    t0 = time.monotonic()
    try:
        assert post_pinned(f"http://127.0.0.1:{port}/hook", "127.0.0.1", "{}", {"webhook-id": "m6"},
                           timeout=1) == 200
    finally:
        stop.set()
    assert time.monotonic() - t0 < 3
