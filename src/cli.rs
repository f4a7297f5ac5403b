//! The `moe-opt` command line. Bad input (unreadable or invalid files, unknown names, sizes
//! beyond a method's limit) ends with exit code 2 and one line on stderr; a solver failure
//! with exit code 1. Standard output closed early by its reader (`moe-opt claims --json | head
//! -1`) ends the command quietly with exit code 0: every command writes through [`out!`] /
//! [`outln!`], which turn the write's `BrokenPipe` error into [`CliError::broken_pipe`].

/// `print!` for the commands: a write error (a reader that closed the pipe early, as in
/// `moe-opt claims --json | head -1`) becomes a [`CliError`] instead of a panic.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::write_stdout(format_args!($($arg)*))?
    };
}

/// `println!` for the commands (see [`out!`]).
macro_rules! outln {
    () => {
        $crate::cli::write_stdout(format_args!("\n"))?
    };
    ($($arg:tt)*) => {
        $crate::cli::write_stdout(format_args!("{}\n", format_args!($($arg)*)))?
    };
}

mod cache;
mod problems;

use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand, ValueEnum};
use formulations::milp::{MilpStatus, SolveOptions};
use formulations::slimcaching::{self as sc, Instance, LatencyModel, SlimCachingMilp};
use formulations::ProblemKind;

use crate::claims::CheckOptions;
use crate::claims::ClaimInfo;
use crate::report::{CompareReport, InstanceInfo, MethodReport, SolveReport, VERSION};
use crate::slimcaching::algorithms::EXHAUSTIVE_LIMIT;
use crate::slimcaching::generate::{generate, try_generate, GeneratorConfig, Preset};
use crate::slimcaching::import::{from_activation_counts, ImportConfig};
use crate::slimcaching::methods::{self, Method, MethodRun, Reference, RunOptions};
use crate::verify::{ClaimGroup, ClaimRow, VerifyOptions};

