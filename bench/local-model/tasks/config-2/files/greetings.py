"""Greetings in several languages."""

GREETINGS = {"en": "Hello", "fr": "Bonjour", "de": "Hallo", "es": "Hola"}
LANGUAGE = "en"


def greet(name):
    return f"{GREETINGS[LANGUAGE]}, {name}!"
