//! Planning-specific moves for the worst-case search and for shrinking counterexamples. Every
//! function takes a valid instance (one that passes
//! [`formulations::zipmoe::pool::validate`]) and returns valid instances.
//!
//! ## Perturbation ([`perturb`])
//!
//! One move, drawn uniformly among:
//!
//! * **mass transfer** in one layer: a fraction t in (0, 1] of min(f_i, 1 - f_j) moves from
//!   rank i to rank j (i != j), then the list is sorted again (most popular first); the sum is
//!   unchanged up to rounding and every f stays in [0, 1];
//! * **delay**: c, v or u times 2^s, s uniform in [-1, 1] (a zero delay stays zero);
//! * **count**: L, K or n plus or minus 1 (kept in 1..=64);
//! * **budget** times 2^s;
//! * **footprint**: one of full, SM, E bytes per expert times 2^s (at least 1);
//! * **grid**: M plus or minus 1 (kept in 2..=20);
//! * **pools**: one pool of the four toggled in Lambda (Lambda stays non-empty).
//!
//! A move that would break validation (e.g. a grid too large) returns the instance unchanged.
//! Eq. (24)'s options are never changed.
//!
//! ## Shrinking ([`shrink_candidates`], [`size`])
//!
//! [`size`] = layers x experts + k + |Lambda| + M + L + K + n. Candidates, each valid and
//! strictly smaller, sorted by size: drop a layer; drop the least popular rank (its mass
//! spread over the others in proportion, offered only when no f exceeds 1 after it and at
//! least k ranks remain, in every layer); k - 1 with f scaled by (k - 1) / k; drop a pool;
//! M - 1; L, K or n minus 1.

use crate::mutate::{factor, smaller_valid};
use formulations::zipmoe::pool::{validate, Pool, PoolInstance};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

fn sort_descending(f: &mut [f64]) {
    f.sort_by(|a, b| b.total_cmp(a));
}

/// A random valid neighbour of `instance` (module doc).
pub fn perturb(instance: &PoolInstance, rng: &mut ChaCha8Rng) -> PoolInstance {
    let mut out = instance.clone();
    match rng.random_range(0..7) {
        0 => {
            let l = rng.random_range(0..out.layers.len());
            let f = &mut out.layers[l].inclusion_probabilities;
            let donors: Vec<usize> = (0..f.len()).filter(|&i| f[i] > 0.0).collect();
            let i = donors[rng.random_range(0..donors.len())];
            let takers: Vec<usize> = (0..f.len()).filter(|&j| j != i && f[j] < 1.0).collect();
            if !takers.is_empty() {
                let j = takers[rng.random_range(0..takers.len())];
                let t = (1.0 - rng.random::<f64>()) * f[i].min(1.0 - f[j]);
                f[i] = (f[i] - t).max(0.0);
                f[j] = (f[j] + t).min(1.0);
                sort_descending(f);
            }
        }
        1 => {
            let s = factor(rng);
            let c = &mut out.costs;
            match rng.random_range(0..3) {
                0 => c.decompress_e_chunk_s *= s,
                1 => c.read_e_chunk_s *= s,
                _ => c.read_sm_chunk_s *= s,
            }
        }
        2 => {
            let up = rng.random_bool(0.5);
            let c = &mut out.costs;
            let x = match rng.random_range(0..3) {
                0 => &mut c.threads,
                1 => &mut c.shards,
                _ => &mut c.tensors_per_expert,
            };
            *x = if up {
                (*x + 1).min(64)
            } else {
                (*x - 1).max(1)
            };
        }
        3 => {
            let b = out.memory.budget_bytes as f64 * factor(rng);
            out.memory.budget_bytes = b.round().min(9e15) as u64;
        }
        4 => {
            let s = factor(rng);
            let m = &mut out.memory;
            let x = match rng.random_range(0..3) {
                0 => &mut m.full_expert_bytes,
                1 => &mut m.sm_expert_bytes,
                _ => &mut m.e_expert_bytes,
            };
            *x = ((*x as f64 * s).round().min(9e15) as u64).max(1);
        }
        5 => {
            let m = instance.grid_steps();
            let next = if rng.random_bool(0.5) { m + 1 } else { m - 1 };
            out.grid_step = 1.0 / f64::from(next.clamp(2, 20));
        }
        _ => {
            let p = Pool::ALL[rng.random_range(0..4)];
            if let Some(at) = out.pools.iter().position(|&x| x == p) {
                if out.pools.len() > 1 {
                    out.pools.remove(at);
                }
            } else {
                out.pools.push(p);
            }
        }
    }
    if validate(&out).is_ok() {
        out
    } else {
        instance.clone()
    }
}

