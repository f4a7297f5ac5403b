//! `moe-opt demo`.

use std::path::Path;

use formulations::milp::SolveOptions;

use super::text::verify_text;
use super::{flags, write_file, CliError};
use crate::claims::{CheckOptions, Scale};
use crate::problem::RunOptions;
use crate::registry::Registry;
use crate::report::VERSION;
use crate::verify::{ClaimGroup, VerifyOptions};

/// Most instances per problem of `demo` (`--instances`): each is solved exactly.
pub const MAX_DEMO_INSTANCES: u64 = 1_000;

/// The demo: for every problem with a demo instance, `compare` with its default methods on
/// small generated instances; then a short `verify` of every claim, summarised.
pub(super) fn demo(
    registry: &Registry,
    instances: u64,
    first_seed: u64,
    dir: &Path,
) -> Result<(), CliError> {
    flags::size_at_most(
        "--instances",
        "instances",
        instances,
        MAX_DEMO_INSTANCES,
        "moe_opt::cli::MAX_DEMO_INSTANCES",
    )?;
    // The seeds first_seed.. must not run past u64::MAX.
    if first_seed.checked_add(instances).is_none() {
        return Err(formulations::Error::command_line(
            "--seed",
            format!(
                "{first_seed} + {instances} instances runs past the largest seed {}",
                u64::MAX
            ),
        )
        .into());
    }
    outln!(
        "moe-opt {VERSION} demo: every problem's exact optimum against its methods, then the \
         papers' claims\n"
    );
    let options = RunOptions {
        solve: SolveOptions {
            time_limit_s: Some(60.0),
            ..SolveOptions::default()
        },
        seed: 0,
    };
    std::fs::create_dir_all(dir).map_err(|source| formulations::Error::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    for entry in registry.entries() {
        for seed in first_seed..first_seed + instances {
            let Some(made) = entry.demo_instance(seed) else {
                continue;
            };
            let file = dir.join(format!("{}-{seed}.json", entry.tag()));
            write_file(&file, &made?.instance)?;
            outln!("== {} ({}), seed {seed}", entry.tag(), entry.about());
            let compared = entry
                .solver_for(&file, "compare")?
                .compare(&file, None, &options)?;
            out!("{}", compared.text);
            outln!();
        }
    }
    let groups = registry.claim_groups();
    let verify = VerifyOptions {
        instances: 5,
        seed: first_seed,
        jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
        search_iterations: 0,
        search_restarts: 0,
        shrink_steps: 50,
        check: CheckOptions {
            solve: SolveOptions {
                time_limit_s: Some(5.0),
                ..SolveOptions::default()
            },
        },
        out: dir.join("verify"),
        resume: false,
        tier: crate::tier::Tier::Model,
        scale: Scale::Small,
    };
    let groups: Vec<&dyn ClaimGroup> = groups.iter().map(|g| g.as_ref()).collect();
    let rows = crate::verify::run(&groups, &verify)?;
    outln!("== the papers' claims on 5 generated instances each (no worst-case search)");
    out!("{}", verify_text(&rows, &verify.out));
    Ok(())
}
