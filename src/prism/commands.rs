//! The Prism commands the command line calls: [`compare`] and [`migrate`] (`solve` and
//! `write-lp` go through the registry; `eplb` is [`crate::eplb::eplb_command`]). Each returns a `Serialize` report
//! (moe-opt version, the instance's canonical SHA-256) with a `text()` rendering.
//!
//! Latency: besides the proxy (2), [`compare`] evaluates eq. (1) on a sampled batch of
//! requests (the simulator's request sampler `workload_requests`, so the batch is the same for
//! every method) and, with the simulator of Section IV-C, the mean and p95 latency per server.
//! Both need the instance's `workload` (eq. (1) also its `network`); without them they are null.

use std::fmt::Write;
use std::path::Path;

use formulations::prism::{load, Instance, Placement, Request};
use formulations::Error;
use serde::Serialize;

use formulations::prism::evaluate::Evaluation;
use serde_json::json;

use super::algorithms::{self, MigrationConfig, MigrationRun, MigrationStats};
use super::generate::{try_generate, GeneratorConfig, Preset};
use super::import::from_activation_counts;
use super::latency::{latency_of, sampled_batch, LatencyReport};
use super::methods::{self, ExactReport, Method, MethodRun, Prism, Reference, RunOptions};
use crate::generate::Made;
use crate::problem::{Problem, Runs};
use crate::registry::{Case, Commands, ImportArgs, Rendered};
use crate::report::{canonical_sha256, VERSION};
use crate::sweepable::Sweepable;

/// Identity and size of the instance a report is about.
#[derive(Debug, Clone, Serialize)]
pub struct InstanceInfo {
    /// The instance's `name`.
    pub name: String,
    /// SHA-256 of its canonical JSON.
    pub sha256: String,
    /// Servers N.
    pub servers: usize,
    /// GPUs sum_n G_n.
    pub gpus: usize,
    /// MoE layers L.
    pub layers: usize,
    /// Experts per layer E.
    pub experts_per_layer: usize,
    /// Top-K.
    pub top_k: u32,
}

impl InstanceInfo {
    /// Describes an instance.
    pub fn new(instance: &Instance) -> Self {
        InstanceInfo {
            name: instance.name.clone(),
            sha256: canonical_sha256(instance),
            servers: instance.servers.len(),
            gpus: instance.gpu_count(),
            layers: instance.layers(),
            experts_per_layer: instance.experts_per_layer(),
            top_k: instance.model.top_k,
        }
    }

    /// `name (N servers, G GPUs, L x E experts, top-K)`, the first line of the reports.
    pub fn title(&self) -> String {
        format!(
            "{} ({} servers, {} GPUs, {} x {} experts, top-{})",
            self.name, self.servers, self.gpus, self.layers, self.experts_per_layer, self.top_k
        )
    }
}

/// One method's line of a report.
#[derive(Debug, Clone, Serialize)]
pub struct MethodLine {
    /// Method name.
    pub method: Method,
    /// Proxy cost (2): expected remote invocations, one token at every server; null without a
    /// placement.
    pub proxy_cost: Option<f64>,
    /// Per server C_n.
    pub server_cost: Option<Vec<f64>>,
    /// Mean expected local-compute ratio.
    pub local_compute_ratio: Option<f64>,
    /// Coverage and memory hold.
    pub feasible: Option<bool>,
    /// proxy_cost / reference (a ratio to the proved optimum, or to a lower bound on it).
    pub ratio: Option<f64>,
    /// Latency on the sampled batch and in simulation.
    pub latency: Option<LatencyReport>,
    /// Wall-clock seconds of the method.
    pub runtime_s: f64,
    /// The MILP's status, objective, bound and gap.
    pub exact: Option<ExactReport>,
    /// Why there is no placement, or what was left out.
    pub note: Option<String>,
}

