"""/docs: Swagger UI served by the service itself, so the page works where there is no internet."""

import re

import pytest

from service.docs import ASSETS


def _loaded_files(page):
    return re.findall(r'(?:src|href)="([^"]+)"', page)


@pytest.mark.parametrize("prefix", ["", "/shoal"])
def test_the_docs_page_loads_nothing_from_another_host(client, prefix):
    """Its files resolve to /docs/assets/ from the page, also behind a proxy that serves the API under a
    path prefix (the page at /shoal/docs): an absolute /docs/assets/ would miss the prefix."""
    from urllib.parse import urljoin

    page = client.get("/docs").get_data(as_text=True)
    files = [urljoin(f"https://api.example.org{prefix}/docs", f) for f in _loaded_files(page)]
    assert len(files) == len(ASSETS), files
    assert all(f.startswith(f"https://api.example.org{prefix}/docs/assets/") for f in files), files


@pytest.mark.parametrize("name", sorted(ASSETS))
def test_every_file_the_page_loads_is_served(client, name):
    r = client.get(f"/docs/assets/{name}")
    assert r.status_code == 200 and len(r.data) > 1000
    assert r.mimetype == ("text/css" if name.endswith(".css") else "text/javascript")
    assert "max-age=86400" in r.headers["Cache-Control"]


@pytest.mark.parametrize("name", ["index.html", "swagger-ui.js.map", "../__init__.py", "nope.js"])
def test_nothing_else_of_the_bundle_is(client, name):
    r = client.get(f"/docs/assets/{name}")
    assert r.status_code == 404 and r.mimetype == "application/problem+json"


@pytest.mark.parametrize("prefix", ["", "/shoal"])
def test_docs_with_a_slash_leads_to_the_page(client, prefix):
    """``/docs/`` redirects to ``/docs`` (relative: behind a proxy's path prefix too), which answers the page."""
    from urllib.parse import urljoin

    r = client.get("/docs/")
    assert r.status_code == 308
    assert urljoin(f"https://api.example.org{prefix}/docs/", r.headers["Location"]) == \
        f"https://api.example.org{prefix}/docs"
    page = client.get("/docs", follow_redirects=True)
    assert page.status_code == 200 and "swagger-ui" in page.get_data(as_text=True)
