//! `toolbelt-sandbox`: the sandbox helper on its own, for programs that embed
//! toolbelt's shell tools without calling `toolbelt_sandbox::dispatch`.

fn main() {
    toolbelt_sandbox::dispatch();
    eprintln!(
        "toolbelt-sandbox is started by toolbelt's shell tools, with {} as its first argument",
        toolbelt_sandbox::HELPER_ARG
    );
    std::process::exit(2);
}
