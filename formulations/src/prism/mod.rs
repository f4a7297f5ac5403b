//! Prism: activation-aware expert placement on heterogeneous GPU edge servers (paper 001).
//!
//! N edge servers, server n with G_n GPUs of memory mem_{n,g}; an MoE model of L layers with E
//! experts each (Top-K routing) and expert sizes m_e; per server and layer the activation
//! frequencies f_n^l(e). A placement P = {z_{n,g}^e} puts each expert on GPUs. Section III-B
//! states the latency objective (1) and, as a tractable proxy, the expected number of remote
//! invocations
//!
//! min_P sum_n sum_l sum_{e in E_l} f_n^l(e) 1_remote(n, e)                               (2)
//!
//! subject to coverage (every expert on at least one GPU) and per-GPU memory
//! (sum_e z_{n,g}^e m_e <= mem_{n,g}).
//!
//! * [`model`]: the instance and the placement (serde JSON);
//! * [`validate`]: the rules an instance and a placement must satisfy, with the failing field.
//!
//! ## References
//! ../shared/papers/001_612395f5f9077ee7.txt: T. Wu, L. Wang, Z. Wen, X. Zhang, J. Duan,
//! X. Zhang, J. Zuo, "Accelerating Edge Inference for Distributed MoE Models with
//! Latency-Optimized Expert Placement".

pub mod model;
pub mod validate;

pub use model::{
    ExpertRef, Gpu, Holders, Instance, MoeModel, Network, Placement, Server, ServerId, Workload,
};

use std::path::Path;

use crate::error::{read_json, Error};

/// Reads and validates an instance file.
pub fn load(path: &Path) -> Result<Instance, Error> {
    let instance: Instance = read_json(path)?;
    validate::validate(&instance).map_err(|e| e.in_file(path))?;
    Ok(instance)
}
