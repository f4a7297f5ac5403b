//! The token-stream problems in the registry: `cache-trace` (a stream of router decisions,
//! replayed by `replay`, `route`, `pareto`, `tpot`) and `cache-offline` (one layer's offline
//! caching instance, made by `offline`, with the exact fixed- and flexible-routing bounds beside
//! the policies and routers in `solve` and `compare`).

use std::path::Path;

use formulations::cache::offline::{self, CacheInstance, Freedom};
use formulations::cache::Trace;
use formulations::milp::Milp;
use formulations::Error;

use super::bounds::{self, OfflineMethod};
use super::commands as cc;
use super::generate::{GeneratorConfig, Preset};
use super::import::ImportOptions;
use super::libcachesim::Shape;
use crate::export::Table;
use crate::generate::Made;
use crate::problem::RunOptions;
use crate::registry::{
    self, Entry, GeneratorEntry, ImportArgs, LpModel, MethodInfo, Rendered, Solver,
};
use crate::verify::ClaimGroup;

/// A stream of router decisions (papers 002 and 004).
pub struct CacheTraceEntry;

/// The logit generator of [`super::generate`], with its presets.
struct TraceGenerator;

crate::generator!(
    TraceGenerator,
    GeneratorConfig,
    Preset::Mixtral8x7b,
    Trace,
    super::generate::generate
);

impl Entry for CacheTraceEntry {
    fn tag(&self) -> &'static str {
        "cache-trace"
    }

    fn about(&self) -> &'static str {
        "a token stream of router decisions, replayed through expert caches (papers 002, 004)"
    }

    fn generator(&self) -> Option<Box<dyn GeneratorEntry>> {
        registry::generator::<TraceGenerator>()
    }

    /// A token log, a libCacheSim trace or a cache-trace file into a trace, written as JSON or
    /// binary (`--format`); an activation-count file is refused (no token order), with the way
    /// to use it instead.
    fn import(&self, args: &ImportArgs) -> Result<Made, Error> {
        let imported = if let Some(file) = &args.libcachesim {
            let shape = match (args.renumber, args.experts, args.layers, args.top_k) {
                (true, ..) => Shape::Renumber,
                (false, Some(experts), Some(layers), Some(top_k)) => Shape::Export {
                    experts,
                    layers,
                    top_k,
                },
                _ => {
                    return Err(Error::command_line(
                        "--libcachesim",
                        "a libCacheSim trace does not state E, L and K: give --experts, \
                         --layers and --top-k (or --renumber for a foreign trace)",
                    ))
                }
            };
            cc::import_libcachesim(file, shape)?
        } else if let Some(file) = &args.trace {
            cc::import_trace(file)?
        } else if let Some(log) = &args.log {
            let options = ImportOptions {
                experts: args.experts,
                ..ImportOptions::default()
            };
            cc::import_token_log(log, &options)?
        } else {
            let counts = args
                .counts
                .as_ref()
                .map(|c| c.display().to_string())
                .unwrap_or_default();
            return Err(Error::command_line(
                "--counts",
                format!(
                    "{counts}: activation counts have no token order, so they cannot be \
                     replayed as a cache-trace; give a token log (--log), or use the counts as \
                     LFU's warm start (moe-opt replay TRACE --warm-start {counts})"
                ),
            ));
        };
        let (bytes, summary) = imported.write(args.format);
        Ok(Made::bytes(bytes, summary))
    }

    fn hint(&self, file: &Path) -> String {
        let f = file.display();
        format!(
            "a token stream: replay it (`moe-opt replay {f} --capacity C`), or build an offline \
             instance from one of its layers (`moe-opt offline {f}`)"
        )
    }
}

/// One layer's offline caching instance (the exact bounds of papers 002 and 004).
pub struct CacheOfflineEntry;

