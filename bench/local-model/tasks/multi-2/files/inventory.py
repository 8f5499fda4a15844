"""Inventory helpers. An item is a dict with "name", "price" and "qty"."""


def item_value(item):
    return item["price"] * item["qty"]