/// Exact optimisation and the papers' algorithms for MoE expert placement, caching and scheduling.
#[derive(Debug, Parser)]
#[command(name = "moe-opt", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Generate a seeded instance from a preset or a generator configuration.
    Generate {
        /// The problem.
        problem: Problem,
        /// Generator preset (slimcaching: tiny, small, paper; prism: tiny, small,
        /// testbed-mixtral, testbed-deepseek; zipmoe: see `moe-opt generate zipmoe --preset ?`;
        /// zipmoe-pool has no presets: --config).
        #[arg(long, default_value = "small")]
        preset: String,
        /// Generator configuration (JSON, the format printed by --print-config); overrides
        /// --preset.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Print the configuration (of --preset or --config) as JSON and exit.
        #[arg(long)]
        print_config: bool,
        /// Random seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Output file (JSON).
        #[arg(short, long, required_unless_present = "print_config")]
        output: Option<PathBuf>,
    },
    /// Build an instance from a real activation-count file (../shared/data/activation-counts).
    Import {
        /// The problem.
        problem: Problem,
        /// The activation-count file (gzip JSON, format moe-activation-counts/v1).
        #[arg(long, required_unless_present = "log")]
        counts: Option<PathBuf>,
        /// cache-trace: a token log (JSON Lines, maybe gzip: {seq, token, layer, experts,
        /// weights, phase}; ../shared/data/token-traces).
        #[arg(long, conflicts_with = "counts")]
        log: Option<PathBuf>,
        /// cache-trace: E, for a log that is not one of the known files.
        #[arg(long)]
        experts: Option<usize>,
        /// Import configuration (JSON; the problem's ImportConfig, see its module doc).
        /// SlimCaching's default: the paper network (4 servers, 20 users, 5 GB, 200 local
        /// experts); Prism's: the paper's testbed; ZipMoE's: prompt 0 at its first MoE layer on
        /// the Orin device of the file's model (any field may be given alone).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Overrides the number of edge servers (slimcaching only).
        #[arg(long)]
        servers: Option<u32>,
        /// Overrides the number of users, groups of prompts (slimcaching only).
        #[arg(long)]
        users: Option<u32>,
        /// Overrides the storage per server, bytes (slimcaching only).
        #[arg(long)]
        storage_bytes: Option<u64>,
        /// Overrides the experts each user holds locally (slimcaching only).
        #[arg(long)]
        local_experts: Option<u32>,
        /// Overrides the seed (prompt grouping, clustering, state draws).
        #[arg(long)]
        seed: Option<u64>,
        /// Output file (JSON).
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Solve an instance with one method and report its placement and latency.
    Solve {
        /// Instance file (JSON).
        file: PathBuf,
        /// Method (milp, exhaustive, greedy, lazy-greedy, successive-dp, successive-maxconv,
        /// lfu, random, u-shaped).
        #[arg(long, default_value = "milp")]
        method: String,
        #[command(flatten)]
        options: SolveArgs,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Also write the placement as a tidy table (CSV: a row per cached expert).
        #[arg(long)]
        csv: Option<PathBuf>,
    },
    /// Run several methods on an instance and compare each with the exact optimum.
    Compare {
        /// Instance file (JSON).
        file: PathBuf,
        /// Comma-separated methods (default: all; exhaustive only where its size limit allows).
        /// A cache-offline instance also takes routers, e.g. `lru,max-rank:m=4,j=1`.
        #[arg(long, value_delimiter = ',')]
        methods: Option<Vec<String>>,
        #[command(flatten)]
        options: SolveArgs,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Also write the methods' lines as a tidy table (CSV: a row per method, the JSON
        /// report's fields as columns).
        #[arg(long)]
        csv: Option<PathBuf>,
    },
    /// Write the exact MILP in CPLEX LP format.
    WriteLp {
        /// Instance file (JSON).
        file: PathBuf,
        /// Output file (.lp).
        #[arg(short, long)]
        output: PathBuf,
    },
    /// List the registered claims of the papers.
    Claims {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Check claims on generated and worst-case-searched instances against proved optima.
    Verify {
        /// Only this claim (id as listed by `moe-opt claims`).
        #[arg(long)]
        claim: Option<String>,
        /// Only the claims of this paper file (e.g. 000_e52eafead23a117e.txt).
        #[arg(long)]
        paper: Option<String>,
        /// Re-check one saved instance file (with --claim).
        #[arg(long, requires = "claim")]
        instance: Option<PathBuf>,
        /// Generated instances per claim.
        #[arg(long, default_value_t = 200)]
        instances: u64,
        /// Base seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Parallel workers (default: the machine's cores).
        #[arg(long)]
        jobs: Option<usize>,
        /// MILP time limit per solve, seconds (a solve stopped by it makes the instance
        /// inconclusive, never a pass).
        #[arg(long, default_value_t = 20.0)]
        time_limit: f64,
        /// Neighbours tried by the worst-case search of each claim (0: none).
        #[arg(long, default_value_t = 1000)]
        search: usize,
        /// Worst-case searches per claim, from the generated instances with the lowest margins.
        #[arg(long, default_value_t = 3)]
        restarts: usize,
        /// Output folder: journal.jsonl, claims.csv, instances.csv, counterexamples/.
        #[arg(long, default_value = "verify-out")]
        out: PathBuf,
        /// Continue an interrupted run from OUT/journal.jsonl.
        #[arg(long)]
        resume: bool,
    },
    /// DeepSeek's Expert Parallelism Load Balancer on a weight file: the physical-to-logical
    /// map, the logical-to-physical map and the replica counts.
    Eplb {
        /// Weights (JSON `{"weight": [[load of expert e in layer l, ...], ...]}`).
        #[arg(long)]
        weights: PathBuf,
        /// Physical expert slots (replicas) per layer.
        #[arg(long)]
        replicas: usize,
        /// Expert groups.
        #[arg(long)]
        groups: usize,
        /// Nodes.
        #[arg(long)]
        nodes: usize,
        /// GPUs.
        #[arg(long)]
        gpus: usize,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Also write the plan as a tidy table (CSV: a row per layer and physical slot).
        #[arg(long)]
        csv: Option<PathBuf>,
    },
    /// Prism's migration rule (3)-(4) over workload windows with a drift of one server's task
    /// mix: migrations, cost per window, transferred bytes.
    Migrate {
        /// Prism instance file (JSON).
        file: PathBuf,
        /// Windows.
        #[arg(long, default_value_t = 6)]
        windows: usize,
        /// First window with the drift.
        #[arg(long, default_value_t = 2)]
        drift_at: usize,
        /// The server whose task mix changes.
        #[arg(long, default_value_t = 0)]
        drift_server: usize,
        /// The server whose mix it moves to.
        #[arg(long, default_value_t = 1)]
        drift_to: usize,
        /// How far it moves, in [0, 1].
        #[arg(long, default_value_t = 1.0)]
        mix: f64,
        /// Tokens per server per window.
        #[arg(long, default_value_t = 10000.0)]
        tokens_per_window: f64,
        /// Seconds per remote invocation (default: the mean hidden-state round trip).
        #[arg(long)]
        remote_invocation_s: Option<f64>,
        /// Statistics the planner sees: since-last-change or last-window.
        #[arg(long, default_value = "since-last-change")]
        stats: String,
        /// Do not charge removals in (3) (only the experts that move in).
        #[arg(long)]
        no_charge_removals: bool,
        /// speed_{n,g} of (3), bit/s, for GPUs whose `io_bps` the instance does not give
        /// (the generated testbeds give none).
        #[arg(long, default_value_t = 16e9)]
        default_io_bps: f64,
        /// The planner.
        #[arg(long, default_value = "prism")]
        method: String,
        #[command(flatten)]
        options: SolveArgs,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Also write the windows as a tidy table (CSV: a row per window).
        #[arg(long)]
        csv: Option<PathBuf>,
    },
    /// ZipMoE's cache-pool plan (App. C: Alg. 4 grid search over Alg. 3's estimate, with eq.
    /// (24)'s selection probabilities) from a planning instance, a count file or synthetic
    /// counts.
    Plan {
        /// Planning instance (JSON, `moe-opt generate zipmoe-pool`).
        file: Option<PathBuf>,
        /// Or: an activation-count file (../shared/data/activation-counts/).
        #[arg(long, conflicts_with = "file")]
        counts: Option<PathBuf>,
        /// Or: synthetic counts at this seed.
        #[arg(long, conflicts_with_all = ["file", "counts"])]
        generate: Option<u64>,
        /// Import or generate options (JSON), with --counts or --generate.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Also write the chosen split as a tidy table (CSV: a row per pool, the Miss Pool
        /// last).
        #[arg(long)]
        csv: Option<PathBuf>,
    },
    /// Run a grid of generator parameters x seeds x methods (see `moe-opt sweep --help`).
    ///
    /// SPEC is a TOML file: problem, preset (or config), seeds, methods, time_limit_s and
    /// [[axes]] with a dotted `path` into the generator configuration and `values`. Writes
    /// OUT/sweep.json, OUT/results.jsonl (a line per finished cell) and OUT/results.csv (a row
    /// per cell and method).
    Sweep {
        /// The spec (TOML).
        spec: PathBuf,
        /// Output folder.
        #[arg(long, default_value = "sweep-out")]
        out: PathBuf,
        /// Parallel workers (default: the machine's cores).
        #[arg(long)]
        jobs: Option<usize>,
        /// Continue an interrupted run from OUT/results.jsonl.
        #[arg(long)]
        resume: bool,
        /// Run only part i of n (0-based: the cells whose index is i modulo n).
        #[arg(long)]
        shard: Option<crate::sweep::Shard>,
    },
    /// Join the output folders of a sweep's shards into one.
    Merge {
        /// Shard output folders.
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
        /// Merged output folder.
        #[arg(long)]
        out: PathBuf,
    },
    /// Replay a token stream through expert caches under its original routing (papers 002,
    /// 004): miss rate, loads and lifetimes per policy.
    Replay(cache::ReplayArgs),
    /// Replay a token stream with one cache-aware router (paper 002) and LRU caches.
    Route(cache::RouteArgs),
    /// Sweep every cache-aware router's knob at several capacities: Pareto fronts of miss rate
    /// against the quality proxies.
    Pareto(cache::ParetoArgs),
    /// Build an offline caching instance (cache-offline) from one layer of a trace, for the
    /// exact fixed- and flexible-routing bounds (`solve`, `compare`).
    Offline(cache::OfflineArgs),
    /// SMoE's decode pipeline over a trace (paper 004, Fig. 9): the TPOT proxy, or with
    /// --alphas the alpha selection of eq. (5).
    Tpot(cache::TpotArgs),
    /// Generate small instances, solve each exactly and with every algorithm, print the tables.
    Demo {
        /// Instances per preset (tiny and small).
        #[arg(long, default_value_t = 3)]
        instances: u64,
        /// First seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Problem {
    /// Expert caching on edge servers (paper 000).
    Slimcaching,
    /// Expert placement on heterogeneous GPU servers (paper 001).
    Prism,
    /// A layer's expert-reconstruction schedule (paper 003).
    Zipmoe,
    /// ZipMoE's cache-pool planning (paper 003, App. C and D).
    ZipmoePool,
    /// A token stream of router decisions (papers 002 and 004).
    CacheTrace,
    /// An SMoE layer: expert-cache routing and the CPU-vs-PCIe split (paper 004).
    Smoe,
}

#[derive(Debug, Args)]
struct SolveArgs {
    /// MILP time limit, seconds.
    #[arg(long)]
    time_limit: Option<f64>,
    /// MILP relative gap at which to stop (0 = prove optimality).
    #[arg(long, default_value_t = 0.0)]
    gap: f64,
    /// Seed of randomised methods.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

impl SolveArgs {
    fn run_options(&self) -> Result<RunOptions, CliError> {
        if let Some(t) = self.time_limit {
            if !(t.is_finite() && t >= 0.0) {
                return Err(CliError::input(format!(
                    "--time-limit must be a non-negative number of seconds, got {t}"
                )));
            }
        }
        if !(self.gap.is_finite() && self.gap >= 0.0) {
            return Err(CliError::input(format!(
                "--gap must be a non-negative number, got {}",
                self.gap
            )));
        }
        Ok(RunOptions {
            solve: SolveOptions {
                time_limit_s: self.time_limit,
                mip_rel_gap: self.gap,
                threads: 1,
            },
            seed: self.seed,
        })
    }
}

/// A failure with its exit code.
#[derive(Debug)]
pub struct CliError {
    /// 2 for bad input, 1 for a failure of moe-opt or the solver, 0 for standard output
    /// closed by its reader ([`CliError::broken_pipe`]).
    pub code: i32,
    /// One line for stderr.
    pub message: String,
}

impl CliError {
    fn input(message: impl Into<String>) -> Self {
        CliError {
            code: 2,
            message: message.into(),
        }
    }

    /// Standard output was closed by its reader (`moe-opt claims --json | head -1`): not a
    /// failure of moe-opt. Code 0 and no message; [`CliError::is_broken_pipe`] tells `main` to
    /// end quietly, as `head` and `grep -q` expect of a command upstream.
    pub fn broken_pipe() -> Self {
        CliError {
            code: 0,
            message: String::new(),
        }
    }

    /// True for [`CliError::broken_pipe`].
    pub fn is_broken_pipe(&self) -> bool {
        self.code == 0
    }
}

/// Writes to standard output and flushes, so a closed pipe is noticed at the write that meets
/// it. Rust ignores SIGPIPE, so such a write returns `BrokenPipe` (`print!` would panic on it):
/// that is [`CliError::broken_pipe`]; any other write error is a failure (code 1).
pub(crate) fn write_stdout(args: std::fmt::Arguments) -> Result<(), CliError> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_fmt(args)
        .and_then(|()| stdout.flush())
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                CliError::broken_pipe()
            } else {
                CliError {
                    code: 1,
                    message: format!("writing to standard output: {e}"),
                }
            }
        })
}

