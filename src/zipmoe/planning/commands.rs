//! What the command line calls for ZipMoE's cache-pool planning: build an instance from a
//! counts file ([`import`]) or synthetic counts ([`generate()`]), and plan ([`plan`],
//! [`plan_file`], [`plan_counts`], [`plan_generated`]), each plan returning a [`PlanReport`]
//! (JSON via serde, [`PlanReport::text`] for humans), and compare Alg. 3's estimate with the
//! simulated scheduler ([`compare_estimate`], an [`EstimateReport`]).

use std::path::Path;

use formulations::zipmoe::pool::{self, PoolInstance, Split};
use formulations::Error;
use serde::{Deserialize, Serialize};

use super::compare::{self, EstimateComparison};
use super::counts::{inclusion_probabilities, read, Header, RankScope, SyntheticCounts};
use super::generate::{self, PlanConfig};
use super::planner;
use crate::generate::Made;
use crate::registry::{self, ConfigSource, Entry, ImportArgs};
use crate::report::{canonical_sha256, VERSION};
use crate::verify::ClaimGroup;
use serde_json::Value;

/// Where configuration errors are reported (no file).
const CONFIG: &str = "<config>";

/// Options of [`import`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportOptions {
    /// How experts are ranked (per prompt by default).
    #[serde(default)]
    pub scope: RankScope,
    /// File layer indices to plan for; all MoE layers when absent.
    #[serde(default)]
    pub layers: Option<Vec<usize>>,
    /// Costs, footprints, budget, pools, grid, eq. (24)'s tolerance.
    #[serde(default)]
    pub config: PlanConfig,
}

/// Options of [`generate()`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenerateOptions {
    /// The synthetic workload.
    #[serde(default)]
    pub synthetic: SyntheticCounts,
    /// Costs, footprints, budget, pools, grid, eq. (24)'s tolerance.
    #[serde(default)]
    pub config: PlanConfig,
}

/// A planning instance from an activation-count file. Errors name the file (or `<config>`)
/// and the field.
pub fn import(
    path: &Path,
    header: &Header,
    options: &ImportOptions,
) -> Result<PoolInstance, Error> {
    let counts = read(path, header)?;
    // Count errors are the file's; layer selection and instance rules the configuration's.
    let all = inclusion_probabilities(&counts, options.scope).map_err(|e| e.in_file(path))?;
    let kept =
        generate::select_layers(all, options.layers.as_deref()).map_err(|e| e.in_file(CONFIG))?;
    generate::instance(
        &generate::counts_name(&counts.model, options.scope),
        counts.top_k,
        kept,
        &options.config,
    )
    .map_err(|e| e.in_file(CONFIG))
}

/// A planning instance from synthetic counts for `seed`.
pub fn generate(options: &GenerateOptions, seed: u64) -> Result<PoolInstance, Error> {
    generate::generate(&options.synthetic, &options.config, seed).map_err(|e| e.in_file(CONFIG))
}

/// Eq. (24)'s outcome on one layer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LayerFitReport {
    /// Updates of eq. (24).
    pub ipf_iterations: u32,
    /// max_i |f_i^(t) - f_i| at the end.
    pub ipf_residual: f64,
    /// Phi_N(k): probability of exactly k selections under independent q.
    pub phi_n_k: f64,
    /// The layer's expected makespan under the chosen split, seconds.
    pub expected_makespan_s: f64,
}

/// One pool's share of the chosen split.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PoolReport {
    /// `full`, `compressed`, `sign_mantissa` or `exponent`.
    pub pool: pool::Pool,
    /// The paper's letter (F, C, S, E).
    pub letter: &'static str,
    /// gamma_p, the memory ratio.
    pub ratio: f64,
    /// S_p: experts per layer.
    pub experts: usize,
    /// Bytes S_p occupies per layer.
    pub bytes_per_layer: u64,
}

/// Output of a plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanReport {
    /// moe-opt version.
    pub moe_opt_version: &'static str,
    /// The instance's `name`.
    pub instance_name: String,
    /// SHA-256 of the instance's canonical JSON.
    pub instance_sha256: String,
    /// |N|: experts per layer.
    pub experts: usize,
    /// MoE layers planned for.
    pub layers: usize,
    /// k.
    pub top_k: u32,
    /// Memory budget of all layers, bytes.
    pub budget_bytes: u64,
    /// delta.
    pub grid_step: f64,
    /// Splits visited by Alg. 4.
    pub grid_points: u64,
    /// The chosen split, one line per activated pool, in hierarchy order.
    pub pools: Vec<PoolReport>,
    /// Ranks no pool covers (the Miss Pool), per layer.
    pub miss_experts: usize,
    /// Alg. 4's cost of the chosen split: expected makespan summed over layers, seconds
    /// (Alg. 3's estimate, without token execution).
    pub expected_makespan_s: f64,
    /// Per layer: eq. (24) and the layer's expected makespan.
    pub layer_fits: Vec<LayerFitReport>,
}

