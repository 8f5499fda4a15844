//! The documentation holds: every relative link in `README.md` and `docs/` leads to
//! a file or directory that exists (and to a heading there, when it names one), and
//! every `toolbelt` command line it shows parses.
//!
//! A command line is checked by the binary's own parser with `TOOLBELT_PARSE_ONLY=1`,
//! which stops after parsing and runs nothing. The command lines are those of the
//! shell blocks (```` ```sh ````, ```` ```bash ````, ```` ```shell ````, and the `$ `
//! lines of ```` ```console ````), read as a shell reads them: `\` continues a line,
//! quotes group, `#` starts a comment, `|`, `||`, `&&`, `;` and `&` separate commands,
//! `<` and `>` redirect (the target is dropped), and `NAME=value` words before the
//! command are its environment. A command is checked when it starts with `toolbelt`,
//! or hands one to another program after `--` (`claude mcp add toolbelt -- toolbelt
//! mcp ...`). Two conventions of the docs are read as they are meant: an unquoted
//! `...` word stands for "the rest, as before" and is left out, and the square
//! brackets of an unquoted optional part (`[--json]`, `[--tail 20]`) are removed, so
//! the optional flags are checked too. The `"command": "toolbelt"` entries of JSON
//! blocks and `command = "toolbelt"` entries of TOML blocks are checked with their
//! `args`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use pretty_assertions::assert_eq;
use serde_json::Value;
use tempfile::TempDir;

use super::cli::{bare_command, finish};

/// Fewer command lines than this means the reading of the docs broke, not that
/// the docs lost their examples.
const MIN_COMMAND_LINES: usize = 40;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `README.md` and every Markdown file under `docs/`, in a stable order.
fn documents() -> Vec<PathBuf> {
    let root = workspace_root();
    let mut files = vec![root.join("README.md")];
    let mut stack = vec![root.join("docs")];
    let mut found = Vec::new();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                found.push(path);
            }
        }
    }
    found.sort();
    files.extend(found);
    files
}

/// A document's name relative to the workspace, for messages.
fn shown(path: &Path) -> String {
    path.strip_prefix(workspace_root())
        .unwrap_or(path)
        .display()
        .to_string()
}

// ------------------------------------------------------------------ markdown

/// A fenced code block: its info string's first word, the line (1-based) of its
/// first content line, and its content.
#[derive(Debug)]
struct Block {
    lang: String,
    first_line: usize,
    text: String,
}

/// The fence a line opens or closes (its backticks or tildes), if it is one.
fn fence(line: &str) -> Option<&str> {
    let trimmed = line.trim_start();
    let marker = trimmed.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = trimmed.chars().take_while(|c| *c == marker).count();
    (len >= 3).then(|| &trimmed[..len])
}

/// The code blocks of a Markdown text, and the text outside them (code lines
/// blanked, so that line numbers stay).
fn split_markdown(markdown: &str) -> (Vec<Block>, String) {
    let mut blocks = Vec::new();
    let mut prose = String::new();
    let mut open: Option<(String, Block)> = None;
    for (i, line) in markdown.lines().enumerate() {
        match open.take() {
            None => match fence(line) {
                Some(marker) => {
                    let info = line.trim_start()[marker.len()..].trim();
                    let lang = info.split_whitespace().next().unwrap_or("").to_string();
                    let block = Block {
                        lang,
                        first_line: i + 2,
                        text: String::new(),
                    };
                    open = Some((marker.to_string(), block));
                    prose.push('\n');
                }
                None => {
                    prose.push_str(line);
                    prose.push('\n');
                }
            },
            Some((marker, mut block)) => {
                let closes = fence(line).is_some_and(|f| {
                    f.starts_with(&marker) && line.trim_start()[f.len()..].trim().is_empty()
                });
                prose.push('\n');
                if closes {
                    blocks.push(block);
                } else {
                    block.text.push_str(line);
                    block.text.push('\n');
                    open = Some((marker, block));
                }
            }
        }
    }
    if let Some((_, block)) = open {
        blocks.push(block);
    }
    (blocks, prose)
}

/// A line with its inline code spans blanked: `` `[a](b)` `` is not a link.
fn without_code_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        out.push_str(&rest[..start]);
        let ticks = rest[start..].chars().take_while(|c| *c == '`').count();
        let after = &rest[start + ticks..];
        let closing = "`".repeat(ticks);
        match after.find(&closing) {
            Some(end) => rest = &after[end + ticks..],
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// The targets of the inline links (`[text](target)`, images too) in the prose,
/// with their lines (1-based).
fn links(prose: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (i, line) in prose.lines().enumerate() {
        let line = without_code_spans(line);
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let end = after
                .find(|c: char| c == ')' || c.is_whitespace())
                .unwrap_or(after.len());
            let target = after[..end].trim_start_matches('<').trim_end_matches('>');
            if !target.is_empty() {
                found.push((i + 1, target.to_string()));
            }
            rest = &after[end..];
        }
    }
    found
}

