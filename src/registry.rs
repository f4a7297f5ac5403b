//! The registry: every problem the command line, sweeps and `verify` know, found by the tag of
//! its instance files. A problem is one [`Entry`] and one line in [`crate::problems::builtin`],
//! the one place, above the problems, that names them all; nothing here names a problem. A
//! [`Problem`] gets its entry from [`ProblemEntry`] once it implements [`Commands`] (the
//! standard reports by default; its own reports and importer where it has them), its registry
//! line adding the generator and the sweep where it has them; a problem without methods to
//! compare (a token stream, the cache-pool plan) implements [`Entry`] itself, as do the
//! offline cache and SMoE, whose methods do not fit [`Problem`]: they solve their files through
//! their own [`Solver`].
//! docs/adding-a-problem.md is the recipe, and tests/toy_problem.rs follows it with a knapsack.
//!
//! An entry answers the commands with [`Rendered`] reports (JSON, text and the tidy table of
//! `--csv`), so the command line prints and writes every problem's reports the same way.
//! Commands a problem does not have answer with an error that says what to do with its files
//! instead ([`Entry::hint`]).

use std::path::{Path, PathBuf};

use formulations::milp::Milp;
use formulations::Error;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::export::Table;
use crate::generate::{Generator, Made};
use crate::named::Named;
use crate::parametric::ParametricFamily;
use crate::problem::RunOptions;
use crate::problem::{self, ExactReport, MethodRun, Problem, Reference, Runs, Sense};
use crate::render::table;
use crate::sweepable::{SweepAdapter, SweepProblem, Sweepable};
use crate::verify::ClaimGroup;

/// A report as the command line shows it.
pub struct Rendered {
    /// The JSON report (`--json`), with `moe_opt_version` first: the report serialised
    /// directly, so its numbers print as their own types do (an `f32` as an `f32`).
    pub json: String,
    /// The text for a terminal.
    pub text: String,
    /// The tidy table `--csv` writes, where the command has one.
    pub table: Option<Table>,
}

impl Rendered {
    /// A report and its text.
    pub fn new<R: Serialize>(report: &R, text: String) -> Self {
        Rendered {
            json: serde_json::to_string_pretty(report).expect("reports serialise"),
            text,
            table: None,
        }
    }

    /// With the table of `--csv`.
    pub fn with_table(mut self, table: Table) -> Self {
        self.table = Some(table);
        self
    }

    /// A `solve` report with the standard `--csv` table of its solution's `rows`, so every
    /// problem's solve table carries the same context columns.
    pub fn solve<R: Serialize>(report: &R, text: String, rows: Vec<Value>) -> Self {
        Rendered::new(report, text).with_table(solve_table(report, rows))
    }

    /// A `compare` report with the standard `--csv` table, a row per method.
    pub fn compare<R: Serialize>(report: &R, text: String) -> Self {
        Rendered::new(report, text).with_table(compare_table(report))
    }
}

/// The header of bare activation counts from `--top-k` and `--model` (`import`, `plan`).
pub fn counts_header(
    top_k: Option<usize>,
    model: Option<&str>,
) -> Result<crate::counts::Header, Error> {
    let top_k = top_k
        .map(|k| {
            u32::try_from(k)
                .map_err(|_| Error::command_line("--top-k", format!("{k} exceeds 2^32 - 1")))
        })
        .transpose()?;
    Ok(crate::counts::Header {
        top_k,
        model: model.map(String::from),
    })
}

