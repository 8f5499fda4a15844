"""A client that respects the rate limit."""

from net.limits import RateLimiter


class Client:
    def __init__(self, rate=5):
        self.limiter = RateLimiter(rate)

    def get(self, url):
        self.limiter.wait()
        return f"GET {url}"
