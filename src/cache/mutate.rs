//! Offline caching moves for the worst-case search and for shrinking counterexamples.
//!
//! Every function takes a valid instance and returns valid instances; [`perturb`] keeps an
//! instance that fits the exhaustive search within it.
//!
//! ## Perturbation
//! One move, drawn uniformly: swap two experts' logits at one token of the cached layer (the
//! selection, weights and rank order follow the new logits); capacity plus or minus 1; J plus
//! or minus 1; M plus or minus 1; repeat a random token at the end. A move that breaks
//! validity or the exhaustive size limit is redrawn (up to 32 times, then the instance is
//! returned unchanged). Traces without logits swap a selected expert for an unselected one.
//!
//! ## Shrinking
//! [`size`] = 64 x tokens x layers x experts + capacity. Candidates (strictly smaller, valid):
//! keep only the cached layer; drop a block of tokens (halves, quarters and eighths of a
//! trace longer than 64 tokens; down to single tokens at 64 or fewer); drop the highest
//! expert id when no token selects it; lower the capacity by one.

use formulations::cache::exhaustive::fits_exhaustive;
use formulations::cache::model::{ranking, softmax, Routing};
use formulations::cache::offline::{validate, CacheInstance};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// 64 x tokens x layers x experts + capacity (module doc).
pub fn size(instance: &CacheInstance) -> u64 {
    let t = &instance.trace;
    64 * (t.tokens.len() * t.layers * t.experts) as u64 + instance.capacity as u64
}

/// Fixed-name dimensions.
pub fn dims(instance: &CacheInstance) -> Vec<(&'static str, u64)> {
    vec![
        ("tokens", instance.steps() as u64),
        ("experts", instance.experts() as u64),
        ("top_k", instance.top_k() as u64),
        ("capacity", instance.capacity as u64),
    ]
}

/// Recomputes a routing's selection and weights from its logits.
fn reroute(routing: &mut Routing, top_k: usize) {
    if let Some(z) = &routing.logits {
        let p = softmax(z);
        routing.experts = ranking(z)[..top_k].to_vec();
        if routing.weights.is_some() {
            routing.weights = Some(
                routing
                    .experts
                    .iter()
                    .map(|&e| p[e as usize] as f32)
                    .collect(),
            );
        }
    }
}

fn adjust(x: usize, rng: &mut ChaCha8Rng) -> usize {
    if rng.random_bool(0.5) {
        x + 1
    } else {
        x.saturating_sub(1)
    }
}

/// One random valid neighbour (module doc).
pub fn perturb(instance: &CacheInstance, rng: &mut ChaCha8Rng) -> CacheInstance {
    let keep_small = fits_exhaustive(instance);
    let (e, k, layer) = (instance.experts(), instance.top_k(), instance.layer);
    for _ in 0..32 {
        let mut c = instance.clone();
        match rng.random_range(0..5) {
            0 => {
                let t = rng.random_range(0..c.steps());
                let routing = &mut c.trace.tokens[t].layers[layer];
                let (a, b) = (rng.random_range(0..e), rng.random_range(0..e));
                if let Some(z) = routing.logits.as_mut() {
                    z.swap(a, b);
                    reroute(routing, k);
                } else if !routing.experts.contains(&(b as u32)) {
                    routing.experts[a % k] = b as u32;
                }
            }
            1 => c.capacity = adjust(c.capacity, rng),
            2 => c.freedom.top_j = adjust(c.freedom.top_j, rng),
            3 => c.freedom.max_rank = c.freedom.max_rank.map(|m| adjust(m, rng)),
            _ => {
                let t = rng.random_range(0..c.steps());
                let mut token = c.trace.tokens[t].clone();
                let last = c.trace.tokens.last().expect("validated: tokens");
                token.seq = last.seq;
                token.token = last.token + 1;
                c.trace.tokens.push(token);
            }
        }
        if c != *instance && validate(&c).is_ok() && (!keep_small || fits_exhaustive(&c)) {
            return c;
        }
    }
    instance.clone()
}