impl PlanReport {
    /// Human-readable rendering.
    pub fn text(&self) -> String {
        let mut s = format!(
            "ZipMoE cache-pool plan for {} ({} layer(s) x {} experts, top-{}), budget {} B, grid \
             step {} ({} splits)\n",
            self.instance_name,
            self.layers,
            self.experts,
            self.top_k,
            self.budget_bytes,
            self.grid_step,
            self.grid_points
        );
        let mut rows: Vec<Vec<String>> = self
            .pools
            .iter()
            .map(|p| {
                vec![
                    p.letter.to_string(),
                    crate::render::name(&p.pool),
                    format!("{:.3}", p.ratio),
                    p.experts.to_string(),
                    p.bytes_per_layer.to_string(),
                ]
            })
            .collect();
        rows.push(vec![
            "M".into(),
            "miss".into(),
            "-".into(),
            self.miss_experts.to_string(),
            "-".into(),
        ]);
        s += &crate::render::table(
            &[
                "pool",
                "kind",
                "ratio",
                "experts per layer",
                "bytes per layer",
            ],
            &rows,
            2,
        );
        s += &format!(
            "  expected makespan (Alg. 3, all layers): {:.6} ms\n",
            self.expected_makespan_s * 1e3
        );
        let iterations = self.layer_fits.iter().map(|l| l.ipf_iterations).max();
        let residual = self
            .layer_fits
            .iter()
            .map(|l| l.ipf_residual)
            .fold(0.0, f64::max);
        s += &format!(
            "  eq. (24): at most {} iterations per layer, worst residual {residual:.3e}\n",
            iterations.unwrap_or(0)
        );
        s
    }
}

/// Alg. 4 on an instance; errors name the field (invalid instance, eq. (24) not converging).
pub fn plan(instance: &PoolInstance) -> Result<PlanReport, formulations::ValidationError> {
    let p = planner::plan(instance)?;
    let best = &p.best;
    let pools = instance
        .active_pools()
        .into_iter()
        .map(|pool| {
            let experts = best.sizes.experts[pool.index()];
            PoolReport {
                pool,
                letter: pool.letter(),
                ratio: best.ratios[pool.index()],
                experts,
                bytes_per_layer: experts as u64 * instance.memory.expert_bytes(pool),
            }
        })
        .collect();
    Ok(PlanReport {
        moe_opt_version: VERSION,
        instance_name: instance.name.clone(),
        instance_sha256: canonical_sha256(instance),
        experts: instance.experts(),
        layers: instance.layers.len(),
        top_k: instance.top_k,
        budget_bytes: instance.memory.budget_bytes,
        grid_step: instance.grid_step,
        grid_points: p.grid_points,
        pools,
        miss_experts: best.sizes.miss,
        expected_makespan_s: best.expected_makespan_s,
        layer_fits: p
            .layers
            .iter()
            .zip(&best.layer_makespans_s)
            .map(|(m, &e)| LayerFitReport {
                ipf_iterations: m.ipf.iterations,
                ipf_residual: m.ipf.residual,
                phi_n_k: m.phi_n_k,
                expected_makespan_s: e,
            })
            .collect(),
    })
}

/// Plans the instance file at `path`; errors name the file and field.
pub fn plan_file(path: &Path) -> Result<PlanReport, Error> {
    let instance = pool::load(path)?;
    plan(&instance).map_err(|e| e.in_file(path))
}

/// Imports a counts file and plans it.
pub fn plan_counts(
    path: &Path,
    header: &Header,
    options: &ImportOptions,
) -> Result<PlanReport, Error> {
    let instance = import(path, header, options)?;
    plan(&instance).map_err(|e| e.in_file(path))
}

/// Generates synthetic counts for `seed` and plans them.
pub fn plan_generated(options: &GenerateOptions, seed: u64) -> Result<PlanReport, Error> {
    let instance = generate(options, seed)?;
    plan(&instance).map_err(|e| e.in_file(CONFIG))
}

