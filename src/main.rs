//! The `moe-opt` binary: see `moe_opt::cli`.

fn main() {
    let registry = moe_opt::problems::builtin();
    let cli = moe_opt::cli::Cli::parse_with(&registry);
    if let Err(e) = moe_opt::cli::run_with(&registry, cli) {
        // A reader that stopped reading (`| head`) is no error: exit 0, silently.
        if e.is_broken_pipe() {
            return;
        }
        eprintln!("error: {}", e.message);
        std::process::exit(e.code);
    }
}
