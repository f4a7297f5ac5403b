//! Exact offline bounds of expert caching (paper 002 Sec. 4.8): building a `cache-offline`
//! instance from one layer of a trace, running the offline methods (the two MILPs, the
//! exhaustive search, Belady, LRU) and the reports the command line prints (solve, compare,
//! write_lp).
//!
//! Methods ([`OfflineMethod`], names as on the command line): `milp-fixed` and `milp-flexible`
//! (formulations::cache::milp, started from Belady's schedule, which is feasible for both),
//! `exhaustive-fixed` and `exhaustive-flexible` (formulations::cache::exhaustive, tiny only),
//! `belady` and `lru` (simulated on the original routing, cold start).
//!
//! ## MILP size and solve times
//! The models have T x E residency binaries, T x E load columns and, with flexible routing,
//! up to T (E - J) choice binaries; [`formulations::cache::milp::MAX_RESIDENCY_VARS`] caps
//! T x E at 200,000. Measured once on the project's 2-core machine (HiGHS 1.15, one thread,
//! the workspace's test profile, which is optimised; random-logit traces of
//! [`super::claims::random_trace`] with seed 1 and rho = 0.9, Belady's schedule as MIP start;
//! not a test, wall-clock):
//!
//! | T | E | K | C | routing | binaries | rows | time | loads (Belady) |
//! |---|---|---|---|---|---|---|---|---|
//! | 100 | 16 | 2 | 8 | flexible J = 1, M = 4 | 1,900 | 2,100 | 0.13 s | 10 (15) |
//! | 200 | 16 | 2 | 8 | flexible J = 1, M = 4 | 3,800 | 4,200 | 0.21 s | 18 (28) |
//! | 200 | 16 | 2 | 8 | flexible J = 1, M = 8 | 4,600 | 5,000 | 0.31 s | 18 (28) |
//! | 200 | 16 | 2 | 8 | flexible J = 0, tau = 0.8 | 6,400 | 7,000 | 3.75 s | 19 (28) |
//! | 500 | 16 | 2 | 8 | fixed | 8,000 | 8,500 | 0.44 s | 54 (54) |
//! | 1000 | 64 | 6 | 32 | fixed | 64,000 | 65,000 | 11.4 s | 184 (184) |
//!
//! All were proved optimal. The fixed model is easy (its LP is tight on these traces); the
//! mass rule (a knapsack row per step) is the hard part of the flexible one. Use Belady for
//! fixed routing beyond these sizes: it is optimal (claim `cache/sec48-belady-optimal`).

use std::fmt::Write;
use std::str::FromStr;
use std::time::Instant;

use formulations::cache::exhaustive::exhaustive;
use formulations::cache::milp::OfflineMilp;
use formulations::cache::offline::{self, evaluate, CacheInstance, Freedom, Schedule};
use formulations::cache::Trace;
use formulations::milp::{MilpStatus, SolveOptions};
use formulations::{Error, ProblemKind};
use serde::Serialize;

use super::belady::belady_schedule;
use super::policy::{replay, Lru};
use crate::report::{canonical_sha256, VERSION};

/// An offline method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OfflineMethod {
    /// The fixed-routing MILP (the optimum Belady must reach).
    MilpFixed,
    /// The flexible-routing MILP (the bound of cache-aware routers with the freedom).
    MilpFlexible,
    /// Exhaustive search, fixed routing (tiny instances).
    ExhaustiveFixed,
    /// Exhaustive search, flexible routing (tiny instances).
    ExhaustiveFlexible,
    /// Belady's MIN on the original routing.
    Belady,
    /// LRU (paper 002's same-step order) on the original routing.
    Lru,
}