impl From<formulations::Error> for CliError {
    fn from(e: formulations::Error) -> Self {
        let code = match e {
            formulations::Error::Solver(_) => 1,
            _ => 2,
        };
        CliError {
            code,
            message: e.to_string(),
        }
    }
}

/// Runs a parsed command line, printing to stdout.
pub fn run(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        Command::Generate {
            problem,
            preset,
            config,
            print_config,
            seed,
            output,
        } if problem != Problem::Slimcaching => {
            let (config, output) = (config.as_deref(), output.as_deref());
            match problem {
                Problem::Prism => problems::generate(
                    config,
                    || {
                        Ok(crate::prism::generate::GeneratorConfig::preset(
                            preset.parse()?,
                        ))
                    },
                    print_config,
                    output,
                    |c| crate::prism::generate::try_generate(c, seed),
                ),
                Problem::Zipmoe => problems::generate(
                    config,
                    || {
                        Ok(crate::zipmoe::generate::GeneratorConfig::preset(
                            preset.parse()?,
                        ))
                    },
                    print_config,
                    output,
                    |c| crate::zipmoe::generate::try_generate(c, seed),
                ),
                Problem::CacheTrace => problems::generate(
                    config,
                    || {
                        Ok(crate::cache::generate::GeneratorConfig::preset(
                            preset.parse()?,
                        ))
                    },
                    print_config,
                    output,
                    |c| crate::cache::generate::generate(c, seed),
                ),
                Problem::Smoe => problems::generate(
                    config,
                    || Ok(preset.clone()),
                    print_config,
                    output,
                    |p: &String| {
                        crate::smoe::generate::try_generate(
                            p.parse()
                                .map_err(|e: String| formulations::Error::Invalid {
                                    path: "<command line>".into(),
                                    field: "preset".into(),
                                    reason: e,
                                })?,
                            seed,
                        )
                    },
                ),
                _ => problems::generate(
                    config,
                    || Ok(crate::zipmoe::planning::commands::GenerateOptions::default()),
                    print_config,
                    output,
                    |c| crate::zipmoe::planning::commands::generate(c, seed),
                ),
            }
        }
        Command::Generate {
            preset,
            config,
            print_config,
            seed,
            output,
            ..
        } => {
            let config = match config {
                Some(path) => formulations::error::read_json(&path)?,
                None => GeneratorConfig::preset(preset.parse().map_err(CliError::input)?),
            };
            if print_config {
                outln!("{}", to_json(&config));
                return Ok(());
            }
            let Some(output) = output else {
                return Err(CliError::input("--output is required"));
            };
            let instance = try_generate(&config, seed)?;
            write_instance(&output, &instance)
        }
        Command::Import {
            problem,
            counts,
            log,
            experts,
            config,
            servers,
            users,
            storage_bytes,
            local_experts,
            seed,
            output,
        } if problem != Problem::Slimcaching => {
            if problem == Problem::CacheTrace {
                return cache::import(counts.as_deref(), log.as_deref(), experts, &output);
            }
            if problem == Problem::Smoe {
                return Err(CliError::input(
                    "smoe layers are generated (moe-opt generate smoe); token streams for SMoE's \
                     pipeline are imported as cache-trace",
                ));
            }
            let counts = required_counts(counts, log.as_deref())?;
            if servers.is_some()
                || users.is_some()
                || storage_bytes.is_some()
                || local_experts.is_some()
            {
                return Err(CliError::input(
                    "--servers, --users, --storage-bytes and --local-experts are SlimCaching's; \
                     give the other problems' settings in --config",
                ));
            }
            let config = config.as_deref();
            match problem {
                Problem::Prism => {
                    let mut c: crate::prism::import::ImportConfig =
                        problems::import_config(config)?;
                    c.seed = seed.unwrap_or(c.seed);
                    let instance = crate::prism::import::from_activation_counts(&counts, &c)?;
                    write_json(&output, &instance)?;
                }
                Problem::Zipmoe => {
                    let mut c: crate::zipmoe::generate::ImportConfig =
                        problems::import_config(config)?;
                    c.seed = seed.unwrap_or(c.seed);
                    let report = crate::zipmoe::commands::import(&counts, &c)?;
                    write_json(&output, &report.instance)?;
                }
                _ => {
                    let c = problems::import_config(config)?;
                    let instance = crate::zipmoe::planning::commands::import(&counts, &c)?;
                    write_json(&output, &instance)?;
                }
            }
            eprintln!("wrote {}", output.display());
            Ok(())
        }
        Command::Import {
            counts,
            config,
            servers,
            users,
            storage_bytes,
            local_experts,
            seed,
            output,
            log,
            ..
        } => {
            let counts = required_counts(counts, log.as_deref())?;
            let mut config: ImportConfig = match config {
                Some(path) => formulations::error::read_json(&path)?,
                None => ImportConfig::default(),
            };
            config.servers = servers.unwrap_or(config.servers);
            config.users = users.unwrap_or(config.users);
            config.storage_bytes = storage_bytes.unwrap_or(config.storage_bytes);
            config.local_experts_per_user = local_experts.unwrap_or(config.local_experts_per_user);
            config.seed = seed.unwrap_or(config.seed);
            let instance = from_activation_counts(&counts, &config)?;
            write_instance(&output, &instance)
        }
        Command::Solve {
            file,
            method,
            options,
            json,
            csv,
        } => {
            let run = options.run_options()?;
            match formulations::problem::detect(&file)? {
                ProblemKind::Slimcaching => {}
                ProblemKind::Prism => {
                    return problems::prism_solve(&file, &method, &run, json, csv.as_deref())
                }
                ProblemKind::Zipmoe => {
                    return problems::zipmoe_solve(&file, &method, &run, json, csv.as_deref())
                }
                ProblemKind::CacheOffline => {
                    return cache::offline_solve(&file, &method, &run.solve, json)
                }
                ProblemKind::Smoe => return cache::smoe_solve(&file, &method, &run.solve, json),
                kind => return Err(not_solvable(&file, kind)),
            }
            let method: Method = method.parse().map_err(CliError::input)?;
            let instance = sc::load(&file)?;
            let model = LatencyModel::new(&instance);
            let run = methods::run(method, &model, &options.run_options()?)?;
            let report = SolveReport::new(&instance, &model, &run);
            if let Some(path) = csv {
                let rows = report
                    .placement
                    .iter()
                    .flatten()
                    .enumerate()
                    .flat_map(|(n, experts)| {
                        experts.iter().map(move |e| {
                            serde_json::json!({"server": n, "model": e.model,
                                "layer": e.layer, "expert": e.expert})
                        })
                    })
                    .collect();
                let context = vec![
                    ("moe_opt_version", VERSION.into()),
                    ("instance_name", report.instance.name.clone().into()),
                    ("instance_sha256", report.instance.sha256.clone().into()),
                    ("method", report.result.method.name().into()),
                ];
                crate::export::write_csv(&path, &crate::export::Table::new(context, rows))?;
            }
            if json {
                outln!("{}", to_json(&report));
            } else {
                out!("{}", solve_text(&report));
            }
            Ok(())
        }
        Command::Compare {
            file,
            methods: names,
            options,
            json,
            csv,
        } => {
            let run = options.run_options()?;
            let names = names.as_deref();
            match formulations::problem::detect(&file)? {
                ProblemKind::Slimcaching => {}
                ProblemKind::Prism => {
                    return problems::prism_compare(&file, names, &run, json, csv.as_deref())
                }
                ProblemKind::Zipmoe => {
                    return problems::zipmoe_compare(&file, names, &run, json, csv.as_deref())
                }
                ProblemKind::CacheOffline => {
                    return cache::offline_compare(&file, names, &run.solve, json, csv.as_deref())
                }
                ProblemKind::Smoe => {
                    return cache::smoe_compare(&file, &run.solve, json, csv.as_deref())
                }
                kind => return Err(not_solvable(&file, kind)),
            }
            let instance = sc::load(&file)?;
            let chosen = match names {
                Some(names) => names
                    .iter()
                    .map(|n| n.parse::<Method>().map_err(CliError::input))
                    .collect::<Result<Vec<_>, _>>()?,
                None => default_methods(&instance),
            };
            let report = compare(&instance, &chosen, &options.run_options()?)?;
            if let Some(path) = csv {
                let (kind, value) = match report.reference {
                    Reference::Optimum(v) => ("optimum", Some(v)),
                    Reference::Bound(v) => ("bound", Some(v)),
                    Reference::None => ("none", None),
                };
                let context = vec![
                    ("moe_opt_version", VERSION.into()),
                    ("instance_name", report.instance.name.clone().into()),
                    ("instance_sha256", report.instance.sha256.clone().into()),
                    ("reference_kind", kind.into()),
                    ("reference_s", value.into()),
                ];
                let rows = report.methods.iter().map(to_value).collect();
                crate::export::write_csv(&path, &crate::export::Table::new(context, rows))?;
            }
            if json {
                outln!("{}", to_json(&report));
            } else {
                out!("{}", compare_text(&report));
            }
            Ok(())
        }
        Command::WriteLp { file, output } => {
            match formulations::problem::detect(&file)? {
                ProblemKind::Slimcaching => {}
                ProblemKind::Prism => {
                    let report = crate::prism::commands::write_lp(&file, &output)?;
                    eprint!("{}", report.text());
                    return Ok(());
                }
                ProblemKind::Zipmoe => return problems::zipmoe_write_lp(&file, &output),
                ProblemKind::CacheOffline => return cache::offline_write_lp(&file, &output),
                ProblemKind::Smoe => return cache::smoe_write_lp(&file, &output),
                kind => return Err(not_solvable(&file, kind)),
            }
            let instance = sc::load(&file)?;
            let model = LatencyModel::new(&instance);
            let milp = SlimCachingMilp::p1(&model);
            write_file(&output, milp.milp.to_lp().as_bytes())?;
            eprintln!(
                "wrote {} ({} variables, {} integer, {} rows)",
                output.display(),
                milp.milp.num_vars(),
                milp.milp.num_integers(),
                milp.milp.num_rows()
            );
            Ok(())
        }
        Command::Replay(args) => args.run(),
        Command::Route(args) => args.run(),
        Command::Pareto(args) => args.run(),
        Command::Offline(args) => args.run(),
        Command::Tpot(args) => args.run(),
        Command::Demo { instances, seed } => demo(instances, seed),
        Command::Eplb {
            weights,
            replicas,
            groups,
            nodes,
            gpus,
            json,
            csv,
        } => {
            let report =
                crate::prism::commands::eplb_command(&weights, replicas, groups, nodes, gpus)?;
            if let Some(path) = csv {
                crate::export::write_csv(&path, &problems::eplb_table(&report, &weights)?)?;
            }
            problems::emit(&report, json, |r| r.text())
        }
        Command::Migrate {
            file,
            windows,
            drift_at,
            drift_server,
            drift_to,
            mix,
            tokens_per_window,
            remote_invocation_s,
            stats,
            no_charge_removals,
            default_io_bps,
            method,
            options,
            json,
            csv,
        } => {
            let config = crate::prism::commands::MigrateConfig {
                windows,
                drift_at,
                drift_server,
                drift_to,
                mix,
                tokens_per_window,
                remote_invocation_s,
                stats: serde_json::from_value(serde_json::Value::from(stats.clone())).map_err(
                    |_| {
                        CliError::input(format!(
                            "--stats must be since-last-change or last-window, got {stats:?}"
                        ))
                    },
                )?,
                charge_removals: !no_charge_removals,
                default_io_bps: Some(default_io_bps),
                method: method.parse().map_err(CliError::input)?,
            };
            let report = crate::prism::commands::migrate(&file, &config, &options.run_options()?)?;
            if let Some(path) = csv {
                crate::export::write_csv(&path, &problems::migrate_table(&report))?;
            }
            problems::emit(&report, json, |r| r.text())
        }
        Command::Plan {
            file,
            counts,
            generate,
            config,
            json,
            csv,
        } => {
            let source = match (file, counts, generate) {
                (Some(f), _, _) => problems::PlanSource::File(f),
                (_, Some(c), _) => problems::PlanSource::Counts(c),
                (_, _, Some(seed)) => problems::PlanSource::Generated(seed),
                _ => {
                    return Err(CliError::input(
                        "plan needs a planning instance FILE, --counts FILE or --generate SEED",
                    ))
                }
            };
            problems::zipmoe_plan(source, config.as_deref(), json, csv.as_deref())
        }
        Command::Sweep {
            spec,
            out,
            jobs,
            resume,
            shard,
        } => {
            let (parsed, base) = crate::sweep::load_spec(&spec)?;
            let options = crate::sweep::SweepOptions {
                jobs: jobs
                    .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
                out: out.clone(),
                resume,
                shard,
            };
            let done = crate::sweep::run(&parsed, &base, &options)?;
            let total = crate::sweep::cells(&parsed).len();
            outln!(
                "{} of {total} cells finished{}; results in {}",
                done.len(),
                shard.map_or(String::new(), |s| format!(
                    " (shard {}/{})",
                    s.index, s.count
                )),
                out.join("results.csv").display()
            );
            Ok(())
        }
        Command::Merge { inputs, out } => {
            let report = crate::sweep::merge(&inputs, &out)?;
            outln!(
                "{} of {} cells merged into {}",
                report.present,
                report.cells,
                out.join("results.csv").display()
            );
            if !report.missing.is_empty() {
                let shown: Vec<String> =
                    report.missing.iter().take(20).map(u64::to_string).collect();
                outln!(
                    "missing {} cells: {}{}",
                    report.missing.len(),
                    shown.join(", "),
                    if report.missing.len() > 20 {
                        ", ..."
                    } else {
                        ""
                    }
                );
            }
            Ok(())
        }
        Command::Claims { json } => {
            let infos = all_claims();
            if json {
                outln!("{}", to_json(&infos));
            } else {
                let rows: Vec<Vec<String>> = infos
                    .iter()
                    .map(|i| {
                        vec![
                            i.id.into(),
                            i.place.into(),
                            i.bound.into(),
                            i.statement.into(),
                        ]
                    })
                    .collect();
                out!(
                    "{}",
                    table(&["id", "place", "bound", "statement"], &rows, 4)
                );
            }
            Ok(())
        }
        Command::Verify {
            claim,
            paper,
            instance,
            instances,
            seed,
            jobs,
            time_limit,
            search,
            restarts,
            out,
            resume,
        } => {
            let keep = |i: &ClaimInfo| {
                claim.as_deref().is_none_or(|id| i.id == id)
                    && paper.as_deref().is_none_or(|p| i.paper == p)
            };
            let chosen: Vec<Box<dyn ClaimGroup>> = claim_groups()
                .iter()
                .filter_map(|g| g.select(&keep))
                .collect();
            if chosen.is_empty() {
                let ids: Vec<&str> = all_claims().iter().map(|i| i.id).collect();
                return Err(CliError::input(format!(
                    "no claim matches; known claims: {}",
                    ids.join(", ")
                )));
            }
            if !(time_limit.is_finite() && time_limit > 0.0) {
                return Err(CliError::input(format!(
                    "--time-limit must be a positive number of seconds, got {time_limit}"
                )));
            }
            let check = CheckOptions {
                solve: SolveOptions {
                    time_limit_s: Some(time_limit),
                    ..SolveOptions::default()
                },
            };
            if let Some(file) = instance {
                let result = chosen[0].recheck(0, &file, &check)?;
                outln!("{}", to_json(&result));
                return Ok(());
            }
            let options = VerifyOptions {
                instances,
                seed,
                jobs: jobs
                    .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
                search_iterations: search,
                search_restarts: restarts,
                shrink_steps: 200,
                check,
                out: out.clone(),
                resume,
            };
            let groups: Vec<&dyn ClaimGroup> = chosen.iter().map(|g| g.as_ref()).collect();
            let rows = crate::verify::run(&groups, &options)?;
            out!("{}", verify_text(&rows, &out));
            Ok(())
        }
    }
}

