//! The balance commands' reports: `solve` (a layer's account per row: busiest GPU, mean,
//! balancedness, and for the exact method its status, bound and gap) and `compare` (a method
//! per row: the sum of the layers' maxima, its ratio to the reference, the balancedness over
//! layers and its spread).

use formulations::balance::{Evaluation, Instance};
use formulations::Error;
use serde::Serialize;

use super::exact::LayerSolve;
use super::generate::{self, GeneratorConfig, Preset};
use super::methods::{Balance, ExactReport, Method, MethodRun, Reference};
use crate::generate::Made;
use crate::problem::{Problem, Runs};
use crate::registry::{Case, Commands, ImportArgs, Rendered};
use crate::report::{canonical_sha256, VERSION};
use crate::sweepable::Sweepable;

/// Identity and shape of an instance.
#[derive(Debug, Clone, Serialize)]
pub struct InstanceInfo {
    /// The instance's `name`.
    pub name: String,
    /// SHA-256 of its canonical JSON.
    pub sha256: String,
    /// Layers.
    pub layers: usize,
    /// Logical experts per layer.
    pub experts: usize,
    /// Physical slots per layer.
    pub slots: usize,
    /// GPUs.
    pub gpus: usize,
    /// Nodes.
    pub nodes: usize,
    /// Groups.
    pub groups: usize,
    /// At most one replica of an expert per GPU.
    pub one_replica_per_gpu: bool,
    /// Whole groups per node.
    pub hierarchical: bool,
}

impl InstanceInfo {
    /// Describes an instance.
    pub fn new(instance: &Instance) -> Self {
        let s = instance.shape();
        InstanceInfo {
            name: instance.name.clone(),
            sha256: canonical_sha256(instance),
            layers: instance.loads.len(),
            experts: s.experts,
            slots: s.slots,
            gpus: s.gpus,
            nodes: s.nodes,
            groups: s.groups,
            one_replica_per_gpu: s.one_per_gpu,
            hierarchical: s.hierarchical,
        }
    }
}

/// One method's line.
#[derive(Debug, Clone, Serialize)]
pub struct MethodLine {
    /// The method.
    pub method: Method,
    /// Sum over layers of the busiest GPU's load (null without a plan).
    pub sum_max_load: Option<f64>,
    /// sum_max_load / the reference.
    pub ratio: Option<f64>,
    /// Sum of the layers' means / sum of their maxima.
    pub balancedness: Option<f64>,
    /// The layers' smallest balancedness.
    pub balancedness_min: Option<f64>,
    /// Their median.
    pub balancedness_p50: Option<f64>,
    /// Replicas moved from `current` (absent without it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moved: Option<usize>,
    /// Wall-clock seconds.
    pub runtime_s: f64,
    /// The exact method's status, incumbent, bound and gap (sums over layers).
    pub exact: Option<ExactReport>,
    /// Why there is no plan.
    pub note: Option<String>,
}

impl MethodLine {
    fn new(run: &MethodRun, reference: Reference) -> Self {
        let e: Option<&Evaluation> = run.evaluation.as_ref();
        MethodLine {
            method: run.method,
            sum_max_load: e.map(|e| e.sum_max_load),
            ratio: e.and_then(|e| reference.ratio(e.sum_max_load)),
            balancedness: e.map(|e| e.balancedness),
            balancedness_min: e.map(|e| e.balancedness_spread.min),
            balancedness_p50: e.map(|e| e.balancedness_spread.p50),
            moved: e.and_then(|e| e.moved),
            runtime_s: run.runtime_s,
            exact: run.exact.clone(),
            note: run.note.clone(),
        }
    }

    const HEADERS: [&'static str; 8] = [
        "method",
        "sum of max loads",
        "ratio",
        "balancedness",
        "min layer",
        "status",
        "runtime (s)",
        "note",
    ];

    fn row(&self) -> Vec<String> {
        let f = |x: Option<f64>, d: usize| x.map_or("-".to_string(), |v| format!("{v:.d$}"));
        vec![
            self.method.name().to_string(),
            f(self.sum_max_load, 3),
            f(self.ratio, 6),
            f(self.balancedness, 4),
            f(self.balancedness_min, 4),
            crate::render::status_cell(self.exact.as_ref()),
            format!("{:.3}", self.runtime_s),
            self.note.clone().unwrap_or_default(),
        ]
    }
}

