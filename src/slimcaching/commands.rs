//! SlimCaching's commands: its [`Entry`](crate::registry::Entry) in the registry and the reports of `solve` and
//! `compare` (JSON field names documented in docs/formats.md; units in the names).

use formulations::slimcaching::{Evaluation, ExpertRef, Instance, LatencyModel};
use formulations::Error;
use serde::Serialize;
use serde_json::json;

use super::generate::{try_generate, GeneratorConfig, Preset};
use super::import::{from_activation_counts, ImportConfig};
use super::methods::{ExactReport, Method, MethodRun, Reference, SlimCaching};
use crate::export::Table;
use crate::generate::Made;
use crate::problem::{Problem, Runs};
use crate::registry::{self, Case, Commands, ImportArgs, Rendered};
use crate::render::{ms, table};
use crate::report::{canonical_sha256, VERSION};
use crate::sweepable::Sweepable;

/// Identity and size of the instance a report is about.
#[derive(Debug, Clone, Serialize)]
pub struct InstanceInfo {
    /// The instance's `name` field.
    pub name: String,
    /// SHA-256 of the instance's canonical JSON (serde_json's compact serialisation of the
    /// parsed instance), so whitespace and key order in the file do not matter.
    pub sha256: String,
    /// Edge servers N.
    pub servers: usize,
    /// Users U.
    pub users: usize,
    /// Models M.
    pub models: usize,
    /// Experts E = sum_m L_m E_m.
    pub experts: usize,
    /// Largest K_m.
    pub max_top_k: u32,
}

impl InstanceInfo {
    /// Describes an instance.
    pub fn new(instance: &Instance) -> Self {
        InstanceInfo {
            name: instance.name.clone(),
            sha256: canonical_sha256(instance),
            servers: instance.servers.len(),
            users: instance.users.len(),
            models: instance.models.len(),
            experts: instance
                .models
                .iter()
                .map(|m| (m.layers * m.experts_per_layer) as usize)
                .sum(),
            max_top_k: instance.models.iter().map(|m| m.top_k).max().unwrap_or(0),
        }
    }

    /// One line for humans.
    pub fn summary(&self) -> String {
        format!(
            "{}: {} servers, {} users, {} models, {} experts, K <= {}",
            self.name, self.servers, self.users, self.models, self.experts, self.max_top_k
        )
    }
}

/// One method's line of a report.
#[derive(Debug, Clone, Serialize)]
pub struct MethodReport {
    /// Method name (`milp`, `greedy`, ...).
    pub method: Method,
    /// F(X) of (17), seconds; null when no placement was found.
    pub objective_s: Option<f64>,
    /// Average per-token latency over all MoE layers, seconds.
    pub avg_latency_s: Option<f64>,
    /// The same with nothing cached on edge servers (T^max), seconds.
    pub max_latency_s: Option<f64>,
    /// Storage constraint (18b) holds.
    pub feasible: Option<bool>,
    /// objective_s / reference value (see the report's `reference`): a ratio to the proved
    /// optimum, or a lower bound on it when the reference is only a bound.
    pub ratio: Option<f64>,
    /// Wall-clock seconds of the method.
    pub runtime_s: f64,
    /// Marginal-gain evaluations (greedy and successive algorithms).
    pub evaluations: Option<u64>,
    /// Optimum of each subproblem P3_n (successive algorithms), seconds.
    pub subproblem_values_s: Option<Vec<f64>>,
    /// The exact method's status, objective, bound and gap (seconds).
    pub exact: Option<ExactReport>,
}

impl MethodReport {
    /// The line of a run against a reference.
    pub fn new(run: &MethodRun, reference: Reference) -> Self {
        let e = run.evaluation.as_ref();
        MethodReport {
            method: run.method,
            objective_s: e.map(|e| e.objective),
            avg_latency_s: e.map(|e| e.avg_latency_s),
            max_latency_s: e.map(|e| e.max_latency_s),
            feasible: e.map(|e| e.feasible),
            ratio: e.and_then(|e| reference.ratio(e.objective)),
            runtime_s: run.runtime_s,
            evaluations: run.evaluations,
            subproblem_values_s: run.detail.clone(),
            exact: run.exact.clone(),
        }
    }

    fn status(&self) -> String {
        match (&self.exact, self.feasible) {
            (Some(e), _) => crate::render::status(e),
            (None, Some(true)) if self.method == Method::Exhaustive => "optimal".into(),
            (None, Some(true)) => "feasible".into(),
            (None, Some(false)) => "INFEASIBLE".into(),
            (None, None) => "-".into(),
        }
    }
}

