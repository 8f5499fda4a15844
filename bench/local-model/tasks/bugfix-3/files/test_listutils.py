import unittest

from listutils import chunks, flatten


class ChunksTest(unittest.TestCase):
    def test_uneven(self):
        self.assertEqual(chunks([1, 2, 3, 4, 5], 2), [[1, 2], [3, 4], [5]])

    def test_even(self):
        self.assertEqual(chunks([1, 2, 3, 4], 2), [[1, 2], [3, 4]])

    def test_empty(self):
        self.assertEqual(chunks([], 3), [])

    def test_round_trip(self):
        items = list(range(10))
        self.assertEqual(flatten(chunks(items, 3)), items)


if __name__ == "__main__":
    unittest.main()
