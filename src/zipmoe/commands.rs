//! The functions the command line calls for ZipMoE, each returning a serialisable report
//! (stable field names, units in the names, the moe-opt version and the instance's hash) with
//! a `text()` rendering for humans.

use std::fmt::Write;

use formulations::zipmoe::{lower_bound, GanttRow, Instance, LowerBound, Schedule, ZipMoeMilp};
use formulations::Error;
use serde::Serialize;

use super::generate::{self, GeneratorConfig, Preset};
use super::methods::{self, ExactReport, Method, MethodRun, Reference, RunOptions, ZipMoe};
use crate::generate::Made;
use crate::problem::{Problem, Runs};
use crate::registry::{self, Case, Commands, ImportArgs, Rendered};
use crate::render::ms;
use crate::report::{canonical_sha256, VERSION};
use crate::sweepable::Sweepable;

/// Identity and size of a layer.
#[derive(Debug, Clone, Serialize)]
pub struct LayerInfo {
    /// The instance's `name`.
    pub name: String,
    /// SHA-256 of its canonical JSON.
    pub sha256: String,
    /// Selected experts.
    pub experts: usize,
    /// Reconstruction tasks (tensors of non-full experts).
    pub tasks: usize,
    /// N, K, L.
    pub tensors_per_expert: u32,
    /// K.
    pub shards: u32,
    /// L.
    pub threads: u32,
    /// Experts per state, in the order missed, compressed, sm_cached, e_cached, full.
    pub states: [usize; 5],
}

impl LayerInfo {
    /// Describes an instance.
    pub fn new(instance: &Instance) -> Self {
        let mut states = [0; 5];
        for e in &instance.experts {
            states[e.state as usize] += 1;
        }
        LayerInfo {
            name: instance.name.clone(),
            sha256: canonical_sha256(instance),
            experts: instance.experts.len(),
            tasks: instance.tasks().len(),
            tensors_per_expert: instance.tensors_per_expert,
            shards: instance.shards,
            threads: instance.threads,
            states,
        }
    }
}

/// One method's line.
#[derive(Debug, Clone, Serialize)]
pub struct MethodReport {
    /// The method.
    pub method: Method,
    /// The evaluator's makespan, seconds (null without a schedule).
    pub makespan_s: Option<f64>,
    /// makespan / reference (see the report's `reference`).
    pub ratio: Option<f64>,
    /// Completion of the I/O thread, seconds.
    pub io_end_s: Option<f64>,
    /// Delta of Def. B.1, seconds.
    pub charge_s: Option<f64>,
    /// Blocks (Alg. 1).
    pub blocks: Option<usize>,
    /// Wall-clock seconds of the method.
    pub runtime_s: f64,
    /// The MILP's status, objective, bound and gap.
    pub exact: Option<ExactReport>,
}

impl MethodReport {
    fn new(run: &MethodRun, reference: Reference) -> Self {
        let s = run.solution.as_ref();
        MethodReport {
            method: run.method,
            makespan_s: s.map(|s| s.makespan_s),
            ratio: s.and_then(|s| reference.ratio(s.makespan_s)),
            io_end_s: s.map(|s| s.io_end_s),
            charge_s: s.map(|s| s.charge_s),
            blocks: run.detail,
            runtime_s: run.runtime_s,
            exact: run.exact.clone(),
        }
    }

