"""Checkout: the total, with shipping."""

from shop.cart import calc_total, is_empty

SHIPPING = 2.5


def checkout_total(items):
    if is_empty(items):
        return 0
    return calc_total(items) + SHIPPING