impl Entry for CacheOfflineEntry {
    fn tag(&self) -> &'static str {
        "cache-offline"
    }

    fn about(&self) -> &'static str {
        "offline expert caching with fixed or flexible routing (papers 002, 004)"
    }

    /// The families breaking paper 002's claims on one layer's request stream, the instances
    /// those claims check.
    fn families(&self) -> Vec<crate::parametric::ParametricFamily> {
        super::parametric::families()
    }

    fn methods(&self) -> Vec<MethodInfo> {
        let mut methods: Vec<MethodInfo> = OfflineMethod::ALL
            .iter()
            .map(|m| (m.name(), m.description()))
            .collect();
        methods.push((
            "ROUTER:KNOBS".into(),
            "a cache-aware router with LRU, e.g. max-rank:m=4,j=1, cumsum:p=0.6,j=1, \
             cache-prior:lambda=0.5,j=1",
        ));
        methods
    }

    fn solver(&self) -> Option<&dyn Solver> {
        Some(self)
    }

    fn claims(&self) -> Vec<Box<dyn ClaimGroup>> {
        vec![Box::new(super::claims::table())]
    }

    fn hint(&self, _: &Path) -> String {
        "make one with `moe-opt offline TRACE`".into()
    }

    /// 30 tokens of one layer of a generated Mixtral-shaped trace, half the experts cached,
    /// the top expert of each token fixed (J = 1).
    fn demo_instance(&self, seed: u64) -> Option<Result<Made, Error>> {
        let mut config = GeneratorConfig::preset(Preset::Mixtral8x7b);
        (config.layers, config.sequences, config.tokens_per_sequence) = (1, 1, 30);
        let made = super::generate::generate(&config, seed).and_then(|trace| {
            let freedom = Freedom {
                top_j: 1,
                max_rank: None,
                min_mass: None,
            };
            let capacity = trace.experts / 2;
            let name = format!("{}-layer0-c{capacity}", trace.name);
            bounds::instance_from_trace(&trace, 0, capacity, freedom, &name)
        });
        Some(made.map(|i| Made::new(&i, String::new())))
    }
}

impl Solver for CacheOfflineEntry {
    /// `--csv`: a row per step, the experts it runs and those resident after its loads.
    fn solve(&self, file: &Path, method: &str, options: &RunOptions) -> Result<Rendered, Error> {
        let instance = offline::load(file)?;
        let method: OfflineMethod = method
            .parse()
            .map_err(|e: String| Error::command_line("--method", e))?;
        let report = bounds::solve(&instance, method, &options.solve)?;
        let rows = report
            .schedule
            .iter()
            .flat_map(|s| s.steps.iter().enumerate())
            .map(|(step, s)| {
                serde_json::json!({"step": step, "chosen": s.chosen, "resident": s.resident})
            })
            .collect();
        Ok(Rendered::solve(&report, report.text(), rows))
    }

    /// The exhaustive searches run by default only where their size limit allows.
    fn compare(
        &self,
        file: &Path,
        methods: Option<&[String]>,
        options: &RunOptions,
    ) -> Result<Rendered, Error> {
        let instance: CacheInstance = offline::load(file)?;
        let methods: Vec<OfflineMethod> = match methods {
            Some(names) => names
                .iter()
                .map(|n| n.parse())
                .collect::<Result<_, String>>()
                .map_err(|e| Error::command_line("--methods", e))?,
            None => OfflineMethod::ALL.to_vec(),
        };
        let report = match bounds::compare(&instance, &methods, &options.solve) {
            Err(Error::TooLarge(_)) if methods.len() == OfflineMethod::ALL.len() => {
                let exact: Vec<OfflineMethod> = methods
                    .into_iter()
                    .filter(|m| !m.name().starts_with("exhaustive"))
                    .collect();
                bounds::compare(&instance, &exact, &options.solve)?
            }
            other => other?,
        };
        let rows = report.methods.iter().map(registry::to_value).collect();
        let context = registry::report_context(&registry::to_value(&report));
        let table = Table::new(context, rows);
        Ok(Rendered::new(&report, report.text()).with_table(table))
    }

    /// The flexible-routing model by default (the fixed one is the same with every step's set
    /// fixed), `--model fixed` for the fixed one.
    fn exact_milp(
        &self,
        file: &Path,
        model: Option<LpModel>,
    ) -> Result<(Milp, &'static str), Error> {
        let instance = offline::load(file)?;
        let flexible = match model.unwrap_or(LpModel::Flexible) {
            LpModel::Flexible => true,
            LpModel::Fixed => false,
            other => {
                return Err(LpModel::refused(
                    other,
                    self.tag(),
                    &[LpModel::Fixed, LpModel::Flexible],
                ))
            }
        };
        let milp = bounds::exact_milp(&instance, flexible)?;
        Ok(if flexible {
            (milp, "the flexible-routing MILP")
        } else {
            (milp, "the fixed-routing MILP")
        })
    }
}