/// Simplicity of an instance (module doc); smaller is simpler.
pub fn size(instance: &PoolInstance) -> u64 {
    let c = &instance.costs;
    (instance.layers.len() * instance.experts()) as u64
        + u64::from(instance.top_k)
        + instance.pools.len() as u64
        + u64::from(instance.grid_steps())
        + u64::from(c.threads)
        + u64::from(c.shards)
        + u64::from(c.tensors_per_expert)
}

/// The instance's dimensions by fixed names.
pub fn dims(instance: &PoolInstance) -> Vec<(&'static str, u64)> {
    vec![
        ("layers", instance.layers.len() as u64),
        ("experts", instance.experts() as u64),
        ("top_k", u64::from(instance.top_k)),
        ("pools", instance.pools.len() as u64),
        ("grid_steps", u64::from(instance.grid_steps())),
    ]
}

fn drop_last_rank(f: &[f64], k: f64) -> Option<Vec<f64>> {
    let last = *f.last()?;
    let rest = &f[..f.len() - 1];
    let scale = k / (k - last);
    let out: Vec<f64> = rest.iter().map(|x| x * scale).collect();
    out.iter().all(|&x| x <= 1.0).then_some(out)
}

/// Strictly smaller valid instances, most reducing first (module doc).
pub fn shrink_candidates(instance: &PoolInstance) -> Vec<PoolInstance> {
    let mut out = Vec::new();
    for l in 0..instance.layers.len() {
        if instance.layers.len() > 1 {
            let mut c = instance.clone();
            c.layers.remove(l);
            out.push(c);
        }
    }
    let k = f64::from(instance.top_k);
    if instance.experts() > instance.top_k as usize {
        let dropped: Option<Vec<Vec<f64>>> = instance
            .layers
            .iter()
            .map(|layer| drop_last_rank(&layer.inclusion_probabilities, k))
            .collect();
        if let Some(layers) = dropped {
            let mut c = instance.clone();
            for (layer, f) in c.layers.iter_mut().zip(layers) {
                layer.inclusion_probabilities = f;
            }
            out.push(c);
        }
    }
    if instance.top_k > 1 {
        let mut c = instance.clone();
        c.top_k -= 1;
        for layer in &mut c.layers {
            for x in &mut layer.inclusion_probabilities {
                *x *= (k - 1.0) / k;
            }
        }
        out.push(c);
    }
    if instance.pools.len() > 1 {
        for at in 0..instance.pools.len() {
            let mut c = instance.clone();
            c.pools.remove(at);
            out.push(c);
        }
    }
    if instance.grid_steps() > 2 {
        let mut c = instance.clone();
        c.grid_step = 1.0 / f64::from(instance.grid_steps() - 1);
        out.push(c);
    }
    for which in 0..3 {
        let mut c = instance.clone();
        let x = match which {
            0 => &mut c.costs.threads,
            1 => &mut c.costs.shards,
            _ => &mut c.costs.tensors_per_expert,
        };
        if *x > 1 {
            *x -= 1;
            out.push(c);
        }
    }
    smaller_valid(out, instance, size, |c| validate(c).is_ok())
}

// Instances of this problem in `moe-opt verify`.
use super::premises::premises;
crate::searchable_from_mutate!(
    PoolInstance,
    formulations::zipmoe::pool::load,
    ["layers", "experts", "top_k", "pools", "grid_steps"]
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::{assert_perturbations, assert_shrinks};
    use crate::zipmoe::planning::claims::{family_small, family_tiny};
    use rand::SeedableRng;

    #[test]
    fn perturbations_stay_valid_and_move_and_shrink_strictly() {
        let valid = |i: &PoolInstance| validate(i).is_ok();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let moved: usize = (0..10)
            .map(|seed| assert_perturbations(family_tiny(seed), 50, &mut rng, valid).1)
            .sum();
        assert!(
            moved > 300,
            "only {moved} of 500 moves changed the instance"
        );
        for seed in 0..10 {
            assert!(assert_shrinks(&family_small(seed), valid) > 0);
        }
    }

    #[test]
    fn dropping_a_rank_spreads_its_mass() {
        // f = (0.8, 0.6, 0.4, 0.2), k = 2: drop 0.2, scale by 2 / 1.8:
        // (0.8889, 0.6667, 0.4444), sum 2.
        let f = drop_last_rank(&[0.8, 0.6, 0.4, 0.2], 2.0).unwrap();
        assert!((f.iter().sum::<f64>() - 2.0).abs() < 1e-15);
        assert!((f[0] - 0.8 / 0.9).abs() < 1e-15);
        // f = (1, 0.5, 0.5), k = 2: scaling (1, 0.5) by 2 / 1.5 puts f_1 above 1.
        assert!(drop_last_rank(&[1.0, 0.5, 0.5], 2.0).is_none());
    }
}
