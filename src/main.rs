//! The `moe-opt` binary: see `moe_opt::cli`.

use clap::Parser;

fn main() {
    let cli = moe_opt::cli::Cli::parse();
    if let Err(e) = moe_opt::cli::run(cli) {
        // A reader that stopped reading (`| head`) is no error: exit 0, silently.
        if e.is_broken_pipe() {
            return;
        }
        eprintln!("error: {}", e.message);
        std::process::exit(e.code);
    }
}
