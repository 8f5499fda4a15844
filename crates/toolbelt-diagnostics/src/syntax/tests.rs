use std::path::Path;
use std::time::{Duration, Instant};

use toolbelt_core::diagnostics::{Diagnostic, Position, Severity};

use super::{Lang, MAX_SYNTAX_ERRORS, MAX_SYNTAX_INPUT_BYTES, check, parse};

// Realistic, valid files: each must give no diagnostics.

const RUST: &str = r#####"//! A small module.
use std::collections::HashMap;
use std::fmt::{self, Display};

/// A cache keyed by borrowed names.
#[derive(Debug, Default, Clone)]
pub struct Cache<'a, T: Clone + Send = String> {
    entries: HashMap<&'a str, T>,
    hits: u64,
}

impl<'a, T> Cache<'a, T>
where
    T: Clone + Send + Display,
{
    pub const LIMIT: usize = 1 << 10;

    pub fn get(&mut self, key: &'a str) -> Option<&T> {
        let found = self.entries.get(key);
        if let Some(_) = found {
            self.hits += 1;
        }
        found
    }

    pub async fn fill<F, Fut>(&mut self, key: &'a str, make: F) -> Result<(), Box<dyn std::error::Error>>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = T>,
    {
        let value = make().await;
        self.entries.insert(key, value);
        Ok(())
    }
}

macro_rules! square {
    ($x:expr) => {
        $x * $x
    };
}

impl fmt::Display for Cache<'_, String> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} entries, {hits} hits", self.entries.len(), hits = self.hits)
    }
}

pub fn demo(items: &[i32]) -> impl Iterator<Item = i32> + '_ {
    let raw = r#"a "raw" string"#;
    let byte = b'x';
    let _ = (raw, byte, 'c', 1_000u32, 2.5e3f64, 0xff_u8);
    let closure = move |x: i32| -> i32 { square!(x) };
    let label = 'outer: loop {
        break 'outer 5;
    };
    match label {
        0 | 1 => {}
        n @ 2..=9 if n % 2 == 0 => println!("{n}"),
        _ => unreachable!("never"),
    }
    items.iter().copied().map(closure).filter(|v| *v > 0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn works() {
        assert_eq!(super::demo(&[1, 2]).count(), 2);
    }
}
"#####;

const PYTHON: &str = r#####""""A small module."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Point:
    x: float = 0.0
    y: float = 0.0
    tags: list[str] = field(default_factory=list)

    @property
    def norm(self) -> float:
        return (self.x ** 2 + self.y ** 2) ** 0.5


class Box(Generic[T]):
    def __init__(self, item: T, *args, **kwargs) -> None:
        self.item = item

    def __repr__(self):
        return f"Box({self.item!r:>10}, {len(self.__dict__)=})"


def describe(command):
    match command:
        case {"action": "move", "to": (x, y)}:
            return f"move to {x},{y}"
        case [first, *rest] if rest:
            return f'{first} and {len(rest)} more'
        case Point(x=0, y=0) | None:
            return "origin"
        case _:
            return "unknown"


async def fetch(n: int) -> list[int]:
    async with asyncio.timeout(1):
        results = [i async for i in numbers(n)]
    await asyncio.sleep(0)
    return results


async def numbers(n):
    for i in range(n):
        yield i


def main() -> int:
    values = {k: v for k, v in zip("abc", range(3)) if v}
    if (count := len(values)) > 1:
        print(f"{count} values", end="")
    try:
        raise ValueError("bad")
    except* ValueError as group:
        pass
    finally:
        lam = lambda a, /, b=2, *, c: a + b + c
    text = """multi
line"""
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
"#####;

const JAVASCRIPT: &str = r#####"// A small module.
import React, { useState } from "react";
export { helper as default };

const helper = (a, b = 2, ...rest) => a + b + rest.length;

class Counter extends EventTarget {
  #count = 0;
  static instances = 0;

  constructor(start) {
    super();
    this.#count = start ?? 0;
    Counter.instances++;
  }

  get value() {
    return this.#count;
  }

  async *ticks(limit) {
    for await (const t of source(limit)) {
      yield t?.value;
    }
  }
}

function Greeting({ name, items }) {
  const [open, setOpen] = useState(false);
  return (
    <div className="greeting" onClick={() => setOpen(!open)}>
      <h1>Hello, {name}!</h1>
      {open && <ul>{items.map((i) => <li key={i}>{i}</li>)}</ul>}
      <>fragment</>
    </div>
  );
}