impl MethodLine {
    /// The line of a run.
    pub fn new(
        instance: &Instance,
        run: &MethodRun,
        reference: Reference,
        batch: Option<&[Request]>,
        seed: u64,
    ) -> Self {
        let e = run.evaluation.as_ref();
        MethodLine {
            method: run.method,
            proxy_cost: e.map(|e| e.proxy_cost),
            server_cost: e.map(|e| e.server_cost.clone()),
            local_compute_ratio: e.map(|e| e.overall_local_compute_ratio),
            feasible: e.map(|e| e.feasible),
            ratio: e.and_then(|e| reference.ratio(e.proxy_cost)),
            latency: run
                .solution
                .as_ref()
                .and_then(|p| latency_of(instance, p, batch, seed)),
            runtime_s: run.runtime_s,
            exact: run.exact.clone(),
            note: run.note.clone(),
        }
    }

    /// The columns of [`MethodLine::row`].
    const HEADERS: [&'static str; 9] = [
        "method",
        "status / note",
        "cost (2)",
        "ratio",
        "feasible",
        "eq. (1) s",
        "remote",
        "sim mean s",
        "runtime (s)",
    ];

    /// The line's cells for the text table.
    fn row(&self) -> Vec<String> {
        let opt = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.4}"));
        let lat = self.latency.as_ref();
        let status = self.exact.as_ref().map(crate::render::status);
        let note = [status, self.note.clone()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("; ");
        vec![
            self.method.name().to_string(),
            note,
            opt(self.proxy_cost),
            opt(self.ratio),
            self.feasible.map_or("-".into(), |f| f.to_string()),
            opt(lat.map(|l| l.eq1_total_s)),
            lat.map_or("-".into(), |l| l.remote_invocations.to_string()),
            opt(lat.and_then(|l| l.sim_overall_mean_s)),
            format!("{:.3}", self.runtime_s),
        ]
    }

    /// The text table of some lines; a note longer than [`NOTE_WIDTH`] stands below the
    /// table as a footnote (`[1]`), so that one long note does not widen every row.
    fn table(lines: &[&MethodLine]) -> String {
        let mut footnotes = Vec::new();
        let rows: Vec<Vec<String>> = lines
            .iter()
            .map(|l| {
                let mut row = l.row();
                if row[1].chars().count() > NOTE_WIDTH {
                    footnotes.push(std::mem::take(&mut row[1]));
                    row[1] = format!("[{}]", footnotes.len());
                }
                row
            })
            .collect();
        let mut text = crate::render::table(&Self::HEADERS, &rows, 2);
        for (i, note) in footnotes.iter().enumerate() {
            text.push_str(&format!("  [{}] {note}\n", i + 1));
        }
        text
    }
}

/// The widest status / note cell of a text table; longer notes become footnotes.
const NOTE_WIDTH: usize = 40;

/// Output of `moe-opt solve` for a Prism instance.
#[derive(Debug, Clone, Serialize)]
pub struct SolveReport {
    /// moe-opt version.
    pub moe_opt_version: &'static str,
    /// The instance.
    pub instance: InstanceInfo,
    /// The method's line (no ratio: a single method has no reference).
    pub result: MethodLine,
    /// The placement z_{n,g}^e, if any.
    pub placement: Option<Placement>,
}

impl SolveReport {
    /// For humans.
    pub fn text(&self) -> String {
        let mut out = format!(
            "{}\n{}",
            self.instance.title(),
            MethodLine::table(&[&self.result])
        );
        if let Some(p) = &self.placement {
            for (n, server) in p.gpus.iter().enumerate() {
                for (g, list) in server.iter().enumerate() {
                    let names: Vec<String> = list.iter().map(|r| r.to_string()).collect();
                    let _ = writeln!(out, "  server {n} gpu {g}: {}", names.join(" "));
                }
            }
        }
        out
    }
}

/// The report of one run.
fn solve_report(instance: &Instance, run: &MethodRun, options: &RunOptions) -> SolveReport {
    let batch = sampled_batch(instance, options.seed);
    SolveReport {
        moe_opt_version: VERSION,
        instance: InstanceInfo::new(instance),
        result: MethodLine::new(
            instance,
            run,
            Reference::None,
            batch.as_deref(),
            options.seed,
        ),
        placement: run.solution.clone(),
    }
}

/// Output of `moe-opt compare` for a Prism instance.
#[derive(Debug, Clone, Serialize)]
pub struct CompareReport {
    /// moe-opt version.
    pub moe_opt_version: &'static str,
    /// The instance.
    pub instance: InstanceInfo,
    /// What ratios are taken against.
    pub reference: Reference,
    /// One line per method, in the order run.
    pub methods: Vec<MethodLine>,
}

