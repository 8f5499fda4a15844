#![allow(clippy::unwrap_used)]

use pretty_assertions::assert_eq;
use proptest::prelude::*;

use super::simple_commands;

/// The texts of the simple commands of `line`.
fn split(line: &str) -> Vec<String> {
    match simple_commands(line) {
        Ok(commands) => commands.into_iter().map(|c| c.text).collect(),
        Err(e) => unreachable!("{line:?} did not parse: {e}"),
    }
}

fn check(cases: &[(&str, &[&str])]) {
    for (line, want) in cases {
        assert_eq!(split(line), *want, "{line:?}");
    }
}

fn refused(line: &str) -> String {
    match simple_commands(line) {
        Ok(commands) => unreachable!("{line:?} parsed as {commands:?}"),
        Err(e) => e.reason().to_string(),
    }
}

#[test]
fn lists_split_on_every_operator() {
    check(&[
        ("git status", &["git status"]),
        ("git status && rm -rf x", &["git status", "rm -rf x"]),
        ("a || b", &["a", "b"]),
        ("a; b", &["a", "b"]),
        ("a & b", &["a", "b"]),
        ("a &", &["a"]),
        ("a\nb\n\nc", &["a", "b", "c"]),
        ("a && b || c; d", &["a", "b", "c", "d"]),
    ]);
}

#[test]
fn pipelines_and_negation() {
    check(&[
        ("ls | grep x | wc -l", &["ls", "grep x", "wc -l"]),
        ("ls |& cat", &["ls", "cat"]),
        ("! git diff --quiet", &["git diff --quiet"]),
        ("! a | b &", &["a", "b"]),
    ]);
}

#[test]
fn subshells_and_groups() {
    check(&[
        ("(cd x && make)", &["cd x", "make"]),
        ("{ a; b; }", &["a", "b"]),
        ("( (a) ) | { b && (c); }", &["a", "b", "c"]),
    ]);
}

#[test]
fn command_substitutions_anywhere() {
    check(&[
        ("echo $(rm x)", &["echo $(rm x)", "rm x"]),
        ("echo `rm x`", &["echo `rm x`", "rm x"]),
        ("echo \"a $(rm x) b\"", &["echo \"a $(rm x) b\"", "rm x"]),
        ("echo \"`rm x`\"", &["echo \"`rm x`\"", "rm x"]),
        ("echo pre$(rm x)post", &["echo pre$(rm x)post", "rm x"]),
        ("echo ${a:-$(rm x)}", &["echo ${a:-$(rm x)}", "rm x"]),
        (
            "echo $(echo $(rm x))",
            &["echo $(echo $(rm x))", "echo $(rm x)", "rm x"],
        ),
        ("echo $(a | b; c)", &["echo $(a | b; c)", "a", "b", "c"]),
        ("echo $((1 + $(rm x)))", &["echo $((1 + $(rm x)))", "rm x"]),
    ]);
}

#[test]
fn process_substitutions() {
    check(&[
        (
            "diff <(ls a) <(ls b)",
            &["diff <(ls a) <(ls b)", "ls a", "ls b"],
        ),
        ("tee >(rm x)", &["tee >(rm x)", "rm x"]),
    ]);
}

#[test]
fn redirections_are_not_words() {
    check(&[
        ("make all > out 2>&1", &["make all"]),
        ("sort < in > out", &["sort"]),
        ("cat <<< hi", &["cat"]),
        ("echo hi > $(rm x)", &["echo hi", "rm x"]),
        ("cat <<< $(id)", &["cat", "id"]),
        ("(a) > out", &["a"]),
    ]);
}

#[test]
fn control_flow_conditions_and_bodies() {
    check(&[
        (
            "if git diff --quiet; then echo same; else rm x; fi",
            &["git diff --quiet", "echo same", "rm x"],
        ),
        ("if a; then b; elif c; then d; fi", &["a", "b", "c", "d"]),
        ("while read l; do echo $l; done < f", &["read l", "echo $l"]),
        ("until a; do b; done", &["a", "b"]),
        ("for f in $(ls); do rm $f; done", &["ls", "rm $f"]),
        ("for ((i = 0; i < 3; i++)); do echo $i; done", &["echo $i"]),
        ("case $x in a) rm y;; *) ls;; esac", &["rm y", "ls"]),
        ("case $(id) in a) ;; esac", &["id"]),
    ]);
}