/// The flags of `moe-opt import`; each problem takes what it needs and refuses the rest.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ImportArgs {
    /// The activation counts: moe-activation-counts/v1 JSON (maybe gzip), or a bare matrix
    /// [prompt][layer][expert] or [layer][expert] as numpy's .npy, a JSON array or CSV
    /// (`prompt,layer,count_0,...` a line), by extension; a bare one needs --top-k.
    // The doc comment is also the --help text, where backslashes would show: not a link.
    #[allow(rustdoc::broken_intra_doc_links)]
    #[arg(long, required_unless_present_any = ["log", "libcachesim", "trace"])]
    pub counts: Option<PathBuf>,
    /// cache-trace: a token log (JSON Lines, maybe gzip: {seq, token, layer, experts,
    /// weights, phase}; ../shared/data/token-traces).
    #[arg(long, conflicts_with = "counts")]
    pub log: Option<PathBuf>,
    /// cache-trace: a libCacheSim trace (`moe-opt export`): oracleGeneral binary, or csv if the
    /// name ends in .csv; with --experts, --layers and --top-k, or --renumber.
    #[arg(long, conflicts_with_all = ["counts", "log"])]
    pub libcachesim: Option<PathBuf>,
    /// cache-trace: a cache-trace file, JSON or binary, to write again in --format (e.g. a
    /// JSON trace into a binary one).
    #[arg(long, conflicts_with_all = ["counts", "log", "libcachesim"])]
    pub trace: Option<PathBuf>,
    /// cache-trace: the output's format: json, or bin (the binary trace: magic bytes, a
    /// little-endian header, fixed-width expert ids; read by every command that takes a
    /// trace).
    #[arg(long, value_enum, default_value = "json", hide_possible_values = true)]
    pub format: crate::cache::import::TraceFormat,
    /// cache-trace: E, for a log that is not one of the known files, or of a libCacheSim trace.
    #[arg(long, value_parser = crate::cli::flags::at_least_one::<usize>)]
    pub experts: Option<usize>,
    /// cache-trace: L of a libCacheSim trace (1 for one layer's export).
    #[arg(long, requires = "libcachesim", value_parser = crate::cli::flags::at_least_one::<usize>)]
    pub layers: Option<usize>,
    /// K: of bare --counts (required there; a v1 file's must agree), or of a libCacheSim
    /// trace (cache-trace).
    #[arg(long, conflicts_with = "log", value_parser = crate::cli::flags::at_least_one::<usize>)]
    pub top_k: Option<usize>,
    /// The model of bare --counts (a v1 file's must agree): a known model (Qwen1.5-MoE-A2.7B,
    /// DeepSeek-V2-Lite, switch-large-128) gives the expert bytes and ZipMoE's device; without
    /// it those come from --config.
    #[arg(long, conflicts_with_all = ["log", "libcachesim"])]
    pub model: Option<String>,
    /// cache-trace: a foreign libCacheSim trace: each request one token of one layer (K = 1),
    /// objects renumbered 0, 1, ... by first appearance.
    #[arg(long, requires = "libcachesim", conflicts_with_all = ["experts", "layers", "top_k"])]
    pub renumber: bool,
    /// Import configuration (JSON; the problem's ImportConfig, see its module doc).
    /// SlimCaching's default: the paper network (4 servers, 20 users, 5 GB, 200 local
    /// experts); Prism's: the paper's testbed; ZipMoE's: prompt 0 at its first MoE layer on
    /// the Orin device of the file's model (any field may be given alone).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Overrides the number of edge servers (slimcaching only).
    #[arg(long, value_parser = crate::cli::flags::at_least_one::<u32>)]
    pub servers: Option<u32>,
    /// Overrides the number of users, groups of prompts (slimcaching only).
    #[arg(long, value_parser = crate::cli::flags::at_least_one::<u32>)]
    pub users: Option<u32>,
    /// Overrides the storage per server, bytes (slimcaching only).
    #[arg(long, value_parser = crate::cli::flags::at_least_one::<u64>)]
    pub storage_bytes: Option<u64>,
    /// Overrides the experts each user holds locally (slimcaching only).
    #[arg(long)]
    pub local_experts: Option<u32>,
    /// Overrides the seed (prompt grouping, clustering, state draws).
    #[arg(long)]
    pub seed: Option<u64>,
}

impl ImportArgs {
    /// The activation-count file and the header flags of a bare one, or an error saying this
    /// problem imports one.
    pub fn counts(&self, tag: &str) -> Result<(&Path, crate::counts::Header), Error> {
        if self.format != crate::cache::import::TraceFormat::Json {
            return Err(Error::command_line(
                "--format",
                format!("{tag} writes JSON; --format bin is cache-trace's"),
            ));
        }
        match (&self.counts, &self.log, &self.libcachesim, &self.trace) {
            (Some(c), None, None, None) => {
                Ok((c, counts_header(self.top_k, self.model.as_deref())?))
            }
            _ => Err(Error::command_line(
                "--counts",
                format!(
                    "{tag} imports an activation-count file (--counts); --log, --libcachesim \
                     and --trace are cache-trace's"
                ),
            )),
        }
    }

    /// Refuses SlimCaching's override flags for another problem.
    pub fn no_overrides(&self) -> Result<(), Error> {
        if self.servers.is_some()
            || self.users.is_some()
            || self.storage_bytes.is_some()
            || self.local_experts.is_some()
        {
            return Err(Error::command_line(
                "--servers",
                "--servers, --users, --storage-bytes and --local-experts are SlimCaching's; \
                 give the other problems' settings in --config",
            ));
        }
        Ok(())
    }