/// A cache-pool planning instance given to solve / compare / write-lp.
/// The `--counts` file of an import other than cache-trace's (`--log` is cache-trace's).
fn required_counts(counts: Option<PathBuf>, log: Option<&Path>) -> Result<PathBuf, CliError> {
    match (counts, log) {
        (Some(c), None) => Ok(c),
        _ => Err(CliError::input(
            "this problem imports an activation-count file (--counts); --log is cache-trace's",
        )),
    }
}

/// Why `solve`, `compare` and `write-lp` do not take a file of this kind, and what does.
fn not_solvable(file: &Path, kind: ProblemKind) -> CliError {
    let f = file.display();
    CliError::input(match kind {
        ProblemKind::CacheTrace => format!(
            "{f}: a token stream (cache-trace): replay it (`moe-opt replay {f} --capacity C`), \
             or build an offline instance from one of its layers (`moe-opt offline {f}`)"
        ),
        _ => format!("{f}: a ZipMoE cache-pool planning instance: plan it with `moe-opt plan {f}`"),
    })
}

fn to_value<T: serde::Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).expect("reports serialise")
}

/// Every problem's claims, one group per instance type, in paper order.
fn claim_groups() -> Vec<Box<dyn ClaimGroup>> {
    vec![
        Box::new(crate::slimcaching::claims::registry()),
        Box::new(crate::prism::claims::registry()),
        Box::new(crate::cache::claims::registry()),
        Box::new(crate::zipmoe::claims::registry()),
        Box::new(crate::zipmoe::planning::claims::registry()),
        Box::new(crate::smoe::claims::registry()),
    ]
}

