//! The commands of the token-stream caching problems (papers 002 and 004): replay, route,
//! pareto, offline and tpot. `generate`, `import`, `solve`, `compare` and `write-lp` dispatch
//! here from `cli.rs` on the problem or the file's tag.

use std::iter::once;
use std::path::{Path, PathBuf};

use clap::Args;
use formulations::cache::offline::Freedom;
use serde::Serialize;
use serde_json::Value;

use super::{problems, write_json, CliError, Output};
use crate::cache::bounds;
use crate::cache::commands::{self as cc, PolicyChoice};
use crate::cache::import::{read_trace, ImportOptions};
use crate::cache::libcachesim::{self, Format};
use crate::cache::pareto::{self, SweepOptions};
use crate::cache::policies::{PolicySpec, Scope};
use crate::cache::routers::ReplayOptions;
use crate::export::{write_csv, Table};
use crate::registry::{to_value, Rendered};
use crate::report::VERSION;
use crate::smoe::commands as sc;
use crate::smoe::pipeline::{PipelineConfig, PipelineCosts, Predictor, SplitChoice};
use crate::smoe::router::RouterConfig;

/// Where a trace comes from: a cache-trace JSON or binary, or a token log (JSON Lines, maybe
/// gzip).
#[derive(Debug, Args)]
pub(super) struct TraceArgs {
    /// Trace file: cache-trace JSON (`moe-opt generate cache-trace`, `import cache-trace`), a
    /// binary trace (`import cache-trace --format bin`, recognised by its first bytes) or a
    /// token log `.jsonl[.gz]` ({seq, token, layer, experts, weights, phase}).
    trace: PathBuf,
    /// E for a token log whose file name is not one of the known logs.
    #[arg(long, value_parser = super::flags::at_least_one::<usize>)]
    experts: Option<usize>,
}

impl TraceArgs {
    /// The trace, and the hash its reports carry when it is not the canonical one (a binary
    /// trace's: [`crate::cache::import::TraceFile::into_trace`]).
    fn load(&self) -> Result<(formulations::cache::Trace, Option<String>), CliError> {
        Ok(read_trace(&self.trace, &self.options())?.into_trace())
    }

    /// How the trace is read: `--experts` over the defaults.
    fn options(&self) -> ImportOptions {
        ImportOptions {
            experts: self.experts,
            ..ImportOptions::default()
        }
    }
}

/// `moe-opt replay`.
#[derive(Debug, Args)]
pub(super) struct ReplayArgs {
    #[command(flatten)]
    trace: TraceArgs,
    /// C: experts per cache (per layer, or of the pool with --scope pool).
    #[arg(long, value_parser = super::flags::at_least_one::<usize>)]
    capacity: usize,
    /// Comma-separated policies (lru, lfu, fifo, belady, smoe-window:n=4, zipmoe-freq) or
    /// `all` (those the trace allows).
    #[arg(
        long = "methods",
        visible_alias = "policies",
        default_value = "all",
        value_delimiter = ','
    )]
    policies: Vec<String>,
    /// per-layer (one cache per MoE layer) or pool (one cache over all layers).
    #[arg(long, default_value = "per-layer")]
    scope: String,
    /// An activation-count file whose per-expert totals seed LFU's counts.
    #[arg(long)]
    warm_start: Option<PathBuf>,
    #[command(flatten)]
    output: Output,
}

impl ReplayArgs {
    pub(super) fn run(self) -> Result<(), CliError> {
        let policies = if self.policies.iter().any(|p| p == "all") {
            PolicyChoice::All
        } else {
            PolicyChoice::These(
                self.policies
                    .iter()
                    .map(|p| p.parse::<PolicySpec>())
                    .collect::<Result<_, _>>()
                    .map_err(|e| CliError::flag("--methods", e))?,
            )
        };
        let scope = parse_scope(&self.scope)?;
        let report = cc::replay_file(
            &self.trace.trace,
            &self.trace.options(),
            self.capacity,
            &policies,
            scope,
            self.warm_start.as_deref(),
        )?;
        let rows = (report.results.iter())
            .flat_map(|r| {
                let policy = ("policy", r.policy.to_string().into());
                layer_rows(&r.layers, &r.total, &[policy])
            })
            .collect();
        let mut context = report.trace.context();
        context.push(("scope", self.scope.clone().into()));
        context.push(("capacity", report.capacity.into()));
        emit_table(&self.output, &report, report.text(), context, rows)
    }
}

