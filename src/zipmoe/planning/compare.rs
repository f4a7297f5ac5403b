//! Alg. 3's makespan estimate against the scheduler it approximates: for the hit patterns of
//! one layer under one split, the estimate (App. C: "to circumvent the high computational
//! overhead of fully simulating Algorithm 1, we employ a heuristic approximation") is compared
//! with the makespan of Alg. 1's cache-affinity priority ([`cache_affinity`]) as executed by
//! the scheduling simulator ([`Simulator`]).
//!
//! ## The layer a hit pattern becomes
//!
//! Pattern h = (h_F, h_C, h_S, h_E) with k_rem misses gives k selected experts: h_F `full`,
//! h_C `compressed`, h_S `sm_cached`, h_E `e_cached` and k_rem `missed` (Sec. 3.2), with n, K,
//! L, u and c from the planning instance. The scheduler's model fixes the E-chunk read at
//! v = rho u / K (Sec. 3.3), so rho = v K / u, which must lie in (0, 1] (an error naming
//! `costs.read_e_chunk_s` otherwise); u and c must be positive. Alg. 3 excludes token
//! execution, so every expert's GPU time p_n is 0 (one token each): both sides then measure
//! the reconstruction makespan only. All experts of a state are interchangeable, so each
//! pattern is simulated once.
//!
//! ## What is reported
//!
//! Relative error |estimate - simulated| / simulated (0 when both are 0, which happens only
//! when every selected expert is full); the signed error (estimate - simulated) / simulated
//! shows the bias. Over `samples` patterns drawn (seeded ChaCha8) from the planner's own
//! hit-pattern distribution (Sec. 3.4, Alg. 4 line 25): mean and max. Exactly over the whole
//! support: the probability-weighted mean and the max, and both expected makespans.

use formulations::zipmoe::pool::{
    estimate_makespan_s, hit_patterns, phi_all, pool_sizes, PoolInstance, Split,
};
use formulations::zipmoe::{CompressionState, Instance, SelectedExpert, Simulator};
use formulations::{ProblemKind, ValidationError};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::ipf::fit;
use crate::zipmoe::algorithms::{cache_affinity, Candidates};

/// One hit pattern's estimate and simulation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PatternComparison {
    /// h_p per pool (F, C, S, E).
    pub hits: [usize; 4],
    /// k_rem.
    pub misses: usize,
    /// The planner's probability of the pattern.
    pub probability: f64,
    /// Alg. 3's estimate, seconds.
    pub estimate_s: f64,
    /// Alg. 1's schedule simulated, seconds.
    pub simulated_s: f64,
    /// (estimate - simulated) / simulated (0 when both are 0).
    pub signed_relative_error: f64,
}

/// Alg. 3 against the simulated scheduler on one layer and split.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EstimateComparison {
    /// The layer compared.
    pub layer: usize,
    /// The split (grid steps per pool F, C, S, E).
    pub split: Split,
    /// Patterns drawn.
    pub samples: u32,
    /// Seed of the draws.
    pub seed: u64,
    /// Mean |relative error| over the draws.
    pub sampled_mean_relative_error: f64,
    /// Max |relative error| over the draws.
    pub sampled_max_relative_error: f64,
    /// Mean signed relative error over the draws (< 0: Alg. 3 underestimates).
    pub sampled_mean_signed_relative_error: f64,
    /// sum_h P(h) |relative error(h)| over every pattern of positive probability.
    pub weighted_mean_relative_error: f64,
    /// Max |relative error| over every pattern of positive probability.
    pub support_max_relative_error: f64,
    /// sum_h P(h) estimate(h): the planner's expected makespan of this layer, seconds.
    pub expected_estimate_s: f64,
    /// sum_h P(h) simulated(h), seconds.
    pub expected_simulated_s: f64,
    /// Every pattern of positive probability, in Alg. 4's loop order.
    pub patterns: Vec<PatternComparison>,
}

