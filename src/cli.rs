//! The `moe-opt` command line. Bad input (unreadable or invalid files, unknown names, sizes
//! beyond a method's limit) ends with exit code 2 and one line on stderr; a solver failure
//! with exit code 1. Standard output closed early by its reader (`moe-opt claims --json | head
//! -1`) ends the command quietly with exit code 0: every command writes through `out!` /
//! `outln!`, which turn the write's `BrokenPipe` error into [`CliError::broken_pipe`].

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

/// `eprintln!` for the commands' notes (`wrote FILE`): under [`run_captured`] they go to its
/// buffer instead, for the Python package to show where its user looks.
macro_rules! note {
    ($($arg:tt)*) => {
        $crate::cli::write_note(format_args!($($arg)*))
    };
}

mod cache;
pub(crate) mod flags;
mod problems;

use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand};
use formulations::milp::SolveOptions;

use crate::claims::{CheckOptions, ClaimInfo, ClaimKind, Scale, Verdict};
use crate::family::Family;
use crate::generate::Made;
use crate::registry::{Entry, ImportArgs, LpFormat, LpModel, Registry, Rendered};
use crate::render::table;
use crate::report::{RunOptions, VERSION};
use crate::verify::{ClaimGroup, ClaimRow, VerifyOptions};

/// Exact optimisation and the papers' algorithms for MoE expert placement, caching and scheduling.
#[derive(Debug, Parser)]
#[command(name = "moe-opt", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

impl Cli {
    /// Parses the process's arguments, with the registry's methods and presets in the help
    /// of `solve`, `compare` and `generate` (clap exits on `--help` and on bad arguments).
    pub fn parse_with(registry: &Registry) -> Self {
        Cli::try_parse_with(registry, std::env::args_os()).unwrap_or_else(|e| {
            if !e.use_stderr() {
                e.exit() // --help and --version: clap's own text on stdout
            }
            eprintln!("{}", one_line(&e));
            std::process::exit(e.exit_code())
        })
    }

    /// Parses `args` (the program's name first), with the registry's methods and presets in the
    /// help of `solve`, `compare` and `generate`; `--help` and `--version` are errors whose text
    /// is the help (clap's `DisplayHelp`, `DisplayVersion`).
    pub fn try_parse_with<I, T>(registry: &Registry, args: I) -> Result<Self, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        use clap::{CommandFactory, FromArgMatches};
        let methods = registry_help(registry, |e| e.methods());
        let presets = registry_help(registry, |e| e.presets());
        let command = Cli::command()
            .mut_subcommand("solve", |c| c.after_long_help(methods.clone()))
            .mut_subcommand("compare", |c| c.after_long_help(methods.clone()))
            .mut_subcommand("generate", |c| c.after_long_help(presets.clone()));
        command
            .try_get_matches_from(args)
            .and_then(|matches| Cli::from_arg_matches(&matches))
    }
}

/// What a command run by [`run_captured`] wrote.
#[derive(Debug, Default)]
pub struct Captured {
    /// Its standard output.
    pub stdout: String,
    /// Its notes for standard error (`wrote FILE`), one per line.
    pub notes: String,
}

/// Runs the command line `args` (without the program's name) in this process and returns what
/// it wrote: the Python package's way in, so that a notebook gets the command's own output
/// without a subprocess. Bad arguments are a [`CliError`] of code 2 with clap's message on one
/// line; `--help` and `--version` return their text.
pub fn run_captured<I, T>(registry: &Registry, args: I) -> Result<Captured, CliError>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let args = std::iter::once(std::ffi::OsString::from("moe-opt"))
        .chain(args.into_iter().map(Into::into));
    let cli = match Cli::try_parse_with(registry, args) {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            return Ok(Captured {
                stdout: e.render().to_string(),
                notes: String::new(),
            })
        }
        Err(e) => {
            return Err(CliError {
                code: e.exit_code(),
                message: one_line(&e),
            })
        }
    };
    CAPTURE.with(|c| *c.borrow_mut() = Some((Vec::new(), String::new())));
    let result = run_with(registry, cli);
    let (stdout, notes) = CAPTURE.with(|c| c.borrow_mut().take()).unwrap_or_default();
    result.map(|()| Captured {
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        notes,
    })
}

thread_local! {
    /// Standard output and notes of [`run_captured`]'s command, when one runs on this thread.
    static CAPTURE: std::cell::RefCell<Option<(Vec<u8>, String)>> = const { std::cell::RefCell::new(None) };
}

/// Writes a note (see [`note!`]) to standard error, or to [`run_captured`]'s buffer.
pub(crate) fn write_note(args: std::fmt::Arguments) {
    let captured = CAPTURE.with(|c| match c.borrow_mut().as_mut() {
        Some((_, notes)) => {
            notes.push_str(&format!("{args}\n"));
            true
        }
        None => false,
    });
    if !captured {
        eprintln!("{args}");
    }
}

/// A command-line error as one line, like every other error: clap's message with its tips, without
/// the usage block (`--help` has it).
fn one_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let mut line = String::new();
    for part in text.lines().map(str::trim).filter(|l| {
        !l.is_empty() && !l.starts_with("Usage:") && !l.starts_with("For more information")
    }) {
        if !line.is_empty() {
            // A list after "...provided:" continues the sentence; a tip starts a new one.
            line.push_str(if line.ends_with(':') { " " } else { "; " });
        }
        line.push_str(part);
    }
    format!("{line} (see --help)")
}

