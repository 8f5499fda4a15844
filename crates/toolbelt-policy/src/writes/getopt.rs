//! Reading a program's arguments the way GNU `getopt_long` does, so that options
//! and their values are told from the operands a program writes.

use super::Word;
use crate::words::Arg;

/// How a program takes its options (GNU `getopt_long`): short ones cluster
/// (`-rf`), a value follows its letter (`-n5`, `-n 5`), long ones may be
/// abbreviated (`--verb`).
pub(super) struct Syntax {
    /// Short options without a value.
    pub(super) flags: &'static str,
    /// Short options with a value, attached or the next argument.
    pub(super) valued: &'static str,
    /// Short options with an optional value, attached only (`sed -i.bak`).
    pub(super) optional: &'static str,
    /// Long options without a value, separated by blanks.
    pub(super) long_flags: &'static str,
    /// Long options with a value, after `=` or the next argument.
    pub(super) long_valued: &'static str,
    /// Long options with an optional value, after `=` only.
    pub(super) long_optional: &'static str,
    /// `-10` is an option (`nice -10`).
    pub(super) numeric: bool,
    /// `-` alone is an operand (for `env`, it is `-i`).
    pub(super) dash_operand: bool,
}

impl Syntax {
    /// No options: every argument is an operand.
    pub(super) const NONE: Syntax = Syntax {
        flags: "",
        valued: "",
        optional: "",
        long_flags: "",
        long_valued: "",
        long_optional: "",
        numeric: false,
        dash_operand: true,
    };
}

/// One option as given: its letter or full long name, and its value.
pub(super) struct Opt {
    /// `i` for `-i`, `in-place` for `--in-place` or `--in`.
    pub(super) name: String,
    /// Its value, attached or the next argument.
    pub(super) value: Option<Arg>,
    /// Where its value (or the option) appears.
    pub(super) at: usize,
}

/// The arguments of a command, read with its [`Syntax`].
pub(super) struct Parsed<'w> {
    pub(super) options: Vec<Opt>,
    pub(super) operands: Vec<&'w Word>,
    /// Where reading stopped: the first operand, for a wrapper.
    pub(super) end: usize,
    /// An argument was not understood: an unknown option, a value missing, or
    /// an argument whose value is not known where an option could be.
    pub(super) unsure: bool,
}

impl Parsed<'_> {
    /// Whether one of the options `names` was given.
    pub(super) fn has(&self, names: &[&str]) -> bool {
        self.options
            .iter()
            .any(|o| names.contains(&o.name.as_str()))
    }

    /// The last of the options `names` given.
    pub(super) fn last(&self, names: &[&str]) -> Option<&Opt> {
        self.options
            .iter()
            .rev()
            .find(|o| names.contains(&o.name.as_str()))
    }
}

/// Reads `args` with `syntax`. Options may follow operands (GNU), unless
/// `wrapper`: then they stop at the first operand, the command it runs.
pub(super) fn parse<'w>(syntax: &Syntax, args: &'w [Word], wrapper: bool) -> Parsed<'w> {
    let mut parsed = Parsed {
        options: Vec::new(),
        operands: Vec::new(),
        end: args.len(),
        unsure: false,
    };
    let mut only_operands = false;
    let mut i = 0;
    while let Some(word) = args.get(i) {
        i += 1;
        let option = match &word.arg {
            Arg::Known(v) if !only_operands && v.len() > 1 && v.starts_with('-') => v.as_str(),
            Arg::Known(v) if !only_operands && v == "-" && !syntax.dash_operand => continue,
            Arg::Unknown if !only_operands => {
                parsed.unsure = true;
                if wrapper {
                    parsed.end = i - 1;
                    return parsed;
                }
                parsed.operands.push(word);
                continue;
            }
            _ => {
                if wrapper {
                    parsed.end = i - 1;
                    return parsed;
                }
                parsed.operands.push(word);
                continue;
            }
        };
        if option == "--" {
            only_operands = true;
            continue;
        }
        let mut value_from_next = |parsed: &mut Parsed<'w>| match args.get(i) {
            Some(next) => {
                i += 1;
                Some((next.arg.clone(), next.at))
            }
            None => {
                parsed.unsure = true;
                None
            }
        };
        if let Some(long) = option.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            let Some((full, kind)) = long_option(syntax, name) else {
                parsed.unsure = true;
                continue;
            };
            let value = match (kind, attached) {
                (Kind::Flag, Some(_)) => {
                    parsed.unsure = true;
                    None
                }
                (_, Some(v)) => Some((Arg::Known(v.to_string()), word.at)),
                (Kind::Valued, None) => value_from_next(&mut parsed),
                (_, None) => None,
            };
            let at = value.as_ref().map_or(word.at, |(_, at)| *at);
            parsed.options.push(Opt {
                name: full.to_string(),
                value: value.map(|(v, _)| v),
                at,
            });
            continue;
        }
        let body = &option[1..];
        if syntax.numeric && body.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        for (pos, c) in body.char_indices() {
            let rest = &body[pos + c.len_utf8()..];
            let (value, at) = if syntax.valued.contains(c) {
                let value = if rest.is_empty() {
                    value_from_next(&mut parsed)
                } else {
                    Some((Arg::Known(rest.to_string()), word.at))
                };
                let at = value.as_ref().map_or(word.at, |(_, at)| *at);
                (Some(value.map(|(v, _)| v)), at)
            } else if syntax.optional.contains(c) {
                let value = (!rest.is_empty()).then(|| Arg::Known(rest.to_string()));
                (Some(value), word.at)
            } else {
                if !syntax.flags.contains(c) {
                    parsed.unsure = true;
                }
                (None, word.at)
            };
            let ends = value.is_some();
            parsed.options.push(Opt {
                name: c.to_string(),
                value: value.flatten(),
                at,
            });
            if ends {
                break;
            }
        }
    }
    parsed
}

/// The kind of a long option.
#[derive(Clone, Copy)]
enum Kind {
    Flag,
    Valued,
    Optional,
}

/// The long option `name` stands for (itself, or the one option it abbreviates).
fn long_option(syntax: &Syntax, name: &str) -> Option<(&'static str, Kind)> {
    let all = || {
        let kinds = [
            (syntax.long_flags, Kind::Flag),
            (syntax.long_valued, Kind::Valued),
            (syntax.long_optional, Kind::Optional),
        ];
        kinds
            .into_iter()
            .flat_map(|(names, kind)| names.split_ascii_whitespace().map(move |n| (n, kind)))
    };
    if name.is_empty() {
        return None;
    }
    if let Some(exact) = all().find(|(n, _)| *n == name) {
        return Some(exact);
    }
    let mut matches = all().filter(|(n, _)| n.starts_with(name));
    match (matches.next(), matches.next()) {
        (Some(only), None) => Some(only),
        _ => None,
    }
}
