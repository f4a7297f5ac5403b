//! SMoE (paper 004): the expert-cache router (Alg. 1), the CPU-vs-PCIe split (Alg. 2), the
//! decode pipeline's time model (Fig. 9) and the alpha selection of eq. (5), with claims,
//! mutations and the functions the command line calls. The per-layer formulation (instance,
//! objectives (1) and (4), exact optima and MILPs) is `formulations::smoe`.
//!
//! ## References
//! ../shared/papers/004_ecd17ad30b7583cf.txt: G. Zhu, M. Li, H. Dai, X. Liu, W. Wang, K. Li,
//! J. Xiao, L. Chen, W. Wang, "Enabling MoE on the Edge via Importance-Driven Expert
//! Scheduling".

pub mod alpha;
pub mod claims;
pub mod commands;
pub mod generate;
pub mod mutate;
pub mod pipeline;
pub mod premises;
pub mod router;
pub mod split;