    /// Names where a bad import-configuration value came from, in an error about the
    /// configuration (a `<import config>` placeholder): the override flag that set the field,
    /// else the --config file.
    pub fn name_source(&self, e: Error) -> Error {
        let flags = [
            ("servers", "--servers", self.servers.is_some()),
            ("users", "--users", self.users.is_some()),
            (
                "storage_bytes",
                "--storage-bytes",
                self.storage_bytes.is_some(),
            ),
            (
                "local_experts_per_user",
                "--local-experts",
                self.local_experts.is_some(),
            ),
        ];
        if let Error::Invalid {
            path,
            field,
            reason,
        } = &e
        {
            let set_by = flags.iter().find(|(f, _, given)| *given && field == f);
            if let (true, Some((_, flag, _))) = (path.to_string_lossy().starts_with('<'), set_by) {
                return Error::command_line(*flag, reason.clone());
            }
        }
        e.with_file_if(self.config.as_deref())
    }

    /// The import configuration: the file's, or the default.
    pub fn config<C: DeserializeOwned + Default>(&self) -> Result<C, Error> {
        match &self.config {
            Some(path) => formulations::error::read_json(path),
            None => Ok(C::default()),
        }
    }

    /// `import` for a problem whose importer reads an activation-count file with its
    /// configuration alone (SlimCaching's override flags refused): `--seed` overrides the
    /// configuration's seed ([`CountsConfig::seed_mut`]), and the importer's errors are named by
    /// [`ImportArgs::name_source`]. One path for the problems that import counts alike; the
    /// instance is made without a summary line.
    pub fn import_counts<C: CountsConfig, I: Serialize>(
        &self,
        tag: &str,
        import: impl FnOnce(&Path, &crate::counts::Header, &C) -> Result<I, Error>,
    ) -> Result<Made, Error> {
        let (counts, header) = self.counts(tag)?;
        self.no_overrides()?;
        let mut config: C = self.config()?;
        if let (Some(seed), Some(given)) = (config.seed_mut(), self.seed) {
            *seed = given;
        }
        let instance = import(counts, &header, &config).map_err(|e| self.name_source(e))?;
        Ok(Made::new(&instance, String::new()))
    }
}

/// The configuration of an activation-count import (the `--config` file, else the default), as
/// [`ImportArgs::import_counts`] reads it.
pub trait CountsConfig: DeserializeOwned + Default {
    /// The seed `--seed` overrides; `None` (the default) where the importer draws nothing.
    fn seed_mut(&mut self) -> Option<&mut u64> {
        None
    }
}