/// Output of `moe-opt compare --json`.
#[derive(Debug, Clone, Serialize)]
pub struct CompareReport {
    /// moe-opt version.
    pub moe_opt_version: &'static str,
    /// The instance.
    pub instance: InstanceInfo,
    /// What ratios are taken against: `{"kind": "optimum" | "bound", "value": F, "source":
    /// method}` or `{"kind": "none"}`.
    pub reference: Reference,
    /// One line per method, in the order run.
    pub methods: Vec<MethodReport>,
}

impl CompareReport {
    /// The best feasible F among the methods, its method, and how far below the reference
    /// bound it is, (bound - F) / bound: what the runs certify about the optimum (F >= (1 -
    /// gap) OPT).
    pub fn certified_gap(&self) -> Option<(f64, Method, f64)> {
        let bound = self.reference.value().filter(|&b| b > 0.0)?;
        let (best, method) = self
            .methods
            .iter()
            .filter(|m| m.feasible == Some(true))
            .filter_map(|m| Some((m.objective_s?, m.method)))
            .max_by(|a, b| a.0.total_cmp(&b.0))?;
        Some((best, method, (bound - best).max(0.0) / bound))
    }

    /// For humans.
    pub fn text(&self) -> String {
        let reference = match self.reference {
            Reference::Optimum { value, source } => {
                format!("proved optimum F* = {:.4} ms ({source})", value * 1e3)
            }
            Reference::Bound { value, source } => format!(
                "no proved optimum; ratios are lower bounds against the best proved bound \
                 {:.4} ms ({source}){}",
                value * 1e3,
                self.certified_gap()
                    .map_or(String::new(), |(best, method, gap)| format!(
                        "\n  certified gap: the best F, {:.4} ms ({method}), is within {:.3} % \
                         of the optimum",
                        best * 1e3,
                        gap * 100.0
                    ))
            ),
            Reference::None => "no optimum or bound (ratios unavailable)".into(),
        };
        let rows: Vec<Vec<String>> = self
            .methods
            .iter()
            .map(|m| {
                let ratio = match (m.ratio, self.reference) {
                    (Some(x), Reference::Bound { .. }) => format!(">={x:.4}"),
                    (Some(x), _) => format!("{x:.4}"),
                    (None, _) => "-".into(),
                };
                vec![
                    m.method.to_string(),
                    ms(m.objective_s),
                    ms(m.avg_latency_s),
                    ratio,
                    m.status(),
                    format!("{:.3}", m.runtime_s),
                    m.evaluations.map_or("-".into(), |e| e.to_string()),
                ]
            })
            .collect();
        format!(
            "{}\n  T^max = {} ms; {}\n{}",
            self.instance.summary(),
            ms(self.methods.iter().find_map(|m| m.max_latency_s)),
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

    /// `--csv`: a row per method, the report's fields as columns.
    pub fn table(&self) -> Table {
        let context = vec![
            ("moe_opt_version", VERSION.into()),
            ("instance_name", self.instance.name.clone().into()),
            ("instance_sha256", self.instance.sha256.clone().into()),
            ("reference_kind", self.reference.kind().into()),
            ("reference_s", self.reference.value().into()),
            ("reference_source", self.reference.source().into()),
        ];
        let rows = self.methods.iter().map(registry::to_value).collect();
        Table::new(context, rows)
    }
}

/// One user's line in a solve report.
#[derive(Debug, Clone, Serialize)]
pub struct UserReport {
    /// User index.
    pub user: u32,
    /// Associated server n_u.
    pub associated_server: u32,
    /// Average per-token latency, seconds.
    pub avg_latency_s: f64,
    /// T^max, seconds.
    pub max_latency_s: f64,
}

/// Output of `moe-opt solve --json`.
#[derive(Debug, Clone, Serialize)]
pub struct SolveReport {
    /// moe-opt version.
    pub moe_opt_version: &'static str,
    /// The instance.
    pub instance: InstanceInfo,
    /// The method's line (ratio is null: a single method has no reference).
    pub result: MethodReport,
    /// Bytes cached per server.
    pub storage_used_bytes: Option<Vec<u64>>,
    /// Storage Q_n per server.
    pub storage_bytes: Vec<u64>,
    /// The placement: per server, the cached experts.
    pub placement: Option<Vec<Vec<ExpertRef>>>,
    /// Per-user breakdown.
    pub users: Vec<UserReport>,
}

impl SolveReport {
    /// The report of one run.
    pub fn new(instance: &Instance, model: &LatencyModel, run: &MethodRun) -> Self {
        let users = run.evaluation.as_ref().map_or_else(Vec::new, |e| {
            e.users
                .iter()
                .map(|u| UserReport {
                    user: u.user.0,
                    associated_server: u.associated_server.0,
                    avg_latency_s: u.avg_latency_s,
                    max_latency_s: u.max_latency_s,
                })
                .collect()
        });
        SolveReport {
            moe_opt_version: VERSION,
            instance: InstanceInfo::new(instance),
            result: MethodReport::new(run, Reference::None),
            storage_used_bytes: run.evaluation.as_ref().map(|e| e.storage_used.clone()),
            storage_bytes: instance.servers.iter().map(|s| s.storage_bytes).collect(),
            placement: run.solution.as_ref().map(|p| p.to_lists(model.catalogue())),
            users,
        }
    }

    /// For humans.
    pub fn text(&self) -> String {
        let m = &self.result;
        let mut out = format!(
            "{}\n  method {}: F = {} ms, average latency {} ms (T^max {} ms), {}, {:.3} s\n",
            self.instance.summary(),
            m.method,
            ms(m.objective_s),
            ms(m.avg_latency_s),
            ms(m.max_latency_s),
            m.status(),
            m.runtime_s
        );
        if let Some(e) = &m.exact {
            out.push_str(&format!(
                "  {}: status {}, objective {} ms, best bound {} ms, gap {}, {:.3} s\n",
                m.method,
                e.status,
                ms(e.objective),
                ms(e.best_bound),
                e.gap.map_or("-".into(), |g| format!("{:.3e}", g)),
                e.solve_time_s
            ));
            if let Some(note) = &e.note {
                out.push_str(&format!("  {}: {note}\n", m.method));
            }
        }
        if let (Some(placement), Some(used)) = (&self.placement, &self.storage_used_bytes) {
            for (n, experts) in placement.iter().enumerate() {
                out.push_str(&format!(
                    "  server {n}: {} experts, {} of {} bytes\n",
                    experts.len(),
                    used[n],
                    self.storage_bytes[n]
                ));
            }
        }
        out
    }

    /// `--csv`: a row per cached expert.
    pub fn table(&self) -> Table {
        let rows = self
            .placement
            .iter()
            .flatten()
            .enumerate()
            .flat_map(|(n, experts)| {
                experts.iter().map(move |e| {
                    json!({"server": n, "model": e.model, "layer": e.layer, "expert": e.expert})
                })
            })
            .collect();
        registry::solve_table(self, rows)
    }
}

/// The report of the runs, rated against the best reference found (a proved optimum if
/// any); an exact method refused by its size limit ends the command with its reason.
fn compare_report(instance: &Instance, runs: &Runs<SlimCaching>) -> Result<CompareReport, Error> {
    if let Some((_, why)) = runs.skipped.first() {
        return Err(Error::TooLarge(why.clone()));
    }
    Ok(CompareReport {
        moe_opt_version: VERSION,
        instance: InstanceInfo::new(instance),
        reference: runs.reference,
        methods: runs
            .runs
            .iter()
            .map(|r| MethodReport::new(r, runs.reference))
            .collect(),
    })
}

crate::generator!(
    SlimCaching,
    GeneratorConfig,
    Preset::Small,
    Instance,
    try_generate,
    summary = |i| InstanceInfo::new(i).summary()
);

impl Commands for SlimCaching {
    fn claims() -> Vec<Box<dyn crate::verify::ClaimGroup>> {
        vec![Box::new(super::claims::table())]
    }

    fn import(args: &ImportArgs) -> Result<Made, Error> {
        let (counts, header) = args.counts(Self::TAG)?;
        let mut config: ImportConfig = args.config()?;
        config.servers = args.servers.unwrap_or(config.servers);
        config.users = args.users.unwrap_or(config.users);
        config.storage_bytes = args.storage_bytes.unwrap_or(config.storage_bytes);
        config.local_experts_per_user = args.local_experts.unwrap_or(config.local_experts_per_user);
        config.seed = args.seed.unwrap_or(config.seed);
        let instance =
            from_activation_counts(counts, &header, &config).map_err(|e| args.name_source(e))?;
        Ok(Made::new(&instance, InstanceInfo::new(&instance).summary()))
    }

    /// `--csv`: a row per cached expert.
    fn solve_report(case: &Case<Self>, run: &MethodRun) -> Result<Rendered, Error> {
        let report = SolveReport::new(case.instance, case.model, run);
        Ok(Rendered::new(&report, report.text()).with_table(report.table()))
    }

    fn compare_report(case: &Case<Self>, runs: &Runs<Self>) -> Result<Rendered, Error> {
        let report = compare_report(case.instance, runs)?;
        Ok(Rendered::new(&report, report.text()).with_table(report.table()))
    }

    fn families() -> Vec<crate::parametric::ParametricFamily> {
        super::parametric::families()
    }
}

/// Sweeps: F(X) of (17) (maximised), and the average per-token latency of eq. (14) beside it.
impl Sweepable for SlimCaching {
    const SECONDARY: &'static str = "avg_latency_s";

    fn feasible(evaluation: &Evaluation) -> bool {
        evaluation.feasible
    }

    fn secondary(_: &Instance, run: &MethodRun, _: u64) -> Option<f64> {
        run.evaluation.as_ref().map(|e| e.avg_latency_s)
    }
}
