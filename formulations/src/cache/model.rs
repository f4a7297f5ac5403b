//! The token-stream model: per token and MoE layer, the router's choice.
//!
//! Expert ids are per layer, `0..experts`; shared experts (always resident, never cached) are
//! not among them and only counted in `shared_experts`. Tokens are in processing order: the
//! tokens of a sequence in order, sequences one after another, one cache across all of them.
//!
//! Router outputs: `logits` are the gate's raw scores z over all E experts (paper 002 eq. (9)
//! acts on them); the router probabilities are softmax(z) over all E; `weights` are the
//! probabilities of the selected experts, not renormalised over the top-K (the `w` of paper
//! 002 Alg. 2). Real token logs carry only `experts`, sometimes `weights`, and sometimes lose
//! the rank order (`ranked = false`).

use serde::{Deserialize, Serialize};

use crate::problem::ProblemKind;

/// A token stream of router decisions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trace {
    /// Always `cache-trace`.
    pub problem: ProblemKind,
    /// Free-form name (file stem, preset and seed, ...).
    pub name: String,
    /// The model the routing comes from (e.g. "OLMoE-1B-7B-0924"), or the generator preset.
    pub model: String,
    /// E: routed experts per MoE layer.
    pub experts: usize,
    /// K: routed experts selected per token and layer by the original router.
    pub top_k: usize,
    /// Shared experts per layer (always computed, never cached; not among the E).
    #[serde(default)]
    pub shared_experts: usize,
    /// MoE layers per token.
    pub layers: usize,
    /// Whether every routing lists its experts in router rank order (best first). False when
    /// the source sorted them by id, so ranks are lost.
    pub ranked: bool,
    /// The tokens in processing order.
    pub tokens: Vec<Token>,
}

/// One token: its place in its sequence and the router's decision at every MoE layer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Token {
    /// Sequence id.
    pub seq: u32,
    /// Position within the sequence (strictly increasing within a sequence).
    pub token: u32,
    /// Which pass produced the token.
    pub phase: Phase,
    /// One routing per MoE layer, `layers` of them.
    pub layers: Vec<Routing>,
}

/// Which pass produced a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Autoregressive decoding, one token at a time.
    Decode,
    /// Prompt processing.
    Prefill,
    /// An encoder pass (encoder-decoder models such as Switch).
    Encoder,
}

/// The router's decision for one token at one layer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Routing {
    /// The selected experts, distinct, in rank order when the trace is `ranked`.
    pub experts: Vec<u32>,
    /// Router probabilities of `experts`, same order (absent in most real logs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weights: Option<Vec<f32>>,
    /// The gate's logits over all E experts (generated traces).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logits: Option<Vec<f32>>,
}

impl Trace {
    /// A trace of `tokens` routed by a top-`top_k` router over `experts` experts in each of
    /// `layers` layers: no shared experts, every routing in rank order (struct update changes
    /// either: `Trace { ranked: false, ..Trace::new(..) }`).
    pub fn new(
        name: impl Into<String>,
        model: impl Into<String>,
        experts: usize,
        top_k: usize,
        layers: usize,
        tokens: Vec<Token>,
    ) -> Trace {
        Trace {
            problem: ProblemKind::CacheTrace,
            name: name.into(),
            model: model.into(),
            experts,
            top_k,
            shared_experts: 0,
            layers,
            ranked: true,
            tokens,
        }
    }

    /// Whether every routing carries logits over all experts (needed by the cache-aware
    /// routers of paper 002 and SMoE's router).
    pub fn has_logits(&self) -> bool {
        self.routings().all(|r| r.logits.is_some())
    }

    /// Whether every routing carries the weights of its selected experts.
    pub fn has_weights(&self) -> bool {
        self.routings()
            .all(|r| r.weights.is_some() || r.logits.is_some())
    }

    /// Every routing, token-major (all layers of token 0, then token 1, ...).
    pub fn routings(&self) -> impl Iterator<Item = &Routing> {
        self.tokens.iter().flat_map(|t| t.layers.iter())
    }

    /// The request stream of one layer under the original routing, one step per token.
    pub fn layer_requests(&self, layer: usize) -> Requests {
        let mut requests = Requests::new(self.experts);
        for token in &self.tokens {
            requests.push(&token.layers[layer].experts);
        }
        requests
    }

    /// The request stream of one pool holding every layer's experts: one step per (token,
    /// layer), token-major, expert `e` of layer `l` as id `l * E + e`.
    pub fn pooled_requests(&self) -> Requests {
        let mut requests = Requests::new(self.experts * self.layers);
        let mut ids = Vec::with_capacity(self.top_k);
        for token in &self.tokens {
            for (l, routing) in token.layers.iter().enumerate() {
                ids.clear();
                ids.extend(
                    routing
                        .experts
                        .iter()
                        .map(|&e| (l * self.experts) as u32 + e),
                );
                requests.push(&ids);
            }
        }
        requests
    }
}