/// A method's name and what it is, for help and lists.
pub type MethodInfo = (String, &'static str);

/// One problem, as the command line, sweeps and `verify` see it (module doc).
pub trait Entry: Sync {
    /// The `problem` tag of its files and its name on the command line.
    fn tag(&self) -> &'static str;
    /// One line: what it is, and its paper.
    fn about(&self) -> &'static str;
    /// The methods of `solve` and `compare`, with what each is.
    fn methods(&self) -> Vec<MethodInfo> {
        Vec::new()
    }
    /// The generator (`generate`, `--print-config`, `--list-presets`), if any.
    fn generator(&self) -> Option<Box<dyn GeneratorEntry>> {
        None
    }
    /// The generator's presets, with what each is.
    fn presets(&self) -> Vec<MethodInfo> {
        self.generator().map_or_else(Vec::new, |g| g.presets())
    }
    /// The generator configuration of `source`, as JSON (`generate --print-config`).
    fn config(&self, source: ConfigSource) -> Result<Value, Error> {
        self.generator()
            .ok_or_else(|| self.refuse("generate"))?
            .config(source)
    }
    /// An instance from the generator (`generate`).
    fn generate(&self, source: ConfigSource, seed: u64) -> Result<Made, Error> {
        self.generator()
            .ok_or_else(|| self.refuse("generate"))?
            .generate(source, seed)
    }
    /// An instance from real data (`import`).
    fn import(&self, _args: &ImportArgs) -> Result<Made, Error> {
        Err(self.refuse("import"))
    }
    /// `solve`, `compare` and `write-lp` on its instance files, if it takes them.
    fn solver(&self) -> Option<&dyn Solver> {
        None
    }
    /// The problem's claim groups (`claims`, `verify`), in paper order.
    fn claims(&self) -> Vec<Box<dyn ClaimGroup>> {
        Vec::new()
    }
    /// The sweep adapter (`sweep`).
    fn sweep(&self) -> Option<Box<dyn SweepProblem>> {
        None
    }
    /// The parametric families breaking its claims (`generate --family`).
    fn families(&self) -> Vec<ParametricFamily> {
        Vec::new()
    }
    /// What to do with a file of this problem instead of a command it does not take.
    fn hint(&self, file: &Path) -> String {
        format!(
            "see `moe-opt --help` for the commands that take {} files",
            self.tag()
        ) + &format!(" ({})", file.display())
    }
    /// The demo's instance (`demo`): a small generated one, or `None` to leave the problem out.
    fn demo_instance(&self, _seed: u64) -> Option<Result<Made, Error>> {
        None
    }

    /// The solver of `file`, or the error of `command` (`solve`, `compare`, `write-lp`) on it.
    fn solver_for(&self, file: &Path, command: &str) -> Result<&dyn Solver, Error> {
        self.solver().ok_or_else(|| self.not_for(file, command))
    }

    /// The error of a command this problem does not take.
    fn not_for(&self, file: &Path, command: &str) -> Error {
        Error::Invalid {
            path: file.to_path_buf(),
            field: "problem".into(),
            reason: format!(
                "a {} file, which `{command}` does not take: {}",
                self.tag(),
                self.hint(file)
            ),
        }
    }

    /// The error of a command-line action this problem does not have.
    fn refuse(&self, command: &str) -> Error {
        Error::command_line("problem", format!("{} has no `{command}`", self.tag()))
    }
}

/// `solve`, `compare` and `write-lp` on a problem's instance files ([`Entry::solver`]).
pub trait Solver {
    /// One method on an instance file (`solve`).
    fn solve(&self, file: &Path, method: &str, options: &RunOptions) -> Result<Rendered, Error>;
    /// Several methods on an instance file, rated against the best reference (`compare`):
    /// `methods`, else the problem's default ones.
    fn compare(
        &self,
        file: &Path,
        methods: Option<&[String]>,
        options: &RunOptions,
    ) -> Result<Rendered, Error>;
    /// The exact MILP of `write-lp` (`model`: which one, for a problem with several), and a
    /// few words on which it is.
    fn exact_milp(
        &self,
        file: &Path,
        model: Option<LpModel>,
    ) -> Result<(Milp, &'static str), Error>;
}

/// The problems, in paper order.
pub struct Registry {
    entries: Vec<Box<dyn Entry>>,
}

impl Registry {
    /// A registry of these entries, in this order ([`crate::problems::builtin`] lists moe-opt's).
    pub fn new(entries: Vec<Box<dyn Entry>>) -> Self {
        Registry { entries }
    }

    /// These problems and one more (a problem of a user's own crate, or a test's).
    pub fn with(mut self, entry: Box<dyn Entry>) -> Self {
        self.entries.push(entry);
        self
    }

    /// Every entry, in order.
    pub fn entries(&self) -> impl Iterator<Item = &dyn Entry> {
        self.entries.iter().map(|e| e.as_ref())
    }

    /// The entry of a tag, or an error listing the known ones.
    pub fn find(&self, tag: &str) -> Result<&dyn Entry, Error> {
        self.entries().find(|e| e.tag() == tag).ok_or_else(|| {
            Error::command_line(
                "problem",
                format!(
                    "unknown problem `{tag}`; expected one of: {}",
                    self.tags().join(", ")
                ),
            )
        })
    }

    /// The entry of an instance file: its `problem` tag, SlimCaching when it has none.
    pub fn of_file(&self, path: &Path) -> Result<&dyn Entry, Error> {
        let tag = formulations::problem::detect_tag(path)?;
        let tag = tag.as_deref().unwrap_or("slimcaching");
        self.find(tag).map_err(|_| Error::Invalid {
            path: path.to_path_buf(),
            field: "problem".into(),
            reason: format!(
                "unknown problem `{tag}`; expected one of: {}",
                self.tags().join(", ")
            ),
        })
    }

    /// Every tag, in order.
    pub fn tags(&self) -> Vec<&'static str> {
        self.entries().map(|e| e.tag()).collect()
    }

    /// Every claim group, in paper order.
    pub fn claim_groups(&self) -> Vec<Box<dyn ClaimGroup>> {
        self.entries().flat_map(|e| e.claims()).collect()
    }
}

/// A named enum's values as [`MethodInfo`]s.
pub fn infos<N: Named>() -> Vec<MethodInfo> {
    N::ALL
        .iter()
        .map(|v| (v.name().to_string(), v.description()))
        .collect()
}

/// Where `generate` takes its configuration from: the `--config` file, which overrides the
/// `--preset`, else the preset, else the problem's default.
#[derive(Debug, Clone, Copy, Default)]
pub struct ConfigSource<'a> {
    /// `--preset`.
    pub preset: Option<&'a str>,
    /// `--config`.
    pub file: Option<&'a Path>,
}

