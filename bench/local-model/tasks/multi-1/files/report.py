"""Reports on texts."""

from textutils import normalize


def title(text):
    return normalize(text).title()


def summary(text):
    """A one-line summary of a text: "<N> words"."""
    raise NotImplementedError
