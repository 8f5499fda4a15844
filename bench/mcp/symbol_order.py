#!/usr/bin/env python3
"""Writes crates/toolbelt/symbol-order.txt: the functions a typical `toolbelt mcp`
session runs (start, tools/list, ping, reading, listing, searching, writing and
editing files, a shell command, think and todos), in the order callgrind first names
them. The release build hands the file to the linker (crates/toolbelt/build.rs), which
places those functions side by side at the start of the code: the pages a server
touches are then few and dense instead of spread over the whole binary.

    bench/mcp/symbol_order.py target/release/toolbelt
    bench/mcp/symbol_order.py --check target/release/toolbelt   # how much of the file still names code
    bench/mcp/symbol_order.py --extend target/release/toolbelt  # after building with the file: add
                                                                # what a native session still faults


Needs valgrind (and perf, when it is there, for what only the machine's own CPU runs). Run it again after large changes or dependency upgrades: names that
no longer exist are skipped by the linker, so a stale file costs memory, not
correctness.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "crates" / "toolbelt" / "symbol-order.txt"


def session(prefix: list[str], binary: str, root: Path) -> None:
    argv = [*prefix, binary, "--state-dir", str(root.parent / "state"), "mcp", "--root", str(root)]
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert p.stdin and p.stdout
    next_id = 0

    def rpc(method: str, params: dict | None = None) -> dict:
        nonlocal next_id
        next_id += 1
        msg: dict = {"jsonrpc": "2.0", "id": next_id, "method": method}
        if params is not None:
            msg["params"] = params
        p.stdin.write((json.dumps(msg) + "\n").encode())
        p.stdin.flush()
        return json.loads(p.stdout.readline())

    def call(name: str, arguments: dict) -> dict:
        return rpc("tools/call", {"name": name, "arguments": arguments})

    rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "order", "version": "1"}})
    p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    p.stdin.flush()
    rpc("tools/list")
    for _ in range(3):
        rpc("ping")
        call("read_file", {"path": "src/lib.rs"})
        call("read_file", {"path": "src/lib.rs", "offset": 2, "limit": 2})
        call("list_dir", {"path": ".", "depth": 2})
        call("glob", {"pattern": "**/*.rs"})
        call("glob", {"pattern": "**/*.rs", "path": ".", "sort": "path", "limit": 0})
        call("glob", {"pattern": "**/*.rs", "path": "tree", "sort": "path", "limit": 0})
        call("list_dir", {"path": "tree/mod01", "depth": 1})
        call("read_file", {"path": "tree/mod01/file00.rs"})
        call("list_dir", {"path": "src", "depth": 1})
        call("grep", {"pattern": "fn \\w+", "path": "."})
        call("grep", {"pattern": "answer", "output_mode": "files_with_matches"})
        call("write_file", {"path": "notes.md", "content": "# notes\n\nfirst\n"})
        call("read_file", {"path": "notes.md"})
        call("edit_file", {"path": "notes.md", "old_string": "first", "new_string": "second"})
        call("bash", {"command": "echo hello"})
        call("think", {"thought": "the tree is small"})
        call("set_todo_list", {"todos": [{"title": "read", "status": "Done"}, {"title": "edit", "status": "Pending"}]})
        call("read_file", {"path": "missing.rs"})
        call("read_file", {"pth": "src/lib.rs"})
    p.stdin.close()
    p.wait()


def code_symbols(binary: str) -> set[str]:
    nm = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True, check=True).stdout
    return {parts[2] for parts in (l.split() for l in nm.splitlines()) if len(parts) == 3 and parts[1] in "tTwW"}


def check(binary: str, least: float) -> None:
    """Exits 1 when less than `least` of the names in the file are functions of
    `binary`: the order is stale (renamed or moved functions, a dependency's new
    hash), and the functions it missed lie scattered through the code, each
    pulling its neighbours into memory (a stale file cost 5-9 MiB of peak RSS)."""
    names = [line for line in OUT.read_text().splitlines() if line]
    code = code_symbols(binary)
    found = sum(name in code for name in names)
    share = found / max(len(names), 1)
    print(f"{OUT.name}: {found:,} of {len(names):,} functions found in {binary} ({share:.0%})")
    if share < least:
        sys.exit(f"symbol-order.txt is stale: run bench/mcp/symbol_order.py {binary}, then build again")


def native_faults(binary: str, tmp: Path, root: Path) -> list[str]:
    """The functions whose first run faulted a page of code in a native session, in
    the order of the faults."""
    faults = tmp / "faults.perf"
    session(["perf", "record", "-q", "-e", "page-faults", "-c", "1", "-d", "-o", str(faults)], binary, root)
    script = subprocess.run(["perf", "script", "-i", str(faults), "-F", "addr,ip,sym", "--no-demangle"],
                            capture_output=True, text=True).stdout
    names = []
    for line in script.splitlines():
        # The faulting address and its symbol, the instruction's address and its
        # symbol; an instruction fetch faults at the instruction's own address.
        parts = line.split()
        if len(parts) == 4 and parts[0] == parts[2]:
            names.append(parts[3])
    return names


def extend(binary: str) -> None:
    """Adds to the file the functions that a native session of `binary` (built with
    the file) still runs outside the ordered ones. A page fault names only the first
    function run in each 64 KiB the kernel maps at a time: the functions the first
    pass missed (paths only this CPU takes, beside another that faulted first) show
    once the others are placed together, and each costs that whole window."""
    if not shutil.which("perf"):
        sys.exit("symbol_order.py: --extend needs perf")
    order = [line for line in OUT.read_text().splitlines() if line]
    known = set(order)
    code = code_symbols(binary)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "work"
        make_fixture(root)
        added = [n for n in dict.fromkeys(native_faults(binary, Path(tmp), root)) if n in code and n not in known]
    OUT.write_text("".join(f"{name}\n" for name in order + added))
    print(f"{OUT}: {len(added)} functions added, {len(order) + len(added)} in all")


def make_fixture(root: Path) -> None:
    """A small project, and a tree large enough that walking, sorting and matching
    take the paths they take on a real one (parallel walks, long sorts, prefilters)."""
    (root / "src").mkdir(parents=True)
    (root / "src" / "lib.rs").write_text("pub fn answer() -> u32 {\n    42\n}\n\nfn helper() {}\n")
    (root / ".gitignore").write_text("target/\n")
    for d in range(30):
        folder = root / "tree" / f"mod{d:02}"
        folder.mkdir(parents=True)
        for f in range(20):
            ext = "rs" if f % 4 == 0 else "txt"
            body = "".join(f"fn item_{d}_{f}_{i}() -> u32 {{ {i} }}\n" for i in range(40))
            (folder / f"file{f:02}.{ext}").write_text(body)


def main() -> None:
    if sys.argv[1] == "--check":
        check(sys.argv[2], 0.9)
        return
    if sys.argv[1] == "--extend":
        extend(sys.argv[2])
        return
    binary = sys.argv[1]
    if not shutil.which("valgrind"):
        sys.exit("symbol_order.py: valgrind is required")
    seen: list[str] = []
    known: set[str] = set()

    def add(name: str) -> None:
        if name not in known:
            known.add(name)
            seen.append(name)

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "work"
        make_fixture(root)
        # Twice: the first session creates the store, the second opens an existing one.
        for run in range(2):
            trace = Path(tmp) / f"callgrind.{run}"
            session(["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={trace}"], binary, root)
            for line in trace.read_text(errors="replace").splitlines():
                m = re.match(r"c?fn=\(\d+\) (.+)", line)
                if m:
                    add(m.group(1))
        # Under valgrind the code takes its portable paths (no AVX-512 or SHA
        # instructions): the functions this machine runs instead are found by the
        # page faults of a native session.
        if shutil.which("perf"):
            for name in native_faults(binary, Path(tmp), root):
                add(name)
    code = code_symbols(binary)
    order = [name for name in seen if name in code]
    OUT.write_text("".join(f"{name}\n" for name in order))
    print(f"{OUT}: {len(order)} functions")


if __name__ == "__main__":
    main()