#[test]
fn function_bodies() {
    check(&[
        ("f() { rm x; }", &["rm x"]),
        ("function g { a | b; }; g", &["a", "b", "g"]),
        (
            "git() { rm -rf x; }; git status",
            &["rm -rf x", "git status"],
        ),
    ]);
}

#[test]
fn quotes_stay_in_arguments() {
    check(&[
        ("echo \"a && b\"", &["echo \"a && b\""]),
        ("echo 'a; b' | cat", &["echo 'a; b'", "cat"]),
        ("echo \"a   b\"   c", &["echo \"a   b\" c"]),
        ("grep -e 'x|y' \"$f\"", &["grep -e 'x|y' \"$f\""]),
        ("echo $'a\\nb'", &["echo $'a\\nb'"]),
    ]);
}

#[test]
fn command_names_are_unquoted() {
    check(&[
        ("\"rm\" -rf x", &["rm -rf x"]),
        ("'rm' -rf x", &["rm -rf x"]),
        ("\\rm -rf x", &["rm -rf x"]),
        ("r\"m\" -rf x", &["rm -rf x"]),
        ("'git' status", &["git status"]),
        ("./build.sh --fast", &["./build.sh --fast"]),
    ]);
}

#[test]
fn escaped_characters_are_not_operators() {
    check(&[
        ("echo a\\;b", &["echo a\\;b"]),
        ("echo a \\&\\& rm x", &["echo a \\&\\& rm x"]),
        ("echo a\\ b", &["echo a\\ b"]),
    ]);
    // The grammar reads an escaped `$(` as a syntax error: refused, never allowed.
    refused("echo \\$(rm x)");
}

#[test]
fn line_continuations_join_lines() {
    check(&[("cargo test \\\n  --workspace", &["cargo test --workspace"])]);
    refused("echo a\\\nb");
}

#[test]
fn newline_after_a_long_pipeline_is_never_an_argument() {
    // tree-sitter-bash reads `c\nd` here as the command `c d`.
    refused("a | b | c\nd && e");
    refused("ls | grep x | wc\nrm -rf x && ls");
}

#[test]
fn comments_and_blank_lines() {
    check(&[
        ("", &[]),
        ("   \n\t", &[]),
        ("# rm -rf x", &[]),
        ("ls # && rm x", &["ls"]),
        ("ls\n# rm x\npwd", &["ls", "pwd"]),
        ("echo a#b", &["echo a#b"]),
    ]);
}

#[test]
fn assignments() {
    check(&[
        ("FOO=1 make all", &["FOO=1 make all"]),
        ("A=1 B=\"x y\" make", &["A=1 B=\"x y\" make"]),
        ("X=1", &["X=1"]),
        ("X=$(rm x)", &["X=$(rm x)", "rm x"]),
        ("X=1 Y=`rm x`", &["X=1 Y=`rm x`", "rm x"]),
        ("export A=$(id) B", &["export A=$(id) B", "id"]),
        ("local x=1", &["local x=1"]),
        ("unset A B", &["unset A B"]),
    ]);
    let commands = simple_commands("FOO=1 BAR=2 make all").unwrap();
    assert_eq!(commands[0].command(), "make all");
    assert_eq!(commands[0].text(), "FOO=1 BAR=2 make all");
    let plain = simple_commands("make").unwrap();
    assert_eq!(plain[0].command(), "make");
}

#[test]
fn tests_and_arithmetic_are_commands() {
    check(&[
        ("[ -f x ] && cat x", &["[ -f x ]", "cat x"]),
        ("[[ $a == b ]] || rm x", &["[[ $a == b ]]", "rm x"]),
        ("[[ -n $(rm x) ]]", &["[[ -n $(rm x) ]]", "rm x"]),
        ("((i++))", &["((i++))"]),
        ("test -d x", &["test -d x"]),
    ]);
}

#[test]
fn heredocs() {
    check(&[
        ("cat <<EOF\nhello\nEOF", &["cat"]),
        (
            "cat <<EOF\nhi $(rm x)\nEOF\necho done",
            &["cat", "rm x", "echo done"],
        ),
        ("cat <<'EOF'\nhi $(rm x)\nEOF", &["cat"]),
        ("cat <<EOF | sh\nrm x\nEOF", &["cat", "sh"]),
    ]);
}

#[test]
fn syntax_errors_are_refused() {
    for line in [
        "echo 'unterminated",
        "echo \"unterminated",
        "echo $(rm x",
        "echo `rm x",
        "if true; then echo",
        "a &&",
        "| b",
        "(a",
        "case x in",
    ] {
        assert!(
            refused(line).starts_with("a syntax error"),
            "{line:?}: {}",
            refused(line)
        );
    }
}

