#!/usr/bin/env bash
# A reference solution (for bench.py --self-test; never shown to the agents).
sed -i 's/^LANGUAGE = "en"/LANGUAGE = "fr"/' greetings.py
