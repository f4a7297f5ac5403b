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
//! * [`validate`]: the rules an instance and a placement must satisfy, with the failing field;
//! * [`mod@evaluate`]: the one evaluator of (2), the constraints, the local-compute ratio and the
//!   latency of (1);
//! * [`milp`]: the exact MILP of (2) with coverage and memory;
//! * [`bounds`]: a closed-form lower bound on its optimum (per-server local capacity);
//! * [`mod@simulate`]: the event-driven simulator of Section IV-C (Poisson arrivals, FIFO GPUs and
//!   links).
//!
//! ## References
//! ../shared/papers/001_612395f5f9077ee7.txt: T. Wu, L. Wang, Z. Wen, X. Zhang, J. Duan,
//! X. Zhang, J. Zuo, "Accelerating Edge Inference for Distributed MoE Models with
//! Latency-Optimized Expert Placement".

pub mod bounds;
pub mod evaluate;
pub mod milp;
pub mod model;
pub mod simulate;
pub mod validate;

pub use evaluate::{
    evaluate, latency, proxy_cost, Evaluation, Invocation, LatencyEvaluation, RemoteChoice,
    Replicas, Request,
};
pub use milp::{ExactSolution, PrismMilp};
pub use model::{
    ExpertRef, Gpu, Holders, Instance, MoeModel, Network, Placement, Server, ServerId, Workload,
};
pub use simulate::{simulate, simulate_requests, ServerStats, SimRequest, SimulationReport};

use std::path::Path;

use crate::error::{read_json, Error};

/// Reads and validates an instance file.
pub fn load(path: &Path) -> Result<Instance, Error> {
    let instance: Instance = read_json(path)?;
    validate::validate(&instance).map_err(|e| e.in_file(path))?;
    Ok(instance)
}

/// A hand-made instance shared by the unit tests; its numbers are worked out in
/// `evaluate::tests`.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::*;
    use crate::problem::ProblemKind;

    fn gpu(memory_bytes: u64, a: f64, b: f64) -> Gpu {
        Gpu {
            memory_bytes,
            compute_base_s: a,
            compute_per_token_s: b,
            io_bps: None,
        }
    }

    /// Two servers; L = 2, E = 3, K = 1, every expert 10 bytes, hidden state 1000 bytes.
    /// Server 0: one GPU of 30 bytes, T_comp = 0.01 + 0.001 t. Server 1: two GPUs of 20 bytes,
    /// T_comp = 0.02 + 0.002 t and 0.01 + 0.001 t. Links: 0.1 s + 8 bytes / 800 kbit/s.
    pub(crate) fn two_servers() -> Instance {
        Instance {
            problem: ProblemKind::Prism,
            name: "fixture".into(),
            model: MoeModel {
                name: "m".into(),
                layers: 2,
                experts_per_layer: 3,
                top_k: 1,
                expert_bytes: vec![10, 10],
                hidden_bytes: 1000,
            },
            servers: vec![
                Server {
                    name: "s0".into(),
                    gpus: vec![gpu(30, 0.01, 0.001)],
                    frequencies: vec![vec![0.5, 0.3, 0.2], vec![0.6, 0.4, 0.0]],
                },
                Server {
                    name: "s1".into(),
                    gpus: vec![gpu(20, 0.02, 0.002), gpu(20, 0.01, 0.001)],
                    frequencies: vec![vec![0.1, 0.1, 0.8], vec![0.2, 0.2, 0.6]],
                },
            ],
            network: Some(Network {
                latency_s: vec![vec![0.0, 0.1], vec![0.1, 0.0]],
                bandwidth_bps: vec![vec![0.0, 8e5], vec![8e5, 0.0]],
            }),
            workload: Some(Workload {
                arrival_rate_per_s: vec![1.0, 1.0],
                tokens_per_request: 10,
                requests_per_server: 10,
            }),
        }
    }

    fn x(layer: u32, expert: u32) -> ExpertRef {
        ExpertRef { layer, expert }
    }

    /// Server 0 GPU 0: l0.e0, l1.e0, l1.e1; server 1 GPU 0: l0.e1, l0.e2; GPU 1: l1.e2, l0.e2.
    pub(crate) fn two_servers_placement() -> Placement {
        Placement {
            gpus: vec![
                vec![vec![x(0, 0), x(1, 0), x(1, 1)]],
                vec![vec![x(0, 1), x(0, 2)], vec![x(1, 2), x(0, 2)]],
            ],
        }
    }
}
