"""Write the OpenAPI document generated from the code: ``python -m scripts.openapi > openapi.yaml``."""

import sys


def generate():
    from service import create_app

    app = create_app({"TESTING": True, "SHOAL_STORE": object()})
    return app.extensions["shoal_api"].spec.to_yaml()


if __name__ == "__main__":
    sys.stdout.write(generate())
