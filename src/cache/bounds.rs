//! Exact offline bounds of expert caching (paper 002 Sec. 4.8): building a `cache-offline`
//! instance from one layer of a trace, running the offline methods (the two MILPs, the
//! exhaustive search, Belady, LRU) and the reports the command line prints (solve, compare,
//! the MILP of `write-lp`, [`exact_milp`]).
//!
//! Methods ([`OfflineMethod`], names as on the command line): `milp-fixed` and `milp-flexible`
//! (formulations::cache::milp, started from Belady's schedule, which is feasible for both),
//! `exhaustive-fixed` and `exhaustive-flexible` (formulations::cache::exhaustive, tiny only),
//! `belady` and `lru` (simulated on the original routing, cold start), and any router of
//! [`super::routers`] by its spec (`max-rank:m=4,j=1`, `cumsum:p=0.6,j=1`,
//! `cache-prior:lambda=0.5,j=1`, ...), replayed online with an LRU cache as in paper 002.
//!
//! ## Routers against the flexible-routing bound
//! The flexible optimum bounds a router only if every choice of the router lies within the
//! instance's freedom. Max-Rank with the instance's J and M does by construction; Cumsum's
//! M varies per token and Cache-Prior has no rank limit, so a router's report says whether it
//! stayed within (`within_freedom`; the ratio to the flexible optimum is given only then) and
//! which freedom it used ([`freedom_used`]: the longest kept prefix J, the deepest rank M, the
//! least mass kept tau). Solving the flexible MILP at that used freedom gives a bound valid
//! for the router's own run, which is what the claims `cache/router-gap-*` do.
//!
//! ## MILP size and solve times
//! The models have T x E residency binaries, T x E load columns and, with flexible routing,
//! up to T (E - J) choice binaries; [`formulations::cache::milp::OfflineMilp::build`] refuses
//! a model whose estimated memory (its module doc: 750 bytes a column and a nonzero, measured)
//! exceeds [`formulations::cache::milp::MAX_MILP_BYTES`]. Measured once on the project's 2-core
//! machine (HiGHS 1.15, one thread, the workspace's test profile, which is optimised; one-layer
//! random-logit traces (static bias plus AR(1) drift, seed 1, rho = 0.9) of a helper the
//! calibrated generator has since replaced, Belady's schedule as MIP start; not a test,
//! wall-clock):
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
//! At the papers' scale (`moe-opt solve --method milp-fixed|milp-flexible`, dev profile, whose
//! dependencies HiGHS included are optimised; the generator's presets, one layer, generator
//! seed 1 for DeepSeek at T >= 1,600, 3 otherwise; Belady's schedule as MIP start; wall-clock
//! of the whole command and its peak resident memory):
//!
//! | trace | T | E | K | C | routing | time | peak memory | loads (Belady) |
//! |---|---|---|---|---|---|---|---|---|
//! | DeepSeek preset | 400 | 64 | 6 | 32 | fixed | 1.0 s | 105 MB | 218 (218) |
//! | DeepSeek preset | 800 | 64 | 6 | 32 | fixed | 2.9 s | 206 MB | 407 (407) |
//! | DeepSeek preset | 1,600 | 64 | 6 | 32 | fixed | 7.9 s | 403 MB | 757 (757) |
//! | DeepSeek preset | 3,200 | 64 | 6 | 32 | fixed | 16.3 s | 868 MB | 1,539 (1,539) |
//! | Mixtral preset | 1,024 | 8 | 2 | 4 | flexible J = 1, M = 4 | 5.0 s | 99 MB | 307 (605) |
//! | Phi preset | 1,024 | 16 | 2 | 8 | flexible J = 1, M = 4 | 14.0 s | 226 MB | 253 (489) |
//! | Qwen preset | 1,024 | 60 | 4 | 30 | flexible J = 2, M = 6 | 7.4 s | 279 MB | 138 (298) |
//! | DeepSeek preset | 1,024 | 64 | 6 | 32 | flexible J = 2, M = 8 | 67 s, stopped at 60 | 1.4 GB | 601 or fewer (601) |
//! | real OLMoE log, layer 0 | 299 | 64 | 8 | 32 | flexible J = 0 (any 8) | 7.4 s | 160 MB | 8 (365) |
//! | OLMoE preset | 299 | 64 | 8 | 32 | flexible J = 2, M = 10 | 19.0 s | 408 MB | 89 (227) |
//!
//! The fixed model's LP is tight on these traces: every fixed solve above was proved optimal
//! at its root. The mass rule (a knapsack row per step) and deep ranks are the hard part of
//! the flexible one. Belady is optimal for fixed routing (claim `cache/sec48-belady-optimal`),
//! so the fixed MILP is needed only as the independent check of that claim.

