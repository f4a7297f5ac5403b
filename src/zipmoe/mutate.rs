//! ZipMoE moves for the worst-case search and for shrinking counterexamples.
//!
//! Every function takes a valid layer and returns valid layers; [`perturb`] also keeps a layer
//! that fits the exact method ([`fits_exact`]: exhaustive search within
//! [`algorithms::EXHAUSTIVE_MAX_PAIRS`]) within it.
//!
//! ## Perturbation
//! One move, drawn uniformly: u, c, rho or one expert's p_n times f = 2^t (t uniform in
//! [-1, 1]; rho keeps its old value if it would leave (0, 1]); one expert's state redrawn among
//! the other four; K or L plus or minus 1 (at least 1). A move that breaks validity or the size
//! limit is redrawn (up to 32 times; then the layer is returned unchanged).
//!
//! ## Shrinking
//! [`size`] = 1000 * structure + non-round numbers, where structure = L + K + the number of
//! operations of all DAGs (per expert: 1 execution + N (K decompressions + K E-reads if it
//! reads them + 1 SM-read if it reads it)) and a number is round when it has at most 2
//! significant digits. Candidates (each strictly smaller, valid): drop an expert (if more than
//! one), lower N, K or L by one, move an expert to a state with fewer operations, round one
//! number, round every number.

use formulations::zipmoe::validate::validate;
use formulations::zipmoe::{CompressionState, Instance};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::algorithms;
use crate::mutate::{factor, is_round, rounded, smaller_valid};

/// Whether the exhaustive search accepts the layer.
pub fn fits_exact(instance: &Instance) -> bool {
    algorithms::exhaustive_pairs(instance) <= algorithms::EXHAUSTIVE_MAX_PAIRS
}

fn ops(instance: &Instance, state: CompressionState) -> u64 {
    let k = u64::from(instance.shards);
    let per_tensor = if state.decompresses() { k } else { 0 }
        + if state.reads_e() { k } else { 0 }
        + u64::from(state.reads_sm());
    1 + u64::from(instance.tensors_per_expert) * per_tensor
}

/// The real numbers of a layer by index: u, c, rho, then each expert's p_n.
fn real_mut(instance: &mut Instance, which: usize) -> &mut f64 {
    match which {
        0 => &mut instance.sm_read_s,
        1 => &mut instance.decompress_s,
        2 => &mut instance.compression_ratio,
        e => &mut instance.experts[e - 3].gpu_s,
    }
}

/// 1000 * structure + non-round numbers (module doc).
pub fn size(instance: &Instance) -> u64 {
    let structure: u64 = u64::from(instance.threads)
        + u64::from(instance.shards)
        + instance
            .experts
            .iter()
            .map(|e| ops(instance, e.state))
            .sum::<u64>();
    let reals = [
        instance.compression_ratio,
        instance.sm_read_s,
        instance.decompress_s,
    ]
    .into_iter()
    .chain(instance.experts.iter().map(|e| e.gpu_s));
    1000 * structure + reals.filter(|&x| !is_round(x)).count() as u64
}

/// Fixed-name dimensions.
pub fn dims(instance: &Instance) -> Vec<(&'static str, u64)> {
    vec![
        ("experts", instance.experts.len() as u64),
        ("tasks", instance.tasks().len() as u64),
        ("tensors", u64::from(instance.tensors_per_expert)),
        ("shards", u64::from(instance.shards)),
        ("threads", u64::from(instance.threads)),
    ]
}

/// One random valid neighbour (module doc).
pub fn perturb(instance: &Instance, rng: &mut ChaCha8Rng) -> Instance {
    let keep_small = fits_exact(instance);
    for _ in 0..32 {
        let mut c = instance.clone();
        let n = c.experts.len();
        match rng.random_range(0..8) {
            0 => c.sm_read_s *= factor(rng),
            1 => c.decompress_s *= factor(rng),
            2 => {
                let r = c.compression_ratio * factor(rng);
                if r <= 1.0 {
                    c.compression_ratio = r;
                }
            }
            3 => c.experts[rng.random_range(0..n)].gpu_s *= factor(rng),
            4 => {
                let e = rng.random_range(0..n);
                let others: Vec<CompressionState> = CompressionState::ALL
                    .into_iter()
                    .filter(|&s| s != c.experts[e].state)
                    .collect();
                c.experts[e].state = others[rng.random_range(0..others.len())];
            }
            5 => c.shards += 1,
            6 => c.shards = c.shards.saturating_sub(1),
            _ => {
                if rng.random_bool(0.5) {
                    c.threads += 1;
                } else {
                    c.threads = c.threads.saturating_sub(1);
                }
            }
        }
        if validate(&c).is_ok() && (!keep_small || fits_exact(&c)) {
            return c;
        }
    }
    instance.clone()
}

/// Strictly smaller valid layers, most reducing first.
pub fn shrink_candidates(instance: &Instance) -> Vec<Instance> {
    let mut out = Vec::new();
    let n = instance.experts.len();
    if n > 1 {
        for e in 0..n {
            let mut c = instance.clone();
            c.experts.remove(e);
            out.push(c);
        }
    }
    for which in 0..3 {
        let mut c = instance.clone();
        let field = match which {
            0 => &mut c.tensors_per_expert,
            1 => &mut c.shards,
            _ => &mut c.threads,
        };
        if *field > 1 {
            *field -= 1;
            out.push(c);
        }
    }
    for e in 0..n {
        let current = ops(instance, instance.experts[e].state);
        for s in CompressionState::ALL {
            if ops(instance, s) < current {
                let mut c = instance.clone();
                c.experts[e].state = s;
                out.push(c);
            }
        }
    }
    out.extend(rounded(instance, 3 + n, real_mut));
    smaller_valid(out, instance, size, |c| validate(c).is_ok())
}

// Instances of this problem in `moe-opt verify`.
use super::premises::premises;
crate::searchable_from_mutate!(
    Instance,
    formulations::zipmoe::load,
    ["experts", "tasks", "tensors", "shards", "threads"]
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::{assert_perturbations, assert_shrinks};
    use crate::zipmoe::claims::family_tiny;
    use rand::SeedableRng;

    #[test]
    fn perturbations_keep_the_layer_valid_and_exact_sized_and_shrink_strictly() {
        let fits = |i: &Instance| validate(i).is_ok() && fits_exact(i);
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for seed in 0..5 {
            assert_perturbations(family_tiny(seed), 200, &mut rng, fits);
        }
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for seed in 0..8 {
            let (i, _) = assert_perturbations(family_tiny(seed), 50, &mut rng, fits);
            assert_shrinks(&i, |c| validate(c).is_ok());
        }
    }
}
