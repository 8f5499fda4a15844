//! Release builds for x86_64 Linux (linked by rustc's own LLD) are linked for a small
//! resident set:
//! - the functions of a typical session are placed side by side
//!   (`symbol-order.txt`, written by `bench/mcp/symbol_order.py`): a server then
//!   touches a few dense pages of code instead of pages spread over the whole binary;
//! - relative relocations are packed (`-z pack-relative-relocs`, glibc 2.36 or later
//!   at run time): the loader reads a few kilobytes of them at start instead of
//!   megabytes.
//!
//! `TOOLBELT_PLAIN_LINK=1` turns both off, for a binary that must run on an older glibc;
//! so does a linker of the user's choosing (GNU ld has no `--symbol-ordering-file`).

fn main() {
    println!("cargo:rerun-if-changed=symbol-order.txt");
    println!("cargo:rerun-if-env-changed=TOOLBELT_PLAIN_LINK");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let target = std::env::var("TARGET").unwrap_or_default();
    let plain = std::env::var_os("TOOLBELT_PLAIN_LINK").is_some_and(|v| v != "0");
    // A linker of the user's choosing (a configured `linker`, or `-fuse-ld` in the
    // flags) may not know these options: link plainly then.
    let own_linker = std::env::var_os("RUSTC_LINKER").is_some()
        || std::env::var("CARGO_ENCODED_RUSTFLAGS")
            .is_ok_and(|f| f.contains("fuse-ld") || f.contains("linker"));
    if !release || plain || own_linker || target != "x86_64-unknown-linux-gnu" {
        return;
    }
    println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    let Ok(dir) = std::env::var("CARGO_MANIFEST_DIR") else {
        return;
    };
    let order = std::path::Path::new(&dir).join("symbol-order.txt");
    if order.is_file() {
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        // Names the code no longer has are skipped without a word.
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}
