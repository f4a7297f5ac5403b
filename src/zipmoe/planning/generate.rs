//! Planning instances from activation counts (a real file or a synthetic one) and a
//! [`PlanConfig`]: what the counts do not say (delays, threads, footprints, budget, pools,
//! grid).
//!
//! ## Default configuration ([`PlanConfig::default`], illustrative)
//!
//! The paper reports no profiled c, v, u; the defaults derive them from an expert's shape and
//! the few hardware numbers the paper gives, with [`ExpertGeometry`]:
//!
//! * expert: DeepSeek-V2-Lite / Qwen1.5-MoE routed expert, 3 matrices (n = 3) of 2048 x 1408 =
//!   2,883,584 BF16 elements (public model configurations);
//! * SSD read bandwidth 3.5 GB/s (Sec. 5, Samsung 970 EVO);
//! * exponent compression ratio rho = 0.33: Fig. 2 gives exponent entropies of 2.55-2.65 bits
//!   of 8 (Sec. 2.2);
//! * one thread decompresses 3.5 / 3 GB/s of exponent bytes: Sec. 2.3 (I) says decompression
//!   beats SSD I/O of the same decompressed bytes "once >= 3 worker threads are employed";
//! * L = 6 worker threads (Sec. 2.3 (III): "mainstream mobile devices typically feature 6-12
//!   CPU cores"), K = 4 shards (not reported; moe-opt's choice);
//! * budget: 25% of the BF16 size of all layers' routed experts; pools: all four; grid step
//!   0.05 (1,771 splits); eq. (24) to 1e-10.
//!
//! Per tensor of m elements: an SM-chunk is m bytes, so u = m / B_ssd; an E-chunk is rho m / K
//! bytes, so v = rho m / (K B_ssd); decompressing it takes c = (m / K) / B_dec. Per expert:
//! full = 2 m n bytes, SM = m n, E = ceil(rho m n).

use formulations::zipmoe::pool::{
    validate, IpfOptions, LayerProfile, MemoryModel, Pool, PoolInstance, ReconstructionCosts,
};
use formulations::ValidationError;
use serde::{Deserialize, Serialize};

use super::counts::{inclusion_probabilities, ActivationCounts, RankScope, SyntheticCounts};

/// An expert's shape and the hardware that reads and decompresses it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpertGeometry {
    /// n: weight tensors per expert.
    pub tensors_per_expert: u32,
    /// m: BF16 elements per tensor.
    pub elements_per_tensor: u64,
    /// SSD read bandwidth, bytes per second.
    pub ssd_bytes_per_s: f64,
    /// rho: compressed / raw size of the exponent bits.
    pub exponent_ratio: f64,
    /// Exponent bytes (decompressed) one thread produces per second.
    pub decompress_bytes_per_s: f64,
    /// K: exponent shards per tensor.
    pub shards: u32,
    /// L: decompression worker threads.
    pub threads: u32,
}

impl Default for ExpertGeometry {
    /// The module doc's defaults.
    fn default() -> Self {
        ExpertGeometry {
            tensors_per_expert: 3,
            elements_per_tensor: 2048 * 1408,
            ssd_bytes_per_s: 3.5e9,
            exponent_ratio: 0.33,
            decompress_bytes_per_s: 3.5e9 / 3.0,
            shards: 4,
            threads: 6,
        }
    }
}

impl ExpertGeometry {
    /// Alg. 3's delays and counts (module doc's formulas).
    pub fn costs(&self) -> ReconstructionCosts {
        let m = self.elements_per_tensor as f64;
        let k = f64::from(self.shards);
        ReconstructionCosts {
            decompress_e_chunk_s: m / k / self.decompress_bytes_per_s,
            read_e_chunk_s: self.exponent_ratio * m / (k * self.ssd_bytes_per_s),
            read_sm_chunk_s: m / self.ssd_bytes_per_s,
            threads: self.threads,
            shards: self.shards,
            tensors_per_expert: self.tensors_per_expert,
        }
    }

    /// One expert's bytes: (full, SM, E).
    pub fn footprints(&self) -> (u64, u64, u64) {
        let raw = self.elements_per_tensor * u64::from(self.tensors_per_expert);
        let e = (self.exponent_ratio * raw as f64).ceil() as u64;
        (2 * raw, raw, e.max(1))
    }
}

/// Everything a planning instance needs besides the inclusion probabilities.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanConfig {
    /// Expert shape and hardware, giving the costs and footprints.
    pub geometry: ExpertGeometry,
    /// Budget as a fraction of the BF16 size of all layers' experts.
    pub budget_fraction: f64,
    /// Lambda.
    pub pools: Vec<Pool>,
    /// delta.
    pub grid_step: f64,
    /// Eq. (24)'s stopping rule.
    pub ipf: IpfOptions,
}

impl Default for PlanConfig {
    /// The module doc's defaults.
    fn default() -> Self {
        PlanConfig {
            geometry: ExpertGeometry::default(),
            budget_fraction: 0.25,
            pools: Pool::ALL.to_vec(),
            grid_step: 0.05,
            ipf: IpfOptions::default(),
        }
    }
}

