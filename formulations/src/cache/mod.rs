//! Expert caches over token streams (papers 002 and 004): the token-stream model, its
//! validation, and the exact offline bounds.
//!
//! A [`Trace`] records, per token and MoE layer, what the router decided (the selected experts,
//! their weights) and, where known, its logits over all E experts. Caches hold experts of one
//! layer (capacity C per layer) or of all layers in one pool (SMoE's GPU cache); a miss loads
//! an expert.
//!
//! * [`model`]: the trace (serde JSON) and its flattened request streams;
//! * [`binary`]: the binary trace format, and the trace held column by column;
//! * [`validate`]: the rules a trace must satisfy, with the failing field named;
//! * [`offline`]: the offline caching instance (`cache-offline`: one layer, a capacity, the
//!   routing freedom), its validation and the one evaluator of a schedule;
//! * [`exhaustive`]: the exact optimum of tiny instances by search over every cache state;
//! * [`milp`]: the exact MILPs with fixed and with flexible routing.
//!
//! ## References
//! * ../shared/papers/002_af7f5861d0abc3cf.txt: "Mixture of Cache-Conditional Experts for
//!   Efficient Mobile Device Inference" (cache-aware routing, LRU, Belady).
//! * ../shared/papers/004_ecd17ad30b7583cf.txt: SMoE (importance-driven expert substitution,
//!   CPU-assisted loading).

pub mod binary;
pub mod exhaustive;
pub mod milp;
pub mod model;
pub mod offline;
pub mod validate;

pub use model::{Phase, Routing, Token, Trace};

use std::path::Path;

use crate::error::{parse_json, Error};

/// Reads and validates a trace file, JSON or binary (recognised by its magic bytes).
pub fn load(path: &Path) -> Result<Trace, Error> {
    let bytes = std::fs::read(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    if binary::is_binary(&bytes) {
        return Ok(binary::Packed::decode(path, &bytes)?.to_trace());
    }
    let text = crate::error::utf8(path, bytes)?;
    let trace: Trace = parse_json(path, &text)?;
    validate::validate(&trace).map_err(|e| e.in_file(path))?;
    Ok(trace)
}
