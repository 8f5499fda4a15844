#![allow(clippy::unwrap_used)]

use proptest::prelude::*;

use super::{Writes, write_targets};
use crate::read_only_command;

/// Exactly `paths`, and nothing unknown.
fn only(paths: &[&str]) -> Writes {
    Writes {
        paths: paths.iter().map(|p| p.to_string()).collect(),
        unknown: false,
    }
}

/// `paths`, and more that cannot be told.
fn more(paths: &[&str]) -> Writes {
    Writes {
        unknown: true,
        ..only(paths)
    }
}

fn check(cases: &[(&str, Writes)]) {
    let wrong: Vec<String> = cases
        .iter()
        .filter_map(|(line, want)| {
            let got = write_targets(line);
            (got != *want).then(|| format!("{line:?}: got {got:?}, want {want:?}"))
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_examples_of_the_brief() {
    check(&[
        ("echo A=1 > .env", only(&[".env"])),
        ("sed -i s/a/b/ .env", only(&[".env"])),
        ("cp x .env", only(&[".env"])),
        ("mv a b", only(&["a", "b"])),
        ("touch marker", only(&["marker"])),
        ("rm -rf build dist", only(&["build", "dist"])),
        ("cat x | tee -a out.log >/dev/null", only(&["out.log"])),
        ("python3 -c 'open(\".env\",\"w\")'", more(&[])),
        ("echo hi >&2", only(&[])),
        ("cat .env.example", only(&[])),
        ("cd sub && echo x > y", more(&["y"])),
    ]);
}

#[test]
fn read_only_lines_write_nothing() {
    check(&[
        ("ls -la", only(&[])),
        ("grep -r x .", only(&[])),
        ("git status", only(&[])),
        ("echo hi 2>/dev/null", only(&[])),
        ("cat a 2>&1 1>&2 | wc -l", only(&[])),
        ("echo x 1>&2-; echo y >&-; cat 0<&3", only(&[])),
        ("git --no-pager log -n 3 && git diff --stat", only(&[])),
        ("sed -n 1,5p file", only(&[])),
        ("find . -name '*.rs' | xargs grep -l foo", only(&[])),
        (
            "while read -r f; do wc -l \"$f\"; done < list.txt",
            only(&[]),
        ),
        ("for f in a b; do cat $f; done", only(&[])),
        ("[ -f x ] && echo yes || echo no", only(&[])),
        ("set -euo pipefail; ls", only(&[])),
        ("LC_ALL=C sort names.txt", only(&[])),
        ("x=1; echo $x", only(&[])),
        ("cat <<EOF\nhello $(date)\nEOF", only(&[])),
        ("wc -l <<< \"a b\"", only(&[])),
        ("command -v rg", only(&[])),
        ("env", only(&[])),
        ("", only(&[])),
        ("# just a comment", only(&[])),
    ]);
}

#[test]
fn output_redirections() {
    check(&[
        ("echo a >> log.txt", only(&["log.txt"])),
        ("echo a >| f", only(&["f"])),
        ("make &> build.log", more(&["build.log"])),
        ("ls &>> all.log", only(&["all.log"])),
        ("ls 2> err.txt", only(&["err.txt"])),
        ("ls 3> three 2>&3", only(&["three"])),
        ("ls >& both.txt", only(&["both.txt"])),
        (
            "echo x > \"a b\" > 'c d' > e\\ f",
            only(&["a b", "c d", "e f"]),
        ),
        ("echo > \"a\"b'c'", only(&["abc"])),
        ("echo x > /tmp/abs", only(&["/tmp/abs"])),
        ("echo x > a; echo y > a", only(&["a"])),
        (
            "echo x > second; echo y > first",
            only(&["second", "first"]),
        ),
        ("{ echo a; echo b; } > grouped", only(&["grouped"])),
        ("(echo a) > sub", only(&["sub"])),
        ("if true; then echo; fi > cond", only(&["cond"])),
        ("while false; do :; done < in > out", only(&["out"])),
        ("echo \"$(echo x > inner)\"", only(&["inner"])),
        ("echo `echo x > tick`", only(&["tick"])),
        ("cat <(echo > proc)", only(&["proc"])),
        ("f() { echo x; } > fn.log", only(&["fn.log"])),
        ("cat <<EOF > out.txt\nbody\nEOF", only(&["out.txt"])),
        ("cat > .env <<'EOF'\nA=1\nEOF", only(&[".env"])),
        ("exec 3> fd.log", only(&["fd.log"])),
        ("ls > >(tee copy)", only(&["copy"])),
    ]);
}

#[test]
fn sinks_and_descriptors_are_not_files() {
    check(&[
        ("ls > /dev/null 2> /dev/stderr", only(&[])),
        ("ls > /dev/stdout", only(&[])),
        ("ls > /dev/fd/2", only(&[])),
        ("tee /dev/null < x", only(&[])),
        ("dd if=a of=/dev/null", only(&[])),
        // A path naming a descriptor reopens what it is, and `< f` may be it:
        // `cat < f 1<&0 > /dev/stdout` empties `f`.
        ("cat < f 1<&0 > /dev/stdout", more(&[])),
        ("exec 3< f; echo > /dev/fd/3", more(&[])),
    ]);
}

#[test]
fn known_writers() {
    check(&[
        ("tee a b", only(&["a", "b"])),
        ("tee -a -- -odd", only(&["-odd"])),
        ("echo x | tee --append=x f", more(&["f"])),
        ("touch -d yesterday -r ref stamp", only(&["stamp"])),
        ("touch -c a b", only(&["a", "b"])),
        ("rm -f -- -x y", only(&["-x", "y"])),
        ("rm --recursive --force=1 z", more(&["z"])),
        ("rm -rf build --verbose", only(&["build"])),
        ("rmdir a/b/c", only(&["a/b/c"])),
        ("rmdir -p a/b/c", only(&["a/b/c", "a/b", "a"])),
        ("mkdir -p -m 755 a/b c", only(&["a/b", "c"])),
        ("mkdir --mode 700 private", only(&["private"])),
        ("truncate -s 0 log", only(&["log"])),
        ("truncate --size=0 -r ref big", only(&["big"])),
        ("unlink old", only(&["old"])),
        ("shred -u -n 3 secret", only(&["secret"])),
        ("chmod +x run.sh", only(&["run.sh"])),
        ("chmod -R 755 bin lib", only(&["bin", "lib"])),
        ("chmod -x tool", only(&["tool"])),
        ("chmod --reference=a b", only(&["b"])),
        ("chown -R user:group dir", only(&["dir"])),
        ("chgrp staff f", only(&["f"])),
        (
            "dd if=/dev/zero of=disk.img bs=1M count=1",
            only(&["disk.img"]),
        ),
        ("dd if=a of=$OUT", more(&[])),
        ("/usr/bin/touch sys", only(&["sys"])),
    ]);
}

#[test]
fn sed_in_place() {
    check(&[
        ("sed -i 's/a/b/g' x y", only(&["x", "y"])),
        ("sed -i -e s/a/b/ -e s/c/d/ f", only(&["f"])),
        ("sed --in-place --expression=s/a/b/ f", only(&["f"])),
        ("sed -i.bak s/a/b/ f", only(&["f", "f.bak"])),
        ("sed --in-place=.orig s/a/b/ f", only(&["f", "f.orig"])),
        // `-i` takes the rest of its cluster as the suffix: `-ie` is suffix `e`.
        ("sed -ie s/a/b/ f", only(&["f", "fe"])),
        ("sed -ni 1p f", only(&["f"])),
        ("sed -i'bak/*' s/a/b/ f", more(&["f"])),
        // GNU sed: a suffix is attached or absent, so `bak/*` is the script.
        ("sed -i 'bak/*' s/a/b/ f", more(&["s/a/b/", "f"])),
        ("sed -i -f script.sed f", more(&["f"])),
        ("sed -i '/x/w other' f", more(&["f"])),
        ("sed -i '$a NEW=1' .env", more(&[".env"])),
        ("sed -i \"s/$A/b/\" f", more(&["f"])),
        ("sed -i s/a/b/ *.txt", more(&[])),
        ("sed -i s/a/b/", only(&[])),
        // Without `-i`, sed is judged as a reader.
        ("sed 's/a/b/' f > g", only(&["g"])),
        ("sed 'w out' f", more(&[])),
    ]);
}

#[test]
fn copies_moves_and_links() {
    check(&[
        ("cp -r src dst", only(&["dst"])),
        ("cp a b dir", only(&["dir", "dir/a", "dir/b"])),
        ("cp backup/.env .", only(&[".", "./.env"])),
        ("cp x sub/", only(&["sub/", "sub/x"])),
        ("cp -t dest a b/c", only(&["dest", "dest/a", "dest/c"])),
        ("cp --target-directory=dest a", only(&["dest", "dest/a"])),
        ("cp --target dest a", only(&["dest", "dest/a"])),
        ("cp -T a dir/", only(&["dir/"])),
        ("cp --parents a/b/c dest", only(&["dest"])),
        (
            "cp --parents a/b c dest",
            only(&["dest", "dest/a/b", "dest/c"]),
        ),
        ("cp -b a b", more(&["b"])),
        ("cp --backup=numbered a b", more(&["b"])),
        ("cp *.txt dir/", more(&["dir/"])),
        ("cp a", only(&[])),
        ("mv a b", only(&["a", "b"])),
        ("mv a b dir", only(&["a", "b", "dir", "dir/a", "dir/b"])),
        ("mv -t dir a", only(&["dir", "a", "dir/a"])),
        ("mv -f old.txt new.txt", only(&["old.txt", "new.txt"])),
        (
            "install -m 644 -D build/app /usr/local/bin/app",
            only(&["/usr/local/bin/app"]),
        ),
        ("install -d a b", only(&["a", "b"])),
        ("ln -sf ../target link", only(&["link"])),
        ("ln -s /opt/tool/bin/tool", only(&["tool"])),
        ("ln -s a b dir", only(&["dir", "dir/a", "dir/b"])),
        ("cp -Q a b", more(&["b"])),
    ]);
}

#[test]
fn wrappers_are_looked_through() {
    check(&[
        ("sudo tee /etc/hosts < hosts", only(&["/etc/hosts"])),
        ("sudo -u root -E rm -f /var/x", only(&["/var/x"])),
        ("sudo --user=root touch f", only(&["f"])),
        ("sudo -s", more(&[])),
        ("sudo -i rm x", more(&[])),
        ("sudo -R /srv/root touch x", more(&[])),
        ("sudo -l", more(&[])),
        ("sudo -D /tmp touch x", more(&["x"])),
        ("env LANG=C touch f", only(&["f"])),
        ("env -i -u HOME touch f", only(&["f"])),
        ("env - touch f", only(&["f"])),
        ("env -C sub touch f", more(&["f"])),
        ("env --chdir=/tmp touch /tmp/f", only(&["/tmp/f"])),
        ("env -S 'rm x'", more(&[])),
        ("env PATH=/tmp/evil cat x", more(&[])),
        ("env cat x", only(&[])),
        ("nice -n 10 rm old", only(&["old"])),
        ("nice -10 rm old", only(&["old"])),
        ("nice", only(&[])),
        ("timeout 5 tee out", only(&["out"])),
        ("timeout -s KILL --kill-after=2 5s touch t", only(&["t"])),
        ("timeout 5", only(&[])),
        ("nohup rm -rf cache", only(&["cache"])),
        ("stdbuf -oL tee log", only(&["log"])),
        ("command rm x", only(&["x"])),
        ("builtin echo x > y", only(&["y"])),
        ("exec rm x", only(&["x"])),
        ("time touch t", only(&["t"])),
        (
            "sudo env LC_ALL=C nice timeout 9 touch deep",
            only(&["deep"]),
        ),
        ("sudo $CMD x", more(&[])),
        ("sudo ./script.sh", more(&[])),
        ("nice make", more(&[])),
    ]);
}

#[test]
fn xargs_operands_come_from_its_input() {
    check(&[
        ("find . -name '*.o' | xargs rm", more(&[])),
        ("ls | xargs -0 -n 1 cat", only(&[])),
        ("ls | xargs", only(&[])),
        ("ls | xargs -I{} cp {} backup/", more(&[])),
        ("ls | xargs -I % cp % backup/", more(&[])),
        ("ls | xargs sed -i s/a/b/", more(&[])),
        ("ls | xargs git log", more(&[])),
        ("ls | xargs sh -c 'rm x'", more(&[])),
    ]);
}

#[test]
fn what_cannot_be_told_is_unknown() {
    check(&[
        ("make", more(&[])),
        ("./script.sh", more(&[])),
        ("npm install", more(&[])),
        ("git checkout .", more(&[])),
        ("git commit -m x && echo done > marker", more(&["marker"])),
        ("eval 'echo > x'", more(&[])),
        ("source env.sh", more(&[])),
        (". env.sh", more(&[])),
        ("bash -c 'echo > x'", more(&[])),
        ("sh -c 'rm x'", more(&[])),
        ("find . -delete", more(&[])),
        ("find . -name x -exec rm {} +", more(&[])),
        ("echo > \"$F\"", more(&[])),
        ("echo > $(mktemp)", more(&[])),
        ("echo > ~/x", more(&[])),
        ("echo >> \"$HOME\"/.bashrc", more(&[])),
        ("rm *.log", more(&[])),
        ("touch {a,b}.txt", more(&[])),
        ("tee $OUT", more(&[])),
        ("$CMD > x", more(&[])),
        ("echo 'unterminated", more(&[])),
        ("if true; then", more(&[])),
        ("coproc cat", more(&[])),
        ("trap 'rm -f lock' EXIT", more(&[])),
        ("echo > a b", more(&["a"])),
        ("pushd /tmp; touch t", more(&["t"])),
        ("touch t; cd /tmp", more(&["t"])),
        ("(cd sub && make) && touch done", more(&["done"])),
    ]);
}

#[test]
fn assignments_to_upper_case_variables_change_what_runs() {
    check(&[
        ("PATH=/tmp/evil:$PATH cat x", more(&[])),
        ("LD_PRELOAD=/tmp/x.so ls", more(&[])),
        ("export GIT_DIR=/tmp/g; git status", more(&[])),
        ("unset PATH", more(&[])),
        ("declare -x FOO", more(&[])),
        ("for PATH in /tmp; do ls; done", more(&[])),
        ("echo ${PATH:=/tmp}", more(&[])),
        ("read -r HOME", more(&[])),
        ("read -ra parts <<< \"a b\"", only(&[])),
        ("local x=1; export y=2", only(&[])),
        ("TZ=UTC LANG=C LC_ALL=C date > now", only(&["now"])),
        ("x=$(touch made)", only(&["made"])),
    ]);
}

#[test]
fn absolute_targets_stay_certain_after_a_cd() {
    check(&[
        ("cd /tmp && echo x > /tmp/y", only(&["/tmp/y"])),
        ("cd sub && ls", only(&[])),
    ]);
}

#[test]
fn non_ascii_paths_are_kept() {
    check(&[("echo x > 'résumé.txt'", only(&["résumé.txt"]))]);
}

/// Lines of a few parts, some writing, joined in every way bash joins them.
fn arb_line() -> impl Strategy<Value = String> {
    let part = prop_oneof![
        Just("ls -la".to_string()),
        Just("cat a.txt".to_string()),
        Just("git status".to_string()),
        Just("echo \"x y\" > out.txt".to_string()),
        Just("rm -f $X".to_string()),
        Just("make".to_string()),
        Just("cd sub".to_string()),
        Just("touch 'q r'".to_string()),
        "[a-z$*'\"<>|&;(){} -]{0,12}",
    ];
    let op = prop_oneof![
        Just(" && "),
        Just(" || "),
        Just("; "),
        Just(" | "),
        Just("\n")
    ];
    (
        proptest::collection::vec(part, 1..5),
        proptest::collection::vec(op, 4),
    )
        .prop_map(|(parts, ops)| {
            let mut line = String::new();
            for (i, p) in parts.iter().enumerate() {
                if i > 0 {
                    line.push_str(ops[i - 1]);
                }
                line.push_str(p);
            }
            line
        })
}

/// How a target may be written, and in what it may sit.
const WRITES: &[&str] = &[
    "echo x > {}",
    "echo x >> {}",
    "ls 2> {}",
    "touch {}",
    "rm -rf {}",
    "tee -a {}",
    "cp src {}",
    "mv {} elsewhere",
    "sed -i s/a/b/ {}",
    "truncate -s 0 {}",
    "dd of={}",
];
const AROUND: &[&str] = &[
    "{}",
    "ls && {}",
    "cat a | {} | wc -l",
    "({})",
    "echo \"$({})\"",
    "for f in a b; do {}; done",
    "if true; then {}; fi",
    "sudo {}",
    "env LANG=C nice -n 5 timeout 10 {}",
    "f() {{ {}; }}",
];

proptest! {
    #[test]
    fn never_panics(line in any::<String>()) {
        let _ = write_targets(&line);
    }

    #[test]
    fn never_panics_on_shell_like_lines(line in arb_line()) {
        let _ = write_targets(&line);
    }

    #[test]
    fn a_read_only_line_lists_no_path(line in arb_line()) {
        if read_only_command(&line) {
            prop_assert_eq!(write_targets(&line).paths, Vec::<String>::new());
        }
    }

    #[test]
    fn a_static_target_is_found_wherever_it_is(
        name in "[a-zA-Z0-9._/-]{0,8}[a-zA-Z0-9_]",
        quote in 0..3usize,
        write in 0..WRITES.len(),
        around in 0..AROUND.len(),
    ) {
        prop_assume!(!name.starts_with('-') && name != "/dev/null");
        let quoted = match quote {
            0 => name.clone(),
            1 => format!("'{name}'"),
            _ => format!("\"{name}\""),
        };
        let command = WRITES[write].replace("{}", &quoted);
        let line = AROUND[around].replace("{}", &command).replace("{{", "{").replace("}}", "}");
        let found = write_targets(&line);
        prop_assert!(found.paths.contains(&name), "{}: {:?}", line, found);
    }
}
