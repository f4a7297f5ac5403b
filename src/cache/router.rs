//! Routers: given the router's output for one token and layer and the cache state, choose the
//! experts to run. The original router picks the top K; the cache-aware routers of papers 002
//! and 004 re-rank towards resident experts. [`Row`], a routing as the routers read it, is here
//! so that the quality proxies ([`super::quality`]) and the routers ([`super::routers`]) both
//! build on it.

use formulations::cache::model::Routing;

/// One routing as the routers read it: the original ranking and router probabilities.
#[derive(Debug, Clone, Copy)]
pub struct Row<'a> {
    /// K of the original routing.
    pub top_k: usize,
    /// The original ranking r (all E experts with logits, else the K selected).
    pub order: &'a [u16],
    /// 0-based rank of each expert id in r; `u16::MAX` for experts not in r.
    pub rank_of: &'a [u16],
    /// Router probabilities by expert id (softmax of the logits; with only weights, the
    /// selected experts' weights and 0 elsewhere; empty when neither is known).
    pub probs: &'a [f32],
    /// The logits by expert id, where known.
    pub logits: Option<&'a [f32]>,
    /// `max(z) - min(z)` (0 without logits).
    pub range: f32,
    /// Router mass of the original top-K, `sum of probs[r[:K]]` (0 without probabilities).
    pub top_mass: f64,
}

/// What a router sees of the cache: which experts of this layer are resident.
pub trait CacheView {
    /// Whether expert `e` of the current layer is resident.
    fn is_cached(&self, e: u32) -> bool;
}

/// A router for one layer's decisions.
pub trait Router {
    /// The router's name as on the command line, with its knob (e.g. `max-rank:m=4`).
    fn name(&self) -> String;
    /// Writes the chosen experts of `routing` at `layer` into `chosen` (cleared first), in the
    /// order of the new ranking (best first).
    fn route(
        &mut self,
        layer: usize,
        routing: &Routing,
        cache: &dyn CacheView,
        chosen: &mut Vec<u32>,
    );
}

/// The original top-K routing (paper 002 eq. (1)-(2)): the experts the trace selected.
#[derive(Debug, Clone, Copy, Default)]
pub struct TopK;

impl Router for TopK {
    fn name(&self) -> String {
        "top-k".into()
    }

    fn route(
        &mut self,
        _layer: usize,
        routing: &Routing,
        _cache: &dyn CacheView,
        chosen: &mut Vec<u32>,
    ) {
        chosen.clear();
        chosen.extend_from_slice(&routing.experts);
    }
}