/// Every registered claim, in paper order.
fn all_claims() -> Vec<ClaimInfo> {
    claim_groups().iter().flat_map(|g| g.infos()).collect()
}

/// Every method, with exhaustive search only where its size limit allows.
fn default_methods(instance: &Instance) -> Vec<Method> {
    let pairs = instance.servers.len() * InstanceInfo::new(instance).experts;
    Method::ALL
        .into_iter()
        .filter(|m| *m != Method::Exhaustive || pairs <= EXHAUSTIVE_LIMIT)
        .collect()
}

/// Runs the methods and rates each against the best reference found (a proved optimum if any).
pub fn compare(
    instance: &Instance,
    chosen: &[Method],
    options: &RunOptions,
) -> Result<CompareReport, CliError> {
    let model = LatencyModel::new(instance);
    let runs: Vec<MethodRun> = chosen
        .iter()
        .map(|&m| methods::run(m, &model, options))
        .collect::<Result<_, _>>()?;
    let reference = Reference::from_runs(&runs);
    Ok(CompareReport {
        moe_opt_version: VERSION,
        instance: InstanceInfo::new(instance),
        reference,
        methods: runs
            .iter()
            .map(|r| MethodReport::new(r, reference))
            .collect(),
    })
}

fn demo(instances: u64, first_seed: u64) -> Result<(), CliError> {
    outln!(
        "moe-opt {VERSION} demo: SlimCaching (paper 000), exact optimum vs the paper's algorithms\n"
    );
    let options = RunOptions {
        solve: SolveOptions {
            time_limit_s: Some(60.0),
            ..SolveOptions::default()
        },
        seed: 0,
    };
    let mut all = Vec::new();
    for preset in [Preset::Tiny, Preset::Small] {
        for seed in first_seed..first_seed + instances {
            let instance = generate(&GeneratorConfig::preset(preset), seed);
            let report = compare(&instance, &default_methods(&instance), &options)?;
            out!("{}", compare_text(&report));
            outln!();
            all.push(report);
        }
    }
    out!("{}", demo_summary(&all));
    Ok(())
}