/// Most token blocks removed in turn at one block size (single tokens up to this length).
const MAX_BLOCKS: usize = 64;
/// The same for traces longer than [`MAX_BLOCKS`]: halves, quarters and eighths only, since
/// every candidate is a copy of the trace (a 2000-token counterexample would otherwise take
/// minutes to shrink).
const LONG_BLOCKS: usize = 8;

/// Strictly smaller valid instances, most reducing first.
pub fn shrink_candidates(instance: &CacheInstance) -> Vec<CacheInstance> {
    let mut out = Vec::new();
    if instance.trace.layers > 1 {
        let mut c = instance.clone();
        for token in &mut c.trace.tokens {
            token.layers = vec![token.layers[instance.layer].clone()];
        }
        c.trace.layers = 1;
        c.layer = 0;
        out.push(c);
    }
    // Blocks of tokens, halves first: a long counterexample shrinks in logarithmically many
    // steps, and no level has more than MAX_BLOCKS candidates (single tokens only below that).
    let steps = instance.steps();
    let mut block = steps / 2;
    while block >= 1 {
        let limit = if steps > MAX_BLOCKS {
            LONG_BLOCKS
        } else {
            MAX_BLOCKS
        };
        if steps.div_ceil(block) <= limit {
            for start in (0..steps).step_by(block) {
                let mut c = instance.clone();
                c.trace.tokens.drain(start..(start + block).min(steps));
                out.push(c);
            }
        }
        block = if block == 1 { 0 } else { block.div_ceil(2) };
    }
    let last = instance.experts() as u32 - 1;
    let selected = instance.trace.routings().any(|r| r.experts.contains(&last));
    if !selected && instance.experts() > instance.top_k() {
        let mut c = instance.clone();
        c.trace.experts -= 1;
        for r in c.trace.tokens.iter_mut().flat_map(|t| t.layers.iter_mut()) {
            if let Some(z) = r.logits.as_mut() {
                z.pop();
            }
        }
        c.capacity = c.capacity.min(c.trace.experts);
        if let Some(m) = c.freedom.max_rank.as_mut() {
            *m = (*m).min(c.trace.experts);
        }
        out.push(c);
    }
    if instance.capacity > instance.top_k() {
        let mut c = instance.clone();
        c.capacity -= 1;
        out.push(c);
    }
    crate::mutate::smaller_valid(out, instance, size, |c| validate(c).is_ok())
}

// Instances of this problem in `moe-opt verify`.
use super::premises::premises;
crate::searchable_from_mutate!(
    CacheInstance,
    formulations::cache::offline::load,
    ["tokens", "experts", "top_k", "capacity"]
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::claims::family_small;
    use crate::verify::{assert_perturbations, assert_shrinks};
    use rand::SeedableRng;

    #[test]
    fn perturbation_stays_valid_and_exhaustive_sized() {
        let fits = |i: &CacheInstance| validate(i).is_ok() && fits_exhaustive(i);
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for seed in 0..5 {
            let (_, changed) = assert_perturbations(family_small(seed), 100, &mut rng, fits);
            assert!(changed > 50, "only {changed} moves changed the instance");
        }
    }

    #[test]
    fn candidates_are_valid_and_strictly_smaller() {
        for seed in 0..8 {
            assert!(assert_shrinks(&family_small(seed), |c| validate(c).is_ok()) > 0);
        }
    }

    #[test]
    fn long_traces_shrink_by_blocks() {
        // 2000 tokens: blocks of 1000, 500 and 250 tokens (2 + 4 + 8 = 14 candidates; 125
        // would give 16 blocks, over the limit of 8 for long traces), plus at most the
        // capacity and expert moves. The first candidate drops half the tokens.
        let i = crate::cache::claims::family_half(0);
        assert_eq!(i.steps(), 2000);
        let cands = shrink_candidates(&i);
        let token_moves = cands.iter().filter(|c| c.steps() < 2000).count();
        assert_eq!(token_moves, 14);
        assert_eq!(cands[0].steps(), 1000);
    }
}
