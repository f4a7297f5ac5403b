//! The functions the command line calls for SMoE, each returning a serialisable report
//! (stable field names, units in the names, the moe-opt version and the input's hash) with a
//! `text()` rendering for humans.
//!
//! * [`super::generate::generate`]: a layer instance from a preset and a seed;
//! * [`solve`]: one routing method then one split method on a layer;
//! * [`compare`]: every routing method with Alg. 2 and the optimal split, against the optimum
//!   of (1) and, per routing, the optimum of (4);
//! * [`exact_milp`]: the routing or split MILP for `write-lp` (LP or MPS);
//! * [`tpot`]: the pipeline's TPOT proxy over a trace with an LRU pool cache;
//! * [`alpha()`]: eq. (5), T(alpha) sampled, fitted, and the smallest alpha meeting a budget.

use std::fmt::Write;

use formulations::cache::Trace;
use formulations::milp::{Milp, SolveOptions};
use formulations::smoe::evaluate::{evaluate_routing, routing_exhaustive, SPLIT_EXHAUSTIVE_MAX};
use formulations::smoe::{
    objective1, objective4, split_exhaustive, split_optimum_uniform, Costs, Instance, LayerSets,
    RoutingMilp, RoutingValue, Split, SplitMilp,
};
use formulations::Error;
use serde::Serialize;

use super::alpha::{self, AlphaSample, AlphaSelection};
use super::claims::route;
use super::generate::{try_generate, Preset};
use super::pipeline::{simulate, PipelineConfig, PipelineStats};
use super::router::LowScore;
use super::split::{alg2, Alg2Rule};
use crate::cache::commands::TraceInfo;
use crate::cache::policy::Lru;
use crate::export::Table;
use crate::generate::{config_error, Generator, Made};
use crate::problem::RunOptions;
use crate::registry::{
    self, ConfigSource, Entry, GeneratorEntry, LpModel, MethodInfo, Rendered, Solver,
};
use crate::report::{canonical_sha256, VERSION};
use crate::verify::ClaimGroup;
use std::path::Path;

crate::named! {
    /// How a layer is routed.
    pub enum RoutingMethod: "routing method" {
        /// the original top-k (no substitution)
        TopK,
        /// Alg. 1, the text's reading
        Smoe,
        /// Alg. 1 as printed
        SmoeLiteral,
        /// the exhaustive per-token optimum of (1)
        Exhaustive,
        /// the routing MILP of (1)
        Milp,
    }
}

crate::named! {
    /// How the missed experts are split.
    pub enum SplitMethod: "split method" {
        /// Alg. 2 as printed
        Alg2,
        /// Alg. 2 comparing finish times
        EarliestFinish,
        /// the optimum of (4): closed form, exhaustive or the MILP
        Optimal,
        /// the split MILP
        Milp,
        /// load every missed expert
        Load,
        /// every missed expert on the CPU
        Cpu,
    }
}

/// Identity and size of a layer.
#[derive(Debug, Clone, Serialize)]
pub struct LayerInfo {
    /// The instance's `name`.
    pub name: String,
    /// SHA-256 of its canonical JSON.
    pub sha256: String,
    /// E.
    pub experts: usize,
    /// k.
    pub top_k: usize,
    /// Tokens in the batch.
    pub tokens: usize,
    /// |G|.
    pub cached: usize,
    /// alpha.
    pub alpha: f64,
    /// Whether costs are uniform.
    pub uniform_costs: bool,
}

impl LayerInfo {
    /// Describes an instance.
    pub fn new(i: &Instance) -> Self {
        LayerInfo {
            name: i.name.clone(),
            sha256: canonical_sha256(i),
            experts: i.experts,
            top_k: i.top_k,
            tokens: i.tokens(),
            cached: i.gpu_cache.len(),
            alpha: i.alpha,
            uniform_costs: i.costs.is_uniform(),
        }
    }
}