    /// The columns of [`MethodReport::row`].
    const HEADERS: [&'static str; 5] = ["method", "makespan (ms)", "ratio", "status", "bound (ms)"];

    /// The line's cells for the text table (milliseconds, as the other problems' tables).
    fn row(&self) -> Vec<String> {
        vec![
            self.method.name().to_string(),
            ms(self.makespan_s),
            self.ratio.map_or("-".into(), |r| format!("{r:.4}")),
            crate::render::status_cell(self.exact.as_ref()),
            ms(self.exact.as_ref().and_then(|e| e.best_bound)),
        ]
    }

    /// The text table of some lines.
    fn table(lines: &[&MethodReport]) -> String {
        let rows: Vec<Vec<String>> = lines.iter().map(|l| l.row()).collect();
        crate::render::table(&Self::HEADERS, &rows, 1)
    }
}

/// Lemma B.3's bound and its terms, in milliseconds.
fn lower_bound_text(lb: &LowerBound) -> String {
    format!(
        "Lemma B.3 lower bound {} ms (I {}, C/L {}, P {}, critical path Z {})",
        ms(Some(lb.value_s)),
        ms(Some(lb.io_s)),
        ms(Some(lb.compute_per_thread_s)),
        ms(Some(lb.token_s)),
        ms(Some(lb.critical_path_s))
    )
}

/// Output of `solve`.
#[derive(Debug, Clone, Serialize)]
pub struct SolveReport {
    /// moe-opt version.
    pub moe_opt_version: &'static str,
    /// The layer.
    pub layer: LayerInfo,
    /// The method's line (ratio null).
    pub result: MethodReport,
    /// Lemma B.3's terms.
    pub lower_bound: LowerBound,
    /// The Gantt chart of the schedule.
    pub gantt: Vec<GanttRow>,
}

impl SolveReport {
    /// For humans.
    pub fn text(&self) -> String {
        format!(
            "{}\n{}{}\n",
            self.layer.name,
            MethodReport::table(&[&self.result]),
            lower_bound_text(&self.lower_bound)
        )
    }
}

/// Runs one method.
pub fn solve(
    instance: &Instance,
    method: Method,
    options: &RunOptions,
) -> Result<SolveReport, Error> {
    Ok(solve_report(
        instance,
        &methods::run(method, instance, options)?,
    ))
}

/// The report of one run.
fn solve_report(instance: &Instance, run: &MethodRun) -> SolveReport {
    SolveReport {
        moe_opt_version: VERSION,
        layer: LayerInfo::new(instance),
        result: MethodReport::new(run, Reference::None),
        lower_bound: lower_bound(instance),
        gantt: run
            .solution
            .as_ref()
            .map(|s| s.rows.clone())
            .unwrap_or_default(),
    }
}

/// Output of `compare`.
#[derive(Debug, Clone, Serialize)]
pub struct CompareReport {
    /// moe-opt version.
    pub moe_opt_version: &'static str,
    /// The layer.
    pub layer: LayerInfo,
    /// What ratios are taken against.
    pub reference: Reference,
    /// Lemma B.3's lower bound and its terms (Z is Def. B.2's longest critical path).
    pub lower_bound: LowerBound,
    /// One line per method, in the order run; methods that could not run (too large) are
    /// listed in `skipped`.
    pub methods: Vec<MethodReport>,
    /// Methods refused, with the reason.
    pub skipped: Vec<(Method, String)>,
}

impl CompareReport {
    /// For humans.
    pub fn text(&self) -> String {
        let mut s = format!(
            "{}\nreference: {}\n",
            self.layer.name,
            match self.reference {
                Reference::Optimum { value, source } =>
                    format!("proved optimum {} ms ({source})", ms(Some(value))),
                Reference::Bound { value, source } => format!(
                    "no proved optimum; best proved bound {} ms ({source})",
                    ms(Some(value))
                ),
                Reference::None => crate::render::reference(Reference::None),
            }
        );
        s.push_str(&MethodReport::table(
            &self.methods.iter().collect::<Vec<_>>(),
        ));
        for (m, why) in &self.skipped {
            let _ = writeln!(s, "{:<20} skipped: {why}", m.name());
        }
        let _ = writeln!(s, "{}", lower_bound_text(&self.lower_bound));
        s
    }
}

/// Runs several methods; exact methods that refuse the size are skipped, not fatal.
pub fn compare(
    instance: &Instance,
    which: &[Method],
    options: &RunOptions,
) -> Result<CompareReport, Error> {
    let runs = crate::problem::run_all::<ZipMoe>(instance, which, options)?;
    Ok(compare_report(instance, &runs))
}

/// The report of the runs.
fn compare_report(instance: &Instance, runs: &Runs<ZipMoe>) -> CompareReport {
    CompareReport {
        moe_opt_version: VERSION,
        layer: LayerInfo::new(instance),
        reference: runs.reference,
        lower_bound: lower_bound(instance),
        methods: runs
            .runs
            .iter()
            .map(|r| MethodReport::new(r, runs.reference))
            .collect(),
        skipped: runs.skipped.clone(),
    }
}

/// The MILP in CPLEX LP format.
pub fn write_lp(instance: &Instance) -> Result<String, Error> {
    Ok(ZipMoeMilp::build(instance)?.milp.to_lp())
}

/// A Gantt chart as CSV (header resource, operation, expert, tensor, shard, start_s, end_s).
pub fn gantt_csv(rows: &[GanttRow]) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in rows {
        w.serialize(r).expect("rows serialise");
    }
    String::from_utf8(w.into_inner().expect("in-memory writer")).expect("CSV is UTF-8")
}

crate::generator!(
    ZipMoe,
    GeneratorConfig,
    Preset::Small,
    Instance,
    generate::try_generate
);

/// ZipMoE's layer schedule (the cache-pool plan is
/// [`crate::zipmoe::planning::commands::PoolEntry`]).
impl Commands for ZipMoe {
    fn claims() -> Vec<Box<dyn crate::verify::ClaimGroup>> {
        vec![Box::new(super::claims::table())]
    }

    fn import(args: &ImportArgs) -> Result<Made, Error> {
        args.import_counts(Self::TAG, generate::import)
    }

    /// `--csv`: the Gantt chart, a row per operation.
    fn solve_report(case: &Case<Self>, run: &MethodRun) -> Result<Rendered, Error> {
        let report = solve_report(case.instance, run);
        let rows = report.gantt.iter().map(registry::to_value).collect();
        Ok(Rendered::solve(&report, report.text(), rows))
    }

    fn compare_report(case: &Case<Self>, runs: &Runs<Self>) -> Result<Rendered, Error> {
        let report = compare_report(case.instance, runs);
        Ok(Rendered::compare(&report, report.text()))
    }

    fn families() -> Vec<crate::parametric::ParametricFamily> {
        super::parametric::families()
    }
}

/// Sweeps: the makespan (minimised), and Lemma B.3's lower bound max{I, C/L, P, Z} of the
/// cell's instance (the same on every row of a cell) beside it.
impl Sweepable for ZipMoe {
    const SECONDARY: &'static str = "lower_bound_s";

    /// The evaluator's schedules respect every precedence and resource.
    fn feasible(_: &Schedule) -> bool {
        true
    }

    fn secondary(instance: &Instance, _: &MethodRun, _: u64) -> Option<f64> {
        Some(lower_bound(instance).value_s)
    }
}