impl CompareReport {
    /// For humans.
    pub fn text(&self) -> String {
        let mut out = format!(
            "{}; reference: {}\n",
            self.instance.title(),
            crate::render::reference(self.reference)
        );
        out.push_str(&MethodLine::table(&self.methods.iter().collect::<Vec<_>>()));
        out
    }
}

/// `moe-opt compare FILE --methods ...`: several methods, each with its ratio to the proved
/// optimum (MILP or exhaustive) when one of them is run and proves it.
pub fn compare(
    instance: &Instance,
    methods_to_run: &[Method],
    options: &RunOptions,
) -> Result<CompareReport, Error> {
    let runs = crate::problem::run_all::<Prism>(instance, methods_to_run, options)?;
    compare_report(instance, &runs, options)
}

/// The report of the runs; an exact method refused by its size limit ends the command.
fn compare_report(
    instance: &Instance,
    runs: &Runs<Prism>,
    options: &RunOptions,
) -> Result<CompareReport, Error> {
    if let Some((_, why)) = runs.skipped.first() {
        return Err(Error::TooLarge(why.clone()));
    }
    let reference = runs.reference;
    let batch = sampled_batch(instance, options.seed);
    Ok(CompareReport {
        moe_opt_version: VERSION,
        instance: InstanceInfo::new(instance),
        reference,
        methods: runs
            .runs
            .iter()
            .map(|r| MethodLine::new(instance, r, reference, batch.as_deref(), options.seed))
            .collect(),
    })
}

/// Most windows of `migrate` (each is planned, and holds its own frequencies).
pub const MAX_MIGRATE_WINDOWS: u64 = 10_000;

/// Most frequencies of all windows of `migrate`, windows x servers x layers x experts (`f64`
/// each: 256 MB at the limit).
pub const MAX_WINDOW_FREQUENCIES: u64 = 1 << 25;

/// The drift and the migration parameters of `moe-opt migrate`.
#[derive(Debug, Clone, Serialize)]
pub struct MigrateConfig {
    /// Windows (e.g. 5-minute intervals).
    pub windows: usize,
    /// First window with the drift.
    pub drift_at: usize,
    /// The server whose task mix changes.
    pub drift_server: usize,
    /// The server whose mix it moves to.
    pub drift_to: usize,
    /// How far it moves, in [0, 1].
    pub mix: f64,
    /// Tokens per server per window.
    pub tokens_per_window: f64,
    /// Seconds per remote invocation; `None`: the mean over server pairs of the round trip of
    /// one token's hidden state (`network`).
    pub remote_invocation_s: Option<f64>,
    /// Statistics the planner sees.
    pub stats: MigrationStats,
    /// Charge removals in (3).
    pub charge_removals: bool,
    /// speed_{n,g} of (3), bit/s, for GPUs whose `io_bps` is not given (`None`: every GPU
    /// must have one).
    pub default_io_bps: Option<f64>,
    /// The planner (any method; the paper runs every method under Prism's migration rule).
    pub method: Method,
}

/// Output of `moe-opt migrate`.
#[derive(Debug, Clone, Serialize)]
pub struct MigrateReport {
    /// moe-opt version.
    pub moe_opt_version: &'static str,
    /// The instance.
    pub instance: InstanceInfo,
    /// The configuration, with the remote invocation time used.
    pub config: MigrateConfig,
    /// Seconds per remote invocation used.
    pub remote_invocation_s: f64,
    /// The run.
    pub run: MigrationRun,
    /// The same windows without migration (the initial placement throughout), seconds.
    pub static_total_served_cost_s: f64,
}

