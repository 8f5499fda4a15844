"""Invoices."""

from billing.prices import add_tax, apply_discount


def invoice_total(lines, discount=0):
    if not lines:
        raise ValueError("an invoice needs at least one line")
    subtotal = sum(price * qty for price, qty in lines)
    return add_tax(apply_discount(subtotal, discount))


def format_invoice(customer, lines, discount=0):
    if not customer:
        raise ValueError("customer name is required")
    return f"{customer}: {invoice_total(lines, discount):.2f}"