/// The scheduling layer of a hit pattern (module doc). Errors name the planning instance's
/// field the conversion needs.
pub fn layer_instance(
    instance: &PoolInstance,
    hits: [usize; 4],
    misses: usize,
) -> Result<Instance, ValidationError> {
    let c = &instance.costs;
    if c.read_sm_chunk_s.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
        return Err(ValidationError::new(
            "costs.read_sm_chunk_s",
            "must be positive for the scheduler's model (rho = v K / u)",
        ));
    }
    if c.decompress_e_chunk_s.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
        return Err(ValidationError::new(
            "costs.decompress_e_chunk_s",
            "must be positive for the scheduler's model",
        ));
    }
    let rho = c.read_e_chunk_s * f64::from(c.shards) / c.read_sm_chunk_s;
    if !(rho > 0.0 && rho <= 1.0) {
        return Err(ValidationError::new(
            "costs.read_e_chunk_s",
            format!("the scheduler fixes v = rho u / K with rho in (0, 1]; here v K / u = {rho}"),
        ));
    }
    let states = [
        CompressionState::Full,
        CompressionState::Compressed,
        CompressionState::SmCached,
        CompressionState::ECached,
        CompressionState::Missed,
    ];
    let counts = [hits[0], hits[1], hits[2], hits[3], misses];
    let experts = states
        .iter()
        .zip(counts)
        .flat_map(|(&state, n)| std::iter::repeat_n(state, n))
        .enumerate()
        .map(|(id, state)| SelectedExpert {
            id: id as u32,
            tokens: 1,
            gpu_s: 0.0,
            state,
        })
        .collect();
    Ok(Instance {
        problem: ProblemKind::Zipmoe,
        name: format!("{} h={hits:?} miss={misses}", instance.name),
        tensors_per_expert: c.tensors_per_expert,
        shards: c.shards,
        compression_ratio: rho,
        sm_read_s: c.read_sm_chunk_s,
        decompress_s: c.decompress_e_chunk_s,
        threads: c.threads,
        experts,
    })
}

/// The makespan of Alg. 1's priority for a layer, simulated.
pub fn simulated_makespan_s(layer: &Instance) -> Result<f64, ValidationError> {
    formulations::zipmoe::validate::validate(layer)?;
    let priority = cache_affinity(layer, Candidates::Algorithm1).priority;
    Simulator::new(layer)
        .run(&priority)
        .map(|s| s.makespan_s)
        .map_err(|e| ValidationError::new("scheduler", e.to_string()))
}

fn signed_error(estimate: f64, simulated: f64) -> f64 {
    if simulated > 0.0 {
        (estimate - simulated) / simulated
    } else if estimate == 0.0 {
        0.0
    } else {
        f64::INFINITY
    }
}