/// `moe-opt mrc`.
#[derive(Debug, Args)]
pub(super) struct MrcArgs {
    #[command(flatten)]
    trace: TraceArgs,
    /// Comma-separated stack policies: lru, belady.
    #[arg(
        long = "methods",
        visible_alias = "policies",
        default_value = "lru,belady",
        value_delimiter = ','
    )]
    policies: Vec<String>,
    /// per-layer (one cache per MoE layer, C = K..=E) or pool (one cache over all layers, C =
    /// K..=L E).
    #[arg(long, default_value = "per-layer")]
    scope: String,
    #[command(flatten)]
    output: Output,
}

impl MrcArgs {
    pub(super) fn run(self) -> Result<(), CliError> {
        let policies = (self.policies.iter())
            .map(|p| {
                let policy = p.parse::<PolicySpec>()?;
                crate::cache::mrc::check_policy(policy).map(|()| policy)
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| CliError::flag("--methods", e))?;
        let scope = parse_scope(&self.scope)?;
        let report = cc::mrc_file(&self.trace.trace, &self.trace.options(), &policies, scope)?;
        let mut rows = Vec::new();
        for curve in &report.mrc.curves {
            for (i, &capacity) in report.mrc.capacities.iter().enumerate() {
                let layers = curve
                    .layers
                    .iter()
                    .map(|l| (l.layer.to_string(), l.requests, l.loads[i]));
                let total = ("total".to_string(), report.mrc.requests, curve.loads[i]);
                for (layer, requests, loads) in layers.chain(once(total)) {
                    rows.push(serde_json::json!({
                        "policy": curve.policy.to_string(),
                        "capacity": capacity,
                        "layer": layer,
                        "requests": requests,
                        "loads": loads,
                        "miss_rate": crate::cache::policies::ratio(loads, requests),
                    }));
                }
            }
        }
        let mut context = report.trace.context();
        context.push(("scope", self.scope.clone().into()));
        emit_table(&self.output, &report, report.text(), context, rows)
    }
}

/// `moe-opt route`.
#[derive(Debug, Args)]
pub(super) struct RouteArgs {
    #[command(flatten)]
    trace: TraceArgs,
    /// The router with its knob: top-k, pruning:h=2, max-rank:m=4,j=1, cumsum:p=0.6,j=1,
    /// cache-prior:lambda=0.5,j=1.
    #[arg(long = "method", visible_alias = "router")]
    router: String,
    /// C: experts per LRU cache.
    #[arg(long, value_parser = super::flags::at_least_one::<usize>)]
    capacity: usize,
    /// per-layer or pool.
    #[arg(long, default_value = "per-layer")]
    scope: String,
    #[command(flatten)]
    output: Output,
}

impl RouteArgs {
    pub(super) fn run(self) -> Result<(), CliError> {
        let (trace, sha256) = self.trace.load()?;
        let options = ReplayOptions {
            layout: parse_scope(&self.scope)?,
            ..ReplayOptions::default()
        };
        let mut report = pareto::route(&trace, &self.router, self.capacity, &options)?;
        report.trace.stamp(sha256);
        let r = &report.result;
        let rows = layer_rows(&r.per_layer, &r.total, &[]);
        let quality = to_value(&r.quality);
        let mut context = report.trace.context();
        context.extend([
            ("scope", self.scope.clone().into()),
            ("router", r.router.clone().into()),
            ("capacity", r.capacity.into()),
            ("miss_rate", r.miss_rate.into()),
        ]);
        let names: Vec<String> = quality
            .as_object()
            .map(|o| o.keys().map(|k| format!("quality.{k}")).collect())
            .unwrap_or_default();
        for name in &names {
            let key = name.trim_start_matches("quality.");
            context.push((name.as_str(), quality[key].clone()));
        }
        emit_table(&self.output, &report, report.text(), context, rows)
    }
}

/// `moe-opt pareto`.
#[derive(Debug, Args)]
pub(super) struct ParetoArgs {
    #[command(flatten)]
    trace: TraceArgs,
    /// Comma-separated capacities (default E/4, E/2, 3E/4).
    #[arg(long, value_delimiter = ',', value_parser = super::flags::at_least_one::<usize>)]
    capacities: Vec<usize>,
    /// Comma-separated routers, e.g. `max-rank:m=4,j=1,cumsum:p=0.6,j=1` (a `name=value`
    /// piece continues the router before it; default: every family's knob grid).
    #[arg(long = "methods", visible_alias = "routers", value_delimiter = ',')]
    routers: Vec<String>,
    /// per-layer or pool.
    #[arg(long, default_value = "per-layer")]
    scope: String,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Also write the points (CSV: a row per router and capacity) and, next to it with
    /// `-baselines` before the extension, LRU's and Belady's miss rates per capacity under the
    /// original routing.
    #[arg(long)]
    csv: Option<PathBuf>,
}

impl ParetoArgs {
    pub(super) fn run(self) -> Result<(), CliError> {
        let (trace, sha256) = self.trace.load()?;
        let routers = crate::cli::rejoin_knobs(&self.routers)
            .iter()
            .map(|r| r.parse())
            .collect::<Result<Vec<_>, String>>()
            .map_err(|e| CliError::flag("--methods", e))?;
        let scope = parse_scope(&self.scope)?;
        let options = SweepOptions {
            capacities: self.capacities.clone(),
            routers,
            replay: ReplayOptions {
                layout: scope,
                ..ReplayOptions::default()
            },
            ..SweepOptions::default()
        };
        // Each capacity is checked as a replay's `--capacity`: here it is one of --capacities.
        let mut report = pareto::sweep_report(&trace, &options).map_err(|e| match e {
            formulations::Error::Flag { flag, reason } if flag == "--capacity" => {
                formulations::Error::command_line("--capacities", reason)
            }
            other => other,
        })?;
        report.trace.stamp(sha256);
        if let Some(path) = &self.csv {
            let mut context = report.trace.context();
            context.push(("policy", report.policy.clone().into()));
            context.push(("scope", self.scope.clone().into()));
            let rows = report.points.iter().map(to_value).collect();
            write_csv(path, &Table::new(context.clone(), rows))?;
            let mut rows = Vec::new();
            for &c in &report.capacities {
                for policy in [PolicySpec::Lru, PolicySpec::Belady] {
                    let r = crate::cache::policies::replay_trace(&trace, policy, c, scope, None)?;
                    rows.push(serde_json::json!({
                        "policy": policy.to_string(), "capacity": c,
                        "miss_rate": r.total.miss_rate, "loads": r.total.loads}));
                }
            }
            let context = context
                .into_iter()
                .filter(|(k, _)| *k != "policy")
                .collect();
            write_csv(&sibling(path, "-baselines"), &Table::new(context, rows))?;
        }
        problems::emit(&report, self.json, |r| r.text())
    }
}

/// `--scope`'s value: per-layer or pool.
fn parse_scope(scope: &str) -> Result<Scope, CliError> {
    scope.parse().map_err(|e| CliError::flag("--scope", e))
}

/// Prints `report` (JSON, or `text`) and writes its tidy table of `rows` under `context` with
/// `--csv`.
fn emit_table<R: Serialize>(
    output: &Output,
    report: &R,
    text: String,
    context: Vec<(&str, Value)>,
    rows: Vec<Value>,
) -> Result<(), CliError> {
    output.emit(Rendered::new(report, text).with_table(Table::new(context, rows)))
}

/// A CSV row per layer's statistics, then a `total` row; each has `fields`, then `layer`.
fn layer_rows<L: Serialize, T: Serialize>(
    layers: &[L],
    total: &T,
    fields: &[(&str, Value)],
) -> Vec<Value> {
    let rows = layers.iter().map(to_value).chain(once(to_value(total)));
    let names = (0..layers.len()).map(|l| l.to_string());
    rows.zip(names.chain(once("total".to_string())))
        .map(|(mut row, layer)| {
            for (k, v) in fields {
                row[*k] = v.clone();
            }
            row["layer"] = layer.into();
            row
        })
        .collect()
}

/// `PATH` with `suffix` before its extension.
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    let name = match path.extension() {
        Some(ext) => format!("{stem}{suffix}.{}", ext.to_string_lossy()),
        None => format!("{stem}{suffix}"),
    };
    path.with_file_name(name)
}

