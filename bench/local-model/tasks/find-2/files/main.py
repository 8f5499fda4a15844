from billing.invoice import format_invoice

print(format_invoice("ACME", [(10.0, 3), (2.5, 4)], discount=10))
