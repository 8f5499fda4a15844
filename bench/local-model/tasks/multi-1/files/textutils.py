"""Text helpers."""


def normalize(text):
    """Lower case, with runs of whitespace made single spaces."""
    return " ".join(text.lower().split())
