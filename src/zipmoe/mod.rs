//! ZipMoE (paper 003): the cache-affinity scheduler (App. A) and its baselines, instance
//! generators and the importer of real activation counts, methods, command functions, claims
//! and mutations; [`planning`], the cache-pool planner of Sec. 3.4 and App. C-D. The
//! formulation (instance, evaluator, bounds, MILP) is `formulations::zipmoe`.
//!
//! ## References
//! ../shared/papers/003_f13bf7f446ba8bd3.txt: Y. Yang, Y. Zhao, P. Yang, S. Wang, Z.-H. Zhou,
//! "ZipMoE: Efficient On-Device MoE Serving via Lossless Compression and Cache-Affinity
//! Scheduling".

pub mod algorithms;
pub mod claims;
pub mod commands;
pub mod generate;
pub mod methods;
pub mod mutate;
pub mod parametric;
pub mod planning;
pub mod premises;