/// One layer's line of `solve`.
#[derive(Debug, Clone, Serialize)]
pub struct LayerLine {
    /// The layer.
    pub layer: usize,
    /// The busiest GPU's load.
    pub max_load: f64,
    /// The mean GPU load.
    pub mean_load: f64,
    /// mean / max.
    pub balancedness: f64,
    /// Replicas moved from `current`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moved: Option<usize>,
    /// Each expert's replicas.
    pub replica_counts: Vec<usize>,
    /// The exact method's account of the layer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exact: Option<LayerSolve>,
}

/// Output of `solve`.
#[derive(Debug, Clone, Serialize)]
pub struct SolveReport {
    /// moe-opt version.
    pub moe_opt_version: &'static str,
    /// The problem.
    pub problem: &'static str,
    /// The instance.
    pub instance: InstanceInfo,
    /// The method's line.
    pub result: MethodLine,
    /// The balancedness over layers (null without a plan).
    pub balancedness_spread: Option<formulations::balance::Spread>,
    /// One line per layer.
    pub layers: Vec<LayerLine>,
    /// The plan: `phy2log[layer][slot]` (null without one).
    pub phy2log: Option<Vec<Vec<usize>>>,
}

impl SolveReport {
    /// The report of one run.
    pub fn new(instance: &Instance, run: &MethodRun) -> Self {
        let layers = run.evaluation.as_ref().map_or_else(Vec::new, |e| {
            e.layers
                .iter()
                .enumerate()
                .map(|(l, x)| LayerLine {
                    layer: l,
                    max_load: x.max_load,
                    mean_load: x.mean_load,
                    balancedness: x.balancedness,
                    moved: x.moved,
                    replica_counts: x.replica_counts.clone(),
                    exact: run.detail.get(l).cloned(),
                })
                .collect()
        });
        SolveReport {
            moe_opt_version: VERSION,
            problem: "balance",
            instance: InstanceInfo::new(instance),
            result: MethodLine::new(run, Reference::None),
            balancedness_spread: run
                .evaluation
                .as_ref()
                .map(|e| e.balancedness_spread.clone()),
            layers,
            phy2log: run.solution.as_ref().map(|p| p.phy2log.clone()),
        }
    }

    /// For humans: the method's line, then a line per layer.
    pub fn text(&self) -> String {
        let mut out = format!(
            "{} ({} layers, {} experts, {} slots on {} GPUs)\n{}",
            self.instance.name,
            self.instance.layers,
            self.instance.experts,
            self.instance.slots,
            self.instance.gpus,
            crate::render::table(&MethodLine::HEADERS, &[self.result.row()], 1)
        );
        let rows: Vec<Vec<String>> = self
            .layers
            .iter()
            .map(|l| {
                let e = l.exact.as_ref();
                vec![
                    l.layer.to_string(),
                    format!("{:.3}", l.max_load),
                    format!("{:.3}", l.mean_load),
                    format!("{:.4}", l.balancedness),
                    e.map_or("-".into(), |e| e.status.to_string()),
                    e.map_or("-".into(), |e| format!("{:.3}", e.bound)),
                    e.map_or("-".into(), |e| format!("{:.4}%", e.gap * 100.0)),
                    e.map_or("-".into(), |e| format!("{:.2}", e.time_s)),
                ]
            })
            .collect();
        out.push_str(&crate::render::table(
            &[
                "layer",
                "max load",
                "mean load",
                "balancedness",
                "status",
                "bound",
                "gap",
                "time (s)",
            ],
            &rows,
            1,
        ));
        out
    }
}

/// Output of `compare`.
#[derive(Debug, Clone, Serialize)]
pub struct CompareReport {
    /// moe-opt version.
    pub moe_opt_version: &'static str,
    /// The problem.
    pub problem: &'static str,
    /// The instance.
    pub instance: InstanceInfo,
    /// What ratios are taken against.
    pub reference: Reference,
    /// One line per method that ran.
    pub methods: Vec<MethodLine>,
    /// Methods refused by their size limits, with the reason.
    pub skipped: Vec<(Method, String)>,
}