#[test]
fn dynamic_command_names_are_refused() {
    for line in [
        "$CMD x",
        "$(which rm) x",
        "`which rm` x",
        "\"$x\" y",
        "r* x",
        "ls && ${X} y",
    ] {
        assert!(
            refused(line).contains("not a literal word"),
            "{line:?}: {}",
            refused(line)
        );
    }
}

#[test]
fn deep_nesting_is_refused_not_overflowed() {
    let line = format!("{}a{}", "$(".repeat(300), ")".repeat(300));
    assert!(simple_commands(&line).is_err());
}

#[test]
fn non_ascii_characters_are_word_characters() {
    check(&[
        // tree-sitter-bash's scanner crashed the process on these (a code point
        // above 255 right after `{`).
        ("echo {\u{31860}", &["echo {\u{31860}"]),
        ("echo {\u{e017f}} && ls", &["echo {\u{e017f}}", "ls"]),
        ("echo {1\u{4e2d}", &["echo {1\u{4e2d}"]),
        ("cat <<終\nrm x\n終\nls", &["cat", "ls"]),
        ("echo {1..3}\u{4e2d} && ls", &["echo {1..3}\u{4e2d}", "ls"]),
        (
            "grep -r '中文' src | wc -l",
            &["grep -r '中文' src", "wc -l"],
        ),
        ("echo héllo\u{3000}wörld", &["echo héllo\u{3000}wörld"]),
        // Bash splits words on ASCII blanks only: a no-break space is a word character.
        ("echo a\u{a0}b c", &["echo a\u{a0}b c"]),
        // A name that is not ASCII is no variable: bash runs the command `é=1`.
        ("é=1 make", &["é=1 make"]),
    ]);
    let commands = simple_commands("é=1 make").unwrap();
    assert_eq!(commands[0].command(), "é=1 make");
    refused("echo '中文");
    // The grammar cannot read a word that starts with `{` and is no group; refused,
    // and never a crash.
    refused("{\u{31860}");
}

proptest! {
    #[test]
    fn never_panics(line in "\\PC{0,80}") {
        let _ = simple_commands(&line);
    }

    #[test]
    fn never_crashes_on_shell_syntax(
        parts in prop::collection::vec(prop_oneof![
            prop::sample::select(vec![
                " ", "\n", "\t", "\\", "'", "\"", "`", "$", "$(", "${", "$((", "((", "))", "(", ")",
                "{", "}", "[", "]", "[[", "]]", "<<", "<<-", "<<<", "<", ">", ">>", "&>", "2>&1", "|",
                "||", "&&", ";", ";;", "&", "#", "=", "+=", "*", "?", "!", "~", ",", "..", "-", "@",
                "if", "then", "fi", "for", "in", "do", "done", "case", "esac", "EOF", "x", "1", "中",
            ]).prop_map(str::to_string),
            any::<char>().prop_map(|c| c.to_string()),
        ], 0..40),
    ) {
        let _ = simple_commands(&parts.concat());
    }

    #[test]
    fn never_crashes_on_braces_before_any_character(
        prefix in "[ -~]{0,8}",
        digits in "[0-9]{0,3}",
        c in any::<char>(),
    ) {
        let _ = simple_commands(&format!("{prefix}{{{digits}{c}"));
    }

    #[test]
    fn joined_words_split_back(
        commands in prop::collection::vec("[a-z]{1,6}( [a-z0-9-]{1,6}){0,3}", 1..6),
        ops in prop::collection::vec(prop::sample::select(vec![" && ", " || ", "; ", " | ", " & ", "\n"]), 5),
    ) {
        let mut line = String::new();
        for (i, command) in commands.iter().enumerate() {
            if i > 0 {
                line.push_str(ops[i - 1]);
            }
            line.push_str(command);
        }
        let keywords = ["if", "then", "else", "elif", "fi", "do", "done", "for", "while", "until", "case", "esac", "in", "function", "select", "time", "coproc"];
        prop_assume!(commands.iter().all(|c| !keywords.iter().any(|k| c.split(' ').next() == Some(*k))));
        // The grammar sometimes runs a line into the word list of the command before
        // it (`a | b | c\nd && e`): such a line is refused, never split wrongly.
        if let Ok(split) = simple_commands(&line) {
            let texts: Vec<String> = split.into_iter().map(|c| c.text).collect();
            prop_assert_eq!(texts, commands);
        }
    }
}