/// Per method over the demo's instances: how many had a proved optimum, mean and worst ratio.
fn demo_summary(reports: &[CompareReport]) -> String {
    let mut rows = Vec::new();
    for method in Method::ALL {
        let ratios: Vec<f64> = reports
            .iter()
            .filter(|r| matches!(r.reference, Reference::Optimum(_)))
            .flat_map(|r| r.methods.iter().filter(|m| m.method == method))
            .filter_map(|m| m.ratio)
            .collect();
        if ratios.is_empty() {
            continue;
        }
        let mean = ratios.iter().sum::<f64>() / ratios.len() as f64;
        let worst = ratios.iter().copied().fold(f64::INFINITY, f64::min);
        rows.push(vec![
            method.name().to_string(),
            method.description().to_string(),
            ratios.len().to_string(),
            format!("{mean:.4}"),
            format!("{worst:.4}"),
        ]);
    }
    let proved = reports
        .iter()
        .filter(|r| matches!(r.reference, Reference::Optimum(_)))
        .count();
    format!(
        "Summary: F(X) / F(OPT) over the {proved} of {} instances with a proved optimum\n{}",
        reports.len(),
        table(
            &["method", "what", "instances", "mean ratio", "worst ratio"],
            &rows,
            2
        )
    )
}

fn range(lo: Option<f64>, hi: Option<f64>) -> String {
    match (lo, hi) {
        (Some(lo), Some(hi)) => format!("{lo:.4}..{hi:.4}"),
        _ => "-".into(),
    }
}

