"""User records."""

USERS = {1: {"first": "Ada", "last": "Lovelace"}, 2: {"first": "Alan", "last": "Turing"}}


def getUserName(user_id):
    """The full name of a user."""
    user = USERS[user_id]
    return f"{user['first']} {user['last']}"
