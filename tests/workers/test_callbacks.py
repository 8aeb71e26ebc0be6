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

from workers.callbacks import CallbackRefused, callback_target_error, pinned_address, post_pinned


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
