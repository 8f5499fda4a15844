import unittest

from greet import greeting
from users import getUserName


class UsersTest(unittest.TestCase):
    def test_name(self):
        self.assertEqual(getUserName(1), "Ada Lovelace")

    def test_greeting(self):
        self.assertEqual(greeting(2), "Hello, Alan Turing!")


if __name__ == "__main__":
    unittest.main()
