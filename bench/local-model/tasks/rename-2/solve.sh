#!/usr/bin/env bash
# A reference solution (for bench.py --self-test; never shown to the agents).
sed -i 's/getUserName/get_user_name/g' users.py greet.py test_users.py
