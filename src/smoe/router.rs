//! SMoE's expert-cache router (paper 004, Sec. IV-B, Alg. 1).
//!
//! Per token: keep the top-score experts (score >= T = (1 + alpha) S_{k+1}); for the low-score
//! experts E_l (active, score < T) use substitutes A_t: inactive experts with score >= R =
//! (1 - alpha) S_{k+1} that are in the GPU cache or in the batch's top-score set C, best first.
//! Set definitions and the objective: module doc of `formulations::smoe`.
//!
//! ## Readings (options where users may want the other one)
//! * [`LowScore::Missing`] (default, the text of Sec. IV-B): "if they are already in GPU memory
//!   or part of the top-score expert set, they are retained"; only the low-score experts that
//!   are not available are replaced, by the best |E_l \ V| substitutes; when there are fewer
//!   substitutes, the best-scoring missing low-score experts are kept (to be loaded or run on
//!   the CPU). This reaches the per-token optimum of (1) (proof in formulations::smoe).
//! * [`LowScore::All`] (Alg. 1 as printed): B_t is all of E_l; if |A_t| >= |B_t| the top |B_t|
//!   of A_t replace it, otherwise A_t and the top |B_t| - |A_t| of B_t by score are kept,
//!   whether resident or not (Alg. 1 writes `E[t]` for `O[t]`: a typo). It can miss (1)'s
//!   optimum when a resident low-score expert scores below a missing one.
//! * [`BatchScope::Batch`] (default): C holds the top-score experts of every token of the
//!   batch (Sec. VI-B: "the top-score experts of other tokens in the same batch").
//!   [`BatchScope::Prefix`]: Alg. 1's loop adds token t's top-score experts to C before its
//!   substitution step, so a token only sees its own and the earlier tokens' ones.
//!
//! The output lists the chosen experts by decreasing score (ties by lower id).

use formulations::cache::model::{softmax, Routing};
use formulations::smoe::evaluate::{rank, TokenSets};
use serde::{Deserialize, Serialize};

use crate::cache::router::{CacheView, Router};

/// Which low-score experts are replaced (module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LowScore {
    /// Only those not in G ∪ C (the text).
    #[default]
    Missing,
    /// All of them (Alg. 1 as printed).
    All,
}

/// Which tokens' top-score experts count as available substitutes (module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BatchScope {
    /// Every token of the batch.
    #[default]
    Batch,
    /// The token itself and the earlier ones (Alg. 1's loop order).
    Prefix,
}

/// Alg. 1's knobs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RouterConfig {
    /// alpha, the substitution threshold.
    pub alpha: f64,
    /// Which low-score experts are replaced.
    pub low_score: LowScore,
    /// Which top-score experts count as available.
    pub scope: BatchScope,
}

impl RouterConfig {
    /// The text's reading with the given alpha.
    pub fn new(alpha: f64) -> Self {
        RouterConfig {
            alpha,
            low_score: LowScore::Missing,
            scope: BatchScope::Batch,
        }
    }
}

/// Alg. 1 over a batch: `scores[t][e]`, top-k, and which experts are in GPU memory. Returns
/// O_t per token (k experts each, best score first).
///
/// # Complexity
/// n tokens of E scores, top-k. Time: O(n E (log E + k log k)): per token, two sorts of its
/// E scores (Table II's sets and the final rank order), O(E) calls of `in_gpu`, and a sort of
/// its k chosen experts by their rank (a linear search each). Memory: O(n E).
///
/// # Examples
/// ```
/// use moe_opt::smoe::router::{route_batch, RouterConfig};
///
/// // k = 4, alpha = 0.5: S_5 = 0.09, so T = 0.135 and R = 0.045. Experts 0 and 1 are
/// // top-score, 2 and 3 low-score, 4 to 7 candidates. With 1, 5 and 6 in GPU memory, the
/// // missing 2 and 3 are replaced by the available candidates 5 and 6, best first.
/// let scores = [0.30, 0.20, 0.105, 0.10, 0.09, 0.08, 0.07, 0.055];
/// let in_gpu = |e: u32| [1, 5, 6].contains(&e);
/// let routed = route_batch(&[scores], 4, &in_gpu, &RouterConfig::new(0.5));
/// assert_eq!(routed, vec![vec![0, 1, 5, 6]]);
/// ```
pub fn route_batch<S: AsRef<[f64]>>(
    scores: &[S],
    k: usize,
    in_gpu: &dyn Fn(u32) -> bool,
    config: &RouterConfig,
) -> Vec<Vec<u32>> {
    let sets: Vec<TokenSets> = scores
        .iter()
        .map(|s| TokenSets::new(s.as_ref(), k, config.alpha))
        .collect();
    let experts = scores.first().map_or(0, |s| s.as_ref().len());
    let mut in_c = vec![false; experts];
    if config.scope == BatchScope::Batch {
        for ts in &sets {
            for &e in &ts.top_score {
                in_c[e as usize] = true;
            }
        }
    }
    let mut out = Vec::with_capacity(scores.len());
    for (s, ts) in scores.iter().zip(&sets) {
        let s = s.as_ref();
        for &e in &ts.top_score {
            in_c[e as usize] = true;
        }
        let available = |e: u32| in_gpu(e) || in_c[e as usize];
        let subs: Vec<u32> = ts
            .candidates
            .iter()
            .copied()
            .filter(|&e| available(e))
            .collect();
        let mut o = ts.top_score.clone();
        let to_replace: Vec<u32> = match config.low_score {
            LowScore::Missing => {
                o.extend(ts.low_score.iter().copied().filter(|&e| available(e)));
                ts.low_score
                    .iter()
                    .copied()
                    .filter(|&e| !available(e))
                    .collect()
            }
            LowScore::All => ts.low_score.clone(),
        };
        if subs.len() >= to_replace.len() {
            o.extend_from_slice(&subs[..to_replace.len()]);
        } else {
            o.extend_from_slice(&subs);
            // B_t is in rank order, so its first ones score highest.
            o.extend_from_slice(&to_replace[..to_replace.len() - subs.len()]);
        }
        let order = rank(s);
        o.sort_by_key(|e| order.iter().position(|x| x == e));
        out.push(o);
    }
    out
}