const re = /ab+c/gi;
const message = `count: ${new Counter(1).value} ${re.source}`;
const { a, ...others } = { a: 1, b: 2 };
label: for (let i = 0; i < 3; i++) {
  if (i === 1) continue label;
}
export default Greeting;
"#####;

const TYPESCRIPT: &str = r#####"// A small module.
import type { Readable } from "node:stream";

export interface Repository<T extends { id: string }> {
  find(id: string): Promise<T | undefined>;
  readonly name: string;
  [key: string]: unknown;
}

type Mapped<T> = { readonly [K in keyof T]?: T[K] extends Function ? never : T[K] };
type Tuple = [first: string, second?: number, ...rest: boolean[]];

enum Color {
  Red = "red",
  Green = "green",
}

abstract class Base<T> implements Repository<T & { id: string }> {
  [key: string]: unknown;
  private readonly items = new Map<string, T>();
  constructor(public readonly name: string, protected limit = 10) {
    super();
  }
  abstract find(id: string): Promise<(T & { id: string }) | undefined>;
}

function assertIsString(value: unknown): asserts value is string {
  if (typeof value !== "string") throw new Error("not a string");
}

export function first<const T extends readonly unknown[]>(xs: T): T[0] {
  return xs[0];
}

const config = { port: 8080 } satisfies Record<string, number>;
const n = <number>(config.port as unknown);
declare module "x" {
  export const y: number;
}
namespace Util {
  export const id = <T,>(x: T): T => x;
}
let maybe: string | null = null;
maybe!.length;
"#####;

const TSX: &str = r#####"import { useState, type ReactNode } from "react";

interface Props<T> {
  items: T[];
  render: (item: T) => ReactNode;
}

export function List<T extends { id: string }>({ items, render }: Props<T>) {
  const [selected, setSelected] = useState<string | null>(null);
  const pick = <U,>(value: U): U => value;
  return (
    <ul className="list">
      {items.map((item) => (
        <li key={item.id} onClick={() => setSelected(pick(item.id))}>
          {render(item)} {selected === item.id ? <strong>selected</strong> : null}
        </li>
      ))}
    </ul>
  );
}
"#####;

const GO: &str = r#####"// Package cache keeps values.
package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Number is any integer or float.
type Number interface {
	~int | ~int64 | ~float64
}

// Cache is safe for concurrent use.
type Cache[K comparable, V any] struct {
	mu    sync.Mutex
	items map[K]V `json:"items"`
}

var ErrMissing = errors.New("missing")

func Sum[T Number](xs ...T) (total T) {
	for _, x := range xs {
		total += x
	}
	return
}

func (c *Cache[K, V]) Get(ctx context.Context, key K) (V, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-ctx.Done():
		var zero V
		return zero, ctx.Err()
	default:
	}
	if v, ok := c.items[key]; ok {
		return v, nil
	}
	var zero V
	return zero, fmt.Errorf("get %v: %w", key, ErrMissing)
}

func run() {
	ch := make(chan int, 3)
	go func() {
		defer close(ch)
		for i := range 3 {
			ch <- i
		}
	}()
	switch x := <-ch; {
	case x > 1:
		fmt.Println("big", x)
	case x == 0:
		fallthrough
	default:
		fmt.Printf("%d\n", x)
	}
	raw := `raw
string`
	_ = raw
}
"#####;

const JSON: &str = r#####"{
  "name": "toolbelt",
  "version": "1.0.0",
  "private": true,
  "count": -12.5e3,
  "nothing": null,
  "list": [1, "two", {"three": [3]}, []],
  "escaped": "quote \" backslash \\ unicode \u00e9 é",
  "nested": {"a": {"b": {}}}
}
"#####;

const TOML: &str = r#####"# Cargo-like manifest
[package]
name = "toolbelt"
version = "0.1.0"
edition = "2024"
authors = ["A <a@example.com>", 'B']
description = """
Multi-line
description"""
literal = '''raw \n text'''

[dependencies]
serde = { version = "1", features = ["derive"] }
tokio.workspace = true
"quoted.key" = 1

[profile.release]
lto = true
opt-level = 3
ratio = 0.5
big = 1_000_000
hex = 0xDEAD_BEEF
when = 1979-05-27T07:32:00Z
day = 1979-05-27
time = 07:32:00
inf = +inf
empty = {}
nested = [[1, 2], ["a"], [
  "multi",
  "line",
]]

[[bin]]
name = "first"
path = "src/main.rs"

[[bin]]
name = "second"

[target.'cfg(unix)'.dependencies]
libc = "0.2"
"#####;