/// A routing by a method, with the MILP's status where one ran.
fn run_routing(
    instance: &Instance,
    sets: &LayerSets,
    method: RoutingMethod,
    options: &SolveOptions,
) -> Result<(Vec<Vec<u32>>, Option<String>), Error> {
    Ok(match method {
        RoutingMethod::TopK => (sets.tokens.iter().map(|t| t.active.clone()).collect(), None),
        RoutingMethod::Smoe => (route(instance, LowScore::Missing), None),
        RoutingMethod::SmoeLiteral => (route(instance, LowScore::All), None),
        RoutingMethod::Exhaustive => (routing_exhaustive(sets)?, Some("exhaustive".into())),
        RoutingMethod::Milp => {
            let (sol, routing) = RoutingMilp::build(instance, sets).solve(options)?;
            let routing = routing.ok_or_else(|| {
                Error::Solver(format!(
                    "routing MILP ended {} without a routing",
                    sol.status
                ))
            })?;
            (routing, Some(sol.status.name().to_string()))
        }
    })
}

/// A split by a method, with how the optimum was found where applicable.
fn run_split(
    costs: &Costs,
    misses: &[u32],
    method: SplitMethod,
    options: &SolveOptions,
) -> Result<(Split, Option<String>), Error> {
    let milp = |status: &mut Option<String>| -> Result<Split, Error> {
        let exact = SplitMilp::build(costs, misses).solve(costs, options)?;
        *status = Some(exact.solution.status.name().to_string());
        exact.split.ok_or_else(|| {
            Error::Solver(format!(
                "split MILP ended {} without a split",
                exact.solution.status
            ))
        })
    };
    let mut status = None;
    let split = match method {
        SplitMethod::Alg2 => alg2(misses, costs, Alg2Rule::Paper),
        SplitMethod::EarliestFinish => alg2(misses, costs, Alg2Rule::EarliestFinish),
        SplitMethod::Load => objective4(costs, misses.to_vec(), Vec::new()),
        SplitMethod::Cpu => objective4(costs, Vec::new(), misses.to_vec()),
        SplitMethod::Milp => milp(&mut status)?,
        SplitMethod::Optimal => match costs {
            Costs::Uniform { load_s, cpu_s, .. } => {
                status = Some("closed_form".into());
                let (m, _) = split_optimum_uniform(misses.len(), *load_s, *cpu_s);
                objective4(costs, misses[..m].to_vec(), misses[m..].to_vec())
            }
            _ if misses.len() <= SPLIT_EXHAUSTIVE_MAX => {
                status = Some("exhaustive".into());
                split_exhaustive(costs, misses)?
            }
            _ => milp(&mut status)?,
        },
    };
    Ok((split, status))
}

/// One (routing, split) line.
#[derive(Debug, Clone, Serialize)]
pub struct MethodReport {
    /// Routing method.
    pub routing_method: RoutingMethod,
    /// Split method.
    pub split_method: SplitMethod,
    /// Routing hits of (1) over the batch.
    pub hits: usize,
    /// hits / the optimum of (1).
    pub hits_ratio: Option<f64>,
    /// The routing's value (hits per token, substitutes, misses, mass kept).
    pub routing: RoutingValue,
    /// How the routing was proved (exhaustive, MILP status), if exact.
    pub routing_status: Option<String>,
    /// The split and objective (4).
    pub split: Split,
    /// (4) / the optimum of (4) for the same misses (1 when both are 0).
    pub split_ratio: Option<f64>,
    /// How the split was proved, if exact.
    pub split_status: Option<String>,
    /// The chosen experts per token.
    pub chosen: Vec<Vec<u32>>,
}

impl MethodReport {
    /// The columns of [`MethodReport::row`].
    const HEADERS: [&'static str; 10] = [
        "routing",
        "split",
        "hits",
        "/optimum of (1)",
        "substituted",
        "mass kept",
        "misses",
        "loaded / cpu",
        "(4) ms",
        "/optimum of (4)",
    ];