/// Per problem, its methods or presets, for `--help`.
fn registry_help(
    registry: &Registry,
    list: impl Fn(&dyn Entry) -> Vec<crate::registry::MethodInfo>,
) -> String {
    let mut text = String::new();
    for e in registry.entries() {
        let items = list(e);
        if items.is_empty() {
            continue;
        }
        text.push_str(&format!("{}:\n", e.tag()));
        for (name, what) in items {
            text.push_str(&format!("  {name:<22} {what}\n"));
        }
    }
    text
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Generate a seeded instance from a preset or a generator configuration.
    Generate {
        /// The problem (`moe-opt problems` lists them).
        problem: String,
        /// Generator preset (default: the problem's smallest; `--preset help` lists them;
        /// zipmoe-pool has none: --config).
        #[arg(long)]
        preset: Option<String>,
        /// List the problem's presets and exit.
        #[arg(long)]
        list_presets: bool,
        /// Generator configuration (JSON, the format printed by --print-config); overrides
        /// --preset.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Print the configuration (of --preset or --config) as JSON and exit.
        #[arg(long)]
        print_config: bool,
        /// A parametric family breaking one of the problem's claims, at X = --param
        /// (`--family help` lists them; `moe-opt problems --json` gives their closed forms).
        #[arg(long, conflicts_with_all = ["preset", "config", "seed", "print_config", "list_presets"])]
        family: Option<String>,
        /// The family's parameter X.
        #[arg(long, allow_hyphen_values = true, requires = "family")]
        param: Option<f64>,
        /// Random seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Output file (JSON).
        #[arg(short, long, visible_alias = "out")]
        output: Option<PathBuf>,
    },
    /// Build an instance from a real activation-count file (../shared/data/activation-counts).
    Import {
        /// The problem (`moe-opt problems` lists them).
        problem: String,
        #[command(flatten)]
        args: ImportArgs,
        /// Output file (JSON).
        #[arg(short, long, visible_alias = "out")]
        output: PathBuf,
    },
    /// Solve an instance with one method and report its solution (`moe-opt problems` lists
    /// every problem's methods).
    ///
    /// `--csv`: a row per element of the solution (a cached expert, an expert on a GPU, a bar
    /// of the Gantt chart, ...).
    Solve {
        /// Instance file (JSON).
        file: PathBuf,
        /// Method (the problem's; `milp` is the exact MILP of every problem that has one).
        #[arg(long, default_value = "milp")]
        method: String,
        #[command(flatten)]
        options: SolveArgs,
        #[command(flatten)]
        output: Output,
    },
    /// Run several methods on an instance and compare each with the exact optimum.
    ///
    /// `--csv`: a row per method, the JSON report's fields as columns.
    Compare {
        /// Instance file (JSON).
        file: PathBuf,
        /// Comma-separated methods (default: all; exhaustive only where its size limit allows).
        /// A cache-offline instance also takes routers, e.g. `lru,max-rank:m=4,j=1` (a
        /// `name=value` piece continues the method before it).
        #[arg(long, value_delimiter = ',')]
        methods: Option<Vec<String>>,
        #[command(flatten)]
        options: SolveArgs,
        #[command(flatten)]
        output: Output,
    },
    /// Write the exact MILP in CPLEX LP format (or MPS, `--format mps`).
    ///
    /// The LP is moe-opt's writer; the MPS is HiGHS's own (`Highs_writeModel`), so it is
    /// exactly what HiGHS reads. Both carry the objective's constant (the LP as the variable
    /// `obj_constant` fixed to 1, the MPS as the objective row's RHS), so a solver's optimum
    /// of either file is the `exact.objective` of `solve --method milp --json`, in the unit its
    /// LP name states (`_ms`: milliseconds; docs/formats.md, Exact models in other solvers).
    WriteLp {
        /// Instance file (JSON).
        file: PathBuf,
        /// Output file (.lp or .mps).
        #[arg(short, long, visible_alias = "out")]
        output: PathBuf,
        /// File format: lp (CPLEX LP) or mps (HiGHS's MPS writer).
        #[arg(long, default_value = "lp")]
        format: LpFormat,
        /// Which MILP, for the problems with several: smoe routing (default) or split (the
        /// split MILP of (4) on Alg. 1's misses); cache-offline flexible (default) or fixed.
        #[arg(long)]
        model: Option<LpModel>,
    },
    /// List the problems with their methods and presets.
    Problems {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// List the registered claims of the papers.
    ///
    /// `--csv`: a row per claim (with --premises: per premise), the JSON's fields as columns.
    Claims {
        /// List the papers' premises instead: what places an instance in the tier `regime`,
        /// `model` or `extension` (see `verify --tier`), each with the claims it bears on.
        #[arg(long)]
        premises: bool,
        #[command(flatten)]
        output: Output,
    },
    /// Check claims on generated and searched instances, verdicts certified by bounds on OPT.
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
        /// With --instance: print the check as JSON instead of text.
        #[arg(long, requires = "instance")]
        json: bool,
        /// Generated instances per claim [default: 200; with --scale paper: 20].
        #[arg(long, value_parser = flags::at_least_one::<u64>)]
        instances: Option<u64>,
        /// Base seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Parallel workers, at least 1 (default: the machine's cores).
        #[arg(long, value_parser = flags::at_least_one::<usize>)]
        jobs: Option<usize>,
        /// MILP time limit per solve, seconds, model building included (a solve stopped by it
        /// decides an instance only where its bound or incumbent is a certificate, otherwise
        /// the instance is inconclusive, never a pass).
        #[arg(long, default_value_t = 20.0, value_parser = flags::positive)]
        time_limit: f64,
        /// Neighbours tried by the worst-case search of each claim (0: none).
        #[arg(long, default_value_t = 1000)]
        search: usize,
        /// Worst-case searches per claim, from the generated instances with the lowest margins
        /// [default: 3; with --scale paper: 0].
        #[arg(long)]
        restarts: Option<usize>,
        /// Output folder: journal.jsonl, claims.csv, instances.csv, counterexamples/.
        #[arg(short, long, visible_alias = "output", default_value = "verify-out")]
        out: PathBuf,
        /// Continue an interrupted run from OUT/journal.jsonl; refused when OUT/run.json holds
        /// other options (seed, instances, claims, search, restarts, time limit).
        #[arg(long)]
        resume: bool,
        /// Exit with status 1 (after writing every output) when a claim the papers state is
        /// violated in the judged tier (with --instance: fails on that instance), for use in
        /// CI. Inferred claims, sanity checks and boundary cases never trigger it.
        #[arg(long, value_name = "WHAT")]
        fail_on: Option<FailOn>,
        /// The tier the claims are judged in and the worst-case searches and shrinks stay in:
        /// `regime` (the paper's model, assumptions and evaluation ranges), `model` (its model
        /// and assumptions), `extension` (any instance). Every tier's verdict is reported.
        #[arg(long, default_value = "model")]
        tier: crate::tier::Tier,
        /// The instances: `small` (each claim's family, sized for proved optima) or `paper`
        /// (the papers' own sizes: their presets, figures' sweeps and real data; a ratio
        /// verdict there rests mostly on bounds on both sides of OPT). At `paper`, a claim
        /// without such a family is listed with the reason, and counterexamples are saved
        /// unshrunk.
        #[arg(long, value_enum, default_value_t = Scale::Small)]
        scale: Scale,
    },
    /// DeepSeek's Expert Parallelism Load Balancer on a weight file: the physical-to-logical
    /// map, the logical-to-physical map and the replica counts.
    ///
    /// `--csv`: a row per layer and physical slot.
    Eplb {
        /// Weights: JSON `{"weight": [[load of expert e in layer l, ...], ...]}`, a bare JSON
        /// matrix (numpy's / torch's `tolist()`), CSV without a header (`.csv`, a line per
        /// layer) or numpy's `.npy` of a 2-D array (`np.save`: little-endian float or integer,
        /// C order).
        #[arg(long)]
        weights: PathBuf,
        /// Physical expert slots (replicas) per layer.
        #[arg(long, value_parser = flags::at_least_one::<usize>)]
        replicas: usize,
        /// Expert groups.
        #[arg(long, value_parser = flags::at_least_one::<usize>)]
        groups: usize,
        /// Nodes.
        #[arg(long, value_parser = flags::at_least_one::<usize>)]
        nodes: usize,
        /// GPUs.
        #[arg(long, value_parser = flags::at_least_one::<usize>)]
        gpus: usize,
        /// eplb: EPLB's own algorithm (the default); exact: the balance problem's exact method
        /// under the locality EPLB's policy keeps (the best plan found, with its status, bound
        /// and gap).
        #[arg(long, default_value = "eplb", value_parser = ["eplb", "exact"])]
        method: String,
        /// --method exact: time limit per layer, seconds (a stopped layer keeps its best plan
        /// and reports its bound and gap).
        #[arg(long, value_parser = flags::positive)]
        time_limit: Option<f64>,
        #[command(flatten)]
        output: Output,
    },
    /// Balance: how many redundant slots a deployment needs. For slot counts from the least
    /// multiple of the GPUs at least the experts up to --extra-per-gpu more per GPU, every
    /// layer solved exactly beside EPLB's plan: the optimum's balancedness with its proved
    /// upper bound, EPLB's, per layer and over layers, and "balancedness >= X needs N
    /// redundant slots; EPLB needs M".
    ///
    /// `--csv`: a row per slot count and layer.
    Redundancy {
        /// Balance instance file (JSON); its loads, GPUs, nodes, groups and options are used,
        /// its num_replicas replaced by each slot count.
        file: PathBuf,
        /// The most redundant slots per GPU beyond the least slot count.
        #[arg(long, default_value_t = 2)]
        extra_per_gpu: usize,
        /// The balancedness the sentence asks for.
        #[arg(long, default_value_t = 0.95, value_parser = flags::positive)]
        target: f64,
        /// Time limit per layer and slot count, seconds.
        #[arg(long, value_parser = flags::positive)]
        time_limit: Option<f64>,
        #[command(flatten)]
        output: Output,
    },
    /// Balance: the exact trade-off, per layer, between the busiest GPU's load and the
    /// replicas copied to GPUs from the instance's `current` placement (a Pareto front, move
    /// budget by budget, each point proved or bracketed), with EPLB's plan beside it: its load,
    /// its moves, and the budget at which the front reaches its load.
    ///
    /// `--csv`: a row per front point.
    MigrationFront {
        /// Balance instance file (JSON) with a `current` placement.
        file: PathBuf,
        /// The largest move budget walked (default: up to the moves of the unconstrained
        /// optimum's plan).
        #[arg(long)]
        max_budget: Option<usize>,
        /// Time limit per layer and budget, seconds.
        #[arg(long, value_parser = flags::positive)]
        time_limit: Option<f64>,
        #[command(flatten)]
        output: Output,
    },
    /// Prism's migration rule (3)-(4) over workload windows with a drift of one server's task
    /// mix: migrations, cost per window, transferred bytes.
    ///
    /// `--csv`: a row per window.
    Migrate {
        /// Prism instance file (JSON).
        file: PathBuf,
        /// Windows.
        #[arg(long, default_value_t = 6, value_parser = flags::at_least_one::<usize>)]
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
        #[arg(long, default_value_t = 1.0, value_parser = flags::fraction)]
        mix: f64,
        /// Tokens per server per window.
        #[arg(long, default_value_t = 10000.0, value_parser = flags::positive)]
        tokens_per_window: f64,
        /// Seconds per remote invocation (default: the mean hidden-state round trip).
        #[arg(long, value_parser = flags::non_negative)]
        remote_invocation_s: Option<f64>,
        /// Statistics the planner sees: since-last-change or last-window.
        #[arg(long, default_value = "since-last-change")]
        stats: String,
        /// Do not charge removals in (3) (only the experts that move in).
        #[arg(long)]
        no_charge_removals: bool,
        /// speed_{n,g} of (3), bit/s, for GPUs whose `io_bps` the instance does not give
        /// (the generated testbeds give none).
        #[arg(long, default_value_t = 16e9, value_parser = flags::positive)]
        default_io_bps: f64,
        /// The planner.
        #[arg(long, default_value = "prism")]
        method: String,
        #[command(flatten)]
        options: SolveArgs,
        #[command(flatten)]
        output: Output,
    },
    /// ZipMoE's cache-pool plan (App. C: Alg. 4 grid search over Alg. 3's estimate, with eq.
    /// (24)'s selection probabilities) from a planning instance, a count file or synthetic
    /// counts.
    ///
    /// `--csv`: a row per pool of the chosen split, the Miss Pool last.
    Plan {
        /// Planning instance (JSON, `moe-opt generate zipmoe-pool`).
        file: Option<PathBuf>,
        /// Or: activation counts (../shared/data/activation-counts/), in any format `import`
        /// reads (a bare .npy, CSV or JSON matrix with --top-k).
        #[arg(long, conflicts_with = "file")]
        counts: Option<PathBuf>,
        /// K of bare --counts (required there; a v1 file's must agree).
        #[arg(long, conflicts_with_all = ["file", "synthetic", "generate"], value_parser = flags::at_least_one::<usize>)]
        top_k: Option<usize>,
        /// The model of bare --counts (a v1 file's must agree); it names the plan.
        #[arg(long, conflicts_with_all = ["file", "synthetic", "generate"])]
        model: Option<String>,
        /// Or: synthetic counts (at --seed).
        #[arg(long, conflicts_with_all = ["file", "counts"])]
        synthetic: bool,
        /// Seed of the synthetic counts.
        #[arg(long, default_value_t = 0, requires = "synthetic")]
        seed: u64,
        /// The earlier spelling of `--synthetic --seed SEED`.
        #[arg(long, hide = true, conflicts_with_all = ["file", "counts", "synthetic"])]
        generate: Option<u64>,
        /// Import or generate options (JSON), with --counts or --synthetic.
        #[arg(long)]
        config: Option<PathBuf>,
        #[command(flatten)]
        output: Output,
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
        #[arg(short, long, visible_alias = "output", default_value = "sweep-out")]
        out: PathBuf,
        /// Parallel workers, at least 1 (default: the machine's cores).
        #[arg(long, value_parser = flags::at_least_one::<usize>)]
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
        #[arg(short = 'o', long, visible_alias = "output")]
        out: PathBuf,
    },
    /// One self-contained HTML page (tables, SVG figures) of a verify, sweep or merge output
    /// folder, or of an `mrc --csv` table.
    ///
    /// A verify folder (claims.csv): per claim its verdict, certificate counts, ratios against
    /// the bound and counterexample with its re-check command. A sweep or merge folder
    /// (results.csv): the summary per method and each method's objective and ratio along every
    /// axis. `mrc --csv` tables in the folder (or given as INPUT): the miss-ratio curves. No
    /// script, font or network: the page opens anywhere; the same input gives the same bytes.
    Report {
        /// An output folder of `verify --out`, `sweep --out` or `merge --out`, or an `mrc --csv`
        /// table.
        input: PathBuf,
        /// The page (default: INPUT/report.html for a folder, INPUT with .html for a table).
        #[arg(short, long, visible_alias = "output")]
        out: Option<PathBuf>,
    },
    /// Replay a token stream through expert caches under its original routing (papers 002,
    /// 004): miss rate, loads and lifetimes per policy.
    ///
    /// `--csv`: a row per policy and layer, plus a `total` row per policy.
    Replay(cache::ReplayArgs),
    /// Miss-ratio curves: the loads of LRU and Belady at every capacity (K..=E per layer, or
    /// K..=L E for a pool) in one pass over a token stream (stack distances), equal to a
    /// `replay` per capacity.
    ///
    /// `--csv`: a row per policy, capacity and layer, plus a `total` row per policy and
    /// capacity (replay's columns, with `capacity` on every row).
    Mrc(cache::MrcArgs),
    /// Replay a token stream with one cache-aware router (paper 002) and LRU caches.
    ///
    /// `--csv`: a row per layer's cache, plus a `total` row, with the router's quality proxies
    /// on every row.
    Route(cache::RouteArgs),
    /// Sweep every cache-aware router's knob at several capacities: Pareto fronts of miss rate
    /// against the quality proxies.
    Pareto(cache::ParetoArgs),
    /// Build an offline caching instance (cache-offline) from one layer of a trace, for the
    /// exact fixed- and flexible-routing bounds (`solve`, `compare`).
    Offline(cache::OfflineArgs),
    /// Write a trace's request stream as a libCacheSim trace (oracleGeneral binary or csv),
    /// for libCacheSim's policies; `import cache-trace --libcachesim` reads it back.
    ///
    /// One request per (token, layer, expert): obj_id = layer x E + expert, time = the step
    /// (token x L + layer), next_access_vtime the 1-based index of the object's next request
    /// (-1: none). With --layer, one layer's stream: obj_id = expert, time = token.
    Export(cache::ExportArgs),
    /// SMoE's decode pipeline over a trace (paper 004, Fig. 9): the TPOT proxy, or with
    /// --alphas the alpha selection of eq. (5).
    ///
    /// `--csv`: T(alpha), a row per alpha, when --alphas is given.
    Tpot(cache::TpotArgs),
    /// Every problem on small generated instances: the exact optimum against every method, then
    /// the claims' verdicts on a short run.
    Demo {
        /// Instances per problem.
        #[arg(long, default_value_t = 1, value_parser = flags::at_least_one::<u64>)]
        instances: u64,
        /// First seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Output folder: the instances and the claims run (re-check counterexamples there).
        #[arg(short, long, visible_alias = "output", default_value = "demo-out")]
        out: PathBuf,
    },
}