/// GitHub's anchors for the headings of a Markdown text: lower case, punctuation
/// dropped, spaces as hyphens, `-1`, `-2`... for repeats.
fn anchors(markdown: &str) -> BTreeSet<String> {
    let (_, prose) = split_markdown(markdown);
    let mut seen = BTreeSet::new();
    for line in prose.lines() {
        let Some(heading) = line.strip_prefix('#') else {
            continue;
        };
        let heading = heading.trim_start_matches('#');
        if !heading.starts_with(' ') {
            continue;
        }
        let slug: String = heading
            .trim()
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut candidate = slug.clone();
        let mut n = 0;
        while seen.contains(&candidate) {
            n += 1;
            candidate = format!("{slug}-{n}");
        }
        seen.insert(candidate);
    }
    seen
}

/// The broken relative links of the document at `path` (holding `markdown`): a
/// target that does not exist, or a heading its Markdown file does not have.
fn broken_links(path: &Path, markdown: &str) -> Vec<String> {
    let (_, prose) = split_markdown(markdown);
    let dir = path.parent().unwrap();
    let mut broken = Vec::new();
    for (line, target) in links(&prose) {
        let external = ["http://", "https://", "mailto:"]
            .iter()
            .any(|scheme| target.starts_with(scheme));
        if external {
            continue;
        }
        let (file, anchor) = match target.split_once('#') {
            Some((file, anchor)) => (file, Some(anchor)),
            None => (target.as_str(), None),
        };
        let here = format!("{}:{line}: ({target})", shown(path));
        let resolved = dir.join(file);
        if !file.is_empty() && !resolved.exists() {
            broken.push(format!("{here}: no such file or directory"));
            continue;
        }
        let Some(anchor) = anchor else {
            continue;
        };
        let headings = if file.is_empty() {
            anchors(markdown)
        } else if resolved.extension().is_some_and(|e| e == "md") {
            anchors(&std::fs::read_to_string(&resolved).unwrap())
        } else {
            continue;
        };
        if !headings.contains(anchor) {
            broken.push(format!("{here}: no heading #{anchor} there"));
        }
    }
    broken
}

// ------------------------------------------------------------------ shell

/// One word of a command line: its text once quotes and escapes are read, and
/// whether it was written without any quote or escape.
#[derive(Debug, Clone, PartialEq)]
struct Word {
    text: String,
    bare: bool,
    line: usize,
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(Word),
    /// A newline, `;`, `&`, `|`, `||` or `&&`.
    Separator,
    /// `<`, `>`, `>>`, `>&`...: the next word is its target.
    Redirect,
}

/// The tokens of a shell script (`first_line` is the line number of its first
/// line). An unclosed quote is an error.
fn tokenize(script: &str, first_line: usize) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut word: Option<Word> = None;
    let mut line = first_line;
    let mut chars = script.chars().peekable();
    fn end(word: &mut Option<Word>, tokens: &mut Vec<Token>) {
        if let Some(w) = word.take() {
            tokens.push(Token::Word(w));
        }
    }
    fn part(word: &mut Option<Word>, line: usize) -> &mut Word {
        word.get_or_insert_with(|| Word {
            text: String::new(),
            bare: true,
            line,
        })
    }
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\r' => end(&mut word, &mut tokens),
            '\n' => {
                end(&mut word, &mut tokens);
                tokens.push(Token::Separator);
                line += 1;
            }
            '\\' => match chars.next() {
                Some('\n') => line += 1,
                Some(next) => {
                    let w = part(&mut word, line);
                    w.text.push(next);
                    w.bare = false;
                }
                None => {}
            },
            '\'' => {
                let w = part(&mut word, line);
                w.bare = false;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(ch) => {
                            if ch == '\n' {
                                line += 1;
                            }
                            w.text.push(ch);
                        }
                        None => return Err(format!("line {}: unclosed '", w.line)),
                    }
                }
            }
            '"' => {
                let w = part(&mut word, line);
                w.bare = false;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(ch @ ('"' | '\\' | '$' | '`')) => w.text.push(ch),
                            Some('\n') => line += 1,
                            Some(ch) => {
                                w.text.push('\\');
                                w.text.push(ch);
                            }
                            None => return Err(format!("line {}: unclosed \"", w.line)),
                        },
                        Some(ch) => {
                            if ch == '\n' {
                                line += 1;
                            }
                            w.text.push(ch);
                        }
                        None => return Err(format!("line {}: unclosed \"", w.line)),
                    }
                }
            }
            '#' if word.is_none() => {
                while chars.peek().is_some_and(|ch| *ch != '\n') {
                    chars.next();
                }
            }
            ';' | '&' | '|' => {
                end(&mut word, &mut tokens);
                if chars.peek() == Some(&c) {
                    chars.next();
                }
                tokens.push(Token::Separator);
            }
            '<' | '>' => {
                // `2>` and `2>&1`: the digits name a descriptor, not a word.
                if word
                    .as_ref()
                    .is_some_and(|w| w.bare && w.text.chars().all(|ch| ch.is_ascii_digit()))
                {
                    word = None;
                }
                end(&mut word, &mut tokens);
                if chars.peek() == Some(&c) {
                    chars.next();
                }
                if chars.peek() == Some(&'&') {
                    chars.next();
                }
                tokens.push(Token::Redirect);
            }
            _ => part(&mut word, line).text.push(c),
        }
    }
    end(&mut word, &mut tokens);
    Ok(tokens)
}