/// `moe-opt offline`.
#[derive(Debug, Args)]
pub(super) struct OfflineArgs {
    #[command(flatten)]
    trace: TraceArgs,
    /// The layer whose request stream the instance takes.
    #[arg(long, default_value_t = 0)]
    layer: usize,
    /// C: experts in the cache.
    #[arg(long, value_parser = super::flags::at_least_one::<usize>)]
    capacity: usize,
    /// First tokens only (the MILPs grow with tokens x experts).
    #[arg(long, value_parser = super::flags::at_least_one::<usize>)]
    tokens: Option<usize>,
    /// J: the top-J experts of each token are always chosen (flexible routing).
    #[arg(long, default_value_t = 1)]
    top_j: usize,
    /// M: the other chosen experts come from the top M.
    #[arg(long)]
    max_rank: Option<usize>,
    /// tau: the chosen experts keep at least tau of the top-K's router mass.
    #[arg(long, value_parser = super::flags::fraction)]
    min_mass: Option<f64>,
    /// Output file (cache-offline JSON).
    #[arg(short, long, visible_alias = "out")]
    output: PathBuf,
}

impl OfflineArgs {
    pub(super) fn run(self) -> Result<(), CliError> {
        let (mut trace, _) = self.trace.load()?;
        if let Some(t) = self.tokens {
            trace.tokens.truncate(t);
        }
        let name = format!("{}-layer{}-c{}", trace.name, self.layer, self.capacity);
        let freedom = Freedom {
            top_j: self.top_j,
            max_rank: self.max_rank,
            min_mass: self.min_mass,
        };
        let instance =
            bounds::instance_from_trace(&trace, self.layer, self.capacity, freedom, &name)
                .map_err(|e| e.with_file(&self.trace.trace))?;
        write_json(&self.output, &instance)?;
        note!("wrote {}", self.output.display());
        Ok(())
    }
}