/// `--json` and `--csv`, the same on every command that reports.
#[derive(Debug, Args)]
pub struct Output {
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Also write the report's tidy table (CSV; the command's help says what a row is).
    #[arg(long)]
    csv: Option<PathBuf>,
}

impl Output {
    /// Prints a report as JSON or text, and writes its table with `--csv`.
    fn emit(&self, rendered: Rendered) -> Result<(), CliError> {
        if let Some(path) = &self.csv {
            let Some(table) = &rendered.table else {
                return Err(CliError::input(
                    "--csv: this problem's report of this command has no table; use --json",
                ));
            };
            crate::export::write_csv(path, table)?;
        }
        if self.json {
            outln!("{}", rendered.json);
        } else {
            out!("{}", rendered.text);
        }
        Ok(())
    }
}

#[derive(Debug, Args)]
struct SolveArgs {
    /// MILP time limit, seconds, per MILP method, counted from its start (warm start and model
    /// building included); other methods are not limited. A stopped solve reports status
    /// time_limit, its incumbent and, when HiGHS has one, its bound (docs/command-line.md: Time limits).
    #[arg(long, value_parser = flags::positive)]
    time_limit: Option<f64>,
    /// MILP relative gap at which to stop (0 = prove optimality).
    #[arg(long, default_value_t = 0.0, value_parser = flags::non_negative)]
    gap: f64,
    /// Seed of randomised methods.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// The most variables an exact model may have, estimated before it is built (SlimCaching's
    /// MILP: about 750 bytes each); raise it on a machine with the memory.
    #[arg(long, default_value_t = formulations::milp::MAX_MILP_VARIABLES, value_parser = flags::at_least_one::<u64>)]
    max_milp_variables: u64,
}

