ITEMS = [
    {"name": "pen", "price": 1.5, "qty": 10},
    {"name": "book", "price": 12.0, "qty": 2},
    {"name": "bag", "price": 3.5, "qty": 1},
]
