"""Limits on outgoing requests."""

import time


class RateLimiter:
    """At most `rate` calls per second."""

    def __init__(self, rate):
        self.interval = 1.0 / rate
        self.last = 0.0

    def wait(self):
        now = time.monotonic()
        delay = self.last + self.interval - now
        if delay > 0:
            time.sleep(delay)
        self.last = time.monotonic()