    /// The pair's cells for the text table.
    fn row(&self) -> Vec<String> {
        let r = |x: Option<f64>| x.map_or("-".into(), |v| format!("{v:.4}"));
        vec![
            self.routing_method.name().to_string(),
            self.split_method.name().to_string(),
            self.hits.to_string(),
            r(self.hits_ratio),
            self.routing.substituted.to_string(),
            format!("{:.3}", self.routing.mass_kept),
            self.routing.misses.len().to_string(),
            format!("{} / {}", self.split.load.len(), self.split.cpu.len()),
            crate::render::ms(Some(self.split.objective_s)),
            r(self.split_ratio),
        ]
    }
}

fn method_report(
    instance: &Instance,
    sets: &LayerSets,
    routing_method: RoutingMethod,
    split_method: SplitMethod,
    options: &SolveOptions,
) -> Result<MethodReport, Error> {
    let (chosen, routing_status) = run_routing(instance, sets, routing_method, options)?;
    let routing = evaluate_routing(instance, sets, &chosen).map_err(|e| {
        Error::Solver(format!(
            "{} produced an infeasible routing: {e}",
            routing_method.name()
        ))
    })?;
    let (split, split_status) = run_split(&instance.costs, &routing.misses, split_method, options)?;
    let (best, _) = run_split(
        &instance.costs,
        &routing.misses,
        SplitMethod::Optimal,
        options,
    )?;
    let optimum: usize = objective1(sets).iter().sum();
    Ok(MethodReport {
        routing_method,
        split_method,
        hits: routing.total_hits,
        hits_ratio: (optimum > 0).then(|| routing.total_hits as f64 / optimum as f64),
        split_ratio: if best.objective_s > 0.0 {
            Some(split.objective_s / best.objective_s)
        } else {
            (split.objective_s == 0.0).then_some(1.0)
        },
        routing,
        routing_status,
        split,
        split_status,
        chosen,
    })
}

/// Output of `solve` and `compare`.
#[derive(Debug, Clone, Serialize)]
pub struct CompareReport {
    /// moe-opt version.
    pub moe_opt_version: &'static str,
    /// The layer.
    pub layer: LayerInfo,
    /// The optimum of (1) per token (the paper's formula, equal to the exhaustive optimum).
    pub objective1_optimum: Vec<usize>,
    /// One line per (routing, split) pair, in the order run.
    pub methods: Vec<MethodReport>,
}

impl CompareReport {
    /// `--csv`: a row per method pair, the report's fields as columns.
    pub fn table(&self) -> Table {
        let context = vec![("moe_opt_version", VERSION.into())];
        Table::new(
            context,
            self.methods.iter().map(registry::to_value).collect(),
        )
    }

