#!/usr/bin/env bash
# Solved when no .py file names getUserName, users.get_user_name works, and the
# two tests still run and pass.
if grep -rn --include='*.py' 'getUserName' .; then echo "getUserName is still used"; exit 1; fi
python3 -c 'from users import get_user_name; assert get_user_name(2) == "Alan Turing"' || exit 1
out=$(python3 -m unittest test_users 2>&1) || { echo "$out"; exit 1; }
grep -q 'Ran 2 tests' <<<"$out" || { echo "$out"; exit 1; }
