"""The shopping cart."""


def calc_total(items):
    """The total price of (price, quantity) pairs."""
    return sum(price * qty for price, qty in items)


def is_empty(items):
    return not items
