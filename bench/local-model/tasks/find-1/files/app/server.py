"""The HTTP server of the ledger service."""

import http.server

from app import settings


def serve(port=None):
    port = port or settings.DEFAULT_PORT
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), http.server.SimpleHTTPRequestHandler)
    print(f"{settings.APP_NAME} listening on port {port}")
    server.serve_forever()


if __name__ == "__main__":
    serve()