/// Alg. 3 against the simulated scheduler for `layer` of `instance` under `split` (module
/// doc). Errors: an invalid instance or layer, eq. (24) failing, costs the scheduler cannot
/// represent.
pub fn compare_estimate(
    instance: &PoolInstance,
    layer: usize,
    split: &Split,
    samples: u32,
    seed: u64,
) -> Result<EstimateComparison, ValidationError> {
    formulations::zipmoe::pool::validate(instance)?;
    let profile = instance.layers.get(layer).ok_or_else(|| {
        ValidationError::new(
            "layer",
            format!("{layer} is not below the {} layers", instance.layers.len()),
        )
    })?;
    let k = instance.top_k as usize;
    let field = format!("layers[{layer}].inclusion_probabilities");
    let q = fit(
        &profile.inclusion_probabilities,
        instance.top_k,
        &instance.ipf,
        &field,
    )?
    .selection_probabilities;
    let sizes = pool_sizes(instance, split);
    let patterns: Vec<PatternComparison> = hit_patterns(&q, k, &sizes, phi_all(&q, k))
        .into_iter()
        .filter(|h| h.probability > 0.0)
        .map(|h| {
            let estimate_s = estimate_makespan_s(k, h.hits, &instance.costs);
            let simulated_s = simulated_makespan_s(&layer_instance(instance, h.hits, h.misses)?)?;
            Ok(PatternComparison {
                hits: h.hits,
                misses: h.misses,
                probability: h.probability,
                estimate_s,
                simulated_s,
                signed_relative_error: signed_error(estimate_s, simulated_s),
            })
        })
        .collect::<Result<_, ValidationError>>()?;
    let weighted = |f: &dyn Fn(&PatternComparison) -> f64| -> f64 {
        patterns.iter().map(|p| p.probability * f(p)).sum()
    };
    let total: f64 = patterns.iter().map(|p| p.probability).sum();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut drawn = Vec::with_capacity(samples as usize);
    for _ in 0..samples {
        let mut x = rng.random::<f64>() * total;
        let mut pick = patterns.len() - 1;
        for (i, p) in patterns.iter().enumerate() {
            if x < p.probability {
                pick = i;
                break;
            }
            x -= p.probability;
        }
        drawn.push(patterns[pick].signed_relative_error);
    }
    let n = f64::from(samples.max(1));
    Ok(EstimateComparison {
        layer,
        split: *split,
        samples,
        seed,
        sampled_mean_relative_error: drawn.iter().map(|e| e.abs()).sum::<f64>() / n,
        sampled_max_relative_error: drawn.iter().map(|e| e.abs()).fold(0.0, f64::max),
        sampled_mean_signed_relative_error: drawn.iter().sum::<f64>() / n,
        weighted_mean_relative_error: weighted(&|p| p.signed_relative_error.abs()),
        support_max_relative_error: patterns
            .iter()
            .map(|p| p.signed_relative_error.abs())
            .fold(0.0, f64::max),
        expected_estimate_s: weighted(&|p| p.estimate_s),
        expected_simulated_s: weighted(&|p| p.simulated_s),
        patterns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zipmoe::planning::generate::tiny_instance;

    fn unit_costs(threads: u32) -> PoolInstance {
        let mut i = tiny_instance();
        i.costs.read_sm_chunk_s = 10.0;
        i.costs.read_e_chunk_s = 1.0;
        i.costs.decompress_e_chunk_s = 3.0;
        i.costs.shards = 1;
        i.costs.tensors_per_expert = 1;
        i.costs.threads = threads;
        i
    }

    #[test]
    fn one_missed_expert_by_hand() {
        // k = 1 miss, n = K = L = 1, u = 10, v = 1, c = 3. Simulated: read E [0, 1], read SM
        // [1, 11], decompress [1, 4]; recovered at 11. Alg. 3: T_IO = 10 + 1 = 11, T_decomp =
        // (1 + 3) / 1 = 4: 11. Equal.
        let i = unit_costs(1);
        let layer = layer_instance(&i, [0, 0, 0, 0], 1).unwrap();
        assert_eq!(layer.compression_ratio, 0.1);
        assert!((simulated_makespan_s(&layer).unwrap() - 11.0).abs() < 1e-12);
        assert_eq!(estimate_makespan_s(1, [0, 0, 0, 0], &i.costs), 11.0);
    }

    #[test]
    fn one_sm_hit_with_two_threads_by_hand() {
        // One S hit, L = 2: the simulator must read the E-chunk [0, 1] then decompress it
        // [1, 4]: 4. Alg. 3 spreads (n_E v + n_D c) = 1 + 3 over L = 2 threads: max(1, 2) = 2,
        // a relative error of -1/2.
        let i = unit_costs(2);
        let layer = layer_instance(&i, [0, 0, 1, 0], 0).unwrap();
        assert!((simulated_makespan_s(&layer).unwrap() - 4.0).abs() < 1e-12);
        assert_eq!(estimate_makespan_s(1, [0, 0, 1, 0], &i.costs), 2.0);
        assert_eq!(signed_error(2.0, 4.0), -0.5);
    }

    #[test]
    fn unrepresentable_costs_name_the_field() {
        let mut i = unit_costs(1);
        i.costs.read_e_chunk_s = 20.0; // rho = 20 K / u = 2
        assert_eq!(
            layer_instance(&i, [0; 4], 1).unwrap_err().field,
            "costs.read_e_chunk_s"
        );
    }
}