impl OfflineMethod {
    /// Every method.
    pub const ALL: [OfflineMethod; 6] = [
        OfflineMethod::MilpFixed,
        OfflineMethod::MilpFlexible,
        OfflineMethod::ExhaustiveFixed,
        OfflineMethod::ExhaustiveFlexible,
        OfflineMethod::Belady,
        OfflineMethod::Lru,
    ];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            OfflineMethod::MilpFixed => "milp-fixed",
            OfflineMethod::MilpFlexible => "milp-flexible",
            OfflineMethod::ExhaustiveFixed => "exhaustive-fixed",
            OfflineMethod::ExhaustiveFlexible => "exhaustive-flexible",
            OfflineMethod::Belady => "belady",
            OfflineMethod::Lru => "lru",
        }
    }

    /// Whether the method uses the instance's routing freedom.
    pub fn flexible(self) -> bool {
        matches!(
            self,
            OfflineMethod::MilpFlexible | OfflineMethod::ExhaustiveFlexible
        )
    }
}

impl FromStr for OfflineMethod {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        OfflineMethod::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown offline method \"{s}\"; expected one of {}",
                    OfflineMethod::ALL.map(|m| m.name()).join(", ")
                )
            })
    }
}

/// An offline instance from layer `layer` of a trace, validated (errors name the field, with
/// `<input>` as the file).
pub fn instance_from_trace(
    trace: &Trace,
    layer: usize,
    capacity: usize,
    freedom: Freedom,
    name: &str,
) -> Result<CacheInstance, Error> {
    let instance = CacheInstance {
        problem: ProblemKind::CacheOffline,
        name: name.into(),
        capacity,
        layer,
        freedom,
        trace: trace.clone(),
    };
    offline::validate(&instance).map_err(|e| e.in_file("<input>"))?;
    Ok(instance)
}

/// One method's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct MethodReport {
    /// The method.
    pub method: OfflineMethod,
    /// Whether it used the routing freedom.
    pub flexible: bool,
    /// Loads of its schedule (by the evaluator for MILP and exhaustive schedules), null when
    /// it found none.
    pub loads: Option<u64>,
    /// loads / (T K) (paper 002 eq. (4)).
    pub miss_rate: Option<f64>,
    /// Whether `loads` is a proved optimum of its problem (exhaustive, or MILP status optimal).
    pub proved_optimal: bool,
    /// The MILP's status (`optimal`, `time_limit`, ...), or `exhaustive`, or null.
    pub status: Option<String>,
    /// The MILP's best bound on the loads, if any.
    pub bound_loads: Option<f64>,
    /// The MILP's gap, if any.
    pub gap: Option<f64>,
    /// Steps whose chosen set differs from the original selection.
    pub rerouted_steps: Option<u64>,
    /// Mean router mass kept (chosen / original top-K), when the layer has logits.
    pub mass_kept_mean: Option<f64>,
    /// Wall-clock seconds of the method.
    pub runtime_s: f64,
}

/// A method's report and its schedule (LRU has none recorded).
#[derive(Debug, Clone)]
pub struct MethodRun {
    /// The report.
    pub report: MethodReport,
    /// The schedule, if the method produced one.
    pub schedule: Option<Schedule>,
}