impl<'a> ConfigSource<'a> {
    /// A named preset.
    pub fn preset(name: &'a str) -> Self {
        ConfigSource {
            preset: Some(name),
            file: None,
        }
    }

    /// The configuration: read from the file (errors name it), else made from the preset
    /// (`default` when none is named).
    pub fn resolve<C: DeserializeOwned, P: Named>(
        self,
        default: P,
        make: impl FnOnce(P) -> C,
    ) -> Result<C, Error> {
        if let Some(path) = self.file {
            return formulations::error::read_json(path);
        }
        let preset = match self.preset {
            None => default,
            Some(name) => P::parse_name(name).map_err(|e| Error::command_line("--preset", e))?,
        };
        Ok(make(preset))
    }
}

/// A configuration as JSON.
pub fn to_value<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("configurations serialise")
}

/// The columns every row of a report's table carries: the version and the instance (the
/// report's JSON `instance`, or `layer`).
pub fn report_context(report: &Value) -> Vec<(&'static str, Value)> {
    let instance = report.get("instance").or_else(|| report.get("layer"));
    vec![
        ("moe_opt_version", Value::from(crate::report::VERSION)),
        ("instance_name", field(instance, "name")),
        ("instance_sha256", field(instance, "sha256")),
    ]
}

/// `object.key`, null when either is missing.
fn field(object: Option<&Value>, key: &str) -> Value {
    object
        .and_then(|o| o.get(key))
        .cloned()
        .unwrap_or(Value::Null)
}

/// `compare --csv` of a report whose JSON has `instance` (or `layer`), `reference` and
/// `methods[]`: a row per method, the report's version, instance and reference on every row.
fn compare_table<R: Serialize>(report: &R) -> Table {
    let report = &to_value(report);
    let mut context = report_context(report);
    context.push(("reference_kind", field(report.get("reference"), "kind")));
    context.push(("reference_value", field(report.get("reference"), "value")));
    context.push(("reference_source", field(report.get("reference"), "source")));
    let rows = report
        .get("methods")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    Table::new(context, rows)
}

/// `solve --csv` of a report whose JSON has `instance` (or `layer`) and `result.method`: the
/// solution's `rows`, the report's version, instance and method on every row.
pub fn solve_table<R: Serialize>(report: &R, rows: Vec<Value>) -> Table {
    let report = &to_value(report);
    let mut context = report_context(report);
    context.push(("method", field(report.get("result"), "method")));
    Table::new(context, rows)
}

/// The entry of any [`Problem`] with the standard reports: the shape a new problem starts
/// from (docs/adding-a-problem.md). `solve` and `compare` report each method's objective, its
/// ratio to the reference, the solver's account and the runtime; `write-lp` writes
/// [`Problem::milp`]; `claims` are [`Commands::claims`]; `sweep` runs it when its registry
/// line says so ([`ProblemEntry::sweepable`]).
pub struct ProblemEntry<P> {
    generator: Option<fn() -> Box<dyn GeneratorEntry>>,
    sweep: Option<fn() -> Box<dyn SweepProblem>>,
    problem: std::marker::PhantomData<P>,
}

impl<P> ProblemEntry<P> {
    /// The entry, without a generator or sweeps.
    pub fn new() -> Self {
        ProblemEntry {
            generator: None,
            sweep: None,
            problem: std::marker::PhantomData,
        }
    }
}

impl<P: Generator + 'static> ProblemEntry<P> {
    /// The entry of a problem with a generator (`generate`, `--print-config`, presets, the
    /// demo's instance), without sweeps.
    pub fn generated() -> Self {
        ProblemEntry {
            generator: Some(|| Box::new(GeneratorOf::<P>(std::marker::PhantomData))),
            ..Self::new()
        }
    }
}

