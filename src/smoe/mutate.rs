//! SMoE moves for the worst-case search and for shrinking counterexamples.
//!
//! Every function takes a valid layer and returns valid layers; [`perturb`] keeps a layer
//! that fits the exhaustive optimum ([`fits_exact`]) within it.
//!
//! ## Perturbation
//! One move, drawn uniformly: one score times f = 2^t (t uniform in [-1, 1]); alpha plus a
//! uniform step in [-0.1, 0.1]; one expert added to or removed from G; C_load or C_CPU (or one
//! expert's, for per-expert costs) times f; k plus or minus 1; a token added (a copy of one with
//! a score perturbed) or removed. A move that breaks validity or the size limit is redrawn (up
//! to 32 times; then the layer is returned unchanged), and so does a move that takes a layer
//! with [`plausible_costs`] outside them (per-expert times of 10 µs to 1 s, C_load and C_CPU
//! within a factor 100 of each other).
//!
//! ## Shrinking
//! [`size`] = 1000 (E + k + tokens + |G|) + the number of non-round numbers (more than 2
//! significant digits). Candidates (each strictly smaller, valid): drop a token, drop an expert
//! (its score column, its G entry and costs; ids above it shift down), lower k, drop an expert
//! from G, round one number, round every number.

use crate::mutate::{factor, is_round, rounded, smaller_valid};
use formulations::smoe::evaluate::{exhaustive_subsets, LayerSets};
use formulations::smoe::validate::validate;
use formulations::smoe::{Costs, Instance};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Largest E kept by [`perturb`] for exhaustive-sized layers.
pub const EXACT_MAX_EXPERTS: usize = 16;
/// Most subsets per token kept by [`perturb`] for exhaustive-sized layers.
pub const EXACT_MAX_SUBSETS: u64 = 20_000;

/// Whether the exhaustive optimum handles the layer comfortably.
pub fn fits_exact(instance: &Instance) -> bool {
    instance.experts <= EXACT_MAX_EXPERTS
        && exhaustive_subsets(&LayerSets::new(instance)) <= EXACT_MAX_SUBSETS
}

/// Every real number of a layer, mutable, in a fixed order.
fn reals_mut(instance: &mut Instance) -> Vec<&mut f64> {
    let mut out: Vec<&mut f64> = vec![&mut instance.alpha];
    for row in &mut instance.scores {
        out.extend(row.iter_mut());
    }
    match &mut instance.costs {
        Costs::Uniform {
            load_s,
            cpu_s,
            gpu_s,
        } => out.extend([load_s, cpu_s, gpu_s]),
        Costs::PerExpert {
            load_s,
            cpu_s,
            gpu_s,
        } => {
            out.extend(load_s.iter_mut());
            out.extend(cpu_s.iter_mut());
            out.extend(gpu_s.iter_mut());
        }
    }
    out
}

fn real_mut(instance: &mut Instance, which: usize) -> &mut f64 {
    reals_mut(instance)
        .into_iter()
        .nth(which)
        .expect("index below the count of reals")
}

/// 1000 * structure + non-round numbers (module doc).
pub fn size(instance: &Instance) -> u64 {
    let structure =
        instance.experts + instance.top_k + instance.tokens() + instance.gpu_cache.len();
    let mut copy = instance.clone();
    let odd = reals_mut(&mut copy)
        .into_iter()
        .filter(|x| !is_round(**x))
        .count();
    1000 * structure as u64 + odd as u64
}

/// Fixed-name dimensions.
pub fn dims(instance: &Instance) -> Vec<(&'static str, u64)> {
    vec![
        ("experts", instance.experts as u64),
        ("top_k", instance.top_k as u64),
        ("tokens", instance.tokens() as u64),
        ("cached", instance.gpu_cache.len() as u64),
    ]
}

/// One random valid neighbour (module doc).
pub fn perturb(instance: &Instance, rng: &mut ChaCha8Rng) -> Instance {
    let keep_small = fits_exact(instance);
    for _ in 0..32 {
        let mut c = instance.clone();
        let e_n = c.experts;
        match rng.random_range(0..7) {
            0 => {
                let t = rng.random_range(0..c.tokens());
                let e = rng.random_range(0..e_n);
                c.scores[t][e] *= factor(rng);
            }
            1 => c.alpha += rng.random_range(-0.1..=0.1),
            2 => {
                let e = rng.random_range(0..e_n) as u32;
                match c.gpu_cache.iter().position(|&g| g == e) {
                    Some(p) => {
                        c.gpu_cache.remove(p);
                    }
                    None => {
                        c.gpu_cache.push(e);
                        c.gpu_cache.sort_unstable();
                    }
                }
            }
            3 => {
                let f = factor(rng);
                let which = rng.random_bool(0.5);
                match &mut c.costs {
                    Costs::Uniform { load_s, cpu_s, .. } => {
                        *(if which { load_s } else { cpu_s }) *= f;
                    }
                    Costs::PerExpert { load_s, cpu_s, .. } => {
                        let e = rng.random_range(0..e_n);
                        (if which { load_s } else { cpu_s })[e] *= f;
                    }
                }
            }
            4 => {
                if rng.random_bool(0.5) {
                    c.top_k += 1;
                } else {
                    c.top_k = c.top_k.saturating_sub(1);
                }
            }
            5 => {
                let t = rng.random_range(0..c.tokens());
                let mut row = c.scores[t].clone();
                row[rng.random_range(0..e_n)] *= factor(rng);
                c.scores.push(row);
            }
            _ => {
                if c.tokens() > 1 {
                    let t = rng.random_range(0..c.tokens());
                    c.scores.remove(t);
                }
            }
        }
        if c != *instance
            && validate(&c).is_ok()
            && (!keep_small || fits_exact(&c))
            && (!plausible_costs(instance) || plausible_costs(&c))
        {
            return c;
        }
    }
    instance.clone()
}

