//! Prism (paper 001): instance generators, the importer of real activation counts and the
//! mutations of the worst-case search. The formulation (instance, evaluators, simulator, MILP)
//! is `formulations::prism`.
//!
//! ## References
//! ../shared/papers/001_612395f5f9077ee7.txt: T. Wu, L. Wang, Z. Wen, X. Zhang, J. Duan,
//! X. Zhang, J. Zuo, "Accelerating Edge Inference for Distributed MoE Models with
//! Latency-Optimized Expert Placement".

pub mod generate;
pub mod import;
pub mod mutate;
pub mod scale;