    /// For humans.
    pub fn text(&self) -> String {
        let l = &self.layer;
        let mut s = format!(
            "{}: E = {}, k = {}, {} tokens, |G| = {}, alpha = {:.3}; optimum of (1) per token {}\n",
            l.name,
            l.experts,
            l.top_k,
            l.tokens,
            l.cached,
            l.alpha,
            self.objective1_optimum
                .iter()
                .map(|h| h.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        let rows: Vec<Vec<String>> = self.methods.iter().map(MethodReport::row).collect();
        s.push_str(&crate::render::table(&MethodReport::HEADERS, &rows, 2));
        s
    }
}

/// One routing method then one split method.
pub fn solve(
    instance: &Instance,
    routing: RoutingMethod,
    split: SplitMethod,
    options: &SolveOptions,
) -> Result<CompareReport, Error> {
    let sets = LayerSets::new(instance);
    Ok(CompareReport {
        moe_opt_version: VERSION,
        layer: LayerInfo::new(instance),
        objective1_optimum: objective1(&sets),
        methods: vec![method_report(instance, &sets, routing, split, options)?],
    })
}

/// Every routing method (the exhaustive one only when it fits) with Alg. 2 and the optimal
/// split.
pub fn compare(instance: &Instance, options: &SolveOptions) -> Result<CompareReport, Error> {
    let sets = LayerSets::new(instance);
    let mut methods = Vec::new();
    for &r in RoutingMethod::ALL {
        for s in [SplitMethod::Alg2, SplitMethod::Optimal] {
            match method_report(instance, &sets, r, s, options) {
                Ok(m) => methods.push(m),
                Err(Error::TooLarge(_)) => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(CompareReport {
        moe_opt_version: VERSION,
        layer: LayerInfo::new(instance),
        objective1_optimum: objective1(&sets),
        methods,
    })
}

/// The MILP of `write-lp`: the routing MILP of (1), or (`split`) the split MILP of (4) on the
/// misses of Alg. 1's routing (the model `solve --method smoe+milp` solves), its objective in
/// milliseconds (`split_time_ms`; solved, it is in units of the smallest cost).
pub fn exact_milp(instance: &Instance, split: bool) -> Result<Milp, Error> {
    let sets = LayerSets::new(instance);
    Ok(if split {
        let routing = route(instance, LowScore::Missing);
        let value = evaluate_routing(instance, &sets, &routing)
            .map_err(|e| Error::Solver(format!("Alg. 1's routing: {e}")))?;
        let built = SplitMilp::build(&instance.costs, &value.misses);
        let mut milp = built.milp;
        milp.scale_objective(1e3 * built.unit_s);
        milp.set_objective_name("split_time_ms");
        milp
    } else {
        RoutingMilp::build(instance, &sets).milp
    })
}

/// Output of `tpot`.
#[derive(Debug, Clone, Serialize)]
pub struct TpotReport {
    /// moe-opt version.
    pub moe_opt_version: &'static str,
    /// The trace.
    pub trace: TraceInfo,
    /// GPU cache policy.
    pub policy: &'static str,
    /// GPU cache capacity (experts, all layers in one pool).
    pub capacity: usize,
    /// The pipeline's knobs.
    pub config: PipelineConfig,
    /// What was measured.
    pub stats: PipelineStats,
}

impl TpotReport {
    /// For humans.
    pub fn text(&self) -> String {
        let s = &self.stats;
        let title = format!(
            "{} ({} cache of {} experts, alpha {:.3}, split {}, prefetch {} ({}))\n",
            self.trace.name,
            self.policy,
            self.capacity,
            self.config.router.alpha,
            self.config.split,
            self.config.prefetch,
            self.config.predictor,
        );
        title
            + &crate::render::pairs(&[
                ("TPOT ms", crate::render::ms(Some(s.tpot_s))),
                ("decode tokens", s.decode_tokens.to_string()),
                ("GPU hit rate", format!("{:.3}", s.gpu_hit_rate)),
                ("loads", s.loads.to_string()),
                ("CPU experts", s.cpu_experts.to_string()),
                ("prefetched", s.prefetched.to_string()),
                ("prefetches used", s.prefetch_used.to_string()),
                ("substituted", s.substituted.to_string()),
                ("mass kept", format!("{:.3}", s.mass_kept)),
            ])
    }
}

/// The TPOT proxy of a trace with an LRU pool of `capacity` experts.
pub fn tpot(trace: &Trace, capacity: usize, config: &PipelineConfig) -> Result<TpotReport, Error> {
    let stats = simulate(
        trace,
        Lru::new(capacity, trace.experts * trace.layers),
        config,
    )?;
    Ok(TpotReport {
        moe_opt_version: VERSION,
        trace: TraceInfo::new(trace),
        policy: "lru",
        capacity,
        config: *config,
        stats,
    })
}

/// Output of `alpha`.
#[derive(Debug, Clone, Serialize)]
pub struct AlphaReport {
    /// moe-opt version.
    pub moe_opt_version: &'static str,
    /// The trace.
    pub trace: TraceInfo,
    /// GPU cache capacity (LRU pool).
    pub capacity: usize,
    /// The pipeline's knobs (its alpha is replaced by each sample's).
    pub config: PipelineConfig,
    /// T(alpha) measured.
    pub samples: Vec<AlphaSample>,
    /// The fit and the selection of eq. (5).
    pub selection: AlphaSelection,
    /// The pipeline's TPOT at the chosen alpha (null without one), seconds.
    pub measured_tpot_at_choice_s: Option<f64>,
}

impl AlphaReport {
    /// For humans.
    pub fn text(&self) -> String {
        let mut s = format!("{}: T(alpha)\n", self.trace.name);
        let rows: Vec<Vec<String>> = self
            .samples
            .iter()
            .map(|p| {
                vec![
                    format!("{:.3}", p.alpha),
                    crate::render::ms(Some(p.tpot_s)),
                    format!("{:.3}", p.gpu_hit_rate),
                    format!("{:.3}", p.mass_kept),
                ]
            })
            .collect();
        s += &crate::render::table(&["alpha", "TPOT ms", "hit rate", "mass kept"], &rows, 0);
        let sel = &self.selection;
        let _ = writeln!(
            s,
            "degree-{} fit [{}] (rmse {:.3e} s); budget {:.4e} s: {}",
            sel.degree,
            crate::render::list(&sel.coefficients, |c| format!("{c:.4e}")),
            sel.fit_rmse_s,
            sel.budget_s,
            match (sel.chosen_alpha, self.measured_tpot_at_choice_s) {
                (Some(a), Some(t)) => format!(
                    "alpha = {a:.3} (fitted {:.4e} s, measured {t:.4e} s)",
                    sel.predicted_tpot_s.unwrap_or(f64::NAN)
                ),
                _ => "no alpha in the sampled range meets it".into(),
            }
        );
        s
    }
}

/// Eq. (5) over a trace: T(alpha) at each of `alphas` (LRU pool of `capacity`), a degree
/// `degree` fit, and the smallest alpha (grid of 1001 points) whose fit meets `budget_s`.
pub fn alpha(
    trace: &Trace,
    capacity: usize,
    config: &PipelineConfig,
    alphas: &[f64],
    degree: usize,
    budget_s: f64,
) -> Result<AlphaReport, Error> {
    if let Some(a) = alphas.iter().find(|a| !(0.0..=1.0).contains(*a)) {
        return Err(Error::command_line(
            "--alphas",
            format!("{a} is not in [0, 1]"),
        ));
    }
    let run = |a: f64| {
        let mut c = *config;
        c.router.alpha = a;
        tpot(trace, capacity, &c).map(|r| r.stats)
    };
    let samples = alphas
        .iter()
        .map(|&a| {
            run(a).map(|s| AlphaSample {
                alpha: a,
                tpot_s: s.tpot_s,
                gpu_hit_rate: s.gpu_hit_rate,
                mass_kept: s.mass_kept,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let selection = alpha::select(&samples, degree, budget_s, 1001)
        .map_err(|e| Error::command_line("--alphas", e))?;
    let measured = match selection.chosen_alpha {
        Some(a) => Some(run(a)?.tpot_s),
        None => None,
    };
    Ok(AlphaReport {
        moe_opt_version: VERSION,
        trace: TraceInfo::new(trace),
        capacity,
        config: *config,
        samples,
        selection,
        measured_tpot_at_choice_s: measured,
    })
}

/// SMoE's layer generator: it has no knobs beyond its preset, so the configuration
/// (`--print-config`, `--config`) is the preset's name.
struct LayerGenerator;

impl Generator for LayerGenerator {
    type Config = String;
    type Preset = Preset;
    const DEFAULT_PRESET: Preset = Preset::Tiny;
    type Generated = Instance;

    fn preset_config(preset: Preset) -> String {
        preset.to_string()
    }

    fn check(name: &String) -> Result<(), Error> {
        preset_of(name).map(|_| ())
    }

    fn generate_instance(name: &String, seed: u64) -> Result<Instance, Error> {
        try_generate(preset_of(name)?, seed)
    }
}

/// The preset a configuration names (a `--config` file's error names the file).
fn preset_of(name: &str) -> Result<Preset, Error> {
    name.parse()
        .map_err(|reason: String| config_error("preset", reason))
}

/// SMoE's layer decisions in the registry (the pipeline over a trace is `moe-opt tpot`).
pub struct SmoeEntry;

impl Entry for SmoeEntry {
    fn tag(&self) -> &'static str {
        "smoe"
    }

    fn about(&self) -> &'static str {
        "an SMoE layer: expert-cache routing and the CPU-vs-PCIe split (paper 004)"
    }

    fn methods(&self) -> Vec<MethodInfo> {
        let mut methods = registry::infos::<RoutingMethod>();
        methods.extend(
            registry::infos::<SplitMethod>()
                .into_iter()
                .map(|(n, d)| (format!("ROUTING+{n}"), d)),
        );
        methods
    }

    fn generator(&self) -> Option<Box<dyn GeneratorEntry>> {
        registry::generator::<LayerGenerator>()
    }

    fn hint(&self, _: &Path) -> String {
        "smoe layers are generated (moe-opt generate smoe); token streams for SMoE's pipeline \
         are imported as cache-trace"
            .into()
    }

    fn solver(&self) -> Option<&dyn Solver> {
        Some(self)
    }

    fn claims(&self) -> Vec<Box<dyn ClaimGroup>> {
        vec![Box::new(super::claims::table())]
    }

    fn demo_instance(&self, seed: u64) -> Option<Result<Made, Error>> {
        Some(self.generate(ConfigSource::preset("tiny"), seed))
    }
}

impl Solver for SmoeEntry {
    /// `METHOD` is `ROUTING+SPLIT` (split `alg2` when only the routing is named); `--csv` is
    /// `compare`'s table with its one row.
    fn solve(&self, file: &Path, method: &str, options: &RunOptions) -> Result<Rendered, Error> {
        let instance = formulations::smoe::load(file)?;
        let (routing, split) = method.split_once('+').unwrap_or((method, "alg2"));
        let report = solve(
            &instance,
            routing
                .parse()
                .map_err(|e| Error::command_line("--method", e))?,
            split
                .parse()
                .map_err(|e| Error::command_line("--method", e))?,
            &options.solve,
        )?;
        Ok(Rendered::new(&report, report.text()).with_table(report.table()))
    }

    /// Every routing method with Alg. 2 and the optimal split (`--methods` is not taken).
    fn compare(
        &self,
        file: &Path,
        methods: Option<&[String]>,
        options: &RunOptions,
    ) -> Result<Rendered, Error> {
        if methods.is_some() {
            return Err(Error::command_line(
                "--methods",
                "an smoe compare runs every routing with alg2 and the optimal split; use \
                 `solve --method ROUTING+SPLIT` for one pair",
            ));
        }
        let instance = formulations::smoe::load(file)?;
        let report = compare(&instance, &options.solve)?;
        Ok(Rendered::new(&report, report.text()).with_table(report.table()))
    }

    /// The routing MILP of objective (1) by default, `--model split` for the split MILP of (4).
    fn exact_milp(
        &self,
        file: &Path,
        model: Option<LpModel>,
    ) -> Result<(Milp, &'static str), Error> {
        let instance = formulations::smoe::load(file)?;
        match model.unwrap_or(LpModel::Routing) {
            LpModel::Routing => Ok((exact_milp(&instance, false)?, "the routing MILP of (1)")),
            LpModel::Split => Ok((
                exact_milp(&instance, true)?,
                "the split MILP of (4) on Alg. 1's misses",
            )),
            other => Err(LpModel::refused(
                other,
                self.tag(),
                &[LpModel::Routing, LpModel::Split],
            )),
        }
    }
}
