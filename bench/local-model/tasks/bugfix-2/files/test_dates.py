from dates import days_in_year, is_leap_year

assert is_leap_year(2024), "2024 is a leap year"
assert not is_leap_year(2023), "2023 is not a leap year"
assert not is_leap_year(1900), "1900 is not a leap year"
assert is_leap_year(2000), "2000 is a leap year"
assert days_in_year(2100) == 365, "2100 has 365 days"
print("ok")