impl CompareReport {
    /// The report of the runs.
    pub fn new(instance: &Instance, runs: &Runs<Balance>) -> Self {
        CompareReport {
            moe_opt_version: VERSION,
            problem: "balance",
            instance: InstanceInfo::new(instance),
            reference: runs.reference,
            methods: runs
                .runs
                .iter()
                .map(|r| MethodLine::new(r, runs.reference))
                .collect(),
            skipped: runs.skipped.clone(),
        }
    }

    /// For humans.
    pub fn text(&self) -> String {
        let rows: Vec<Vec<String>> = self.methods.iter().map(MethodLine::row).collect();
        let mut out = format!(
            "{}: {}\n{}",
            self.instance.name,
            crate::render::reference(self.reference),
            crate::render::table(&MethodLine::HEADERS, &rows, 1)
        );
        for (m, why) in &self.skipped {
            out.push_str(&format!("{:<14} skipped: {why}\n", m.name()));
        }
        out
    }
}

crate::generator!(
    Balance,
    GeneratorConfig,
    Preset::Tiny,
    Instance,
    generate::generate
);

/// Balance's commands: the reports above, the generator, the importer of activation counts and
/// sweeps.
impl Commands for Balance {
    fn import(args: &ImportArgs) -> Result<Made, Error> {
        args.import_counts(Self::TAG, generate::import)
    }

    /// `--csv`: a row per layer.
    fn solve_report(case: &Case<Self>, run: &MethodRun) -> Result<Rendered, Error> {
        let report = SolveReport::new(case.instance, run);
        let rows = report
            .layers
            .iter()
            .map(|l| {
                let e = l.exact.as_ref();
                serde_json::json!({
                    "layer": l.layer,
                    "max_load": l.max_load,
                    "mean_load": l.mean_load,
                    "balancedness": l.balancedness,
                    "moved": l.moved,
                    "status": e.map(|e| e.status),
                    "bound": e.map(|e| e.bound),
                    "gap": e.map(|e| e.gap),
                    "time_s": e.map(|e| e.time_s),
                })
            })
            .collect();
        Ok(Rendered::solve(&report, report.text(), rows))
    }

    fn compare_report(case: &Case<Self>, runs: &Runs<Self>) -> Result<Rendered, Error> {
        let report = CompareReport::new(case.instance, runs);
        Ok(Rendered::compare(&report, report.text()))
    }
}

/// `moe-opt eplb --method exact`: the weights file read as `eplb` reads it, EPLB's arguments
/// checked as EPLB checks them (errors name the file and the argument), then
/// [`super::exact::exact_eplb`].
pub fn exact_eplb_command(
    weights_path: &std::path::Path,
    arguments: [usize; 4],
    time_limit_s: Option<f64>,
) -> Result<crate::eplb::EplbReport, Error> {
    let weights = crate::eplb::EplbWeights::read(weights_path)?;
    let options = formulations::milp::SolveOptions {
        time_limit_s,
        ..Default::default()
    };
    let (plan, exact) =
        super::exact::exact_eplb(&weights.weight, arguments, &options).map_err(|e| match e {
            super::exact::ExactEplbError::Eplb(e) => e.in_file(weights_path),
            super::exact::ExactEplbError::Other(e) => e.with_file(weights_path),
        })?;
    Ok(crate::eplb::eplb_report(
        weights_path,
        weights,
        plan,
        arguments,
        Some(exact),
    ))
}

/// Sweeps: the sum of the layers' busiest GPU loads (minimised), and the step balancedness
/// (sum of means / sum of maxima) beside it.
impl Sweepable for Balance {
    const SECONDARY: &'static str = "balancedness";

    /// The evaluator refuses infeasible plans, so every evaluated plan is feasible.
    fn feasible(_: &Evaluation) -> bool {
        true
    }

    fn secondary(_: &Instance, run: &MethodRun, _: u64) -> Option<f64> {
        run.evaluation.as_ref().map(|e| e.balancedness)
    }
}