impl SolveArgs {
    fn run_options(&self) -> RunOptions {
        RunOptions {
            solve: SolveOptions {
                time_limit_s: self.time_limit,
                mip_rel_gap: self.gap,
                max_variables: self.max_milp_variables,
                ..SolveOptions::default()
            },
            seed: self.seed,
        }
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

    /// A bad value of `flag`, named in the message.
    fn flag(flag: &str, reason: impl std::fmt::Display) -> Self {
        CliError::input(format!("{flag}: {reason}"))
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
/// it (under [`run_captured`], to its buffer instead). Rust ignores SIGPIPE, so such a write returns `BrokenPipe` (`print!` would panic on it):
/// that is [`CliError::broken_pipe`]; any other write error is a failure (code 1).
pub(crate) fn write_stdout(args: std::fmt::Arguments) -> Result<(), CliError> {
    use std::io::Write;
    let captured = CAPTURE.with(|c| match c.borrow_mut().as_mut() {
        Some((buffer, _)) => buffer.write_fmt(args).map(|()| true),
        None => Ok(false),
    });
    if captured.unwrap_or(true) {
        return Ok(());
    }
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

/// Runs a parsed command line on moe-opt's problems, printing to stdout.
pub fn run(cli: Cli) -> Result<(), CliError> {
    run_with(&crate::problems::builtin(), cli)
}

/// Runs a parsed command line on the problems of `registry` (moe-opt's, or with a user's own).
pub fn run_with(registry: &Registry, cli: Cli) -> Result<(), CliError> {
    match cli.command {
        Command::Generate {
            problem,
            preset,
            list_presets,
            config,
            print_config,
            family,
            param,
            seed,
            output,
        } => {
            let entry = registry.find(&problem)?;
            if let Some(name) = family.as_deref() {
                if matches!(name, "help" | "?") {
                    out!("{}", families_text(entry));
                    return Ok(());
                }
                let families = entry.families();
                let Some(chosen) = families.iter().find(|f| f.name == name) else {
                    return Err(CliError::input(format!(
                        "{} has no family `{name}`; --family help lists its families",
                        entry.tag()
                    )));
                };
                let Some(output) = output else {
                    return Err(CliError::input("--output is required"));
                };
                let Some(x) = param else {
                    return Err(CliError::input("--param is required with --family"));
                };
                return write_made(&output, &chosen.make(x)?);
            }
            if list_presets || matches!(preset.as_deref(), Some("help" | "?")) {
                out!("{}", presets_text(entry));
                return Ok(());
            }
            if print_config {
                outln!(
                    "{}",
                    to_json(&entry.config(preset.as_deref(), config.as_deref())?)
                );
                return Ok(());
            }
            let Some(output) = output else {
                return Err(CliError::input(
                    "--output is required (or --print-config, --list-presets)",
                ));
            };
            let made = entry.generate(preset.as_deref(), config.as_deref(), seed)?;
            write_made(&output, &made)
        }
        Command::Import {
            problem,
            args,
            output,
        } => {
            // A configuration's own errors (`<import config>`) name its file.
            let made = registry
                .find(&problem)?
                .import(&args)
                .map_err(|e| match &args.config {
                    Some(c) => e.with_file(c),
                    None => e,
                })?;
            write_made(&output, &made)
        }
        Command::Solve {
            file,
            method,
            options,
            output,
        } => {
            let run = options.run_options();
            // A method's refusal (too large, ...) names the instance file like a load error.
            let solved = registry.of_file(&file)?.solve(&file, &method, &run);
            output.emit(solved.map_err(|e| e.with_file(&file))?)
        }
        Command::Compare {
            file,
            methods: names,
            options,
            output,
        } => {
            let run = options.run_options();
            let names = names.map(|n| rejoin_knobs(&n));
            output.emit(
                registry
                    .of_file(&file)?
                    .compare(&file, names.as_deref(), &run)
                    .map_err(|e| e.with_file(&file))?,
            )
        }
        Command::WriteLp {
            file,
            output,
            format,
            model,
        } => {
            let (milp, which) = registry
                .of_file(&file)?
                .exact_milp(&file, model)
                .map_err(|e| e.with_file(&file))?;
            let text = match format {
                LpFormat::Lp => milp.to_lp(),
                LpFormat::Mps => milp.to_mps().map_err(|e| e.with_file(&file))?,
            };
            write_file(&output, text.as_bytes())?;
            note!(
                "wrote {} ({which}: {} variables, {} integer, {} rows)",
                output.display(),
                milp.num_vars(),
                milp.num_integers(),
                milp.num_rows()
            );
            Ok(())
        }
        Command::Problems { json } => {
            let list: Vec<serde_json::Value> = registry
                .entries()
                .map(|e| {
                    serde_json::json!({
                        "problem": e.tag(),
                        "about": e.about(),
                        "methods": e.methods().into_iter().map(|(n, d)| serde_json::json!({"name": n, "description": d})).collect::<Vec<_>>(),
                        "presets": e.presets().into_iter().map(|(n, d)| serde_json::json!({"name": n, "description": d})).collect::<Vec<_>>(),
                        "claims": e.claims().iter().flat_map(|g| g.infos()).map(|i| i.id).collect::<Vec<_>>(),
                        "families": e.families().iter().map(Family::listing).collect::<Vec<_>>(),
                    })
                })
                .collect();
            if json {
                outln!("{}", to_json(&list));
            } else {
                out!("{}", problems_text(registry));
            }
            Ok(())
        }
        Command::Replay(args) => args.run(),
        Command::Mrc(args) => args.run(),
        Command::Route(args) => args.run(),
        Command::Pareto(args) => args.run(),
        Command::Offline(args) => args.run(),
        Command::Tpot(args) => args.run(),
        Command::Export(args) => args.run(),
        Command::Demo {
            instances,
            seed,
            out,
        } => demo(registry, instances, seed, &out),
        Command::Eplb {
            weights,
            replicas,
            groups,
            nodes,
            gpus,
            method,
            time_limit,
            output,
        } => {
            if method == "eplb" && time_limit.is_some() {
                return Err(CliError::flag(
                    "--time-limit",
                    "only --method exact takes a time limit (EPLB's algorithm is not limited)",
                ));
            }
            let report = if method == "exact" {
                crate::balance::commands::exact_eplb_command(
                    &weights,
                    [replicas, groups, nodes, gpus],
                    time_limit,
                )?
            } else {
                crate::eplb::eplb_command(&weights, replicas, groups, nodes, gpus)?
            };
            let table = problems::eplb_table(&report);
            output.emit(Rendered::new(&report, report.text()).with_table(table))
        }
        Command::Redundancy {
            file,
            extra_per_gpu,
            target,
            time_limit,
            output,
        } => {
            let (instance, options) = balance_input(&file, time_limit)?;
            let report =
                crate::balance::redundancy::redundancy(&instance, extra_per_gpu, target, &options)
                    .map_err(|e| e.with_file(&file))?;
            emit_with_rows(output, &report, report.text(), report.rows.iter())
        }
        Command::MigrationFront {
            file,
            max_budget,
            time_limit,
            output,
        } => {
            let (instance, options) = balance_input(&file, time_limit)?;
            let report =
                crate::balance::migration::migration_front(&instance, max_budget, &options)
                    .map_err(|e| e.with_file(&file))?;
            emit_with_rows(output, &report, report.text(), report.rows())
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
            output,
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
                        CliError::flag(
                            "--stats",
                            format!("must be since-last-change or last-window, got {stats:?}"),
                        )
                    },
                )?,
                charge_removals: !no_charge_removals,
                default_io_bps: Some(default_io_bps),
                method: method.parse().map_err(|e| CliError::flag("--method", e))?,
            };
            let report = crate::prism::commands::migrate(&file, &config, &options.run_options())?;
            let table = problems::migrate_table(&report);
            output.emit(Rendered::new(&report, report.text()).with_table(table))
        }
        Command::Plan {
            file,
            counts,
            top_k,
            model,
            synthetic,
            seed,
            generate,
            config,
            output,
        } => {
            let synthetic = generate.or(synthetic.then_some(seed));
            let source = match (file, counts, synthetic) {
                (Some(f), _, _) => problems::PlanSource::File(f),
                (_, Some(c), _) => problems::PlanSource::Counts(
                    c,
                    crate::registry::counts_header(top_k, model.as_deref())?,
                ),
                (_, _, Some(seed)) => problems::PlanSource::Generated(seed),
                _ => {
                    return Err(CliError::input(
                        "plan needs a planning instance FILE, --counts FILE or --synthetic \
                         [--seed S]",
                    ))
                }
            };
            output.emit(problems::zipmoe_plan(source, config.as_deref())?)
        }
        Command::Sweep {
            spec,
            out,
            jobs,
            resume,
            shard,
        } => {
            let (parsed, base) = crate::sweep::load_spec(&spec, registry)?;
            let options = crate::sweep::SweepOptions {
                jobs: jobs
                    .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
                out: out.clone(),
                resume,
                shard,
            };
            let done = crate::sweep::run(&parsed, &base, &options, registry)?;
            let summary = crate::sweep::summarize(done.iter().flat_map(|c| &c.rows));
            out!("{}", crate::sweep::summary_text(&summary));
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
        Command::Report { input, out } => {
            let page = crate::results_page::render(&input)?;
            let html = page.html(&format!("moe-opt report: {}", input.display()));
            let out = out.unwrap_or_else(|| {
                if input.is_dir() {
                    input.join("report.html")
                } else {
                    input.with_extension("html")
                }
            });
            write_file(&out, html.as_bytes())?;
            eprintln!(
                "wrote {} ({} figures, {} bytes)",
                out.display(),
                page.figures(),
                html.len()
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
        Command::Claims {
            premises: true,
            output,
        } => {
            let infos: Vec<crate::tier::PremiseInfo> = registry
                .claim_groups()
                .iter()
                .flat_map(|g| g.premises())
                .collect();
            let context = vec![("moe_opt_version", VERSION.into())];
            let rows = infos.iter().map(crate::registry::to_value).collect();
            let text = premises_text(&infos);
            let rendered = Rendered::new(&infos, text);
            output.emit(rendered.with_table(crate::export::Table::new(context, rows)))
        }
        Command::Claims { output, .. } => {
            let infos = all_claims(registry);
            let context = vec![("moe_opt_version", VERSION.into())];
            let rows = infos.iter().map(crate::registry::to_value).collect();
            let text = claims_text(&infos);
            let rendered = Rendered::new(&infos, text);
            output.emit(rendered.with_table(crate::export::Table::new(context, rows)))
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
            json,
            fail_on,
            tier,
            scale,
        } => {
            let paper_scale = scale == Scale::Paper;
            let instances = instances.unwrap_or(if paper_scale { 20 } else { 200 });
            let restarts = restarts.unwrap_or(if paper_scale { 0 } else { 3 });
            let keep = |i: &ClaimInfo| {
                claim.as_deref().is_none_or(|id| i.id == id)
                    && paper.as_deref().is_none_or(|p| i.paper == p)
            };
            let chosen: Vec<Box<dyn ClaimGroup>> = registry
                .claim_groups()
                .iter()
                .filter_map(|g| g.select(&keep))
                .collect();
            if chosen.is_empty() {
                let ids: Vec<&str> = all_claims(registry).iter().map(|i| i.id).collect();
                return Err(CliError::flag(
                    "--claim/--paper",
                    format!("no claim matches; known claims: {}", ids.join(", ")),
                ));
            }
            if !(time_limit.is_finite() && time_limit > 0.0) {
                return Err(CliError::input(format!(
                    "--time-limit must be a positive number of seconds, got {time_limit}"
                )));
            }
            use crate::verify::{MAX_INSTANCES, MAX_SEARCH_ITERATIONS, MAX_SEARCH_RESTARTS};
            for (flag, what, value, limit, name) in [
                (
                    "--instances",
                    "instances",
                    instances,
                    MAX_INSTANCES,
                    "MAX_INSTANCES",
                ),
                (
                    "--search",
                    "neighbours",
                    search as u64,
                    MAX_SEARCH_ITERATIONS,
                    "MAX_SEARCH_ITERATIONS",
                ),
                (
                    "--restarts",
                    "searches",
                    restarts as u64,
                    MAX_SEARCH_RESTARTS,
                    "MAX_SEARCH_RESTARTS",
                ),
            ] {
                flags::size_at_most(
                    flag,
                    what,
                    value,
                    limit,
                    &format!("moe_opt::verify::{name}"),
                )?;
            }
            let check = CheckOptions {
                solve: SolveOptions {
                    time_limit_s: Some(time_limit),
                    ..SolveOptions::default()
                },
            };
            if let Some(file) = instance {
                let (result, classified) = chosen[0].recheck(0, &file, &check)?;
                let info = chosen[0].infos()[0];
                if json {
                    let mut value = serde_json::to_value(&result).expect("checks serialise");
                    value["tier"] = classified.tier.as_str().into();
                    value["broken_premises"] = classified.broken.clone().into();
                    outln!("{}", to_json(&value));
                } else {
                    out!("{}", check_text(&info, &result));
                    outln!(
                        "  tier {}{}",
                        classified.tier,
                        broken_text(&classified.broken)
                    );
                }
                let violated = info.kind == ClaimKind::Stated
                    && result.outcome == crate::claims::Outcome::Fail;
                return fail_on_violated(fail_on, violated.then_some(info.id));
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
                tier,
                scale,
            };
            let groups: Vec<&dyn ClaimGroup> = chosen.iter().map(|g| g.as_ref()).collect();
            let rows = crate::verify::run(&groups, &options)?;
            out!("{}", verify_text(&rows, &out));
            let violated = rows
                .iter()
                .filter(|r| r.kind == ClaimKind::Stated && r.verdict == Verdict::Violated)
                .map(|r| r.id.as_str());
            fail_on_violated(fail_on, violated)
        }
    }
}

/// What makes `verify --fail-on` exit with status 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    /// A stated claim's verdict is `violated` (a fail beyond the numeric tolerance).
    Violated,
}

/// Status 1, naming the claims, when `--fail-on violated` was given and `violated` names any.
fn fail_on_violated<'a>(
    fail_on: Option<FailOn>,
    violated: impl IntoIterator<Item = &'a str>,
) -> Result<(), CliError> {
    let ids: Vec<&str> = violated.into_iter().collect();
    match fail_on {
        Some(FailOn::Violated) if !ids.is_empty() => Err(CliError {
            code: 1,
            message: format!(
                "--fail-on violated: {} stated claim{} violated: {}",
                ids.len(),
                if ids.len() == 1 { "" } else { "s" },
                ids.join(", ")
            ),
        }),
        _ => Ok(()),
    }
}

/// Writes a generated or imported instance and says so on stderr.
fn write_made(output: &Path, made: &Made) -> Result<(), CliError> {
    write_file(output, &made.instance)?;
    if made.summary.is_empty() {
        note!("wrote {}", output.display());
    } else if made.summary.contains('\n') {
        note!("{}\nwrote {}", made.summary, output.display());
    } else {
        note!("wrote {} ({})", output.display(), made.summary);
    }
    Ok(())
}

/// Undoes the comma split of a list whose items may carry several knobs: a piece `name=value`
/// with no `:` continues the item before it, so `max-rank:m=4,j=1,lru` is two items.
pub(crate) fn rejoin_knobs(pieces: &[String]) -> Vec<String> {
    let mut items: Vec<String> = Vec::new();
    for piece in pieces {
        match items.last_mut() {
            Some(last) if piece.contains('=') && !piece.contains(':') && last.contains(':') => {
                last.push(',');
                last.push_str(piece);
            }
            _ => items.push(piece.clone()),
        }
    }
    items
}

/// `generate PROBLEM --list-presets`.
fn presets_text(entry: &dyn Entry) -> String {
    let presets = entry.presets();
    if presets.is_empty() {
        return format!(
            "{} has no presets: give --config (--print-config shows the default)\n",
            entry.tag()
        );
    }
    let rows: Vec<Vec<String>> = presets
        .into_iter()
        .map(|(n, d)| vec![n, d.to_string()])
        .collect();
    table(&["preset", "what"], &rows, 2)
}

/// `generate PROBLEM --family help`.
fn families_text(entry: &dyn Entry) -> String {
    let families = entry.families();
    if families.is_empty() {
        return format!("{} has no parametric families\n", entry.tag());
    }
    let rows: Vec<Vec<String>> = families
        .iter()
        .map(|f| {
            vec![
                f.name.to_string(),
                f.claim.to_string(),
                f.param.to_string(),
                format!("{} = {}", f.measure, f.closed_form),
            ]
        })
        .collect();
    table(&["family", "claim", "X", "measure"], &rows, 4)
}

/// `moe-opt problems`.
fn problems_text(registry: &Registry) -> String {
    let mut text = String::new();
    for e in registry.entries() {
        text.push_str(&format!("{}: {}\n", e.tag(), e.about()));
        let methods = e.methods();
        if !methods.is_empty() {
            let rows: Vec<Vec<String>> = methods
                .into_iter()
                .map(|(n, d)| vec![n, d.to_string()])
                .collect();
            text.push_str(&table(&["method", "what"], &rows, 2));
        }
        let presets: Vec<String> = e.presets().into_iter().map(|(n, _)| n).collect();
        if !presets.is_empty() {
            text.push_str(&format!("  presets: {}\n", presets.join(", ")));
        }
        let families: Vec<&str> = e.families().iter().map(|f| f.name).collect();
        if !families.is_empty() {
            text.push_str(&format!("  families: {}\n", families.join(", ")));
        }
        text.push('\n');
    }
    text
}

/// `verify --instance FILE --claim ID`: the check in words.
fn check_text(claim: &ClaimInfo, check: &crate::claims::Check) -> String {
    let num = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.6}"));
    let outcome = serde_json::to_value(check.outcome).expect("outcomes serialise");
    // Ratio claims: the bounds on OPT and what decided the outcome.
    let certified = if check.lower.is_some() || check.upper.is_some() {
        let by = check.certificate.map_or(serde_json::Value::Null, |c| {
            serde_json::to_value(c).expect("certificates serialise")
        });
        format!(
            "  OPT in [{}, {}], certified by {}\n",
            num(check.lower),
            num(check.upper),
            by.as_str().unwrap_or(match check.outcome {
                // A measurement has no bound to certify: the interval is what it measured.
                crate::claims::Outcome::Measured => "nothing (a measurement)",
                crate::claims::Outcome::Vacuous => "nothing (the bound is trivial: vacuous)",
                _ => "nothing (inconclusive)",
            })
        )
    } else {
        String::new()
    };
    format!(
        "{} ({}): {}\n  {}\n  value {}, reference {} ({}), ratio {}, bound {}, margin {}\n{}",
        claim.id,
        claim.place,
        outcome.as_str().unwrap_or_default(),
        check.note,
        num(check.value),
        num(check.reference),
        serde_json::to_value(check.reference_kind)
            .expect("kinds serialise")
            .as_str()
            .unwrap_or_default(),
        match check.ratio_interval {
            // OPT only bracketed: the ratio is the interval, not a measured number.
            Some([low, high]) => format!("in [{low:.6}, {high:.6}]"),
            None => num(check.ratio),
        },
        num(check.bound),
        num(check.margin),
        certified,
    )
}

/// A balance instance and the solve options of a `--time-limit` (`redundancy`,
/// `migration-front`).
fn balance_input(
    file: &Path,
    time_limit: Option<f64>,
) -> Result<(formulations::balance::Instance, SolveOptions), CliError> {
    let instance = formulations::balance::load(file)?;
    let options = SolveOptions {
        time_limit_s: time_limit,
        ..SolveOptions::default()
    };
    Ok((instance, options))
}

/// A report whose `--csv` table has a row per item of `rows`.
fn emit_with_rows<R: serde::Serialize, T: serde::Serialize>(
    output: Output,
    report: &R,
    text: String,
    rows: impl IntoIterator<Item = T>,
) -> Result<(), CliError> {
    let rows = rows
        .into_iter()
        .map(|r| crate::registry::to_value(&r))
        .collect();
    let table = crate::export::Table::new(
        crate::registry::report_context(&crate::registry::to_value(report)),
        rows,
    );
    output.emit(Rendered::new(report, text).with_table(table))
}

/// `, premises not met: NAME: reason; ...` for a non-empty list of broken premises (a tier
/// below `regime` is inside the paper's model or its extension, not a broken model).
fn broken_text(broken: &[String]) -> String {
    if broken.is_empty() {
        String::new()
    } else {
        format!(", premises not met: {}", broken.join("; "))
    }
}

/// `moe-opt claims --premises`: a block per premise (its sentence is too long for a table).
fn premises_text(infos: &[crate::tier::PremiseInfo]) -> String {
    let mut text = String::new();
    for p in infos {
        // A premise of every claim of its group: the group's paper says which.
        let group = infos
            .iter()
            .filter(|q| q.paper == p.paper)
            .map(|q| q.claims.matches(", ").count())
            .max();
        let claims = if Some(p.claims.matches(", ").count()) == group && p.claims.contains(", ") {
            format!("every claim of {} on such instances", p.paper)
        } else {
            p.claims.clone()
        };
        let level = match p.level {
            crate::tier::Level::Model => "model: breaking it makes an instance `extension`",
            crate::tier::Level::Regime => "regime: breaking it makes an instance `model`",
        };
        text.push_str(&format!(
            "{} ({level})\n  claims: {}\n  place: {}\n  quote: \"{}\"\n",
            p.name, claims, p.place, p.quote
        ));
    }
    text
}

/// `moe-opt claims`: per claim its id, kind and quantifier, place, the paper's sentence, the
/// statement as moe-opt reads it and the bound. A block per claim: the quotes are too long for
/// a table's cells.
fn claims_text(infos: &[ClaimInfo]) -> String {
    let mut text = String::new();
    for i in infos {
        let repairs = i
            .repairs
            .map_or(String::new(), |of| format!(", repairs {of}"));
        text.push_str(&format!(
            "{} ({}, {}{repairs})
  place: {}
  paper: \"{}\"
  claim: {}
  bound: {}
\n",
            i.id,
            i.kind.as_str(),
            i.quantifier.as_str(),
            i.place,
            i.quote,
            i.statement,
            i.bound
        ));
    }
    text
}

/// Every registered claim, in paper order.
fn all_claims(registry: &Registry) -> Vec<ClaimInfo> {
    registry
        .claim_groups()
        .iter()
        .flat_map(|g| g.infos())
        .collect()
}

/// The demo: for every problem with a demo instance, `compare` with its default methods on
/// small generated instances; then a short `verify` of every claim, summarised.
/// Most instances per problem of `demo` (`--instances`): each is solved exactly.
pub const MAX_DEMO_INSTANCES: u64 = 1_000;

fn demo(registry: &Registry, instances: u64, first_seed: u64, dir: &Path) -> Result<(), CliError> {
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
            out!("{}", entry.compare(&file, None, &options)?.text);
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

fn verify_text(rows: &[ClaimRow], out: &Path) -> String {
    let mut text = String::new();
    // A section per kind, the paper's own claims first: only those can be the paper's errors.
    for (kinds, heading) in [
        (&[ClaimKind::Stated][..], "stated by the papers"),
        (
            &[ClaimKind::Repaired][..],
            "repaired by moe-opt (corrections of violated stated claims, each proved in its \
             module doc or read from the paper's own weaker sentence)",
        ),
        (
            &[ClaimKind::Inferred][..],
            "inferred by moe-opt (the papers do not state them: not the papers' errors)",
        ),
        (
            &[ClaimKind::Sanity, ClaimKind::Measurement][..],
            "sanity checks (true by construction) and measurements (no bound, no verdict)",
        ),
    ] {
        let table_rows: Vec<Vec<String>> = rows
            .iter()
            .filter(|r| kinds.contains(&r.kind))
            .map(|r| {
                let verdict = r.verdict_cell();
                let worst = r.worst_text();
                let tiers = format!(
                    "{} / {} / {}",
                    r.verdict_regime.as_str(),
                    r.verdict_model.as_str(),
                    r.verdict_extension.as_str()
                );
                vec![
                    r.id.clone(),
                    format!("{}, {}", r.kind.as_str(), r.quantifier.as_str()),
                    verdict,
                    r.inconclusive.to_string(),
                    worst,
                    tiers,
                ]
            })
            .collect();
        if table_rows.is_empty() {
            continue;
        }
        text.push_str(&format!("== {heading}\n"));
        text.push_str(&table(
            &[
                "claim",
                "kind",
                "verdict",
                "inconclusive",
                "worst ratio / measured",
                "regime / model / extension",
            ],
            &table_rows,
            3,
        ));
    }
    if let Some(r) = rows.first() {
        text.push_str(&format!(
            "verdicts and counts over the instances inside the tier {}; the last column is each \
             tier's verdict (claims.csv: instances per tier)\n",
            r.tier
        ));
        if r.scale == Scale::Paper {
            text.push_str(
                "at the papers' scale: [what certified the decided instances: a proved optimum, \
                 a bound on OPT, a feasible solution's value]\n",
            );
        }
    }
    for r in rows {
        if let Some(path) = &r.counterexample {
            let tier = r.counterexample_tier.map_or(String::new(), |t| {
                let broken = if r.counterexample_broken.is_empty() {
                    String::new()
                } else {
                    format!(", premises not met: {}", r.counterexample_broken)
                };
                format!(", tier {t}{broken}")
            });
            text.push_str(&format!(
                "{}: counterexample {} ({}{tier})\n  re-check: {}\n",
                r.id,
                out.join(path).display(),
                r.note,
                crate::verify::recheck_command(&r.id, &out.join(path))
            ));
        } else if matches!(
            r.verdict,
            Verdict::Inconclusive
                | Verdict::NotWitnessed
                | Verdict::Vacuous
                | Verdict::NotApplicable
        ) {
            text.push_str(&format!("{}: {}: {}\n", r.id, r.verdict.as_str(), r.note));
        }
    }
    text.push_str(&format!(
        "claims: {}  instances: {}\n",
        out.join("claims.csv").display(),
        out.join("instances.csv").display()
    ));
    text
}

fn to_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string_pretty(value).expect("reports always serialise")
}

fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<(), CliError> {
    let mut text = to_json(value);
    text.push('\n');
    write_file(path, text.as_bytes())
}

pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    std::fs::write(path, bytes).map_err(|source| {
        formulations::Error::Io {
            path: path.to_path_buf(),
            source,
        }
        .into()
    })
}