impl<P: Sweepable> ProblemEntry<P> {
    /// The entry of a problem that `sweep` runs, through its [`Sweepable`] implementation
    /// (a sweepable problem has a generator: it makes the sweep's instances).
    pub fn sweepable() -> Self {
        ProblemEntry {
            sweep: Some(|| Box::new(SweepAdapter::<P>::new())),
            ..Self::generated()
        }
    }
}

impl<P> Default for ProblemEntry<P> {
    fn default() -> Self {
        Self::new()
    }
}

/// One method's line of a standard report.
#[derive(Debug, Clone, Serialize)]
pub struct Line {
    /// The method.
    pub method: &'static str,
    /// Its objective (the report's `objective_name`), null without a solution.
    pub objective: Option<f64>,
    /// objective / the report's reference.
    pub ratio: Option<f64>,
    /// Wall-clock seconds of the method.
    pub runtime_s: f64,
    /// Objective evaluations the method made.
    pub evaluations: Option<u64>,
    /// Why there is no solution, or what was left out.
    pub note: Option<String>,
    /// The MILP's status, incumbent, bound and gap.
    pub exact: Option<ExactReport>,
}

impl Line {
    fn new<P: Problem>(run: &MethodRun<P>, reference: Reference) -> Self {
        Line {
            method: run.method.name(),
            objective: run.objective(),
            ratio: run.objective().and_then(|o| reference.ratio(o)),
            runtime_s: run.runtime_s,
            evaluations: run.evaluations,
            note: run.note.clone(),
            exact: run.exact.clone(),
        }
    }

    fn row(&self) -> Vec<String> {
        let num = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.6}"));
        vec![
            self.method.to_string(),
            num(self.objective),
            num(self.ratio),
            crate::render::status_cell(self.exact.as_ref()),
            format!("{:.3}", self.runtime_s),
            self.note.clone().unwrap_or_default(),
        ]
    }
}

/// Output of `compare` for a problem with the standard reports.
#[derive(Debug, Clone, Serialize)]
pub struct CompareReport {
    /// moe-opt version.
    pub moe_opt_version: &'static str,
    /// The problem's tag.
    pub problem: &'static str,
    /// SHA-256 of the instance's canonical JSON.
    pub instance_sha256: String,
    /// What `objective` is, with its unit.
    pub objective_name: &'static str,
    /// Minimised or maximised.
    pub sense: Sense,
    /// What ratios are taken against.
    pub reference: Reference,
    /// One line per method that ran, in the order asked.
    pub methods: Vec<Line>,
    /// Methods refused by their size limits, with the reason.
    pub skipped: Vec<(&'static str, String)>,
}

const HEADERS: [&str; 6] = [
    "method",
    "objective",
    "ratio",
    "status",
    "runtime (s)",
    "note",
];

/// What a report has of the file its runs were made on: the instance, its compiled model and
/// the run options (Prism's latency report samples its batch with their seed).
pub struct Case<'a, P: Problem> {
    /// The instance, as its file holds it.
    pub instance: &'a P::Instance,
    /// The instance compiled for the methods ([`Problem::model`]).
    pub model: &'a P::Model,
    /// The options the methods ran with.
    pub options: &'a RunOptions,
}

/// What a [`Problem`] shows on the command line beyond its methods: every item has a
/// default (the standard reports, no generator), so a new problem starts with
/// `impl Commands for MyProblem {}` and overrides what it has.
pub trait Commands: Problem {
    /// `import`.
    fn import(_args: &ImportArgs) -> Result<Made, Error> {
        Err(refused::<Self>("import"))
    }
    /// The `solve` report of one run.
    fn solve_report(case: &Case<Self>, run: &MethodRun<Self>) -> Result<Rendered, Error> {
        Ok(standard_solve(case.instance, run))
    }
    /// The `compare` report of several runs.
    fn compare_report(case: &Case<Self>, runs: &Runs<Self>) -> Result<Rendered, Error> {
        Ok(standard_compare(case.instance, runs))
    }
    /// The parametric families breaking its claims.
    fn families() -> Vec<ParametricFamily> {
        Vec::new()
    }
    /// The paper's claims, for `claims` and `verify` (here, beside the command line's glue,
    /// so that the problem's methods need nothing of its checks, which run them).
    fn claims() -> Vec<Box<dyn ClaimGroup>> {
        Vec::new()
    }
}

fn refused<P: Problem>(command: &str) -> Error {
    Error::command_line("problem", format!("{} has no `{command}`", P::TAG))
}

