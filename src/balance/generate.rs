//! Balance instances: a seeded generator with presets, and the importer of real activation
//! counts.
//!
//! ## Generator
//!
//! Each layer's expert loads are `tokens_per_layer` tokens split over the experts in
//! proportion to log-normal draws exp(sigma Z), Z standard normal (Box-Muller on ChaCha8 from
//! the seed), then
//! rounded to whole tokens. sigma sets the skew: a log-normal's coefficient of variation is
//! sqrt(exp(sigma^2) - 1), so sigma = sqrt(ln(1 + CV^2)) matches a measured CV. The
//! `deepseek` presets take CV = 0.474, the mean over the 26 MoE layers of DeepSeek-V2-Lite's
//! real counts (../shared/data/activation-counts/deepseek.json.gz summed over its 953 prompts:
//! the per-layer CV over its 64 experts ranges 0.324-0.642; the busiest expert carries 2.62 x the
//! mean on average), so sigma = 0.450. Only these two numbers enter; the data does not.
//!
//! ## Importer (`import balance --counts FILE`)
//!
//! Loads are the counts summed over the prompts, per layer and expert; layers whose counts are
//! all zero are not MoE layers (DeepSeek-V2-Lite's layer 0 is dense) and are dropped. Slots:
//! the least multiple of the GPUs at least the experts (Qwen's 60 experts on 8 GPUs: 64), plus
//! `extra_per_gpu` per GPU; GPUs, nodes, groups and the options from [`ImportConfig`].

use std::path::Path;

use formulations::balance::{validate::validate, Instance};
use formulations::{Error, ProblemKind};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::counts::Header;
use crate::generate::config_error;

/// The deployment an instance describes (generator and importer share it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Deployment {
    /// GPUs.
    pub gpus: usize,
    /// Redundant slots per GPU beyond the least multiple of the GPUs at least the experts.
    pub extra_per_gpu: usize,
    /// Nodes.
    pub nodes: usize,
    /// Expert groups.
    pub groups: usize,
    /// EPLB's hierarchical locality.
    pub hierarchical: bool,
    /// At most one replica of an expert per GPU.
    pub one_replica_per_gpu: bool,
}

impl Default for Deployment {
    fn default() -> Self {
        Deployment {
            gpus: 8,
            extra_per_gpu: 1,
            nodes: 1,
            groups: 1,
            hierarchical: false,
            one_replica_per_gpu: false,
        }
    }
}

impl Deployment {
    /// The instance of these loads (validated; errors name the configuration's fields).
    pub fn instance(&self, name: String, loads: Vec<Vec<f64>>) -> Result<Instance, Error> {
        if self.gpus == 0 {
            return Err(config_error("gpus", "must be at least 1"));
        }
        let experts = loads.first().map_or(0, Vec::len);
        let slots = experts.div_ceil(self.gpus) * self.gpus + self.extra_per_gpu * self.gpus;
        let instance = Instance {
            problem: ProblemKind::Balance,
            name,
            loads,
            num_replicas: slots,
            num_gpus: self.gpus,
            num_nodes: self.nodes,
            num_groups: self.groups,
            one_replica_per_gpu: self.one_replica_per_gpu,
            hierarchical: self.hierarchical,
            current: None,
        };
        validate(&instance).map_err(|e| config_error(&e.field, e.reason))?;
        Ok(instance)
    }
}

crate::named! {
    /// A generator preset.
    pub enum Preset: "preset" {
        /// 2 layers x 6 experts, 8 slots on 4 GPUs (exhaustive search and the MILP both run)
        Tiny,
        /// 4 layers x 64 experts (DeepSeek-V2-Lite's skew), 72 slots on 8 GPUs
        Small,
        /// 1 layer x 256 experts (DeepSeek-V3's shape, DeepSeek-V2-Lite's skew), 320 slots on 64 GPUs
        DeepseekV3,
    }
}

/// The generator's configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneratorConfig {
    /// Layers.
    pub layers: usize,
    /// Logical experts per layer.
    pub experts: usize,
    /// Tokens routed per layer (the loads' sum, before rounding).
    pub tokens_per_layer: f64,
    /// Log-normal sigma of the loads (module doc).
    pub sigma: f64,
    /// GPUs, slots, nodes, groups and options.
    pub deployment: Deployment,
}

