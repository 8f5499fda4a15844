"""Prices, taxes and discounts."""

TAX_RATE = 0.2


def add_tax(amount):
    if amount < 0:
        raise ValueError("amount must not be negative")
    return round(amount * (1 + TAX_RATE), 2)


def apply_discount(amount, percent):
    if not 0 <= percent <= 100:
        raise ValueError("discount must be between 0 and 100")
    return round(amount * (100 - percent) / 100, 2)