/// Runs one method.
pub fn run(
    instance: &CacheInstance,
    method: OfflineMethod,
    options: &SolveOptions,
) -> Result<MethodRun, Error> {
    let began = Instant::now();
    let requests = instance.requests();
    let flexible = method.flexible();
    let mut report = MethodReport {
        method,
        flexible,
        loads: None,
        miss_rate: None,
        proved_optimal: false,
        status: None,
        bound_loads: None,
        gap: None,
        rerouted_steps: None,
        mass_kept_mean: None,
        runtime_s: 0.0,
    };
    let mut schedule = None;
    match method {
        OfflineMethod::Lru => {
            let stats = replay(Lru::new(instance.capacity, requests.universe), &requests);
            report.loads = Some(stats.loads);
            report.rerouted_steps = Some(0);
        }
        OfflineMethod::Belady => {
            schedule = Some(belady_schedule(instance.capacity, &requests).1);
        }
        OfflineMethod::ExhaustiveFixed | OfflineMethod::ExhaustiveFlexible => {
            schedule = Some(exhaustive(instance, flexible)?.1);
            report.proved_optimal = true;
            report.status = Some("exhaustive".into());
        }
        OfflineMethod::MilpFixed | OfflineMethod::MilpFlexible => {
            let model = OfflineMilp::build(instance, flexible)?;
            let start = belady_schedule(instance.capacity, &requests).1;
            let solved = model.solve(instance, options, Some(&start))?;
            let s = &solved.solution;
            report.proved_optimal = s.status == MilpStatus::Optimal;
            report.status = Some(
                serde_json::to_value(s.status)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_else(|| s.status.to_string()),
            );
            report.bound_loads = s.best_bound;
            report.gap = s.gap;
            schedule = solved.schedule;
        }
    }
    if let Some(s) = &schedule {
        let ev = evaluate(instance, s, flexible)
            .map_err(|e| Error::Solver(format!("{}'s schedule is invalid: {e}", method.name())))?;
        report.loads = Some(ev.loads);
        report.rerouted_steps = Some(ev.rerouted_steps);
        report.mass_kept_mean = ev.mass_kept_mean;
    }
    report.miss_rate = report
        .loads
        .map(|l| l as f64 / (instance.steps() * instance.top_k()) as f64);
    report.runtime_s = began.elapsed().as_secs_f64();
    Ok(MethodRun { report, schedule })
}

/// Identity and size of an offline instance.
#[derive(Debug, Clone, Serialize)]
pub struct OfflineInfo {
    /// The instance's `name`.
    pub name: String,
    /// SHA-256 of the instance's canonical JSON.
    pub sha256: String,
    /// SHA-256 of its trace's canonical JSON.
    pub trace_sha256: String,
    /// T: steps (tokens).
    pub steps: usize,
    /// E.
    pub experts: usize,
    /// K.
    pub top_k: usize,
    /// C.
    pub capacity: usize,
    /// The cached layer.
    pub layer: usize,
    /// The routing freedom of the flexible methods.
    pub freedom: Freedom,
}

impl OfflineInfo {
    /// Describes an instance.
    pub fn new(instance: &CacheInstance) -> Self {
        OfflineInfo {
            name: instance.name.clone(),
            sha256: canonical_sha256(instance),
            trace_sha256: canonical_sha256(&instance.trace),
            steps: instance.steps(),
            experts: instance.experts(),
            top_k: instance.top_k(),
            capacity: instance.capacity,
            layer: instance.layer,
            freedom: instance.freedom,
        }
    }

    fn line(&self) -> String {
        format!(
            "{} (layer {}): T = {}, E = {}, K = {}, C = {}; freedom J = {}, M = {}, tau = {}\n",
            self.name,
            self.layer,
            self.steps,
            self.experts,
            self.top_k,
            self.capacity,
            self.freedom.top_j,
            self.freedom.max_rank.map_or("-".into(), |m| m.to_string()),
            self.freedom.min_mass.map_or("-".into(), |t| format!("{t}")),
        )
    }
}

fn method_line(out: &mut String, r: &MethodReport, extra: &str) {
    let _ = writeln!(
        out,
        "  {:<20} loads {:>8}  miss rate {:>7}  {:<12} rerouted {:>6}  mass kept {:>6}  {:.3} s{extra}",
        r.method.name(),
        r.loads.map_or("-".into(), |l| l.to_string()),
        r.miss_rate.map_or("-".into(), |m| format!("{m:.4}")),
        r.status.clone().unwrap_or_else(|| "-".into()),
        r.rerouted_steps.map_or("-".into(), |x| x.to_string()),
        r.mass_kept_mean.map_or("-".into(), |m| format!("{m:.4}")),
        r.runtime_s
    );
}

/// Output of `solve`: one method on one instance, with its schedule.
#[derive(Debug, Clone, Serialize)]
pub struct SolveReport {
    /// moe-opt version.
    pub moe_opt_version: &'static str,
    /// The instance.
    pub instance: OfflineInfo,
    /// The method's outcome.
    pub result: MethodReport,
    /// Its schedule (per step: chosen and resident experts), if any.
    pub schedule: Option<Schedule>,
}