impl MigrateReport {
    /// For humans.
    pub fn text(&self) -> String {
        let mut out = format!(
            "{}: {} windows, drift of server {} toward server {} (mix {}) from window {}, planner {}\n",
            self.instance.name,
            self.config.windows,
            self.config.drift_server,
            self.config.drift_to,
            self.config.mix,
            self.config.drift_at,
            self.config.method
        );
        let opt = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.4}"));
        let rows: Vec<Vec<String>> = self
            .run
            .windows
            .iter()
            .map(|w| {
                vec![
                    w.window.to_string(),
                    if w.migrated {
                        format!("migrate ({} bytes)", w.transferred_bytes)
                    } else {
                        "stay".to_string()
                    },
                    opt(w.current_cost_s),
                    opt(w.candidate_cost_s),
                    opt(w.migration_s),
                    format!("{:.4}", w.served_proxy_cost),
                    format!("{:.4}", w.served_cost_s),
                ]
            })
            .collect();
        out.push_str(&crate::render::table(
            &[
                "window",
                "decision",
                "C(P) s",
                "C(P') s",
                "T_mig s",
                "served (2)",
                "served s",
            ],
            &rows,
            2,
        ));
        let _ = writeln!(
            out,
            "migrations {}, served {:.4} s + migration {:.4} s (static placement: {:.4} s), {} bytes moved",
            self.run.migrations,
            self.run.total_served_cost_s,
            self.run.total_migration_s,
            self.static_total_served_cost_s,
            self.run.total_transferred_bytes
        );
        out
    }
}

/// Mean over ordered server pairs of the round trip of one token's hidden state.
pub fn mean_remote_round_trip_s(instance: &Instance) -> Option<f64> {
    let net = instance.network.as_ref()?;
    let n = instance.servers.len();
    let mut sum = 0.0;
    let mut pairs = 0;
    for a in 0..n {
        for b in (0..n).filter(|&b| b != a) {
            let (x, y) = (
                formulations::prism::ServerId(a as u32),
                formulations::prism::ServerId(b as u32),
            );
            sum += net.transfer_time(x, y, instance.model.hidden_bytes)
                + net.transfer_time(y, x, instance.model.hidden_bytes);
            pairs += 1;
        }
    }
    (pairs > 0).then(|| sum / pairs as f64)
}

/// Runs the migration rule on an instance (no file); errors name the flag of the configuration
/// field.
pub fn migrate_instance(
    instance: &Instance,
    config: &MigrateConfig,
    options: &RunOptions,
) -> Result<MigrateReport, Error> {
    // The configuration comes from the command line: errors name its flags.
    let invalid = |field: &str, reason: String| {
        Error::command_line(format!("--{}", field.replace('_', "-")), reason)
    };
    let n = instance.servers.len();
    if config.windows == 0 {
        return Err(invalid("windows", "must be >= 1".into()));
    }
    // Every window holds its own copy of the frequencies (servers x layers x experts).
    let per_window: u64 = instance
        .servers
        .iter()
        .map(|s| {
            s.frequencies
                .iter()
                .map(|row| row.len() as u64)
                .sum::<u64>()
        })
        .sum();
    formulations::error::at_most(
        "windows",
        "windows",
        config.windows as u64,
        MAX_MIGRATE_WINDOWS,
        "moe_opt::prism::commands::MAX_MIGRATE_WINDOWS",
    )
    .and_then(|()| {
        formulations::error::at_most(
            "windows",
            "frequencies (windows x servers x layers x experts)",
            (config.windows as u64).saturating_mul(per_window),
            MAX_WINDOW_FREQUENCIES,
            "moe_opt::prism::commands::MAX_WINDOW_FREQUENCIES",
        )
    })
    .map_err(|e| Error::command_line("--windows", e.reason))?;
    if config.drift_server >= n || config.drift_to >= n {
        return Err(invalid(
            "drift_server",
            format!("--drift-server and --drift-to must be in 0..{n} (servers)"),
        ));
    }
    if !(0.0..=1.0).contains(&config.mix) {
        return Err(invalid("mix", format!("{} is not in [0, 1]", config.mix)));
    }
    let remote_s = match config.remote_invocation_s {
        Some(s) => s,
        None => mean_remote_round_trip_s(instance).ok_or_else(|| {
            invalid(
                "remote_invocation_s",
                "the instance has no network; give the seconds per remote invocation".into(),
            )
        })?,
    };
    if let Some(bps) = config.default_io_bps {
        if !(bps.is_finite() && bps > 0.0) {
            return Err(invalid("default_io_bps", format!("{bps} must be positive")));
        }
    }
    let mut filled = instance.clone();
    for gpu in filled.servers.iter_mut().flat_map(|s| s.gpus.iter_mut()) {
        gpu.io_bps = gpu.io_bps.or(config.default_io_bps);
    }
    let instance = &filled;
    let windows = algorithms::drift_windows(
        instance,
        config.windows,
        config.drift_at,
        config.drift_server,
        config.drift_to,
        config.mix,
    );
    let method = config.method;
    let planner = |i: &Instance| -> Result<Placement, String> {
        let run = methods::run(method, i, options).map_err(|e| e.to_string())?;
        run.solution.ok_or_else(|| {
            run.note
                .unwrap_or_else(|| format!("{method}: no placement"))
        })
    };
    let mc = MigrationConfig {
        tokens_per_window: config.tokens_per_window,
        remote_invocation_s: remote_s,
        stats: config.stats,
        charge_removals: config.charge_removals,
    };
    // The method failing on the instance: an error about the instance (named by `migrate`).
    let failed = |reason: String| Error::Invalid {
        path: "<instance>".into(),
        field: format!("method {method}"),
        reason,
    };
    let run = algorithms::migrate(instance, &windows, &mc, &planner).map_err(failed)?;
    let initial = planner(&algorithms::with_frequencies(instance, &windows[0])).map_err(failed)?;
    let static_total = windows
        .iter()
        .map(|w| {
            formulations::prism::proxy_cost(&algorithms::with_frequencies(instance, w), &initial)
                * config.tokens_per_window
                * remote_s
        })
        .sum();
    Ok(MigrateReport {
        moe_opt_version: VERSION,
        instance: InstanceInfo::new(instance),
        config: config.clone(),
        remote_invocation_s: remote_s,
        run,
        static_total_served_cost_s: static_total,
    })
}

