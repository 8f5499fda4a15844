"""Fetch a list of URLs with one shared client (and so one RateLimiter)."""

from net.client import Client


def fetch_all(urls):
    client = Client(rate=2)
    return [client.get(url) for url in urls]
