#!/usr/bin/env python3
"""Runs trafilatura over the data set, timed like extract_bench: pages already
decompressed in memory, extraction only, best of RUNS passes.

usage: run_trafilatura.py DATA_DIR OUT.json [RUNS]
writes OUT.json ({id: text}) and OUT.timing.json ({pages, seconds, pages_per_s})
"""
import gzip
import json
import sys
import time
from pathlib import Path

import trafilatura


def main(argv):
    data, out = Path(argv[1]), Path(argv[2])
    runs = int(argv[3]) if len(argv) > 3 else 1
    gt = json.loads((data / "ground-truth.json").read_text(encoding="utf8"))
    pages = []
    for page_id in sorted(gt):
        raw = gzip.decompress((data / "html" / f"{page_id}.html.gz").read_bytes())
        pages.append((page_id, raw.decode("utf8", errors="replace"), gt[page_id].get("url")))
    best = float("inf")
    texts = {}
    for _ in range(max(1, runs)):
        start = time.perf_counter()
        texts = {pid: trafilatura.extract(html, url=url) or "" for pid, html, url in pages}
        best = min(best, time.perf_counter() - start)
    out.write_text(json.dumps(texts), encoding="utf8")
    timing = {"pages": len(pages), "seconds": best, "pages_per_s": len(pages) / best}
    out.with_suffix(".timing.json").write_text(json.dumps(timing))


if __name__ == "__main__":
    main(sys.argv)
