import unittest

from report import summary, title
from textutils import word_count


class ReportTest(unittest.TestCase):
    def test_word_count(self):
        self.assertEqual(word_count("a b  c"), 3)
        self.assertEqual(word_count(""), 0)

    def test_summary(self):
        self.assertEqual(summary("the quick brown fox"), "4 words")

    def test_title(self):
        self.assertEqual(title("hello  world"), "Hello World")


if __name__ == "__main__":
    unittest.main()