/// A trace as its request streams: its shape and one stream per cache, built from the JSON
/// model's tokens ([`Trace`]) or straight from a binary trace's id column
/// ([`super::binary::Packed`], no tokens). `mrc` and `export` read traces through it.
pub trait Streams {
    /// (E, K, L).
    fn shape(&self) -> (usize, usize, usize);
    /// The request stream of one layer's cache.
    fn layer_requests(&self, layer: usize) -> Requests;
    /// The request stream of one pool of every layer.
    fn pooled_requests(&self) -> Requests;
}

impl Streams for Trace {
    fn shape(&self) -> (usize, usize, usize) {
        (self.experts, self.top_k, self.layers)
    }
    fn layer_requests(&self, layer: usize) -> Requests {
        Trace::layer_requests(self, layer)
    }
    fn pooled_requests(&self) -> Requests {
        Trace::pooled_requests(self)
    }
}

/// A flattened request stream: steps of expert ids over a universe `0..universe`, the experts
/// of a step requested together (they must all be resident at once).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Requests {
    /// Size of the id space (E per layer, or L x E for a pool).
    pub universe: usize,
    /// All steps' ids, concatenated.
    pub ids: Vec<u32>,
    /// Step `t` is `ids[offsets[t]..offsets[t + 1]]`; starts with 0.
    pub offsets: Vec<usize>,
}

impl Requests {
    /// An empty stream over `universe` ids.
    pub fn new(universe: usize) -> Self {
        Requests {
            universe,
            ids: Vec::new(),
            offsets: vec![0],
        }
    }

    /// Appends one step.
    pub fn push(&mut self, step: &[u32]) {
        self.ids.extend_from_slice(step);
        self.offsets.push(self.ids.len());
    }

    /// Number of steps.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Whether there is no step.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The ids of step `t`.
    pub fn step(&self, t: usize) -> &[u32] {
        &self.ids[self.offsets[t]..self.offsets[t + 1]]
    }

    /// The steps in order.
    pub fn steps(&self) -> impl Iterator<Item = &[u32]> {
        self.offsets.windows(2).map(|w| &self.ids[w[0]..w[1]])
    }

    /// The largest step (a cache must hold at least this many ids).
    pub fn max_step(&self) -> usize {
        self.offsets
            .windows(2)
            .map(|w| w[1] - w[0])
            .max()
            .unwrap_or(0)
    }
}

/// Softmax of logits in f64 (the router probabilities over all E experts).
pub fn softmax(logits: &[f32]) -> Vec<f64> {
    let max = logits.iter().fold(f32::NEG_INFINITY, |m, &z| m.max(z)) as f64;
    let exp: Vec<f64> = logits.iter().map(|&z| (z as f64 - max).exp()).collect();
    let sum: f64 = exp.iter().sum();
    exp.into_iter().map(|x| x / sum).collect()
}

/// The ranking r of paper 002 Sec. 3: expert ids by decreasing logit, ties by lower id.
pub fn ranking(logits: &[f32]) -> Vec<u32> {
    let mut r: Vec<u32> = (0..logits.len() as u32).collect();
    r.sort_by(|&a, &b| {
        logits[b as usize]
            .total_cmp(&logits[a as usize])
            .then(a.cmp(&b))
    });
    r
}

/// The tests' smallest trace: one decode token whose routings at its layers are `layers` (one
/// a layer), over `experts` experts with top-`top_k` routing (shared by this module's tests and
/// [`super::validate`]'s).
#[cfg(test)]
pub(crate) fn one_token_trace(experts: usize, top_k: usize, layers: Vec<Routing>) -> Trace {
    Trace::new(
        "t",
        "m",
        experts,
        top_k,
        layers.len(),
        vec![Token {
            seq: 0,
            token: 0,
            phase: Phase::Decode,
            layers,
        }],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranking_sorts_by_logit_then_id_and_softmax_sums_to_one() {
        assert_eq!(ranking(&[0.5, 2.0, 0.5, -1.0]), vec![1, 0, 2, 3]);
        let p = softmax(&[0.0, (2.0f32).ln()]);
        assert!((p[0] - 1.0 / 3.0).abs() < 1e-7 && (p[1] - 2.0 / 3.0).abs() < 1e-7);
    }

    #[test]
    fn pooled_ids_are_layer_major_within_a_token() {
        let routing = |e: Vec<u32>| Routing {
            experts: e,
            weights: None,
            logits: None,
        };
        let trace = one_token_trace(4, 1, vec![routing(vec![3]), routing(vec![1])]);
        let pool = trace.pooled_requests();
        assert_eq!(pool.universe, 8);
        assert_eq!(
            pool.steps().collect::<Vec<_>>(),
            vec![&[3u32][..], &[5u32][..]]
        );
        assert_eq!(trace.layer_requests(1).step(0), &[1]);
    }
}