impl SolveReport {
    /// For humans (without the schedule).
    pub fn text(&self) -> String {
        let mut out = self.instance.line();
        method_line(&mut out, &self.result, "");
        out
    }
}

/// `solve`: runs one method.
pub fn solve(
    instance: &CacheInstance,
    method: OfflineMethod,
    options: &SolveOptions,
) -> Result<SolveReport, Error> {
    let run = run(instance, method, options)?;
    Ok(SolveReport {
        moe_opt_version: VERSION,
        instance: OfflineInfo::new(instance),
        result: run.report,
        schedule: run.schedule,
    })
}

/// One line of `compare`.
#[derive(Debug, Clone, Serialize)]
pub struct CompareLine {
    /// The method's outcome.
    #[serde(flatten)]
    pub report: MethodReport,
    /// loads / the proved fixed-routing optimum (null without one, or when it is 0).
    pub ratio_to_fixed_optimum: Option<f64>,
    /// loads / the proved flexible-routing optimum (null without one, or when it is 0).
    pub ratio_to_flexible_optimum: Option<f64>,
}

/// Output of `compare`.
#[derive(Debug, Clone, Serialize)]
pub struct CompareReport {
    /// moe-opt version.
    pub moe_opt_version: &'static str,
    /// The instance.
    pub instance: OfflineInfo,
    /// Proved optimum with fixed routing (from a fixed method proved optimal), if any.
    pub fixed_optimum_loads: Option<u64>,
    /// Proved optimum with flexible routing, if any.
    pub flexible_optimum_loads: Option<u64>,
    /// The methods in the order asked.
    pub methods: Vec<CompareLine>,
}

impl CompareReport {
    /// For humans.
    pub fn text(&self) -> String {
        let mut out = self.instance.line();
        let opt = |o: Option<u64>| o.map_or("unknown".into(), |l| l.to_string());
        let _ = writeln!(
            out,
            "  proved optima: fixed routing {}, flexible routing {}",
            opt(self.fixed_optimum_loads),
            opt(self.flexible_optimum_loads)
        );
        for line in &self.methods {
            let ratio = |name: &str, r: Option<f64>| {
                r.map_or(String::new(), |r| format!("  /{name} {r:.4}"))
            };
            let extra = format!(
                "{}{}",
                ratio("fixed", line.ratio_to_fixed_optimum),
                ratio("flex", line.ratio_to_flexible_optimum)
            );
            method_line(&mut out, &line.report, &extra);
        }
        out
    }
}

/// `compare`: runs several methods; ratios against the proved optima found among them.
pub fn compare(
    instance: &CacheInstance,
    methods: &[OfflineMethod],
    options: &SolveOptions,
) -> Result<CompareReport, Error> {
    let reports: Vec<MethodReport> = methods
        .iter()
        .map(|&m| run(instance, m, options).map(|r| r.report))
        .collect::<Result<_, _>>()?;
    let optimum = |flexible: bool| {
        reports
            .iter()
            .find(|r| r.flexible == flexible && r.proved_optimal)
            .and_then(|r| r.loads)
    };
    let (fixed, flex) = (optimum(false), optimum(true));
    let ratio = |loads: Option<u64>, opt: Option<u64>| match (loads, opt) {
        (Some(l), Some(o)) if o > 0 => Some(l as f64 / o as f64),
        _ => None,
    };
    Ok(CompareReport {
        moe_opt_version: VERSION,
        instance: OfflineInfo::new(instance),
        fixed_optimum_loads: fixed,
        flexible_optimum_loads: flex,
        methods: reports
            .into_iter()
            .map(|r| CompareLine {
                ratio_to_fixed_optimum: ratio(r.loads, fixed),
                ratio_to_flexible_optimum: ratio(r.loads, flex),
                report: r,
            })
            .collect(),
    })
}

/// `write_lp`: the fixed- or flexible-routing model in CPLEX LP format.
pub fn write_lp(instance: &CacheInstance, flexible: bool) -> Result<String, Error> {
    Ok(OfflineMilp::build(instance, flexible)?.milp.to_lp())
}
