//! The programs [`super::write_targets`] knows: how each takes its options, and
//! for the wrappers (`sudo`, `env`, `xargs`...) where the command they run starts.

use super::getopt::Syntax;

/// A program that runs another: `sudo`, `env`, `xargs`...
pub(super) struct Wrapper {
    /// The program.
    pub(super) name: &'static str,
    /// Its options, before the command it runs.
    pub(super) syntax: Syntax,
    /// Options that change the working directory (`env -C`).
    pub(super) chdir: &'static [&'static str],
    /// Options after which no command runs (`command -v`).
    pub(super) no_command: &'static [&'static str],
    /// Options that run something unknown (`sudo -s`, `env -S`).
    pub(super) unknown: &'static [&'static str],
    /// Operands before the command (`timeout DURATION`).
    pub(super) skip: usize,
    /// `NAME=value` operands before the command (`env`, `sudo`).
    pub(super) assignments: bool,
    /// The command gets more arguments from the input (`xargs`).
    pub(super) appends: bool,
}

/// What a wrapper runs.
pub(super) enum Unwrapped {
    /// No command (`env` alone prints the environment).
    Nothing,
    /// The command starting at this argument.
    Command(usize),
    /// Something that cannot be told.
    Unknown,
}

const fn wrapper(name: &'static str, syntax: Syntax) -> Wrapper {
    Wrapper {
        name,
        syntax,
        chdir: &[],
        no_command: &[],
        unknown: &[],
        skip: 0,
        assignments: false,
        appends: false,
    }
}

pub(super) const WRAPPERS: &[Wrapper] = &[
    Wrapper {
        chdir: &["D", "chdir"],
        // A shell, an editor, another root.
        unknown: &["i", "s", "e", "R", "login", "shell", "edit", "chroot"],
        assignments: true,
        ..wrapper(
            "sudo",
            Syntax {
                flags: "AbBEHknPSise",
                valued: "CDgpRrTtUu",
                long_flags: "askpass background bell preserve-groups set-home non-interactive \
                    reset-timestamp stdin login shell edit",
                long_valued: "close-from chdir group prompt chroot role type command-timeout \
                    other-user user",
                long_optional: "preserve-env",
                ..Syntax::NONE
            },
        )
    },
    Wrapper {
        chdir: &["C", "chdir"],
        unknown: &["S", "split-string"],
        assignments: true,
        ..wrapper(
            "env",
            Syntax {
                flags: "i0v",
                valued: "uCS",
                long_flags: "ignore-environment null debug",
                long_valued: "unset chdir split-string",
                long_optional: "block-signal default-signal ignore-signal",
                dash_operand: false,
                ..Syntax::NONE
            },
        )
    },
    wrapper(
        "nice",
        Syntax {
            valued: "n",
            long_valued: "adjustment",
            numeric: true,
            ..Syntax::NONE
        },
    ),
    Wrapper {
        skip: 1,
        ..wrapper(
            "timeout",
            Syntax {
                flags: "v",
                valued: "ks",
                long_flags: "foreground preserve-status verbose",
                long_valued: "kill-after signal",
                ..Syntax::NONE
            },
        )
    },
    wrapper("nohup", Syntax::NONE),
    wrapper(
        "stdbuf",
        Syntax {
            valued: "ioe",
            long_valued: "input output error",
            ..Syntax::NONE
        },
    ),
    Wrapper {
        no_command: &["v", "V"],
        ..wrapper(
            "command",
            Syntax {
                flags: "pvV",
                ..Syntax::NONE
            },
        )
    },
    wrapper("builtin", Syntax::NONE),
    wrapper(
        "exec",
        Syntax {
            flags: "cl",
            valued: "a",
            ..Syntax::NONE
        },
    ),
    wrapper(
        "time",
        Syntax {
            flags: "p",
            ..Syntax::NONE
        },
    ),
    Wrapper {
        appends: true,
        ..wrapper(
            "xargs",
            Syntax {
                flags: "0oprtx",
                valued: "aEdILnPs",
                optional: "eil",
                long_flags: "null open-tty interactive no-run-if-empty verbose exit",
                long_valued: "arg-file delimiter max-args max-procs max-chars \
                    process-slot-var",
                long_optional: "eof replace max-lines",
                ..Syntax::NONE
            },
        )
    },
];