/// `moe-opt migrate FILE ...`: the window sequence report (reading the instance file).
pub fn migrate(
    path: &Path,
    config: &MigrateConfig,
    options: &RunOptions,
) -> Result<MigrateReport, Error> {
    migrate_instance(&load(path)?, config, options).map_err(|e| e.with_file(path))
}

crate::generator!(
    Prism,
    GeneratorConfig,
    Preset::Small,
    Instance,
    try_generate
);

/// Prism's commands (`migrate` is its own).
impl Commands for Prism {
    fn claims() -> Vec<Box<dyn crate::verify::ClaimGroup>> {
        vec![Box::new(super::claims::table())]
    }

    fn import(args: &ImportArgs) -> Result<Made, Error> {
        args.import_counts(Self::TAG, from_activation_counts)
    }

    /// `--csv`: a row per (server, GPU, expert) of the placement.
    fn solve_report(case: &Case<Self>, run: &MethodRun) -> Result<Rendered, Error> {
        let report = solve_report(case.instance, run, case.options);
        let mut rows = Vec::new();
        for (n, gpus) in report
            .placement
            .iter()
            .flat_map(|p| p.gpus.iter().enumerate())
        {
            for (g, experts) in gpus.iter().enumerate() {
                for e in experts {
                    rows.push(json!({"server": n, "gpu": g, "layer": e.layer, "expert": e.expert}));
                }
            }
        }
        Ok(Rendered::solve(&report, report.text(), rows))
    }

    fn compare_report(case: &Case<Self>, runs: &Runs<Self>) -> Result<Rendered, Error> {
        let report = compare_report(case.instance, runs, case.options)?;
        Ok(Rendered::compare(&report, report.text()))
    }

    fn families() -> Vec<crate::parametric::ParametricFamily> {
        super::parametric::families()
    }
}

/// Sweeps: the proxy cost (2) (minimised), and the simulated mean latency over all requests
/// (Section IV-C's simulator on the instance's workload, the same requests for every method)
/// beside it.
impl Sweepable for Prism {
    const SECONDARY: &'static str = "sim_mean_latency_s";

    fn feasible(evaluation: &Evaluation) -> bool {
        evaluation.feasible
    }

    fn secondary(instance: &Instance, run: &MethodRun, seed: u64) -> Option<f64> {
        let batch = sampled_batch(instance, seed);
        let placement = run.solution.as_ref()?;
        latency_of(instance, placement, batch.as_deref(), seed)?.sim_overall_mean_s
    }
}
