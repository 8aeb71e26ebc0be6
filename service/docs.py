"""Swagger UI's files for ``/docs``, served by Shoal itself from the ``swagger-ui-bundle`` package.

flask-smorest's ``/docs`` page loads Swagger UI from ``OPENAPI_SWAGGER_UI_URL``.
A CDN there would leave the page blank wherever the service has no internet
(and run whatever version the CDN serves today, in a page that holds the
caller's API key once they authorise); these files are pinned with the
package (Swagger UI 4.15.5 in ``swagger-ui-bundle`` 1.1.0) and open like the
page itself (:data:`service.auth.OPEN_PREFIXES`).
"""

from flask import Blueprint, abort, send_from_directory
from swagger_ui_bundle import swagger_ui_path

#: Where ``/docs`` finds the files (``Config.OPENAPI_SWAGGER_UI_URL``).
ASSETS_URL = "/docs/assets/"
#: What flask-smorest's page loads, and nothing else of the bundle.
ASSETS = frozenset({"swagger-ui.css", "swagger-ui-bundle.js", "swagger-ui-standalone-preset.js"})

blp = Blueprint("docs_assets", __name__)


@blp.get(ASSETS_URL + "<path:filename>")
def asset(filename):
    """One of :data:`ASSETS`, cached for a day (``Cache-Control: max-age=86400``).

    Parameters
    ----------
    filename : str
        The path after :data:`ASSETS_URL`.

    Raises
    ------
    werkzeug.exceptions.NotFound
        Anything else (a 404 problem).
    """
    if filename not in ASSETS:
        abort(404)
    return send_from_directory(swagger_ui_path, filename, max_age=86400)