/// sigma of DeepSeek-V2-Lite's measured skew (module doc).
pub const DEEPSEEK_SIGMA: f64 = 0.450;

impl GeneratorConfig {
    /// A preset's configuration.
    pub fn preset(preset: Preset) -> Self {
        let deployment = |gpus, extra_per_gpu| Deployment {
            gpus,
            extra_per_gpu,
            ..Deployment::default()
        };
        match preset {
            Preset::Tiny => GeneratorConfig {
                layers: 2,
                experts: 6,
                tokens_per_layer: 1000.0,
                sigma: DEEPSEEK_SIGMA,
                deployment: deployment(4, 0),
            },
            Preset::Small => GeneratorConfig {
                layers: 4,
                experts: 64,
                tokens_per_layer: 100_000.0,
                sigma: DEEPSEEK_SIGMA,
                deployment: deployment(8, 1),
            },
            Preset::DeepseekV3 => GeneratorConfig {
                layers: 1,
                experts: 256,
                tokens_per_layer: 1_000_000.0,
                sigma: DEEPSEEK_SIGMA,
                deployment: deployment(64, 1),
            },
        }
    }

    /// Checks the values.
    pub fn check(&self) -> Result<(), Error> {
        if self.layers == 0 || self.layers > formulations::balance::validate::MAX_LAYERS {
            return Err(config_error("layers", "must be in 1..=4096"));
        }
        if self.experts == 0 || self.experts > formulations::balance::validate::MAX_EXPERTS {
            return Err(config_error("experts", "must be in 1..=4096"));
        }
        if !(self.tokens_per_layer.is_finite() && self.tokens_per_layer > 0.0) {
            return Err(config_error(
                "tokens_per_layer",
                "must be positive and finite",
            ));
        }
        if !(self.sigma.is_finite() && self.sigma >= 0.0 && self.sigma <= 5.0) {
            return Err(config_error("sigma", "must be in [0, 5]"));
        }
        Ok(())
    }
}

/// A standard normal draw (Box-Muller: sqrt(-2 ln U1) cos(2 pi U2), U1 in (0, 1]).
fn standard_normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// The instance of a configuration at a seed (module doc).
pub fn generate(config: &GeneratorConfig, seed: u64) -> Result<Instance, Error> {
    config.check()?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let loads = (0..config.layers)
        .map(|_| {
            let x: Vec<f64> = (0..config.experts)
                .map(|_| (config.sigma * standard_normal(&mut rng)).exp())
                .collect();
            let sum: f64 = x.iter().sum();
            x.iter()
                .map(|v| (v / sum * config.tokens_per_layer).round())
                .collect()
        })
        .collect();
    config.deployment.instance(
        format!(
            "generated-{}x{}-g{}-seed{seed}",
            config.layers, config.experts, config.deployment.gpus
        ),
        loads,
    )
}

/// The importer's configuration (`--config`): the deployment.
pub type ImportConfig = Deployment;

/// The import draws nothing: `--seed` is not used.
impl crate::registry::CountsConfig for ImportConfig {}

/// An instance from an activation-count file (module doc).
pub fn import(path: &Path, header: &Header, config: &ImportConfig) -> Result<Instance, Error> {
    let counts = crate::counts::read(path, header)?;
    let experts = counts.experts_per_layer as usize;
    let mut loads = vec![vec![0.0f64; experts]; counts.layers];
    for prompt in &counts.counts {
        for (l, row) in prompt.iter().enumerate() {
            for (e, &c) in row.iter().enumerate() {
                loads[l][e] += c as f64;
            }
        }
    }
    loads.retain(|row| row.iter().any(|&x| x > 0.0));
    if loads.is_empty() {
        return Err(Error::Invalid {
            path: path.to_path_buf(),
            field: "counts".into(),
            reason: "every layer's counts are zero: no MoE layer to balance".into(),
        });
    }
    config.instance(
        format!(
            "{}-g{}-x{}",
            counts.model, config.gpus, config.extra_per_gpu
        ),
        loads,
    )
}
