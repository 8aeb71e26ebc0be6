"""The worker's callback target check, including name resolution."""

import socket

import pytest

from workers.callbacks import callback_target_error


@pytest.fixture()
def fake_dns(monkeypatch):
    """Names resolve from this table (no network in tests); others fail."""
    table = {"intranet.example.com": ["10.0.0.7"], "hooks.example.com": ["93.184.216.34"],
             "mixed.example.com": ["93.184.216.34", "127.0.0.1"], "v6.example.com": ["fe80::1%eth0"]}

    def getaddrinfo(host, port, *args, **kwargs):
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, 0))
                for a in table[host]]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@pytest.mark.parametrize("url, refused", [
    ("http://hooks.example.com/x", False),
    ("http://intranet.example.com/x", True),
    ("http://mixed.example.com/x", True),  # one private address is enough to refuse
    ("http://v6.example.com/x", True),
    ("http://nowhere.example.com/x", True),
    ("http://93.184.216.34/x", False),
    ("http://192.168.1.1/x", True),
    ("http://LOCALHOST./x", True),
    ("http://[::ffff:127.0.0.1]/x", True),  # IPv4-mapped loopback
])
def test_worker_resolves_names_before_sending(fake_dns, url, refused):
    reason = callback_target_error(url, allow_private=False, resolve=True)
    assert (reason is not None) == refused, reason
    assert callback_target_error(url, allow_private=True, resolve=True) is None


def test_service_does_not_resolve_names(fake_dns):
    assert callback_target_error("http://intranet.example.com/x", allow_private=False, resolve=False) is None
    assert "not a public address" in callback_target_error("http://10.0.0.7/x", allow_private=False, resolve=False)
