"""Greetings for users."""

from users import getUserName


def greeting(user_id):
    return f"Hello, {getUserName(user_id)}!"