/// Output of [`compare_estimate`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EstimateReport {
    /// moe-opt version.
    pub moe_opt_version: &'static str,
    /// The instance's `name`.
    pub instance_name: String,
    /// SHA-256 of the instance's canonical JSON.
    pub instance_sha256: String,
    /// gamma_p of the split compared, per pool (F, C, S, E).
    pub ratios: [f64; 4],
    /// Whether the split is the planner's choice (Alg. 4) rather than a given one.
    pub planned_split: bool,
    /// The comparison.
    pub comparison: EstimateComparison,
}

impl EstimateReport {
    /// Human-readable rendering.
    pub fn text(&self) -> String {
        let c = &self.comparison;
        format!(
            "Alg. 3 vs simulated Alg. 1 on {} layer {}, split F/C/S/E = [{}]{}\n  \
             {} sampled hit patterns (seed {}): mean |rel. error| {:.4}, max {:.4}, mean signed \
             {:+.4}\n  all {} patterns: weighted mean |rel. error| {:.4}, max {:.4}\n  \
             expected makespan: estimate {:.6} ms, simulated {:.6} ms\n",
            self.instance_name,
            c.layer,
            crate::render::list(&self.ratios, |r| format!("{r:.3}")),
            if self.planned_split { " (planned)" } else { "" },
            c.samples,
            c.seed,
            c.sampled_mean_relative_error,
            c.sampled_max_relative_error,
            c.sampled_mean_signed_relative_error,
            c.patterns.len(),
            c.weighted_mean_relative_error,
            c.support_max_relative_error,
            c.expected_estimate_s * 1e3,
            c.expected_simulated_s * 1e3,
        )
    }
}

/// Alg. 3's estimate against the simulated cache-affinity scheduler on `layer`, under `split`
/// or, when `None`, the split Alg. 4 chooses; `samples` hit patterns drawn with `seed`.
pub fn compare_estimate(
    instance: &PoolInstance,
    layer: usize,
    split: Option<Split>,
    samples: u32,
    seed: u64,
) -> Result<EstimateReport, formulations::ValidationError> {
    let planned_split = split.is_none();
    let split = match split {
        Some(s) => s,
        None => planner::plan(instance)?.best.split,
    };
    let comparison = compare::compare_estimate(instance, layer, &split, samples, seed)?;
    Ok(EstimateReport {
        moe_opt_version: VERSION,
        instance_name: instance.name.clone(),
        instance_sha256: canonical_sha256(instance),
        ratios: split.ratios(instance.grid_steps()),
        planned_split,
        comparison,
    })
}

/// ZipMoE's cache-pool planning in the registry: generated from synthetic counts (`--config`,
/// no presets) or imported from a count file, and planned by `moe-opt plan`.
pub struct PoolEntry;

impl Entry for PoolEntry {
    fn tag(&self) -> &'static str {
        "zipmoe-pool"
    }

    fn about(&self) -> &'static str {
        "ZipMoE's cache-pool planning (paper 003, App. C and D)"
    }

    fn config(&self, source: ConfigSource) -> Result<Value, Error> {
        Ok(registry::to_value(&pool_options(source)?))
    }

    fn generate(&self, source: ConfigSource, seed: u64) -> Result<Made, Error> {
        // The configuration's errors name its file, as every generator's do.
        let made =
            generate(&pool_options(source)?, seed).map_err(|e| e.with_file_if(source.file))?;
        Ok(Made::new(&made, String::new()))
    }

    fn import(&self, args: &ImportArgs) -> Result<Made, Error> {
        let (counts, header) = args.counts(self.tag())?;
        args.no_overrides()?;
        Ok(Made::new(
            &import(counts, &header, &args.config()?)?,
            String::new(),
        ))
    }

    fn hint(&self, file: &Path) -> String {
        format!("plan it with `moe-opt plan {}`", file.display())
    }

    fn claims(&self) -> Vec<Box<dyn ClaimGroup>> {
        vec![Box::new(super::claims::table())]
    }
}

/// The generator options: the file's, or the defaults (the planner has no presets).
fn pool_options(source: ConfigSource) -> Result<GenerateOptions, Error> {
    if let Some(p) = source.preset {
        return Err(Error::command_line(
            "--preset",
            format!("zipmoe-pool has no presets (got `{p}`); give --config (see --print-config)"),
        ));
    }
    match source.file {
        Some(path) => formulations::error::read_json(path),
        None => Ok(GenerateOptions::default()),
    }
}
