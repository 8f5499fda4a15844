use super::read_only_command;

/// Lines that certainly change no file.
const READ_ONLY: &[&str] = &[
    "ls",
    "ls -la src",
    "rg foo; git status",
    "rg -n 'fn main' --type rust src",
    "rg --pre-glob '*.gz' foo",
    "ls | wc -l",
    "ls -la | grep foo | head -5",
    "cat a.txt b.txt",
    "head -n 20 src/lib.rs && tail -f log.txt",
    "grep -rn TODO . 2>/dev/null",
    "git status 2>/dev/null",
    "git status --short 2>&1 | head",
    "git --no-pager log --oneline -n 5",
    "git -C sub diff --stat HEAD~1",
    "git diff HEAD -- src/*.rs",
    "git show HEAD:Cargo.toml",
    "git branch",
    "git branch -a",
    "git branch -av --list",
    "git rev-parse --abbrev-ref HEAD",
    "git ls-files | wc -l",
    "git grep -n foo",
    "git blame -L 1,10 src/main.rs",
    "git describe --tags",
    "git remote -v",
    "git config --get user.name",
    "git config --list --show-origin",
    "git config get user.email",
    "git tag",
    "git tag -l 'v1.*'",
    "git stash list",
    "find . -name '*.rs' -type f",
    "find src -newer Cargo.toml -print0 | wc -c || true",
    "fd -e rs src",
    "tree -L 2 src",
    "pwd; echo hello; printf '%s\\n' x",
    "test -f Cargo.toml && echo yes",
    "[ -d target ] || echo no",
    "[[ -n $HOME ]] && echo $HOME",
    "stat -c %s a.txt; file README.md",
    "du -sh . ; df -h",
    "which cargo; type ls; command -v rg",
    "env",
    "env -0",
    "printenv PATH",
    "date +%s; whoami; id -u; uname -a",
    "basename /a/b.txt; dirname /a/b.txt; realpath .; readlink -f x",
    "diff -u a.txt b.txt; cmp a b",
    "sort -u names.txt | uniq -c",
    "uniq names.txt",
    "cut -d: -f1 /etc/passwd | tr a-z A-Z | nl",
    "jq '.name' package.json",
    "sha256sum Cargo.lock; md5sum -c sums.md5",
    "xxd file.bin | head",
    "xxd -l 16 file.bin",
    "od -c a; hexdump -C b",
    "sed -n 1p f",
    "sed -n '10,20p' src/lib.rs",
    "sed -n -e '1,5p' -e '$p' file",
    "sed '/^#/d' config",
    "sed -E 's/foo/bar/g' a.txt",
    "sed 5q file",
    "cat < input.txt",
    "grep foo <<< \"$(cat a.txt)\"",
    "cat <<EOF\nhello $(pwd)\nEOF",
    "diff <(ls a) <(ls b)",
    "echo $(git rev-parse HEAD)",
    "echo \"`pwd`\"",
    "ls > /dev/null 2>&1",
    "ls &> /dev/null",
    "cd src && ls",
    "(cd src; ls) | wc -l",
    "for f in src/*.rs; do wc -l \"$f\"; done",
    "if git diff --quiet; then echo clean; else echo dirty; fi",
    "while true; do ls; done",
    "! git diff --quiet",
    "# only a comment",
    "\\ls -la",
    "\"git\" status",
];

