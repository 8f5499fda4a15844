from data import ITEMS

print("Items:", len(ITEMS))