/// The options of the programs whose operands are all written.
pub(super) fn operand_syntax(name: &str) -> Option<&'static Syntax> {
    const TEE: Syntax = Syntax {
        flags: "aip",
        long_flags: "append ignore-interrupts",
        long_optional: "output-error",
        ..Syntax::NONE
    };
    const TOUCH: Syntax = Syntax {
        flags: "acfhm",
        valued: "drt",
        long_flags: "no-create no-dereference",
        long_valued: "date reference time",
        ..Syntax::NONE
    };
    const RM: Syntax = Syntax {
        flags: "dfiIrRv",
        long_flags: "dir force one-file-system no-preserve-root recursive verbose",
        long_optional: "interactive preserve-root",
        ..Syntax::NONE
    };
    const RMDIR: Syntax = Syntax {
        flags: "pv",
        long_flags: "ignore-fail-on-non-empty parents verbose",
        ..Syntax::NONE
    };
    const MKDIR: Syntax = Syntax {
        flags: "pvZ",
        valued: "m",
        long_flags: "parents verbose",
        long_valued: "mode",
        long_optional: "context",
        ..Syntax::NONE
    };
    const TRUNCATE: Syntax = Syntax {
        flags: "co",
        valued: "rs",
        long_flags: "no-create io-blocks",
        long_valued: "reference size",
        ..Syntax::NONE
    };
    const SHRED: Syntax = Syntax {
        flags: "fuvxz",
        valued: "ns",
        long_flags: "force exact verbose zero",
        long_valued: "iterations random-source size",
        long_optional: "remove",
        ..Syntax::NONE
    };
    match name {
        "tee" => Some(&TEE),
        "touch" => Some(&TOUCH),
        "rm" => Some(&RM),
        "rmdir" => Some(&RMDIR),
        "mkdir" => Some(&MKDIR),
        "truncate" => Some(&TRUNCATE),
        "shred" => Some(&SHRED),
        "unlink" => Some(&Syntax::NONE),
        _ => None,
    }
}

/// The options of `cp`, `mv`, `install` and `ln`.
pub(super) fn copy_syntax(name: &str) -> Option<&'static Syntax> {
    const CP: Syntax = Syntax {
        flags: "abdfHilLnPpRrsTuvxZ",
        valued: "St",
        long_flags: "archive attributes-only copy-contents debug dereference force \
            interactive keep-directory-symlink link no-clobber no-dereference \
            no-target-directory one-file-system parents recursive remove-destination \
            strip-trailing-slashes symbolic-link verbose",
        long_valued: "no-preserve sparse suffix target-directory",
        long_optional: "backup context preserve reflink update",
        ..Syntax::NONE
    };
    const MV: Syntax = Syntax {
        flags: "bfinTuvZ",
        valued: "St",
        long_flags: "debug exchange force interactive no-clobber no-copy no-target-directory \
            strip-trailing-slashes verbose",
        long_valued: "suffix target-directory",
        long_optional: "backup context update",
        ..Syntax::NONE
    };
    const INSTALL: Syntax = Syntax {
        flags: "bCcdDpsTvZ",
        valued: "gmoSt",
        long_flags: "compare debug directory no-target-directory preserve-context \
            preserve-timestamps strip verbose",
        long_valued: "group mode owner strip-program suffix target-directory",
        long_optional: "backup context",
        ..Syntax::NONE
    };
    const LN: Syntax = Syntax {
        flags: "bdFfiLnPrsTv",
        valued: "St",
        long_flags: "directory force interactive logical no-dereference no-target-directory \
            physical relative symbolic verbose",
        long_valued: "suffix target-directory",
        long_optional: "backup",
        ..Syntax::NONE
    };
    match name {
        "cp" => Some(&CP),
        "mv" => Some(&MV),
        "install" => Some(&INSTALL),
        "ln" => Some(&LN),
        _ => None,
    }
}

pub(super) const SED: Syntax = Syntax {
    flags: "bEnrsuz",
    valued: "efl",
    optional: "i",
    long_flags: "binary debug follow-symlinks null-data posix quiet regexp-extended sandbox \
        separate silent unbuffered zero-terminated",
    long_valued: "expression file line-length",
    long_optional: "in-place",
    ..Syntax::NONE
};

pub(super) const CHMOD: Syntax = Syntax {
    flags: "cfRv",
    long_flags: "changes no-preserve-root preserve-root quiet recursive silent verbose",
    long_valued: "reference",
    ..Syntax::NONE
};

pub(super) const CHOWN: Syntax = Syntax {
    flags: "cfHhLPRv",
    long_flags: "changes dereference no-dereference no-preserve-root preserve-root quiet \
        recursive silent verbose",
    long_valued: "from reference",
    ..Syntax::NONE
};