/// Lines that may change a file (or that cannot be told apart from one that does).
const MAY_WRITE: &[&str] = &[
    "echo x > a.txt",
    "echo x >> a.txt",
    "echo x >| a.txt",
    "ls &> out.txt",
    "ls 2> err.txt",
    "ls >& out.txt",
    "git diff > p.patch",
    "git status > /dev/null; ls > out",
    "cat <<EOF > file.txt\nhello\nEOF",
    "cat a && rm b",
    "> out.txt",
    "true && : > out.txt",
    "ls & rm x",
    "echo rm x | sh",
    "echo ${x:-$(rm y)}",
    "[[ -f $(rm x) ]]",
    "case $x in a) rm y;; esac",
    "rm -rf target",
    "touch x",
    "mkdir -p a/b",
    "cp a b",
    "mv a b",
    "tee out.txt",
    "ls | tee out.txt",
    "find . -delete",
    "find . -name '*.o' -exec rm {} \\;",
    "find . -execdir true \\;",
    "find . -ok rm {} \\;",
    "find . -fprint out.txt",
    "find . -fls out.txt",
    "find . $ACTION",
    "fd -x rm",
    "fd --exec rm {}",
    "fd -X rm",
    "fd --exec-batch rm",
    "rg --pre ./script.sh foo",
    "rg --pre=./script.sh foo",
    "tree -o out.txt",
    "file -C -m magic",
    "sort -o sorted.txt names.txt",
    "sort --output=sorted.txt names.txt",
    "sort --out=sorted.txt names.txt",
    "sort -uo sorted.txt names.txt",
    "uniq in.txt out.txt",
    "xxd in.bin out.hex",
    "env rm x",
    "env FOO=1 make",
    "command rm x",
    "sed -i 's/a/b/' f",
    "sed --in-place 's/a/b/' f",
    "sed -n 'w out.txt' f",
    "sed 's/a/b/w out.txt' f",
    "sed 's/a/b/e' f",
    "sed -f script.sed f",
    "sed -n '1p;w out' f",
    "sed \"$SCRIPT\" f",
    "sed -n '1{p}' f",
    "git commit -m x",
    "git checkout main",
    "git push",
    "git stash",
    "git stash pop",
    "git branch new-feature",
    "git branch -d old",
    "git tag v1.0",
    "git tag -d v1.0",
    "git remote add origin url",
    "git config user.name me",
    "git config --unset user.name",
    "git config set user.name me",
    "git log --output=log.txt",
    "git diff --output out.patch",
    "git -c core.pager=rm log",
    "git grep -O foo",
    "git $SUB",
    "git",
    "echo $(rm x)",
    "echo \"$(rm x)\"",
    "echo `touch y`",
    "ls $(mktemp)",
    "diff <(ls) >(tee out)",
    "cat <<EOF\n$(rm x)\nEOF",
    "X=1",
    "printf -v PATH /tmp/evil; ls",
    "printf \"$FMT\" x",
    "FOO=1 ls",
    "PATH=/tmp/evil:$PATH ls",
    "export GIT_EXTERNAL_DIFF=evil; git diff",
    "ls() { rm -rf x; }; ls",
    "for PATH in /tmp; do ls; done",
    "echo ${X:=1}",
    "(( i++ ))",
    "$CMD foo",
    "less README.md",
    "xargs rm",
    "find . -print0 | xargs -0 echo",
    "bash -c 'rm x'",
    "eval ls",
    "cargo metadata",
    "make",
    "echo 'unterminated",
    "if true; then ls",
    "/bin/ls",
];

#[test]
fn read_only_lines() {
    let wrong: Vec<&&str> = READ_ONLY.iter().filter(|l| !read_only_command(l)).collect();
    assert!(wrong.is_empty(), "not judged read-only: {wrong:#?}");
}

#[test]
fn lines_that_may_write() {
    let wrong: Vec<&&str> = MAY_WRITE.iter().filter(|l| read_only_command(l)).collect();
    assert!(wrong.is_empty(), "judged read-only: {wrong:#?}");
}

#[test]
fn redirections_to_sinks_only() {
    for (line, want) in [
        ("ls >/dev/null", true),
        ("ls 1>/dev/stderr", true),
        ("ls 2>/dev/null >&2", true),
        ("ls 3>&-", true),
        ("ls >/dev/null 2>err", false),
        ("ls > \"/dev/null\"", true),
        ("ls > $OUT", false),
        ("ls > /dev/null$X", false),
        ("{ ls; pwd; } > out", false),
        ("{ ls; pwd; } 2>/dev/null", true),
        ("while true; do ls; done > out", false),
    ] {
        assert_eq!(read_only_command(line), want, "{line:?}");
    }
}

#[test]
fn arguments_whose_value_is_unknown() {
    for (line, want) in [
        // The program's options do not matter.
        ("cat $FILE", true),
        ("ls *", true),
        // They do, and the value could be an option.
        ("find . \"$X\"", false),
        ("find . *", false),
        ("sort $OPTS file", false),
        // It cannot start with `-`.
        ("find src* -name x", true),
        ("find \"src$X\" -name x", true),
        ("find ./$X -type f", true),
        ("find ''-delete", false),
        ("find \"-del\"ete", false),
    ] {
        assert_eq!(read_only_command(line), want, "{line:?}");
    }
}

#[test]
fn sed_scripts() {
    for (line, want) in [
        ("sed -n '$p' f", true),
        ("sed -n '1~2p' f", true),
        ("sed -n '/start/,/end/p' f", true),
        ("sed -n '/a\\/b/p' f", true),
        ("sed -n '3,+2p' f", true),
        ("sed '1!d' f", true),
        ("sed -ne 5p f", true),
        ("sed -n --expression=5p f", true),
        ("sed 's|a|b|2' f", true),
        ("sed 'q 3' f", true),
        ("sed -s -n 1p a b", true),
        ("sed f", false),
        ("sed -n 'r other' f", false),
        ("sed -n '/x/w out' f", false),
        ("sed -ni 1p f", false),
        ("sed -n 1p -i f", false),
        ("sed 's/a/b/gw out' f", false),
        ("sed 'e ls' f", false),
        ("sed -n '/a[/]w x/p' f", false),
        ("sed", false),
    ] {
        assert_eq!(read_only_command(line), want, "{line:?}");
    }
}

#[test]
fn empty_and_unparsable_lines() {
    assert!(read_only_command(""));
    assert!(read_only_command("   "));
    assert!(!read_only_command("ls &&"));
    assert!(!read_only_command("echo $("));
    assert!(!read_only_command("case x in"));
}
