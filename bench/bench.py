#!/usr/bin/env python3
"""toolbelt grep/glob against ripgrep and fd on one source tree.

Runs every case's two commands alternately (so machine noise hits both sides
alike), takes the median wall time and the median CPU time (user + system, from
wait4: steadier than wall time on a busy machine) over the runs and the peak
resident memory of one run (GNU time), checks that both sides return the same set
of results, and prints a Markdown table. Usage: bench.py TOOLBELT CORPUS STATE_DIR RUNS
"""
import json
import os
import shutil
import tempfile
import statistics
import subprocess
import sys
import time

TB, CORPUS, STATE, RUNS = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])


def tb(tool, args, json_out=False):
    cmd = [TB, "--root", CORPUS, "--state-dir", STATE, "call", tool]
    if json_out:
        cmd.append("--json")
    return cmd + [json.dumps(args)]


def grep(args):
    return {"head_limit": 0, "timeout_ms": 600000, **args}


# name, reference command, toolbelt tool + arguments, how results are compared
CASES = [
    ("literal `PM_RESUME` (content)",
     ["rg", "-n", "-s", "PM_RESUME"],
     ("grep", grep({"pattern": "PM_RESUME", "case_sensitive": True, "output_mode": "content"})),
     "lines"),
    ("word regex `-w mutex_lock_\\w+` (count)",
     ["rg", "-c", "-s", "-w", r"mutex_lock_\w+"],
     ("grep", grep({"pattern": r"mutex_lock_\w+", "whole_word": True, "case_sensitive": True,
                    "output_mode": "count"})),
     "counts"),
    ("case-insensitive `-i 'linus torvalds'` (files)",
     ["rg", "-l", "-i", "linus torvalds"],
     ("grep", grep({"pattern": "linus torvalds", "case_sensitive": False,
                    "output_mode": "files_with_matches"})),
     "paths"),
    ("file type `-t py 'import os'` (files)",
     ["rg", "-l", "-s", "-t", "py", "import os"],
     ("grep", grep({"pattern": "import os", "file_type": "py", "case_sensitive": True,
                    "output_mode": "files_with_matches"})),
     "paths"),
    ("glob `*.rs`, sort=path vs `fd -t f -g`",
     ["fd", "-t", "f", "-g", "*.rs"],
     ("glob", {"pattern": "*.rs", "sort": "path", "limit": 0, "timeout_ms": 600000}),
     "paths"),
    ("glob `*.rs`, sort=modified vs `fd -t f -g`",
     ["fd", "-t", "f", "-g", "*.rs"],
     ("glob", {"pattern": "*.rs", "limit": 0, "timeout_ms": 600000}),
     "paths"),
]


# Both sides write to /dev/null, as a terminal-less caller would.
DEVNULL = [
    (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
    (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
]


def run(cmd):
    """Wall and CPU (user + system) seconds of one run, output discarded."""
    start = time.perf_counter()
    pid = os.posix_spawn(shutil.which(cmd[0]), cmd, os.environ, file_actions=DEVNULL)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        sys.exit(f"failed: {' '.join(cmd)}")
    return wall, usage.ru_utime + usage.ru_stime


def peak_rss_mb(cmd):
    """Peak resident memory of one run, by GNU time (a small parent, so the figure
    is the command's own), or None without /usr/bin/time."""
    if not os.path.exists("/usr/bin/time"):
        return None
    with tempfile.NamedTemporaryFile("r") as f:
        subprocess.run(["/usr/bin/time", "-f", "%M", "-o", f.name, *cmd],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        return int(f.read().strip().splitlines()[-1]) / 1024


def reference_set(cmd, kind):
    out = subprocess.run(cmd, cwd=CORPUS, capture_output=True, check=False).stdout
    lines = out.decode("utf-8", "replace").splitlines()
    if kind == "lines":
        return sorted(":".join(l.split(":", 2)[:2]) for l in lines)
    return sorted(lines)


def toolbelt_set(tool, args, kind):
    out = subprocess.run(tb(tool, args, json_out=True), capture_output=True, check=False).stdout
    data = json.loads(out)["data"]
    if kind == "lines":
        return sorted(f"{m['path']}:{m['line']}" for m in data["matches"] if not m["context"])
    if kind == "counts":
        return sorted(f"{f['path']}:{f['count']}" for f in data["files"])
    return sorted(f["path"] for f in data["files"])


def main():
    os.chdir(CORPUS)
    rows = []
    for name, ref, (tool, args), kind in CASES:
        ours = tb(tool, args)
        expected, got = reference_set(ref, kind), toolbelt_set(tool, args, kind)
        same = "yes" if expected == got else f"NO ({len(expected)} vs {len(got)})"
        for _ in range(2):  # warm the page cache and both binaries
            run(ref)
            run(ours)
        t_ref, t_tb = [], []
        for i in range(RUNS):
            order = [(ref, t_ref), (ours, t_tb)]
            if i % 2:
                order.reverse()
            for cmd, times in order:
                times.append(run(cmd))
        m_ref, m_tb = peak_rss_mb(ref), peak_rss_mb(ours)
        wall_ref, wall_tb = (statistics.median(w for w, _ in t) * 1000 for t in (t_ref, t_tb))
        cpu_ref, cpu_tb = (statistics.median(c for _, c in t) * 1000 for t in (t_ref, t_tb))
        rows.append((name, wall_ref, wall_tb, cpu_ref, cpu_tb, m_ref, m_tb, len(got), same))
        print(f"  {name}: {ref[0]} {wall_ref:.0f} ms, toolbelt {wall_tb:.0f} ms", file=sys.stderr)
    print(f"\nMedians of {RUNS} alternating runs each; {os.cpu_count()} CPUs; warm page cache.\n")
    print("| case | wall rg / fd | wall toolbelt | wall ratio | CPU rg / fd | CPU toolbelt | CPU ratio "
          "| peak RSS rg / fd | peak RSS toolbelt | results | same set |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    mem = lambda m: "n/a" if m is None else f"{m:.1f} MB"
    for name, wa, wb, ca, cb, ma, mb, n, same in rows:
        print(f"| {name} | {wa:.0f} ms | {wb:.0f} ms | {wb / wa:.2f}x | {ca:.0f} ms | {cb:.0f} ms "
              f"| {cb / ca:.2f}x | {mem(ma)} | {mem(mb)} | {n} | {same} |")


if __name__ == "__main__":
    main()