/// A `toolbelt` command line found in the docs: where, its environment and its
/// arguments (without the program's name).
#[derive(Debug, Clone, PartialEq)]
struct Invocation {
    line: usize,
    env: Vec<(String, String)>,
    args: Vec<String>,
}

/// Whether `text` is a `NAME=value` assignment.
fn assignment(text: &str) -> Option<(String, String)> {
    let (name, value) = text.split_once('=')?;
    let mut chars = name.chars();
    let first = chars.next()?;
    let valid = (first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    valid.then(|| (name.to_string(), value.to_string()))
}

/// The arguments after `toolbelt`, read with the docs' two conventions: a bare
/// `...` is left out, and the brackets of a bare optional part are removed.
fn arguments(words: &[Word]) -> Vec<String> {
    words
        .iter()
        .filter_map(|w| {
            if !w.bare {
                return Some(w.text.clone());
            }
            if w.text == "..." {
                return None;
            }
            let text = w.text.strip_prefix('[').unwrap_or(&w.text);
            let text = text.strip_suffix(']').unwrap_or(text);
            (!text.is_empty()).then(|| text.to_string())
        })
        .collect()
}

/// The `toolbelt` command lines of a shell script.
fn shell_invocations(script: &str, first_line: usize) -> Result<Vec<Invocation>, String> {
    let mut commands: Vec<Vec<Word>> = vec![Vec::new()];
    let mut redirected = false;
    for token in tokenize(script, first_line)? {
        match token {
            Token::Separator => commands.push(Vec::new()),
            Token::Redirect => redirected = true,
            Token::Word(word) => {
                if !std::mem::take(&mut redirected)
                    && let Some(command) = commands.last_mut()
                {
                    command.push(word);
                }
            }
        }
    }
    let mut found = Vec::new();
    for mut words in commands {
        if words.first().is_some_and(|w| w.bare && w.text == "$") {
            words.remove(0);
        }
        let mut env = Vec::new();
        while let Some(pair) = words.first().and_then(|w| assignment(&w.text)) {
            env.push(pair);
            words.remove(0);
        }
        let start = if words.first().is_some_and(|w| w.text == "toolbelt") {
            Some(0)
        } else {
            // A command another program starts: `claude mcp add NAME -- toolbelt ...`.
            words
                .windows(2)
                .position(|pair| pair[0].text == "--" && pair[1].text == "toolbelt")
                .map(|at| {
                    env.clear();
                    at + 1
                })
        };
        if let Some(start) = start {
            found.push(Invocation {
                line: words[start].line,
                env,
                args: arguments(&words[start + 1..]),
            });
        }
    }
    Ok(found)
}

/// The command lines of a console block: its `$ ` lines and their continuations,
/// the output lines blanked.
fn console_script(text: &str) -> String {
    let mut script = String::new();
    let mut continued = false;
    for line in text.lines() {
        if let Some(command) = line.strip_prefix("$ ") {
            script.push_str(command);
            continued = command.ends_with('\\');
        } else if continued {
            script.push_str(line);
            continued = line.ends_with('\\');
        }
        script.push('\n');
    }
    script
}

/// The `toolbelt` entries of a JSON or TOML configuration: every table with
/// `command = "toolbelt"`, with its `args`.
fn config_invocations(value: &Value, line: usize, found: &mut Vec<Invocation>) {
    match value {
        Value::Object(map) => {
            if map.get("command").and_then(Value::as_str) == Some("toolbelt") {
                let args = map
                    .get("args")
                    .and_then(Value::as_array)
                    .map(|args| {
                        args.iter()
                            .filter_map(|a| a.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default();
                found.push(Invocation {
                    line,
                    env: Vec::new(),
                    args,
                });
            }
            for value in map.values() {
                config_invocations(value, line, found);
            }
        }
        Value::Array(items) => {
            for value in items {
                config_invocations(value, line, found);
            }
        }
        _ => {}
    }
}

/// Every `toolbelt` command line of a Markdown text. A shell block whose quotes do
/// not close is an error.
fn invocations(markdown: &str) -> Result<Vec<Invocation>, String> {
    let (blocks, _) = split_markdown(markdown);
    let mut found = Vec::new();
    for block in blocks {
        match block.lang.as_str() {
            "sh" | "bash" | "shell" | "zsh" => {
                found.extend(shell_invocations(&block.text, block.first_line)?);
            }
            "console" => {
                found.extend(shell_invocations(
                    &console_script(&block.text),
                    block.first_line,
                )?);
            }
            "json" => {
                if let Ok(value) = serde_json::from_str::<Value>(&block.text) {
                    config_invocations(&value, block.first_line, &mut found);
                }
            }
            "toml" => {
                if let Ok(table) = toml::from_str::<toml::Table>(&block.text)
                    && let Ok(value) = serde_json::to_value(&table)
                {
                    config_invocations(&value, block.first_line, &mut found);
                }
            }
            _ => {}
        }
    }
    Ok(found)
}

// ------------------------------------------------------------------ the parser

/// What the binary's parser says of a command line: `Ok` when it parses, else
/// clap's message. Nothing is run (`TOOLBELT_PARSE_ONLY=1`).
fn parse(invocation: &Invocation, cwd: &Path) -> Result<(), String> {
    let mut command = bare_command();
    command
        .env("TOOLBELT_PARSE_ONLY", "1")
        .envs(invocation.env.iter().map(|(k, v)| (k, v)))
        .args(&invocation.args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let args: Vec<&str> = invocation.args.iter().map(String::as_str).collect();
    let run = finish(command.spawn().unwrap(), &args);
    if run.code == 0 {
        Ok(())
    } else {
        Err(format!("exit {}: {}", run.code, run.stderr.trim()))
    }
}

// ------------------------------------------------------------------ the tests

#[test]
fn every_relative_link_of_the_docs_leads_somewhere() {
    let mut broken = Vec::new();
    let mut count = 0;
    for path in documents() {
        let text = std::fs::read_to_string(&path).unwrap();
        let (_, prose) = split_markdown(&text);
        count += links(&prose).len();
        broken.extend(broken_links(&path, &text));
    }
    assert!(count > 0, "no link found in the docs");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_toolbelt_command_line_of_the_docs_parses() {
    let cwd = TempDir::new().unwrap();
    let mut failures = Vec::new();
    let mut count = 0;
    for path in documents() {
        let text = std::fs::read_to_string(&path).unwrap();
        let found = match invocations(&text) {
            Ok(found) => found,
            Err(e) => {
                failures.push(format!("{}: {e}", shown(&path)));
                continue;
            }
        };
        for invocation in found {
            count += 1;
            if let Err(e) = parse(&invocation, cwd.path()) {
                failures.push(format!(
                    "{}:{}: toolbelt {}\n  {}",
                    shown(&path),
                    invocation.line,
                    invocation.args.join(" "),
                    e.replace('\n', "\n  ")
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "command lines that do not parse:\n{}",
        failures.join("\n")
    );
    assert!(
        count >= MIN_COMMAND_LINES,
        "only {count} toolbelt command lines found in the docs"
    );
}

#[test]
fn a_made_up_flag_is_rejected_and_a_good_line_runs_nothing() {
    let cwd = TempDir::new().unwrap();
    let line = |args: &[&str]| Invocation {
        line: 1,
        env: Vec::new(),
        args: args.iter().map(|a| a.to_string()).collect(),
    };
    for bad in [
        &["agent", "--no-such-flag"][..],
        &["cron", "add", "x", "--schedule", "* * * * *"],
        &["serve", "--bind", "not-an-address"],
        &["--network", "maybe", "tools"],
        &["frobnicate"],
    ] {
        let error = parse(&line(bad), cwd.path()).unwrap_err();
        assert!(error.starts_with("exit 2: error:"), "{bad:?}: {error}");
    }
    // Run for real, these would call a model or wait for requests.
    parse(&line(&["agent", "-p", "hello", "--model", "m"]), cwd.path()).unwrap();
    parse(&line(&["serve", "--bind", "127.0.0.1:1"]), cwd.path()).unwrap();
    // The same path as the docs' lines: a bad flag in a block is caught.
    let doc = "```sh\ntoolbelt tools --jsn\n```\n";
    let found = invocations(doc).unwrap();
    assert_eq!(found.len(), 1);
    assert!(parse(&found[0], cwd.path()).is_err());
}

#[test]
fn command_lines_are_read_as_a_shell_reads_them() {
    let doc = r#"
```sh
# a comment; toolbelt tools --nope
toolbelt tools [--json] [--category planning]   # list tools
FOO=bar BAZ="a b" toolbelt call think '{"thought": "a | b # c"}' --json | jq . > out.json
echo "x" | toolbelt agent -p - < task.md && toolbelt log --tail 5; toolbelt doctor
toolbelt cron add report --schedule "7 9 * * 1-5" \
  --message "..." --channel team
toolbelt --profile claude agent ...
echo '[{"tool": "think",
       "params": {}}]' |
  toolbelt batch - 2>&1
claude mcp add toolbelt -- toolbelt mcp --root /path/to/project
cargo run --release -- serve
```

```console
$ toolbelt doctor
toolbelt: not a command line
...
```

```json
{"mcpServers": {"toolbelt": {"command": "toolbelt", "args": ["mcp", "--tools", "coding"]}}}
```

```toml
[mcp_servers.toolbelt]
command = "toolbelt"
args = ["mcp"]
```
"#;
    let got = invocations(doc).unwrap();
    let owned = |line: usize, env: &[(&str, &str)], args: &[&str]| Invocation {
        line,
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        args: args.iter().map(|a| a.to_string()).collect(),
    };
    assert_eq!(
        got,
        vec![
            owned(4, &[], &["tools", "--json", "--category", "planning"]),
            owned(
                5,
                &[("FOO", "bar"), ("BAZ", "a b")],
                &["call", "think", r#"{"thought": "a | b # c"}"#, "--json"]
            ),
            owned(6, &[], &["agent", "-p", "-"]),
            owned(6, &[], &["log", "--tail", "5"]),
            owned(6, &[], &["doctor"]),
            owned(
                7,
                &[],
                &[
                    "cron",
                    "add",
                    "report",
                    "--schedule",
                    "7 9 * * 1-5",
                    "--message",
                    "...",
                    "--channel",
                    "team"
                ]
            ),
            owned(9, &[], &["--profile", "claude", "agent"]),
            owned(12, &[], &["batch", "-"]),
            owned(13, &[], &["mcp", "--root", "/path/to/project"]),
            owned(18, &[], &["doctor"]),
            owned(24, &[], &["mcp", "--tools", "coding"]),
            owned(28, &[], &["mcp"]),
        ]
    );
    assert!(invocations("```sh\ntoolbelt call think '{\n```\n").is_err());
}

#[test]
fn a_link_to_nothing_is_found() {
    let dir = TempDir::new().unwrap();
    std::fs::create_dir(dir.path().join("docs")).unwrap();
    std::fs::write(
        dir.path().join("docs/web.md"),
        "# Web\n\n## The SSRF guard\n",
    )
    .unwrap();
    let readme = dir.path().join("README.md");
    let text = "# Title\n\n\
        [web](docs/web.md), [guard](docs/web.md#the-ssrf-guard), [docs](docs/), \
        [here](#title), [site](https://example.com/x), `[code](nothing.md)`\n\
        [gone](docs/gone.md) and [no heading](docs/web.md#nothing)\n\n\
        ```sh\necho [not a link](nowhere.md)\n```\n";
    let broken = broken_links(&readme, text);
    assert_eq!(broken.len(), 2, "{broken:#?}");
    assert!(
        broken[0].contains(":4: (docs/gone.md): no such file"),
        "{broken:#?}"
    );
    assert!(
        broken[1].contains(":4: (docs/web.md#nothing): no heading #nothing"),
        "{broken:#?}"
    );
}

#[test]
fn the_readmes_haproxy_configuration_is_the_one_the_replica_test_runs() {
    let root = workspace_root();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let (blocks, _) = split_markdown(&readme);
    let shown: Vec<&Block> = blocks.iter().filter(|b| b.lang == "haproxy").collect();
    assert_eq!(shown.len(), 1, "one HAProxy configuration in the README");
    let file = std::fs::read_to_string(root.join("deploy/haproxy/haproxy.cfg")).unwrap();
    assert_eq!(shown[0].text, file);
}