const YAML: &str = r#####"# CI workflow
name: ci
on:
  push:
    branches: [main, "release/*"]
  pull_request: {}
defaults: &defaults
  runs-on: ubuntu-latest
  timeout-minutes: 10
jobs:
  test:
    <<: *defaults
    strategy:
      matrix:
        rust: [stable, beta]
    steps:
      - uses: actions/checkout@v4
      - name: Test
        run: |
          cargo test --all
          echo "done"
      - name: Folded
        run: >-
          echo one
          two
        env:
          EMPTY:
          QUOTED: 'it''s'
          TABBED:	value
          NUMBER: 3.14
          ? complex key
          : complex value
---
second: document
list:
- a
- b: c
  d: e
...
"#####;

const BASH: &str = r#####"#!/usr/bin/env bash
set -euo pipefail

readonly NAME="${1:-world}"
declare -a items=(one two "three four")
declare -A map=([key]=value)

greet() {
    local who="$1"
    printf 'Hello, %s\n' "$who"
}

function cleanup {
    rm -f -- "${TMPFILE:-}"
}
trap cleanup EXIT

case "${NAME,,}" in
    world|earth) greet "$NAME" ;;
    *.txt) echo "a file" ;;
    *) echo "unknown: $NAME" >&2 ;;
esac

for i in "${!items[@]}"; do
    echo "$i: ${items[$i]}"
done

