//! The SMoE layer instance: gate scores of a batch over E experts, k, alpha, the GPU cache
//! and the costs (Table II's symbols in the field docs).

use serde::{Deserialize, Serialize};

use crate::problem::ProblemKind;

/// One MoE layer of one decoding step (module doc of [`crate::smoe`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Instance {
    /// Always `smoe`.
    pub problem: ProblemKind,
    /// Free-form name.
    pub name: String,
    /// E: routed experts of the layer (shared experts are not among them).
    pub experts: usize,
    /// k: experts selected per token by the original router; k < E so that S_{k+1} exists.
    pub top_k: usize,
    /// alpha: the expert substitution threshold (Sec. IV-A), in [0, 1].
    pub alpha: f64,
    /// S: `scores[t][e]`, the gate score of expert e for token t of the batch (router
    /// probabilities: non-negative, finite).
    pub scores: Vec<Vec<f64>>,
    /// G: the experts resident in GPU memory (prefetched ones included), distinct ids < E.
    pub gpu_cache: Vec<u32>,
    /// C_load, C_CPU and the GPU time per expert.
    pub costs: Costs,
}

/// Per-expert costs, seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Costs {
    /// The paper's model (Sec. V-A): one C_load and one C_CPU for every expert.
    Uniform {
        /// C_load: moving one expert over PCIe, seconds.
        load_s: f64,
        /// C_CPU: computing one expert on the CPU, seconds.
        cpu_s: f64,
        /// Computing one expert on the GPU, seconds.
        gpu_s: f64,
    },
    /// One cost per expert (`load_s[e]` ...), each of length E.
    PerExpert {
        /// PCIe time of each expert, seconds.
        load_s: Vec<f64>,
        /// CPU time of each expert, seconds.
        cpu_s: Vec<f64>,
        /// GPU time of each expert, seconds.
        gpu_s: Vec<f64>,
    },
}

impl Costs {
    /// PCIe time of expert `e`, seconds.
    pub fn load(&self, e: u32) -> f64 {
        match self {
            Costs::Uniform { load_s, .. } => *load_s,
            Costs::PerExpert { load_s, .. } => load_s[e as usize],
        }
    }

    /// CPU time of expert `e`, seconds.
    pub fn cpu(&self, e: u32) -> f64 {
        match self {
            Costs::Uniform { cpu_s, .. } => *cpu_s,
            Costs::PerExpert { cpu_s, .. } => cpu_s[e as usize],
        }
    }

    /// GPU time of expert `e`, seconds.
    pub fn gpu(&self, e: u32) -> f64 {
        match self {
            Costs::Uniform { gpu_s, .. } => *gpu_s,
            Costs::PerExpert { gpu_s, .. } => gpu_s[e as usize],
        }
    }

    /// Whether every expert has the same costs (the closed form of (4) applies).
    pub fn is_uniform(&self) -> bool {
        match self {
            Costs::Uniform { .. } => true,
            Costs::PerExpert {
                load_s,
                cpu_s,
                gpu_s,
            } => [load_s, cpu_s, gpu_s]
                .iter()
                .all(|v| v.windows(2).all(|w| w[0] == w[1])),
        }
    }
}

impl Instance {
    /// Tokens in the batch.
    pub fn tokens(&self) -> usize {
        self.scores.len()
    }

    /// Whether expert `e` is in G.
    pub fn in_gpu(&self, e: u32) -> bool {
        self.gpu_cache.contains(&e)
    }
}
