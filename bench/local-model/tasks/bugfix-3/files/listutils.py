"""List helpers."""


def chunks(items, size):
    """Split a list into consecutive pieces of `size` items; the last piece may be shorter."""
    return [items[i:i + size] for i in range(0, len(items) - size, size)]


def flatten(lists):
    """One list of the items of several lists, in order."""
    return [item for piece in lists for item in piece]