impl<P: Commands> Entry for ProblemEntry<P> {
    fn tag(&self) -> &'static str {
        P::TAG
    }

    fn about(&self) -> &'static str {
        P::ABOUT
    }

    fn methods(&self) -> Vec<MethodInfo> {
        infos::<P::Method>()
    }

    fn generator(&self) -> Option<Box<dyn GeneratorEntry>> {
        self.generator.map(|generator| generator())
    }

    fn import(&self, args: &ImportArgs) -> Result<Made, Error> {
        P::import(args)
    }

    fn solver(&self) -> Option<&dyn Solver> {
        Some(self)
    }

    fn claims(&self) -> Vec<Box<dyn ClaimGroup>> {
        P::claims()
    }

    fn sweep(&self) -> Option<Box<dyn SweepProblem>> {
        self.sweep.map(|adapter| adapter())
    }

    fn families(&self) -> Vec<ParametricFamily> {
        P::families()
    }

    /// The generator's first (smallest) preset.
    fn demo_instance(&self, seed: u64) -> Option<Result<Made, Error>> {
        let generator = self.generator()?;
        let (smallest, _) = generator.presets().into_iter().next()?;
        Some(generator.generate(ConfigSource::preset(&smallest), seed))
    }
}

impl<P: Commands> Solver for ProblemEntry<P> {
    fn solve(&self, file: &Path, method: &str, options: &RunOptions) -> Result<Rendered, Error> {
        // The file first: a file of another problem without its tag is refused as that, not
        // through a method name of the wrong problem.
        let instance = P::load(file)?;
        let method =
            P::Method::parse_name(method).map_err(|e| Error::command_line("--method", e))?;
        let model = P::model(&instance);
        let run = problem::run::<P>(&model, method, options)?;
        let case = Case {
            instance: &instance,
            model: &model,
            options,
        };
        P::solve_report(&case, &run)
    }

    fn compare(
        &self,
        file: &Path,
        methods: Option<&[String]>,
        options: &RunOptions,
    ) -> Result<Rendered, Error> {
        let instance = P::load(file)?;
        let chosen = problem::chosen_methods::<P>(&instance, methods)?;
        let model = P::model(&instance);
        let runs = problem::run_all::<P>(&model, &chosen, options)?;
        let case = Case {
            instance: &instance,
            model: &model,
            options,
        };
        P::compare_report(&case, &runs)
    }

    fn exact_milp(
        &self,
        file: &Path,
        model: Option<LpModel>,
    ) -> Result<(Milp, &'static str), Error> {
        exact_milp::<P>(file, model)
    }
}

/// The standard `solve` report: the method's line.
pub fn standard_solve<P: Problem>(instance: &P::Instance, run: &MethodRun<P>) -> Rendered {
    let line = Line::new(run, Reference::None);
    let text = table(&HEADERS, &[line.row()], 1);
    let report = serde_json::json!({
        "moe_opt_version": crate::report::VERSION,
        "problem": P::TAG,
        "instance_sha256": crate::report::canonical_sha256(instance),
        "objective_name": P::OBJECTIVE,
        "result": line,
    });
    Rendered::new(&report, text)
}

/// The standard `compare` report: a line per method against the reference.
pub fn standard_compare<P: Problem>(instance: &P::Instance, runs: &Runs<P>) -> Rendered {
    let report = CompareReport {
        moe_opt_version: crate::report::VERSION,
        problem: P::TAG,
        instance_sha256: crate::report::canonical_sha256(instance),
        objective_name: P::OBJECTIVE,
        sense: P::SENSE,
        reference: runs.reference,
        methods: runs
            .runs
            .iter()
            .map(|r| Line::new(r, runs.reference))
            .collect(),
        skipped: runs
            .skipped
            .iter()
            .map(|(m, why)| (m.name(), why.clone()))
            .collect(),
    };
    let rows: Vec<Vec<String>> = report.methods.iter().map(Line::row).collect();
    let text = format!(
        "{} ({}, {}): {}\n{}",
        P::TAG,
        P::OBJECTIVE,
        if P::SENSE == Sense::Maximize {
            "maximised"
        } else {
            "minimised"
        },
        crate::render::reference(report.reference),
        table(&HEADERS, &rows, 1)
    );
    let context = vec![
        ("moe_opt_version", Value::from(crate::report::VERSION)),
        ("instance_sha256", report.instance_sha256.clone().into()),
        ("reference_kind", report.reference.kind().into()),
        ("reference_value", report.reference.value().into()),
        ("reference_source", report.reference.source().into()),
    ];
    let table = Table::new(context, report.methods.iter().map(to_value).collect());
    Rendered::new(&report, text).with_table(table)
}