use std::fmt::Write;
use std::str::FromStr;
use std::time::Instant;

use formulations::cache::exhaustive::exhaustive;
use formulations::cache::milp::OfflineMilp;
use formulations::cache::model::Token;
use formulations::cache::offline::{
    self, evaluate, freedom_used, CacheInstance, Freedom, Schedule, ScheduleStep,
};
use formulations::cache::Trace;
use formulations::milp::{Milp, MilpStatus, SolveOptions};
use formulations::{Error, ProblemKind};
use serde::Serialize;

use super::belady::belady_schedule;
use super::policy::{replay, Lru, Policy};
use super::routers::{replay_routed_observed, RankTable, ReplayOptions, RouterSpec};
use crate::report::{canonical_sha256, VERSION};

/// An offline method.
#[derive(Debug, Clone, Copy, PartialEq)]
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
    /// A cache-aware router of paper 002 (Max-Rank, Cumsum, Cache-Prior, pruning) choosing
    /// each step's experts online, with an LRU cache (the paper's pairing), cold start.
    Routed(RouterSpec),
}

impl OfflineMethod {
    /// Every method that needs no knob (the routers have one).
    pub const ALL: [OfflineMethod; 6] = [
        OfflineMethod::MilpFixed,
        OfflineMethod::MilpFlexible,
        OfflineMethod::ExhaustiveFixed,
        OfflineMethod::ExhaustiveFlexible,
        OfflineMethod::Belady,
        OfflineMethod::Lru,
    ];

    /// The name on the command line (a router's is its spec, e.g. `max-rank:m=4,j=1`).
    pub fn name(self) -> String {
        match self {
            OfflineMethod::MilpFixed => "milp-fixed".into(),
            OfflineMethod::MilpFlexible => "milp-flexible".into(),
            OfflineMethod::ExhaustiveFixed => "exhaustive-fixed".into(),
            OfflineMethod::ExhaustiveFlexible => "exhaustive-flexible".into(),
            OfflineMethod::Belady => "belady".into(),
            OfflineMethod::Lru => "lru".into(),
            OfflineMethod::Routed(spec) => spec.to_string(),
        }
    }

    /// What the method is.
    pub fn description(self) -> &'static str {
        match self {
            OfflineMethod::MilpFixed => "the fixed-routing MILP (the optimum Belady must reach)",
            OfflineMethod::MilpFlexible => "the flexible-routing MILP (the routers' bound)",
            OfflineMethod::ExhaustiveFixed => "exhaustive search, fixed routing (tiny instances)",
            OfflineMethod::ExhaustiveFlexible => {
                "exhaustive search, flexible routing (tiny instances)"
            }
            OfflineMethod::Belady => "Belady's MIN on the original routing",
            OfflineMethod::Lru => "LRU on the original routing",
            OfflineMethod::Routed(_) => "a cache-aware router with an LRU cache",
        }
    }

    /// Whether the method solves the flexible-routing problem exactly (its proved optimum is
    /// the bound of every router within the instance's freedom).
    pub fn flexible(self) -> bool {
        matches!(
            self,
            OfflineMethod::MilpFlexible | OfflineMethod::ExhaustiveFlexible
        )
    }
}

impl Serialize for OfflineMethod {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.name())
    }
}

