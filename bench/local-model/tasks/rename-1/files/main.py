from shop import cart, checkout

ITEMS = [(2.0, 3), (1.0, 4)]

print("Subtotal:", cart.calc_total(ITEMS))
print("Total:", checkout.checkout_total(ITEMS))
