//! ZipMoE's hierarchical cache-pool planning (paper 003, Sec. 3.4, App. C and D).
//!
//! * [`counts`]: activation-count files, rank-based inclusion probabilities f_r, synthetic
//!   counts;
//! * [`generate`]: planning instances from counts and a configuration;
//! * [`ipf`]: the modified iterative proportional fitting of eq. (24);
//! * [`planner`]: Alg. 4's grid search (Alg. 2 and Alg. 3 are in
//!   [`formulations::zipmoe::pool`]);
//! * [`independent`]: brute-force and dual computations the claims compare with;
//! * [`claims`], [`mutate`]: Thm. 3.2 / D.1 and Alg. 4 as checked hypotheses, and the moves
//!   of the worst-case search;
//! * [`compare`]: Alg. 3's estimate against the simulated cache-affinity scheduler;
//! * [`commands`]: what the command line calls.
//!
//! ## References
//! ../shared/papers/003_f13bf7f446ba8bd3.txt (ZipMoE); X.-H. Chen, A. P. Dempster, J. S. Liu,
//! "Weighted finite population sampling to maximize entropy", Biometrika 81(3), 1994.

pub mod claims;
pub mod commands;
pub mod compare;
pub mod counts;
pub mod generate;
pub mod independent;
pub mod ipf;
pub mod mutate;
pub mod planner;
pub mod premises;
