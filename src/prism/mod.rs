//! Prism (paper 001): activation-aware expert placement on heterogeneous edge servers. The
//! formulation (instance, evaluators, simulator, MILP) is `formulations::prism`; here are the
//! instance generators, the importer of real activation counts, the paper's algorithms, the
//! baselines it compares with (DeepSeek's EPLB itself is [`crate::eplb`], shared with the
//! balance problem), the methods, commands and claims, and the claims' instances at the paper's
//! scale.
//!
//! ## References
//! ../shared/papers/001_612395f5f9077ee7.txt: T. Wu, L. Wang, Z. Wen, X. Zhang, J. Duan,
//! X. Zhang, J. Zuo, "Accelerating Edge Inference for Distributed MoE Models with
//! Latency-Optimized Expert Placement".

pub mod algorithms;
pub mod baselines;
pub mod claims;
pub mod commands;
pub mod generate;
pub mod import;
pub mod latency;
pub mod methods;
pub mod mutate;
pub mod paper;
pub mod parametric;
pub mod premises;
pub mod scale;