/// `moe-opt tpot`.
#[derive(Debug, Args)]
pub(super) struct TpotArgs {
    #[command(flatten)]
    trace: TraceArgs,
    /// Experts in the GPU cache (one pool over all layers).
    #[arg(long, value_parser = super::flags::at_least_one::<usize>)]
    capacity: usize,
    /// Alg. 1's substitution threshold.
    #[arg(long, default_value_t = 0.0, value_parser = super::flags::fraction)]
    alpha: f64,
    /// Comma-separated alphas: fit T(alpha) and choose by eq. (5) (needs --budget-s).
    #[arg(long, value_delimiter = ',', value_parser = super::flags::fraction)]
    alphas: Vec<f64>,
    /// The TPOT budget R of eq. (5), seconds.
    #[arg(long, value_parser = super::flags::positive)]
    budget_s: Option<f64>,
    /// Degree of the polynomial fit of T(alpha).
    #[arg(long, default_value_t = 2)]
    degree: usize,
    /// The CPU-vs-PCIe split: alg2, earliest-finish, optimal, load, cpu.
    #[arg(long, default_value = "alg2")]
    split: SplitChoice,
    /// Most experts prefetched for the next layer.
    #[arg(long, default_value_t = 4)]
    prefetch: usize,
    /// What the prefetcher predicts: oracle (the next layer's true top-score set) or
    /// previous-token (that layer's top-score set at the previous token).
    #[arg(long, default_value = "oracle")]
    predictor: Predictor,
    /// C_load: one expert over PCIe, seconds.
    #[arg(long, default_value_t = 6e-3, value_parser = super::flags::non_negative)]
    load_s: f64,
    /// C_CPU: one expert on the CPU, seconds.
    #[arg(long, default_value_t = 2e-3, value_parser = super::flags::non_negative)]
    cpu_s: f64,
    /// One expert on the GPU, seconds.
    #[arg(long, default_value_t = 1e-4, value_parser = super::flags::non_negative)]
    gpu_s: f64,
    /// Common parameters of a layer on the GPU, seconds.
    #[arg(long, default_value_t = 5e-4, value_parser = super::flags::non_negative)]
    common_s: f64,
    #[command(flatten)]
    output: Output,
}