/// A [`Generator`] with its types erased, for the command line.
pub trait GeneratorEntry {
    /// The presets.
    fn presets(&self) -> Vec<MethodInfo>;
    /// `--print-config`: the configuration of `source`.
    fn config(&self, source: ConfigSource) -> Result<Value, Error>;
    /// `generate`.
    fn generate(&self, source: ConfigSource, seed: u64) -> Result<Made, Error>;
}

struct GeneratorOf<P>(std::marker::PhantomData<P>);

impl<P: Generator> GeneratorEntry for GeneratorOf<P> {
    fn presets(&self) -> Vec<MethodInfo> {
        infos::<P::Preset>()
    }

    fn config(&self, source: ConfigSource) -> Result<Value, Error> {
        let config = source.resolve(P::DEFAULT_PRESET, P::preset_config)?;
        Ok(to_value(&config))
    }

    fn generate(&self, source: ConfigSource, seed: u64) -> Result<Made, Error> {
        let config = source.resolve(P::DEFAULT_PRESET, P::preset_config)?;
        let instance =
            P::generate_instance(&config, seed).map_err(|e| e.with_file_if(source.file))?;
        Ok(Made::new(&instance, P::summary(&instance)))
    }
}

/// The [`GeneratorEntry`] of a [`Generator`], for [`Entry::generator`] (and
/// [`ProblemEntry::generated`]).
pub fn generator<P: Generator + 'static>() -> Option<Box<dyn GeneratorEntry>> {
    Some(Box::new(GeneratorOf::<P>(std::marker::PhantomData)))
}

/// `write-lp` of a [`Problem`]: its one MILP ([`Problem::milp`]); `--model` is refused.
pub fn exact_milp<P: Problem>(
    file: &Path,
    model: Option<LpModel>,
) -> Result<(Milp, &'static str), Error> {
    let milp = P::milp(&P::model(&P::load(file)?))?;
    match model {
        None => Ok((milp, "the exact MILP")),
        Some(m) => Err(LpModel::refused(m, P::TAG, &[])),
    }
}

crate::named! {
    /// Which MILP `write-lp --model` writes, for the problems with several (one set of names
    /// for all: each problem takes its own and refuses the others).
    pub enum LpModel: "model" {
        /// smoe: the routing MILP of (1) (the default)
        Routing,
        /// smoe: the split MILP of (4) on the misses of Alg. 1's routing
        Split,
        /// cache-offline: the fixed-routing MILP (the optimum Belady must reach)
        Fixed,
        /// cache-offline: the flexible-routing MILP (the routers' bound; the default)
        Flexible,
    }
}

impl LpModel {
    /// The error for a `--model` value that `problem` (whose models are `takes`) has not.
    pub fn refused(model: LpModel, problem: &str, takes: &[LpModel]) -> Error {
        let reason = if takes.is_empty() {
            format!(
                "{problem} has one MILP; `{model}` is not one of its models (leave --model out)"
            )
        } else {
            let names: Vec<&str> = takes.iter().map(|m| m.name()).collect();
            format!(
                "{problem} has no MILP `{model}`; its models are {}",
                names.join(", ")
            )
        };
        Error::command_line("--model", reason)
    }
}

crate::named! {
    /// The file format of `write-lp --format`.
    pub enum LpFormat: "format" {
        /// CPLEX LP, moe-opt's writer (`Milp::to_lp`)
        Lp,
        /// MPS, HiGHS's own writer (`Milp::to_mps`)
        Mps,
    }
}

#[cfg(test)]
mod tests {
    /// Descriptions come from the variants' doc comments ([`crate::named!`]): a variant without
    /// one would show an empty line in `--help` and `problems`.
    #[test]
    fn every_method_and_preset_has_a_name_and_a_description() {
        for entry in crate::problems::builtin().entries() {
            let mut infos = entry.methods();
            infos.extend(entry.presets());
            for (name, description) in infos {
                assert!(
                    !name.is_empty() && !name.contains(' '),
                    "{}: `{name}`",
                    entry.tag()
                );
                assert!(!description.trim().is_empty(), "{}: {name}", entry.tag());
            }
        }
    }
}
