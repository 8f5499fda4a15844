//! Permission policy: allow / ask / deny rules over tool calls, as plain data.
//!
//! A [`Rule`] is written `tool` or `tool(specifier)`. The tool part names the
//! canonical tool or the name a profile exposes it as (`bash` or `Bash`), `*` for any
//! tool, `prefix*` for every tool whose name starts with `prefix`, and `mcp__server`
//! for every tool of an MCP server (`mcp__server__tool`). The specifier depends on
//! what the tool's subject is:
//!
//! | rule | matches |
//! |---|---|
//! | `bash` | every call of `bash` (so does `bash(*)`) |
//! | `bash(git status:*)` | the command `git status` and every command starting with `git status ` |
//! | `bash(npm test)` | exactly the command `npm test` |
//! | `read_file(./secrets/**)`, `write_file(src/**/*.rs)` | paths relative to the workspace root |
//! | `read_file(.env)`, `read_file(*.pem)`, `edit_file(**/gen/**)` | a name at any depth |
//! | `read_file(/etc/**)` (or `//etc/**`) | absolute paths |
//! | `read_file(~/.ssh/**)` | paths under the home directory |
//! | `web_fetch(domain:example.com)` | URLs whose host is `example.com` or one of its subdomains |
//! | `web_fetch(domain:*.example.com)` | URLs on a subdomain of `example.com` only |
//! | `*(**/.env)` | any file tool working on such a path |
//!
//! What a specifier is depends on what the tool declares as its subject
//! ([`Subject`], given to the policy as [`ToolKinds`]): tools whose subject is a
//! command (the shell tools) take commands, tools whose subject is a URL
//! (`web_fetch`) take `domain:` specifiers, tools whose subject is a path (the file
//! and search tools) take path patterns. Any other tool (and `*`) takes `domain:HOST`,
//! `prefix:*`, or a pattern that is matched as a path for tools with an `fs:`
//! permission and compared exactly with the subject otherwise.
//!
//! **Path patterns** are gitignore-style globs: `*` and `?` stay inside one path
//! component, `**` crosses them, `[a-z]` and `{a,b}` work, and a pattern that
//! matches a directory covers everything beneath it. A pattern without a `/` (other
//! than a trailing one) or starting with `**/` matches at any depth (inside the
//! workspace, below its root only); `./x` and other
//! patterns containing a `/` are relative to the workspace root; `/x` and `//x` are
//! absolute; `~/x` is under the home directory. Subjects are normalised first
//! (`./a/../b` is `b`); relative subjects are taken relative to the workspace root,
//! and absolute subjects under a root given to [`Policy::with_roots`] match relative
//! patterns too. Paths compare case-sensitively.
//!
//! **Commands** are compared after collapsing runs of unquoted blanks, so
//! `git  status` is `git status`. One rule checks one simple command: a shell tool's
//! command line is parsed with a bash parser ([`shell::simple_commands`]) and every
//! simple command in it (in `&&`, `||`, `;`, pipes, subshells, `$(...)`, backticks,
//! `<(...)`, loops, conditions and function bodies) is judged on its own: a denied
//! part denies the call (naming its rule), else a part that asks makes it ask, else
//! it is allowed. So `bash(git status:*)` does not allow `git status && rm -rf x`,
//! and `bash(echo:*)` does not allow `echo $(rm x)`. While an allow rule with a
//! command specifier names the tool, the tool's allow rules are a list: a part no
//! rule matches asks (`no allow rule covers "rm -rf x"`). A command line that does
//! not parse asks (`command could not be parsed`) unless a deny rule matches it as
//! a whole. Arguments keep their quotes (`echo "a && b"` is one command, which
//! `bash(echo:*)` covers); the command name is unquoted (`"rm"` and `\rm` are
//! `rm`). Variable assignments before a command are part of its text for allow
//! rules (`FOO=1 make` needs a rule like `bash(FOO=1 make:*)`, since `PATH=...` or
//! `LD_PRELOAD=...` change what runs) and are ignored by deny and ask rules
//! (`FOO=1 rm x` is denied by `bash(rm:*)`). Without command rules for the tool
//! (none, or only `bash` / `bash(*)`), the line is not split. To judge parts split
//! elsewhere, use [`Policy::evaluate_commands`].
//!
//! **Evaluation** is deny, then ask, then allow: any matching deny rule wins, then
//! any ask rule, then any allow rule. When nothing matches, the call is allowed (a
//! registered tool is an allowed tool), except for the built-in secret files, which
//! tools with an `fs:` permission may not touch: `.env` and `.env.*` (not
//! `.env.example`, `.env.sample`, `.env.template`), private keys (`*.pem`, `*.key`,
//! `id_rsa*`, `id_ed25519*`, `id_ecdsa*`, `id_dsa*`, but not their `*.pub` halves),
//! cloud and registry credentials, keystores, and `.ssh/**` (but not `*.pub` and
//! `known_hosts`), at any depth. Deny always wins: to reach a secret file, turn the
//! defaults off with [`Policy::without_secret_defaults`].
//!
//! Nor may tools that write files (permission `fs:write`) change toolbelt's own
//! configuration, so that an agent cannot rewrite its rules or hooks: the
//! workspace's `toolbelt.toml` and everything under `.toolbelt/hooks/`, at a
//! workspace root (`./toolbelt.toml`, `./.toolbelt/hooks/**`; ASCII case aside),
//! are denied with the rule `deny toolbelt configuration toolbelt.toml
//! (built-in)`, and hook scripts elsewhere once given to
//! [`Policy::with_protected_paths`] (`deny hook script <path> (built-in)`).
//! Reading them stays allowed. [`Policy::without_config_defaults`] turns the
//! built-in part off.
//!
//! Beside the rules, the crate reads shell command lines for what they touch:
//! [`read_only_command`] says whether a line certainly changes no file, and
//! [`write_targets`] lists what it may write ([`Writes`], for hooks that fire
//! on writes to some paths), and [`destructive`] finds the commands that destroy
//! what cannot be had back (`rm -rf`, `git reset --hard`, changes to `.git`): a
//! policy [`with_destructive_guard`](Policy::with_destructive_guard) holds them
//! for a person even where every call is approved unseen.
//!
//! ```
//! use toolbelt_policy::{Decision, Policy, Request, Subject, ToolKinds};
//!
//! // What the tools declare: `sh` runs commands, `open` reads paths.
//! let mut kinds = ToolKinds::new();
//! kinds.declare("sh", Subject::Command).declare("open", Subject::Path);
//! kinds.alias("Sh", "sh");
//! let policy = Policy::from_rules(&["Sh(git status:*)"], &["sh(git push:*)"], &["sh(rm:*)"])
//!     .and_then(|p| p.with_kinds(kinds))
//!     .unwrap();
//! let sh = |command| Request {
//!     tool: "sh",
//!     alias: Some("Sh"),
//!     subject: Some(command),
//!     permissions: &[],
//! };
//! assert_eq!(policy.evaluate(&sh("git status --short")).decision, Decision::Allow);
//! assert_eq!(policy.evaluate(&sh("git push origin main")).decision, Decision::Ask);
//! let denied = policy.evaluate(&sh("rm -rf target"));
//! assert_eq!(denied.decision, Decision::Deny);
//! assert_eq!(denied.rule.as_deref(), Some("sh(rm:*)"));
//!
//! let fs = ["fs:read".to_string()];
//! let open = |path| Request { tool: "open", alias: None, subject: Some(path), permissions: &fs };
//! assert_eq!(
//!     policy.evaluate(&open("config/.env")).rule.as_deref(),
//!     Some("deny secret file .env (built-in)")
//! );
//! assert_eq!(policy.evaluate(&open(".env.example")).decision, Decision::Allow);
//!
//! let write = ["fs:write".to_string()];
//! let save = |path| Request { tool: "save", alias: None, subject: Some(path), permissions: &write };
//! assert_eq!(
//!     policy.evaluate(&save("toolbelt.toml")).rule.as_deref(),
//!     Some("deny toolbelt configuration toolbelt.toml (built-in)")
//! );
//! assert_eq!(policy.evaluate(&open("toolbelt.toml")).decision, Decision::Allow);
//! ```

mod command;
mod error;
mod kinds;
mod policy;
mod read_only;
mod rule;
pub mod shell;
mod subject;
mod words;
mod writes;

pub use error::PolicyError;
pub use kinds::ToolKinds;
pub use policy::{Policy, PolicyConfig, UNPARSED_COMMAND};
pub use read_only::read_only_command;
pub use rule::Rule;
pub use subject::secret_file_label;
pub use toolbelt_core::{Decision, Evaluation, Request, Subject};
pub use writes::destructive::{Destructive, DestructiveKind, destructive, destructive_all};
pub use writes::{Writes, write_targets};
