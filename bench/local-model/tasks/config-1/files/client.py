"""The billing API client."""

MAX_RETRIES = 3
TIMEOUT = 10


def call(request, send):
    """Send `request` with `send`, retrying up to MAX_RETRIES times."""
    last_error = None
    for _ in range(MAX_RETRIES + 1):
        try:
            return send(request, timeout=TIMEOUT)
        except OSError as e:
            last_error = e
    raise last_error
