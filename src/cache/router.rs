//! Routers: given the router's output for one token and layer and the cache state, choose the
//! experts to run. The original router picks the top K; the cache-aware routers of papers 002
//! and 004 re-rank towards resident experts.

use formulations::cache::model::Routing;

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