if [[ -n "$NAME" && $NAME =~ ^w ]]; then
    count=$(( ${#items[@]} + 1 ))
fi

while read -r line; do
    echo "$line"
done < <(ls -1)

cat <<EOF > /tmp/out.txt
Hello $NAME
  $(date)
EOF

cat <<-'RAW'
	raw $text
	RAW

result=$(grep -c "x" /etc/hosts || true)
echo "${result}" | tr 'a-z' 'A-Z' && echo ok
"#####;

/// A syntax problem as `check` makes it, for whole-value comparisons.
fn problem(start: (u32, u32), end: (u32, u32), code: &str, message: &str) -> Diagnostic {
    Diagnostic {
        path: "shown/file".to_owned(),
        line: start.0,
        col: start.1,
        end: Position {
            line: end.0,
            col: end.1,
        },
        severity: Severity::Error,
        code: Some(code.to_owned()),
        source: "syntax".to_owned(),
        message: message.to_owned(),
        new: false,
    }
}

/// An unexpected region from `start` to `end`.
fn unexpected(start: (u32, u32), end: (u32, u32), message: &str) -> Diagnostic {
    problem(start, end, "syntax", message)
}

/// A missing token at `at` (a zero-width range).
fn missing(at: (u32, u32), message: &str) -> Diagnostic {
    problem(at, at, "syntax", message)
}

/// The problems `check` finds in `text`.
fn found(lang: Lang, text: &str) -> Vec<Diagnostic> {
    check(lang, "shown/file", text)
}

#[test]
fn valid_rust_has_no_errors() {
    assert_eq!(found(Lang::Rust, RUST), vec![]);
}

#[test]
fn valid_python_has_no_errors() {
    assert_eq!(found(Lang::Python, PYTHON), vec![]);
}

#[test]
fn valid_javascript_with_jsx_has_no_errors() {
    assert_eq!(found(Lang::JavaScript, JAVASCRIPT), vec![]);
}

#[test]
fn valid_typescript_has_no_errors() {
    assert_eq!(found(Lang::TypeScript, TYPESCRIPT), vec![]);
}

#[test]
fn valid_tsx_has_no_errors() {
    assert_eq!(found(Lang::Tsx, TSX), vec![]);
}

#[test]
fn valid_go_has_no_errors() {
    assert_eq!(found(Lang::Go, GO), vec![]);
}

#[test]
fn valid_json_has_no_errors() {
    assert_eq!(found(Lang::Json, JSON), vec![]);
}

#[test]
fn valid_toml_has_no_errors() {
    assert_eq!(found(Lang::Toml, TOML), vec![]);
}

#[test]
fn valid_yaml_has_no_errors() {
    assert_eq!(found(Lang::Yaml, YAML), vec![]);
}

#[test]
fn valid_bash_has_no_errors() {
    assert_eq!(found(Lang::Bash, BASH), vec![]);
}

#[test]
fn empty_files_have_no_errors() {
    for lang in Lang::ALL {
        assert_eq!(found(lang, ""), vec![], "{lang:?}");
    }
}

#[test]
fn rust_unclosed_brace_points_at_the_unclosed_item() {
    let text = "fn a() {}\nfn main() {\n    let x = 1;\n\nfn b() {}\n";
    assert_eq!(
        found(Lang::Rust, text),
        vec![unexpected((2, 1), (6, 1), "unexpected `fn main() {`")]
    );
}

#[test]
fn rust_unclosed_paren_is_missing() {
    let text = "fn main() {\n    let x = (1;\n}\n";
    assert_eq!(
        found(Lang::Rust, text),
        vec![missing((2, 15), "missing `)`")]
    );
}

#[test]
fn python_bad_parameter_list_is_missing_paren() {
    assert_eq!(
        found(Lang::Python, "def f(:\n    pass\n"),
        vec![missing((1, 7), "missing `)`")]
    );
}

#[test]
fn javascript_missing_paren() {
    let text = "function f() {\n  return (1 + 2;\n}\n";
    assert_eq!(
        found(Lang::JavaScript, text),
        vec![missing((2, 16), "missing `)`")]
    );
}

#[test]
fn typescript_stray_colon() {
    let text = "interface A {\n  x: number\n  y:\n}\n";
    assert_eq!(
        found(Lang::TypeScript, text),
        vec![unexpected((3, 4), (3, 5), "unexpected `:`")]
    );
}

#[test]
fn tsx_unclosed_element() {
    let text = "const a = <div><span>x</div>;\n";
    assert_eq!(
        found(Lang::Tsx, text),
        vec![unexpected(
            (1, 1),
            (2, 1),
            "unexpected `const a = <div><span>x</div>;`"
        )]
    );
}

#[test]
fn go_unclosed_brace_is_missing_at_end() {
    let text = "package main\nfunc main() {\n\tx := 1\n";
    assert_eq!(found(Lang::Go, text), vec![missing((4, 1), "missing `}`")]);
}

#[test]
fn json_trailing_garbage() {
    assert_eq!(
        found(Lang::Json, "{\"a\": 1} x\n"),
        vec![unexpected((1, 10), (1, 11), "unexpected `x`")]
    );
}

#[test]
fn json_trailing_comma() {
    assert_eq!(
        found(Lang::Json, "{\"a\": 1,}\n"),
        vec![unexpected((1, 8), (1, 9), "unexpected `,`")]
    );
}

#[test]
fn json_comments_are_accepted_by_the_grammar() {
    assert_eq!(found(Lang::Json, "// c\n{\"a\": 1} /* b */\n"), vec![]);
}

#[test]
fn toml_trailing_comma_in_inline_table() {
    assert_eq!(
        found(Lang::Toml, "[a]\nb = { c = 1, }\n"),
        vec![unexpected((2, 12), (2, 13), "unexpected `,`")]
    );
}

#[test]
fn yaml_unclosed_flow_sequence() {
    let text = "a: 1\nb:\n  c: 2\n  d: [1, 2\ne: 3\nf: 4\n";
    assert_eq!(
        found(Lang::Yaml, text),
        vec![unexpected((4, 6), (4, 11), "unexpected `[1, 2`")]
    );
}

#[test]
fn yaml_tab_indentation_is_an_error() {
    assert_eq!(
        found(Lang::Yaml, "a:\n\tb: 1\n"),
        vec![unexpected((1, 1), (1, 3), "unexpected `a:`")]
    );
}

#[test]
fn bash_unclosed_if_is_missing_fi() {
    assert_eq!(
        found(Lang::Bash, "if true; then\n  echo\n"),
        vec![missing((3, 1), "missing `fi`")]
    );
}

#[test]
fn columns_count_characters_not_bytes() {
    assert_eq!(
        found(Lang::Json, "{\"日本\": 1,}\n"),
        vec![unexpected((1, 9), (1, 10), "unexpected `,`")]
    );
    assert_eq!(
        found(Lang::Rust, "fn f() { let s = \"é\"; let = 1; }\n"),
        vec![unexpected((1, 27), (1, 28), "unexpected `=`")]
    );
}

#[test]
fn bash_columns_count_characters_through_the_ascii_shadow() {
    assert_eq!(
        found(Lang::Bash, "echo \"日本\" && )\n"),
        vec![unexpected((1, 11), (1, 15), "unexpected `&& )`")]
    );
}

#[test]
fn bash_brace_before_astral_character_does_not_crash() {
    assert_eq!(
        found(Lang::Bash, "echo {\u{31860}\necho {1..\u{31860}}\n"),
        vec![]
    );
}

#[test]
fn byte_order_mark_is_skipped_and_not_counted() {
    assert_eq!(found(Lang::Json, "\u{feff}{\"a\": 1}\n"), vec![]);
    assert_eq!(
        found(Lang::Json, "\u{feff}{\"a\": 1} x\n"),
        vec![unexpected((1, 10), (1, 11), "unexpected `x`")]
    );
}

#[test]
fn long_error_text_is_cut_to_one_short_line() {
    let text = format!("{{\"a\": 1}} {}\nmore\n", "x".repeat(100));
    let problems = found(Lang::Json, &text);
    assert_eq!(problems.len(), 1);
    assert_eq!(
        problems[0].message,
        format!("unexpected `{}…`", "x".repeat(40))
    );
}

#[test]
fn one_problem_per_error_region_in_order() {
    let text = "fn a() { let = 1; }\nfn b() { let = 2; }\n";
    assert_eq!(
        found(Lang::Rust, text),
        vec![
            unexpected((1, 14), (1, 15), "unexpected `=`"),
            unexpected((2, 14), (2, 15), "unexpected `=`"),
        ]
    );
}

#[test]
fn problems_are_capped() {
    let text = "fn f() { let = 1; }\n".repeat(MAX_SYNTAX_ERRORS + 20);
    let problems = found(Lang::Rust, &text);
    assert_eq!(problems.len(), MAX_SYNTAX_ERRORS);
    assert_eq!(problems.last().map(|p| p.line), Some(50));
}

#[test]
fn huge_input_is_not_checked() {
    let text = "x = )\n".repeat(MAX_SYNTAX_INPUT_BYTES / 6 + 1);
    assert!(text.len() > MAX_SYNTAX_INPUT_BYTES);
    assert_eq!(found(Lang::Python, &text), vec![]);
}

#[test]
fn parser_works_again_after_running_out_of_time() {
    assert!(parse(Lang::Python, PYTHON, Duration::ZERO).is_none());
    assert_eq!(found(Lang::Python, PYTHON), vec![]);
    assert_eq!(
        found(Lang::Python, "def f(:\n    pass\n"),
        vec![missing((1, 7), "missing `)`")]
    );
}

#[test]
fn for_path_by_extension_and_name() {
    let cases = [
        ("src/main.rs", Some(Lang::Rust)),
        ("pkg/Mod.PY", Some(Lang::Python)),
        ("types.pyi", Some(Lang::Python)),
        ("a/b.mjs", Some(Lang::JavaScript)),
        ("App.jsx", Some(Lang::JavaScript)),
        ("index.d.ts", Some(Lang::TypeScript)),
        ("View.TSX", Some(Lang::Tsx)),
        ("main.go", Some(Lang::Go)),
        ("package.json", Some(Lang::Json)),
        ("Cargo.toml", Some(Lang::Toml)),
        ("Cargo.lock", Some(Lang::Toml)),
        (".github/workflows/ci.yml", Some(Lang::Yaml)),
        ("run.sh", Some(Lang::Bash)),
        (".bashrc", Some(Lang::Bash)),
        ("Makefile", None),
        ("bin/tool", None),
        ("other.lock", None),
        ("notes.txt", None),
    ];
    for (path, lang) in cases {
        assert_eq!(Lang::for_path(Path::new(path)), lang, "{path}");
    }
}

#[test]
fn names_and_extensions_agree() {
    for lang in Lang::ALL {
        let back = Lang::by_name(lang.name());
        let expected = if lang == Lang::Tsx {
            Lang::TypeScript
        } else {
            lang
        };
        assert_eq!(back, Some(expected), "{lang:?}");
        for ext in lang.extensions() {
            let path = format!("file.{ext}");
            assert_eq!(Lang::for_path(Path::new(&path)), Some(lang), "{path}");
        }
    }
    assert_eq!(Lang::by_name("TypeScript"), Some(Lang::TypeScript));
    assert_eq!(Lang::by_name("cobol"), None);
}

/// The mean time of `check` on `text`, after a warm-up call.
fn time_check(lang: Lang, text: &str) -> Duration {
    const RUNS: u32 = 50;
    let _ = found(lang, text);
    let start = Instant::now();
    for _ in 0..RUNS {
        let _ = found(lang, text);
    }
    start.elapsed() / RUNS
}

#[test]
fn timing_of_three_hundred_line_files() {
    let python = PYTHON.repeat(4);
    let rust = RUST.repeat(4);
    assert_eq!(found(Lang::Python, &python), vec![]);
    assert_eq!(found(Lang::Rust, &rust), vec![]);
    println!(
        "check: python {} lines {:?}, rust {} lines {:?}",
        python.lines().count(),
        time_check(Lang::Python, &python),
        rust.lines().count(),
        time_check(Lang::Rust, &rust),
    );
}
