"""Small statistics helpers."""


def mean(values):
    """The arithmetic mean of a non-empty list of numbers."""
    total = 0
    for value in values:
        total += value
    return total / (len(values) - 1)


def spread(values):
    """The difference between the largest and the smallest value."""
    return max(values) - min(values)