/// Alg. 1 as a [`Router`] for one token at a time (a batch of one): scores are the softmax
/// of the routing's logits. A routing without logits keeps its original experts (no scores, no
/// substitution).
#[derive(Debug, Clone, Copy)]
pub struct SmoeRouter {
    /// Alg. 1's knobs.
    pub config: RouterConfig,
}

impl Router for SmoeRouter {
    fn name(&self) -> String {
        format!("smoe:alpha={}", self.config.alpha)
    }

    fn route(
        &mut self,
        _layer: usize,
        routing: &Routing,
        cache: &dyn CacheView,
        chosen: &mut Vec<u32>,
    ) {
        chosen.clear();
        match &routing.logits {
            Some(z) => {
                let p = softmax(z);
                let k = routing.experts.len();
                let o = route_batch(&[p], k, &|e| cache.is_cached(e), &self.config);
                chosen.extend_from_slice(&o[0]);
            }
            None => chosen.extend_from_slice(&routing.experts),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layer of formulations::smoe's evaluate tests: scores 0: .30, 1: .20, 2: .105,
    /// 3: .10, 4: .09, 5: .08, 6: .07, 7: .055; k = 4; S_5 = .09.
    fn scores() -> Vec<f64> {
        vec![0.30, 0.20, 0.105, 0.10, 0.09, 0.08, 0.07, 0.055]
    }

    #[test]
    fn fig1_like_substitution_by_hand() {
        // alpha = 0.5: T = .135, R = .045; top-score {0, 1}, low-score {2, 3}. G = {1, 5, 6}:
        // both low-score experts are missing, substitutes 5, 6 (best first) replace them.
        let g = [1u32, 5, 6];
        let o = route_batch(&[scores()], 4, &|e| g.contains(&e), &RouterConfig::new(0.5));
        assert_eq!(o, vec![vec![0, 1, 5, 6]]);
        // alpha = 0.1: T = .099, R = .081; top-score {0, 1, 2, 3}: nothing low, top-k kept.
        let o = route_batch(&[scores()], 4, &|e| g.contains(&e), &RouterConfig::new(0.1));
        assert_eq!(o, vec![vec![0, 1, 2, 3]]);
        // alpha = 0.2: T = .108, R = .072; low {2, 3}; candidates 4 (.09), 5 (.08); only 5 is
        // resident: it replaces 3 (the lower-scoring missing one); 2 is kept.
        let o = route_batch(&[scores()], 4, &|e| g.contains(&e), &RouterConfig::new(0.2));
        assert_eq!(o, vec![vec![0, 1, 2, 5]]);
    }

    #[test]
    fn literal_alg1_drops_a_resident_low_score_expert() {
        // alpha = 0.2, G = {3, 5}: low {2, 3}, 3 resident, substitute 5 only. Text: keep 3,
        // replace 2 by 5 -> {0, 1, 3, 5}, all 4 available (0, 1 are top-score, in C).
        // Literal: |A| = 1 < |B| = 2: A = {5} plus the best of B, 2 -> {0, 1, 2, 5}: 3 hits.
        let g = [3u32, 5];
        let text = route_batch(&[scores()], 4, &|e| g.contains(&e), &RouterConfig::new(0.2));
        assert_eq!(text, vec![vec![0, 1, 3, 5]]);
        let literal = RouterConfig {
            low_score: LowScore::All,
            ..RouterConfig::new(0.2)
        };
        let lit = route_batch(&[scores()], 4, &|e| g.contains(&e), &literal);
        assert_eq!(lit, vec![vec![0, 1, 2, 5]]);
    }

    #[test]
    fn batch_top_score_experts_substitute_for_other_tokens() {
        // E = 4, k = 1, alpha = 0.5, nothing in GPU. Token 0: scores (.5, .3, .15, .05): S_2 =
        // .3, T = .45: 0 is top-score. Token 1: (.30, .32, .2, .18): S_2 = .30, T = .45: 1 is
        // low-score; R = .15: candidates 0 (.30), 2 (.2), 3 (.18); 0 is in C (token 0's top):
        // token 1 runs 0 instead of 1. With Prefix scope token 1 still sees token 0's C; with
        // the tokens swapped, Prefix keeps 1 but Batch substitutes.
        let t0 = vec![0.5, 0.3, 0.15, 0.05];
        let t1 = vec![0.30, 0.32, 0.2, 0.18];
        let none = |_: u32| false;
        let batch = RouterConfig::new(0.5);
        assert_eq!(
            route_batch(&[t0.clone(), t1.clone()], 1, &none, &batch),
            vec![vec![0], vec![0]]
        );
        let prefix = RouterConfig {
            scope: BatchScope::Prefix,
            ..batch
        };
        assert_eq!(
            route_batch(&[t1.clone(), t0.clone()], 1, &none, &prefix),
            vec![vec![1], vec![0]]
        );
        assert_eq!(
            route_batch(&[t1, t0], 1, &none, &batch),
            vec![vec![0], vec![0]]
        );
    }
}
