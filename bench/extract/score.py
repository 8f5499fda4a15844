#!/usr/bin/env python3
"""Scores extracted texts against the data set's ground truth and prints a table.

The metric is the one the data set's README defines: texts split into \\w+ tokens,
4-token shingles counted as multisets (a text of fewer than 4 tokens is one
shingle), per page tp/fp/fn from the overlap with articleBody, normalised by
their sum; precision averaged over pages with tp+fp > 0, recall over pages with
tp+fn > 0; F1 = 2PR/(P+R).

usage: score.py DATA_DIR NAME=TEXTS.json[:TIMING.json] ... [--baseline NAME]
"""
import json
import re
import sys
from collections import Counter
from pathlib import Path

TOKEN = re.compile(r"\w+", re.UNICODE)
N = 4


def shingles(text):
    tokens = TOKEN.findall(text or "")
    if not tokens:
        return Counter()
    if len(tokens) < N:
        return Counter([tuple(tokens)])
    return Counter(tuple(tokens[i : i + N]) for i in range(len(tokens) - N + 1))


def page_counts(truth, pred):
    t, p = shingles(truth), shingles(pred)
    tp = sum((t & p).values())
    fp = sum((p - t).values())
    fn = sum((t - p).values())
    s = tp + fp + fn
    return (tp / s, fp / s, fn / s) if s else (0.0, 0.0, 0.0)


def ratio(num, other, third):
    if other == 0 and third == 0:
        return 1.0
    if num == 0 and other == 0:
        return 0.0
    return num / (num + other)


def metrics(truths, preds):
    counts = [page_counts(truths[k], preds.get(k, "")) for k in truths]
    ps = [ratio(tp, fp, fn) for tp, fp, fn in counts if tp + fp > 0]
    rs = [ratio(tp, fn, fp) for tp, fp, fn in counts if tp + fn > 0]
    p = sum(ps) / len(ps) if ps else 0.0
    r = sum(rs) / len(rs) if rs else 0.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f1


def main(argv):
    args = [a for a in argv[1:]]
    baseline = None
    if "--baseline" in args:
        i = args.index("--baseline")
        baseline = args[i + 1]
        del args[i : i + 2]
    data = Path(args[0])
    gt = json.loads((data / "ground-truth.json").read_text(encoding="utf8"))
    truths = {k: v.get("articleBody", "") for k, v in gt.items()}
    rows = []
    for spec in args[1:]:
        name, files = spec.split("=", 1)
        texts_path, _, timing_path = files.partition(":")
        preds = json.loads(Path(texts_path).read_text(encoding="utf8"))
        missing = set(truths) - set(preds)
        if missing:
            raise SystemExit(f"{name}: {len(missing)} pages missing from {texts_path}")
        pps = None
        if timing_path:
            pps = json.loads(Path(timing_path).read_text())["pages_per_s"]
        rows.append((name, *metrics(truths, preds), pps))
    base_pps = next((r[4] for r in rows if r[0] == baseline), None)
    print(f"pages: {len(truths)}\n")
    print("| extractor | precision | recall | F1 | pages/s | speed ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, p, r, f1, pps in rows:
        speed = f"{pps:.1f}" if pps else "-"
        ratio_s = f"{pps / base_pps:.1f}x" if pps and base_pps else "-"
        print(f"| {name} | {p:.3f} | {r:.3f} | {f1:.3f} | {speed} | {ratio_s} |")


if __name__ == "__main__":
    main(sys.argv)