impl FromStr for OfflineMethod {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if let Some(m) = OfflineMethod::ALL.into_iter().find(|m| m.name() == s) {
            return Ok(m);
        }
        match s.parse::<RouterSpec>() {
            Ok(RouterSpec::Pruning { .. }) => Err(format!(
                "{s}: pruning runs fewer than K experts per step, which no offline schedule of \
                 K experts describes; compare its miss rate with `moe-opt route` instead"
            )),
            Ok(spec) => Ok(OfflineMethod::Routed(spec)),
            Err(e) if s.contains(':') || ROUTER_FAMILIES.contains(&s) => Err(e),
            Err(_) => Err(format!(
                "unknown offline method \"{s}\"; expected one of {}, or a router such as \
                 max-rank:m=4,j=1, cumsum:p=0.6,j=1, cache-prior:lambda=0.5,j=1",
                OfflineMethod::ALL.map(|m| m.name()).join(", ")
            )),
        }
    }
}

/// The router families `compare` accepts as methods.
const ROUTER_FAMILIES: [&str; 5] = ["top-k", "pruning", "max-rank", "cumsum", "cache-prior"];

/// An offline instance from layer `layer` of a trace, validated (errors name the field, with
/// `<input>` as the file: [`Error::with_file`] names the trace's).
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
    /// Whether every step's choice lies within the instance's freedom (routers only: the
    /// flexible optimum bounds a router only then).
    pub within_freedom: Option<bool>,
    /// J of [`freedom_used`]: the longest prefix of the original ranking every step kept.
    pub used_top_j: Option<usize>,
    /// M of [`freedom_used`]: the deepest 1-based original rank chosen (null when unknown).
    pub used_max_rank: Option<usize>,
    /// tau of [`freedom_used`]: the least router mass kept at a step (null without logits).
    pub used_min_mass: Option<f64>,
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
    run_from(instance, method, options, None)
}

/// Runs one method; a MILP starts from `start` (a feasible schedule of its problem, e.g. a
/// router's at the freedom it used) instead of Belady's schedule when one is given.
pub fn run_from(
    instance: &CacheInstance,
    method: OfflineMethod,
    options: &SolveOptions,
    start: Option<&Schedule>,
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
        within_freedom: None,
        used_top_j: None,
        used_max_rank: None,
        used_min_mass: None,
        runtime_s: 0.0,
    };
    let mut schedule = None;
    // The freedom the evaluator checks: any K experts for a router (whether it kept to the
    // instance's freedom is reported, not required).
    let mut judge = None;
    match method {
        OfflineMethod::Routed(RouterSpec::Pruning { .. }) => {
            return Err(Error::command_line(
                "--methods",
                "pruning runs fewer than K experts per step: no offline schedule",
            ))
        }
        OfflineMethod::Routed(spec) => {
            schedule = Some(routed_schedule(instance, &spec)?);
            judge = Some(CacheInstance {
                freedom: Freedom {
                    top_j: 0,
                    max_rank: None,
                    min_mass: None,
                },
                ..instance.clone()
            });
        }
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
            let belady;
            let start = match start {
                Some(s) => s,
                None => {
                    belady = belady_schedule(instance.capacity, &requests).1;
                    &belady
                }
            };
            // The time limit counts from the method's start, the model's building included.
            let options = SolveOptions {
                started: Some(began),
                ..options.clone()
            };
            let solved = model.solve(instance, &options, Some(start))?;
            let s = &solved.solution;
            report.proved_optimal = s.status == MilpStatus::Optimal;
            report.status = Some(s.status.name().to_string());
            report.bound_loads = s.best_bound;
            report.gap = s.gap;
            schedule = solved.schedule;
        }
    }
    if let Some(s) = &schedule {
        let ev = match &judge {
            Some(any) => evaluate(any, s, true),
            None => evaluate(instance, s, flexible),
        }
        .map_err(|e| Error::Solver(format!("{}'s schedule is invalid: {e}", method.name())))?;
        report.loads = Some(ev.loads);
        report.rerouted_steps = Some(ev.rerouted_steps);
        report.mass_kept_mean = ev.mass_kept_mean;
        if judge.is_some() {
            report.within_freedom = Some(evaluate(instance, s, true).is_ok());
        }
        let used = freedom_used(instance, s);
        report.used_top_j = Some(used.top_j);
        report.used_max_rank = used.max_rank;
        report.used_min_mass = used.min_mass;
    }
    report.miss_rate = report
        .loads
        .map(|l| l as f64 / (instance.steps() * instance.top_k()) as f64);
    report.runtime_s = began.elapsed().as_secs_f64();
    Ok(MethodRun { report, schedule })
}