impl TpotArgs {
    pub(super) fn run(self) -> Result<(), CliError> {
        let (trace, sha256) = self.trace.load()?;
        let split = self.split;
        let config = PipelineConfig {
            router: RouterConfig::new(self.alpha),
            split,
            prefetch: self.prefetch,
            predictor: self.predictor,
            costs: PipelineCosts {
                load_s: self.load_s,
                cpu_s: self.cpu_s,
                gpu_s: self.gpu_s,
                common_s: self.common_s,
            },
        };
        if self.alphas.is_empty() {
            let mut report = sc::tpot(&trace, self.capacity, &config)
                .map_err(|e| e.with_file(&self.trace.trace))?;
            report.trace.stamp(sha256);
            return problems::emit(&report, self.output.json, |r| r.text());
        }
        let Some(budget) = self.budget_s else {
            return Err(CliError::input(
                "--alphas needs --budget-s (the TPOT budget R of eq. (5))",
            ));
        };
        let mut report = sc::alpha(
            &trace,
            self.capacity,
            &config,
            &self.alphas,
            self.degree,
            budget,
        )
        .map_err(|e| e.with_file(&self.trace.trace))?;
        report.trace.stamp(sha256);
        let context = vec![
            ("moe_opt_version", VERSION.into()),
            ("budget_s", budget.into()),
        ];
        let rows = report.samples.iter().map(to_value).collect();
        emit_table(&self.output, &report, report.text(), context, rows)
    }
}

#[cfg(test)]
mod tests {
    use crate::cli::rejoin_knobs;

    #[test]
    fn knob_pieces_rejoin_their_router() {
        let pieces: Vec<String> = "max-rank:m=4,j=1,lru,cumsum:p=0.5,j=0,top-k"
            .split(',')
            .map(String::from)
            .collect();
        assert_eq!(
            rejoin_knobs(&pieces),
            ["max-rank:m=4,j=1", "lru", "cumsum:p=0.5,j=0", "top-k"]
        );
    }
}

/// `moe-opt export`.
#[derive(Debug, Args)]
pub(super) struct ExportArgs {
    #[command(flatten)]
    trace: TraceArgs,
    /// oracle-general (24-byte binary records) or csv (with the header
    /// time,obj_id,obj_size,next_access_vtime).
    #[arg(long, value_enum, default_value = "oracle-general")]
    format: Format,
    /// Only this MoE layer's stream (a per-layer cache in libCacheSim), 0-based.
    #[arg(long)]
    layer: Option<usize>,
    /// obj_size of every request: 1 (a capacity counts experts) or the expert's bytes.
    #[arg(long, default_value_t = 1, value_parser = super::flags::at_least_one::<u32>)]
    object_size: u32,
    /// Output file.
    #[arg(short, long, visible_alias = "out")]
    output: PathBuf,
}

impl ExportArgs {
    pub(super) fn run(self) -> Result<(), CliError> {
        let records = cc::export_records(
            &self.trace.trace,
            &self.trace.options(),
            self.layer,
            self.object_size,
        )?;
        super::write_file(&self.output, &libcachesim::encode(&records, self.format))?;
        note!(
            "wrote {} ({} requests)",
            self.output.display(),
            records.len()
        );
        Ok(())
    }
}
