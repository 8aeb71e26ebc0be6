"""Write the OpenAPI document generated from the code: ``python -m scripts.openapi > openapi.yaml``."""

import sys


def generate():
    from service import create_app, spec

    app = create_app({"TESTING": True, "SHOAL_STORE": object()})  # no API keys: no security requirement
    return spec.to_yaml(app.extensions["shoal_api"])


if __name__ == "__main__":
    sys.stdout.write(generate())