/// A router's schedule on the instance's layer: per step its chosen experts and the LRU
/// cache after the loads (paper 002 Sec. 4.2's order: experts handed over by router weight).
pub fn routed_schedule(instance: &CacheInstance, spec: &RouterSpec) -> Result<Schedule, Error> {
    let mut steps = Vec::with_capacity(instance.steps());
    let options = ReplayOptions {
        per_layer_stats: false,
        ..ReplayOptions::default()
    };
    replay_routed_observed(
        &RankTable::new(&layer_trace(instance)),
        spec,
        instance.capacity,
        &options,
        Lru::new,
        |_, chosen, cache: &Lru| {
            let mut resident = cache.resident();
            resident.sort_unstable();
            steps.push(ScheduleStep {
                chosen: chosen.to_vec(),
                resident,
            });
        },
    )?;
    Ok(Schedule { steps })
}

/// The instance's cached layer as a one-layer trace (what the routers replay).
pub fn layer_trace(instance: &CacheInstance) -> Trace {
    Trace {
        layers: 1,
        tokens: instance
            .trace
            .tokens
            .iter()
            .map(|t| Token {
                layers: vec![t.layers[instance.layer].clone()],
                ..t.clone()
            })
            .collect(),
        ..instance.trace.clone()
    }
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

/// The columns of [`method_row`].
const HEADERS: [&str; 9] = [
    "method",
    "status",
    "loads",
    "miss rate",
    "rerouted",
    "mass kept",
    "runtime (s)",
    "/fixed",
    "/flex",
];

/// A method's cells for the text table (ratios to the proved fixed- and flexible-routing
/// optima where known; a router outside the instance's freedom is marked).
fn method_row(r: &MethodReport, fixed: Option<f64>, flexible: Option<f64>) -> Vec<String> {
    let ratio = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.4}"));
    let status = match (r.status.clone(), r.within_freedom) {
        (s, Some(false)) => format!("{} (outside the freedom)", s.unwrap_or_default()),
        (s, _) => s.unwrap_or_else(|| "-".into()),
    };
    vec![
        r.method.name(),
        status,
        r.loads.map_or("-".into(), |l| l.to_string()),
        ratio(r.miss_rate),
        r.rerouted_steps.map_or("-".into(), |x| x.to_string()),
        ratio(r.mass_kept_mean),
        format!("{:.3}", r.runtime_s),
        ratio(fixed),
        ratio(flexible),
    ]
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
        out.push_str(&crate::render::table(
            &HEADERS[..7],
            &[method_row(&self.result, None, None)[..7].to_vec()],
            2,
        ));
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
    /// loads / the proved flexible-routing optimum (null without one, when it is 0, or for a
    /// router that left the instance's freedom, which that optimum does not bound).
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
        let rows: Vec<Vec<String>> = self
            .methods
            .iter()
            .map(|l| {
                method_row(
                    &l.report,
                    l.ratio_to_fixed_optimum,
                    l.ratio_to_flexible_optimum,
                )
            })
            .collect();
        out.push_str(&crate::render::table(&HEADERS, &rows, 2));
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
                ratio_to_flexible_optimum: match r.within_freedom {
                    Some(false) => None,
                    _ => ratio(r.loads, flex),
                },
                report: r,
            })
            .collect(),
    })
}

/// `write-lp`: the fixed- or flexible-routing model.
pub fn exact_milp(instance: &CacheInstance, flexible: bool) -> Result<Milp, Error> {
    Ok(OfflineMilp::build(instance, flexible)?.milp)
}
