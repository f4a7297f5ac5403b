//! The command line's schema: its commands, their arguments and help (clap).

use std::path::PathBuf;

use clap::{Args, Subcommand};
use formulations::milp::SolveOptions;

use super::{cache, flags, CliError};
use crate::claims::Scale;
use crate::problem::RunOptions;
use crate::registry::{ImportArgs, LpFormat, LpModel, Rendered};

#[derive(Debug, Subcommand)]
pub(super) enum Command {
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
        /// MILP time limit per solve, seconds, model building included, also SlimCaching's
        /// Lagrangian bound's (a solve stopped by it decides an instance only where its bound
        /// or incumbent is a certificate, otherwise the instance is inconclusive, never a
        /// pass).
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
        #[command(flatten)]
        migration: MigrateArgs,
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
    /// folder, or of an `mrc --csv` or `redundancy --csv` table.
    ///
    /// A verify folder (claims.csv): per claim its verdict, certificate counts, ratios against
    /// the bound and counterexample with its re-check command. A sweep or merge folder
    /// (results.csv): the summary per method and each method's objective and ratio along every
    /// axis. `mrc --csv` tables in the folder (or given as INPUT): the miss-ratio curves;
    /// `redundancy --csv` tables: balancedness over layers against the redundant slots (best
    /// plan, proved upper bound, EPLB). No script, font or network: the page opens anywhere;
    /// the same input gives the same bytes.
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

/// `migrate`'s settings of the drift and the planner: [`MigrateArgs::config`] makes them the
/// [`crate::prism::commands::MigrateConfig`] of the run.
#[derive(Debug, Args)]
pub(super) struct MigrateArgs {
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
}

impl MigrateArgs {
    /// The run's configuration; `--stats` and `--method` must name one.
    pub(super) fn config(self) -> Result<crate::prism::commands::MigrateConfig, CliError> {
        let stats = self.stats;
        Ok(crate::prism::commands::MigrateConfig {
            windows: self.windows,
            drift_at: self.drift_at,
            drift_server: self.drift_server,
            drift_to: self.drift_to,
            mix: self.mix,
            tokens_per_window: self.tokens_per_window,
            remote_invocation_s: self.remote_invocation_s,
            stats: serde_json::from_value(serde_json::Value::from(stats.clone())).map_err(
                |_| {
                    CliError::flag(
                        "--stats",
                        format!("must be since-last-change or last-window, got {stats:?}"),
                    )
                },
            )?,
            charge_removals: !self.no_charge_removals,
            default_io_bps: Some(self.default_io_bps),
            method: self
                .method
                .parse()
                .map_err(|e| CliError::flag("--method", e))?,
        })
    }
}

/// `--json` and `--csv`, the same on every command that reports.
#[derive(Debug, Args)]
pub struct Output {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub(super) json: bool,
    /// Also write the report's tidy table (CSV; the command's help says what a row is).
    #[arg(long)]
    pub(super) csv: Option<PathBuf>,
}

impl Output {
    /// Prints a report as JSON or text, and writes its table with `--csv`.
    pub(super) fn emit(&self, rendered: Rendered) -> Result<(), CliError> {
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
pub(super) struct SolveArgs {
    /// Time limit, seconds, per MILP method (and SlimCaching's `lagrangian`), counted from its
    /// start (warm start and model building included); other methods are not limited. A
    /// stopped solve reports status time_limit, its incumbent and, when it has one, its bound
    /// (docs/command-line.md: Time limits).
    #[arg(long, value_parser = flags::positive)]
    time_limit: Option<f64>,
    /// Relative gap at which a MILP method (and SlimCaching's `lagrangian`) stops (0 = prove
    /// optimality).
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
    pub(super) fn run_options(&self) -> RunOptions {
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

/// What makes `verify --fail-on` exit with status 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    /// A stated claim's verdict is `violated` (a fail beyond the numeric tolerance).
    Violated,
}
