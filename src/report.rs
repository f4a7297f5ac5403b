//! The JSON outputs of the command line: documented, stable field names, units in the names
//! (`_s` seconds, `_bytes` bytes). Every report carries the moe-opt version and the instance's
//! hash, so a result can be tied to the exact input it came from.

use formulations::slimcaching::{ExpertRef, Instance, LatencyModel};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::slimcaching::methods::{ExactReport, Method, MethodRun, Reference};

/// This build's version, as written in every report.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Options shared by the methods of every problem.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunOptions {
    /// MILP options (time limit, relative gap, threads).
    pub solve: formulations::milp::SolveOptions,
    /// Seed of the randomised methods.
    pub seed: u64,
}

/// SHA-256 (hex) of a value's canonical JSON (serde_json's compact serialisation of the parsed
/// value), so whitespace and key order in the file it was read from do not matter.
pub fn canonical_sha256<T: Serialize>(value: &T) -> String {
    let canonical = serde_json::to_vec(value).expect("instances always serialise");
    Sha256::digest(&canonical)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

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
    /// The MILP's status, objective, bound and gap.
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
            subproblem_values_s: run.subproblem_values.clone(),
            exact: run.exact.clone(),
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
    /// What ratios are taken against: `{"kind": "optimum" | "bound" | "none", "value": F}`.
    pub reference: Reference,
    /// One line per method, in the order run.
    pub methods: Vec<MethodReport>,
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
            placement: run
                .placement
                .as_ref()
                .map(|p| p.to_lists(model.catalogue())),
            users,
        }
    }
}
