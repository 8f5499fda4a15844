#!/usr/bin/env bash
# A reference solution (for bench.py --self-test; never shown to the agents).
cat >> textutils.py <<'PY'


def word_count(text):
    return len(text.split())
PY
python3 - <<'PY'
src = open("report.py").read()
src = src.replace("from textutils import normalize", "from textutils import normalize, word_count")
src = src.replace("    raise NotImplementedError", '    return f"{word_count(text)} words"')
open("report.py", "w").write(src)
PY