/// A planning instance with the given inclusion-probability lists and configuration. Errors
/// name the instance field that breaks a rule.
pub fn instance(
    name: &str,
    top_k: u32,
    layers: Vec<Vec<f64>>,
    config: &PlanConfig,
) -> Result<PoolInstance, ValidationError> {
    if !(config.budget_fraction.is_finite() && config.budget_fraction >= 0.0) {
        return Err(ValidationError::new(
            "budget_fraction",
            format!("must be finite and >= 0, got {}", config.budget_fraction),
        ));
    }
    let (full, sm, e) = config.geometry.footprints();
    let experts = layers.first().map_or(0, Vec::len) as f64;
    let budget = config.budget_fraction * layers.len() as f64 * experts * full as f64;
    let instance = PoolInstance {
        problem: formulations::ProblemKind::ZipmoePool,
        name: name.into(),
        top_k,
        layers: layers
            .into_iter()
            .map(|f| LayerProfile {
                inclusion_probabilities: f,
            })
            .collect(),
        costs: config.geometry.costs(),
        memory: MemoryModel {
            budget_bytes: budget.round() as u64,
            full_expert_bytes: full,
            sm_expert_bytes: sm,
            e_expert_bytes: e,
        },
        pools: config.pools.clone(),
        grid_step: config.grid_step,
        ipf: config.ipf.clone(),
    };
    validate(&instance)?;
    Ok(instance)
}

/// The lists of the file layers `want` (indices into the file's layers; all when `None`) out
/// of [`inclusion_probabilities`]'s (layer, f) pairs. Errors name `layers[i]`.
pub fn select_layers(
    all: Vec<(usize, Vec<f64>)>,
    want: Option<&[usize]>,
) -> Result<Vec<Vec<f64>>, ValidationError> {
    let Some(want) = want else {
        return Ok(all.into_iter().map(|(_, f)| f).collect());
    };
    want.iter()
        .enumerate()
        .map(|(i, &l)| {
            all.iter()
                .find(|(fl, _)| *fl == l)
                .map(|(_, f)| f.clone())
                .ok_or_else(|| {
                    ValidationError::new(
                        format!("layers[{i}]"),
                        format!("file layer {l} is not a MoE layer with activations"),
                    )
                })
        })
        .collect()
}

/// The name of an instance built from `model`'s counts ranked per `scope`.
pub fn counts_name(model: &str, scope: RankScope) -> String {
    let scope = match scope {
        RankScope::PerPrompt => "per-prompt",
        RankScope::Global => "global",
    };
    format!("{model} ({scope} ranks)")
}

/// The instance of a counts file's MoE layers (`layers`: file layer indices to keep, all MoE
/// layers when `None`), ranked per `scope`.
pub fn from_counts(
    counts: &ActivationCounts,
    scope: RankScope,
    layers: Option<&[usize]>,
    config: &PlanConfig,
) -> Result<PoolInstance, ValidationError> {
    let kept = select_layers(inclusion_probabilities(counts, scope)?, layers)?;
    instance(
        &counts_name(&counts.model, scope),
        counts.top_k,
        kept,
        config,
    )
}

/// A generated instance: synthetic counts for `seed`, then [`from_counts`] with per-prompt
/// ranks.
pub fn generate(
    synthetic: &SyntheticCounts,
    config: &PlanConfig,
    seed: u64,
) -> Result<PoolInstance, ValidationError> {
    let counts = synthetic.generate(seed)?;
    from_counts(&counts, RankScope::PerPrompt, None, config)
}

/// A four-expert, Top-2 instance for tests and examples (f = (0.9, 0.6, 0.3, 0.2); budget 40%
/// of the layer; all four pools; grid step 1/4).
pub fn tiny_instance() -> PoolInstance {
    instance(
        "tiny",
        2,
        vec![vec![0.9, 0.6, 0.3, 0.2]],
        &PlanConfig {
            budget_fraction: 0.4,
            grid_step: 0.25,
            ..PlanConfig::default()
        },
    )
    .expect("the tiny instance is valid")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_costs_by_hand() {
        // m = 2,883,584: u = m / 3.5e9 = 8.2388e-4 s; v = 0.33 m / (4 x 3.5e9) = 6.797e-5 s;
        // c = m / 4 / (3.5e9 / 3) = 6.179e-4 s. Footprints: full 2 x 3m = 17,301,504 B,
        // SM 8,650,752 B, E ceil(0.33 x 8,650,752) = 2,854,749 B (0.33 x 8,650,752 =
        // 2,854,748.16).
        let g = ExpertGeometry::default();
        let c = g.costs();
        assert!((c.read_sm_chunk_s - 2_883_584.0 / 3.5e9).abs() < 1e-15);
        assert!((c.read_e_chunk_s - 6.797019e-5).abs() < 1e-10, "{c:?}");
        assert!((c.decompress_e_chunk_s - 6.179108e-4).abs() < 1e-9, "{c:?}");
        assert_eq!(g.footprints(), (17_301_504, 8_650_752, 2_854_749));
    }

    #[test]
    fn generated_instances_are_valid_and_reproducible() {
        let s = SyntheticCounts {
            experts: 16,
            top_k: 2,
            layers: 2,
            prompts: 30,
            tokens_per_prompt: 10,
            zipf_exponent: 1.0,
        };
        let a = generate(&s, &PlanConfig::default(), 7).unwrap();
        assert_eq!(a, generate(&s, &PlanConfig::default(), 7).unwrap());
        assert_eq!((a.layers.len(), a.experts(), a.top_k), (2, 16, 2));
        // 25% of 2 layers x 16 experts x 17,301,504 B.
        assert_eq!(a.memory.budget_bytes, 138_412_032);
    }
}