fn verify_text(rows: &[ClaimRow], out: &Path) -> String {
    let mut text = String::new();
    let table_rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let verdict = match r.verdict.as_str() {
                "holds" => format!("holds on {}", r.checked),
                "violated" => format!("violated on {} of {}", r.failed, r.checked),
                v => v.to_string(),
            };
            let worst = match (
                r.worst_ratio,
                r.bound_at_worst,
                r.measured_min,
                r.measured_max,
            ) {
                (Some(x), Some(b), _, _) => format!(
                    "ratio {x:.4} (bound {b:.4}), range {}",
                    range(r.ratio_min, r.ratio_max)
                ),
                (Some(_), None, _, _) => format!("ratio range {}", range(r.ratio_min, r.ratio_max)),
                (None, _, Some(lo), Some(hi)) => format!("measured {lo:.4}..{hi:.4}"),
                _ => "-".into(),
            };
            vec![r.id.clone(), verdict, r.inconclusive.to_string(), worst]
        })
        .collect();
    text.push_str(&table(
        &["claim", "verdict", "inconclusive", "worst ratio / measured"],
        &table_rows,
        2,
    ));
    for r in rows {
        if let Some(path) = &r.counterexample {
            text.push_str(&format!(
                "{}: counterexample {} ({})\n  re-check: moe-opt verify --claim {} --instance {}\n",
                r.id,
                out.join(path).display(),
                r.note,
                r.id,
                out.join(path).display()
            ));
        } else if r.verdict == "inconclusive" {
            text.push_str(&format!("{}: inconclusive: {}\n", r.id, r.note));
        }
    }
    text.push_str(&format!(
        "claims: {}  instances: {}\n",
        out.join("claims.csv").display(),
        out.join("instances.csv").display()
    ));
    text
}