/// Per-expert times a search may reach, seconds: 10 µs (a small expert over a fast link) to
/// 1 s (a large one on a slow CPU).
pub const COST_RANGE_S: (f64, f64) = (1e-5, 1.0);
/// Largest C_load / C_CPU (or inverse) a search may reach for one expert: beyond it one side
/// is free, which no hardware of the paper's setting comes near (S3: C_CPU ~ C_load / 3).
pub const MAX_COST_SKEW: f64 = 100.0;

/// Whether every C_load and C_CPU lies in [`COST_RANGE_S`] and within [`MAX_COST_SKEW`] of
/// each other, expert by expert: without this the search drives one cost towards 0 and the
/// other up, and ratios against objective (4) grow without bound on layers no device has.
pub fn plausible_costs(instance: &Instance) -> bool {
    let pairs: Vec<(f64, f64)> = match &instance.costs {
        Costs::Uniform { load_s, cpu_s, .. } => vec![(*load_s, *cpu_s)],
        Costs::PerExpert { load_s, cpu_s, .. } => {
            load_s.iter().copied().zip(cpu_s.iter().copied()).collect()
        }
    };
    let (lo, hi) = COST_RANGE_S;
    pairs.iter().all(|&(load, cpu)| {
        (lo..=hi).contains(&load)
            && (lo..=hi).contains(&cpu)
            && load / cpu <= MAX_COST_SKEW
            && cpu / load <= MAX_COST_SKEW
    })
}

fn drop_expert(instance: &Instance, e: usize) -> Instance {
    let mut c = instance.clone();
    c.experts -= 1;
    for row in &mut c.scores {
        row.remove(e);
    }
    c.gpu_cache = c
        .gpu_cache
        .iter()
        .filter(|&&g| g as usize != e)
        .map(|&g| if g as usize > e { g - 1 } else { g })
        .collect();
    if let Costs::PerExpert {
        load_s,
        cpu_s,
        gpu_s,
    } = &mut c.costs
    {
        load_s.remove(e);
        cpu_s.remove(e);
        gpu_s.remove(e);
    }
    c
}

/// Strictly smaller valid layers, most reducing first.
pub fn shrink_candidates(instance: &Instance) -> Vec<Instance> {
    let mut out = Vec::new();
    if instance.tokens() > 1 {
        for t in 0..instance.tokens() {
            let mut c = instance.clone();
            c.scores.remove(t);
            out.push(c);
        }
    }
    for e in 0..instance.experts {
        out.push(drop_expert(instance, e));
    }
    if instance.top_k > 1 {
        let mut c = instance.clone();
        c.top_k -= 1;
        out.push(c);
    }
    for p in 0..instance.gpu_cache.len() {
        let mut c = instance.clone();
        c.gpu_cache.remove(p);
        out.push(c);
    }
    let n = reals_mut(&mut instance.clone()).len();
    out.extend(rounded(instance, n, real_mut));
    smaller_valid(out, instance, size, |c| validate(c).is_ok())
}

// Instances of this problem in `moe-opt verify`.
use super::premises::premises;
crate::searchable_from_mutate!(
    Instance,
    formulations::smoe::load,
    ["experts", "top_k", "tokens", "cached"]
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::smoe::claims::family_tiny;
    use crate::verify::{assert_perturbations, assert_shrinks};
    use rand::SeedableRng;

    #[test]
    fn perturbations_keep_the_layer_valid_and_exact_sized_and_shrink_strictly() {
        let fits = |i: &Instance| validate(i).is_ok() && fits_exact(i) && plausible_costs(i);
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for seed in 0..5 {
            assert_perturbations(family_tiny(seed), 200, &mut rng, fits);
        }
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for seed in 0..8 {
            let (i, _) = assert_perturbations(family_tiny(seed), 30, &mut rng, fits);
            assert!(assert_shrinks(&i, |c| validate(c).is_ok()) > 0);
        }
    }

    #[test]
    fn dropping_an_expert_shifts_ids() {
        let mut i = family_tiny(1);
        i.gpu_cache = vec![0, 2, 3];
        let c = drop_expert(&i, 2);
        assert_eq!(c.gpu_cache, vec![0, 2]);
        assert_eq!(c.scores[0].len(), i.experts - 1);
        assert_eq!(c.scores[0][2], i.scores[0][3]);
    }
}
