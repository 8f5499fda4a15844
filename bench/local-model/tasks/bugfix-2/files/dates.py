"""Calendar helpers."""


def is_leap_year(year):
    """True when `year` is a leap year of the Gregorian calendar: divisible by 4,
    except century years, which are leap years only when divisible by 400."""
    return year % 4 == 0


def days_in_year(year):
    return 366 if is_leap_year(year) else 365