fn summary(info: &InstanceInfo) -> String {
    format!(
        "{}: {} servers, {} users, {} models, {} experts, K <= {}",
        info.name, info.servers, info.users, info.models, info.experts, info.max_top_k
    )
}

fn ms(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{:.4}", v * 1e3))
}

fn status_text(m: &MethodReport) -> String {
    match (&m.exact, m.feasible) {
        (Some(e), _) => match (e.status, e.gap) {
            (MilpStatus::Optimal, _) => "optimal".into(),
            (s, Some(g)) => format!("{s} (gap {:.2}%)", g * 100.0),
            (s, None) => s.to_string(),
        },
        (None, Some(true)) if m.method == Method::Exhaustive => "optimal".into(),
        (None, Some(true)) => "feasible".into(),
        (None, Some(false)) => "INFEASIBLE".into(),
        (None, None) => "-".into(),
    }
}

fn compare_text(r: &CompareReport) -> String {
    let reference = match r.reference {
        Reference::Optimum(v) => format!("proved optimum F* = {:.4} ms", v * 1e3),
        Reference::Bound(v) => format!(
            "no proved optimum; ratios are lower bounds against the MILP bound {:.4} ms",
            v * 1e3
        ),
        Reference::None => "no optimum or bound (ratios unavailable)".into(),
    };
    let rows: Vec<Vec<String>> = r
        .methods
        .iter()
        .map(|m| {
            let ratio = match (m.ratio, r.reference) {
                (Some(x), Reference::Bound(_)) => format!(">={x:.4}"),
                (Some(x), _) => format!("{x:.4}"),
                (None, _) => "-".into(),
            };
            vec![
                m.method.name().to_string(),
                ms(m.objective_s),
                ms(m.avg_latency_s),
                ratio,
                status_text(m),
                format!("{:.3}", m.runtime_s),
                m.evaluations.map_or("-".into(), |e| e.to_string()),
            ]
        })
        .collect();
    format!(
        "{}\n  T^max = {} ms; {}\n{}",
        summary(&r.instance),
        ms(r.methods.iter().find_map(|m| m.max_latency_s)),
        reference,
        table(
            &[
                "method",
                "F (ms)",
                "avg latency (ms)",
                "F/F*",
                "status",
                "runtime (s)",
                "gain evals"
            ],
            &rows,
            1
        )
    )
}

fn solve_text(r: &SolveReport) -> String {
    let m = &r.result;
    let mut out = format!(
        "{}\n  method {}: F = {} ms, average latency {} ms (T^max {} ms), {}, {:.3} s\n",
        summary(&r.instance),
        m.method,
        ms(m.objective_s),
        ms(m.avg_latency_s),
        ms(m.max_latency_s),
        status_text(m),
        m.runtime_s
    );
    if let Some(e) = &m.exact {
        out.push_str(&format!(
            "  MILP: status {}, objective {} ms, best bound {} ms, gap {}, {:.3} s in HiGHS\n",
            e.status,
            ms(e.objective_s),
            ms(e.best_bound_s),
            e.gap.map_or("-".into(), |g| format!("{:.3e}", g)),
            e.solve_time_s
        ));
    }
    if let (Some(placement), Some(used)) = (&r.placement, &r.storage_used_bytes) {
        for (n, experts) in placement.iter().enumerate() {
            out.push_str(&format!(
                "  server {n}: {} experts, {} of {} bytes\n",
                experts.len(),
                used[n],
                r.storage_bytes[n]
            ));
        }
    }
    out
}

/// A plain text table: the first `left` columns left-aligned, the others right-aligned.
fn table(headers: &[&str], rows: &[Vec<String>], left: usize) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<String>| -> String {
        let parts: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if i < left {
                    format!("{c:<w$}", w = widths[i])
                } else {
                    format!("{c:>w$}", w = widths[i])
                }
            })
            .collect();
        format!("  {}\n", parts.join("  ").trim_end())
    };
    let mut out = line(headers.iter().map(|h| h.to_string()).collect());
    out.push_str(&line(widths.iter().map(|w| "-".repeat(*w)).collect()));
    for row in rows {
        out.push_str(&line(row.clone()));
    }
    out
}

fn to_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string_pretty(value).expect("reports always serialise")
}

/// Writes an instance file and says so on stderr.
fn write_instance(path: &Path, instance: &Instance) -> Result<(), CliError> {
    write_json(path, instance)?;
    eprintln!(
        "wrote {} ({})",
        path.display(),
        summary(&InstanceInfo::new(instance))
    );
    Ok(())
}

fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<(), CliError> {
    let mut text = to_json(value);
    text.push('\n');
    write_file(path, text.as_bytes())
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    std::fs::write(path, bytes).map_err(|source| {
        formulations::Error::Io {
            path: path.to_path_buf(),
            source,
        }
        .into()
    })
}
