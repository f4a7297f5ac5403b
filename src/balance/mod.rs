//! Balance: DeepSeek's EPLB problem (replicate experts and place the replicas on GPUs so that
//! the busiest GPU carries the least load) solved exactly, beside EPLB's own plans. The
//! formulation (instance, evaluator, bounds, MILP) is `formulations::balance`; EPLB itself is
//! [`crate::eplb`], shared with Prism.
//!
//! ## References
//! DeepSeek's EPLB, <https://github.com/deepseek-ai/EPLB> (commit d52c72d): `eplb.py` and its
//! README.

pub mod algorithms;
pub mod anneal;
pub mod commands;
pub mod exact;
pub mod generate;
pub mod methods;
pub mod migration;
pub mod pairing;
pub mod redundancy;
pub mod repack;
