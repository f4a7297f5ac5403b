//! The Prism instance (Section III-B of paper 001) as serde data, and the placement
//! P = {z_{n,g}^e}.
//!
//! JSON layout (sizes in bytes, rates in bit/s, times in seconds):
//!
//! ```json
//! { "problem": "prism", "name": "tiny-0",
//!   "model": { "name": "m", "layers": 1, "experts_per_layer": 2, "top_k": 1,
//!              "expert_bytes": [10], "hidden_bytes": 8192 },
//!   "servers": [ { "name": "s0",
//!                  "gpus": [ { "memory_bytes": 10, "compute_base_s": 0.001,
//!                              "compute_per_token_s": 0.0001 } ],
//!                  "frequencies": [[0.75, 0.25]] } ],
//!   "network": { "latency_s": [[0.0]], "bandwidth_bps": [[0.0]] },
//!   "workload": { "arrival_rate_per_s": [0.1], "tokens_per_request": 20,
//!                 "requests_per_server": 100 } }
//! ```
//!
//! ## Activation frequencies f_n^l(e)
//!
//! `servers[n].frequencies[l][e]` is the expected number of times one token arriving at server n
//! activates expert e of MoE layer l: each row lies in [0, 1] per entry and sums to `top_k`
//! (a token activates exactly K distinct experts per layer). With this normalisation the proxy
//! objective (2) is the expected number of remote expert invocations of one token at every
//! server (N tokens in all), and `1 - C_n / (L K)` is server n's expected local-compute ratio.
//! The paper leaves the scale of f open; its entropy v_{n,l} (Algorithm 1) normalises each row
//! anyway, so the choice changes no algorithm, only the unit of (2).
//!
//! ## Experts
//!
//! Expert e of layer l is [`ExpertRef`] `{layer: l, expert: e}`; its dense index
//! ([`Instance::expert_index`]) is `l * E + e`. Sizes m_e are per layer
//! (`model.expert_bytes[l]`): every expert of a layer has the same shape in the paper's models.

use serde::{Deserialize, Serialize};

use crate::problem::ProblemKind;

/// An edge server n in \[N\], by its index in `Instance::servers`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ServerId(pub u32);

impl ServerId {
    /// The id as an index into `Instance::servers`.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl std::fmt::Display for ServerId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// One Prism instance: the MoE model, the servers with their GPUs and activation frequencies,
/// and optionally the network and a workload for latency evaluation and simulation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Instance {
    /// Always [`ProblemKind::Prism`]; lets `moe-opt solve FILE` dispatch on the file.
    pub problem: ProblemKind,
    /// Free-form name (generator preset and seed, source file, ...).
    #[serde(default)]
    pub name: String,
    /// The MoE model: L layers of E experts, Top-K routing.
    pub model: MoeModel,
    /// The edge servers \[N\] with their GPUs and f_n^l(e).
    pub servers: Vec<Server>,
    /// Links between servers; needed by the latency of eq. (1) and the simulator only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<Network>,
    /// Request arrivals for the simulator of Section IV-C; not used by (1) or (2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<Workload>,
}

/// The MoE model (Section III-B: L layers, |E_l| = E experts each).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MoeModel {
    /// Model name (for reports).
    pub name: String,
    /// L, number of MoE layers.
    pub layers: u32,
    /// E, routed experts per MoE layer.
    pub experts_per_layer: u32,
    /// K, experts activated per token and layer.
    pub top_k: u32,
    /// m_e per layer: bytes of one expert of layer l (length L).
    pub expert_bytes: Vec<u64>,
    /// Bytes of one token's hidden state h (sent to a remote expert and its output sent back).
    pub hidden_bytes: u64,
}

/// An edge server n.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Server {
    /// Server name (for reports).
    #[serde(default)]
    pub name: String,
    /// Its G_n GPUs.
    pub gpus: Vec<Gpu>,
    /// f_n^l(e): `frequencies[l][e]`, expected activations per token (see the module doc),
    /// L rows of E entries, each row summing to K.
    pub frequencies: Vec<Vec<f64>>,
}

/// GPU g of a server: memory mem_{n,g} and a linear compute-time model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gpu {
    /// mem_{n,g}: bytes available for experts.
    pub memory_bytes: u64,
    /// a in T_comp = a + b * tokens: fixed time of one expert invocation, seconds.
    pub compute_base_s: f64,
    /// b in T_comp = a + b * tokens: time per token of one expert invocation, seconds.
    pub compute_per_token_s: f64,
    /// speed_{n,g} of eq. (3): the bandwidth for loading an expert onto this GPU, bit/s;
    /// needed only for the migration cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_bps: Option<f64>,
}

impl Gpu {
    /// T_comp of one expert invocation on `tokens` tokens, seconds.
    pub fn compute_time(&self, tokens: u32) -> f64 {
        self.compute_base_s + self.compute_per_token_s * f64::from(tokens)
    }
}

/// Links between servers: `latency_s[n][n']` and `bandwidth_bps[n][n']` of the one-way link
/// from n to n' (N x N, zero on the diagonal, which is never used).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Network {
    /// Fixed latency per transfer, seconds.
    pub latency_s: Vec<Vec<f64>>,
    /// Bandwidth, bit/s (500 Mbit/s in the testbed, Section IV-A).
    pub bandwidth_bps: Vec<Vec<f64>>,
}

impl Network {
    /// One-way transfer time of `bytes` from server `from` to `to`: latency + 8 bytes / rate;
    /// zero when `from == to`.
    pub fn transfer_time(&self, from: ServerId, to: ServerId, bytes: u64) -> f64 {
        if from == to {
            return 0.0;
        }
        let (a, b) = (from.index(), to.index());
        self.latency_s[a][b] + 8.0 * bytes as f64 / self.bandwidth_bps[a][b]
    }
}

/// Request arrivals for the simulator (Section IV-C: "Poisson arrival" per server).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// Poisson arrival rate of requests at each server, per second (length N; Table II's
    /// "10s Poisson arrival" is 0.1).
    pub arrival_rate_per_s: Vec<f64>,
    /// Tokens of one request, all processed together at each layer.
    pub tokens_per_request: u32,
    /// Requests simulated at each server.
    pub requests_per_server: u32,
}

/// Expert e of MoE layer l.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpertRef {
    /// Layer l in 0..L.
    pub layer: u32,
    /// Expert e in 0..E.
    pub expert: u32,
}

impl std::fmt::Display for ExpertRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "l{}.e{}", self.layer, self.expert)
    }
}

impl Instance {
    /// L.
    pub fn layers(&self) -> usize {
        self.model.layers as usize
    }

    /// E.
    pub fn experts_per_layer(&self) -> usize {
        self.model.experts_per_layer as usize
    }

    /// L * E, the number of distinct experts.
    pub fn expert_count(&self) -> usize {
        self.layers() * self.experts_per_layer()
    }

    /// The dense index `l * E + e` of an expert (no range check).
    pub fn expert_index(&self, r: ExpertRef) -> usize {
        r.layer as usize * self.experts_per_layer() + r.expert as usize
    }

    /// The expert with dense index `i`.
    pub fn expert_ref(&self, i: usize) -> ExpertRef {
        let e = self.experts_per_layer();
        ExpertRef {
            layer: (i / e) as u32,
            expert: (i % e) as u32,
        }
    }

    /// m_e, bytes of an expert.
    pub fn expert_bytes(&self, r: ExpertRef) -> u64 {
        self.model.expert_bytes[r.layer as usize]
    }

    /// M_n = sum_g mem_{n,g} (Algorithm 1's server memory).
    pub fn server_memory(&self, n: ServerId) -> u64 {
        self.servers[n.index()]
            .gpus
            .iter()
            .map(|g| g.memory_bytes)
            .sum()
    }

    /// Total number of GPUs, sum_n G_n.
    pub fn gpu_count(&self) -> usize {
        self.servers.iter().map(|s| s.gpus.len()).sum()
    }
}

/// An expert placement P: for each server n and GPU g, the experts e with z_{n,g}^e = 1.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Placement {
    /// `gpus[n][g]`: the experts held by GPU g of server n, without duplicates.
    pub gpus: Vec<Vec<Vec<ExpertRef>>>,
}

impl Placement {
    /// The empty placement shaped for an instance (every GPU holds nothing).
    pub fn empty_for(instance: &Instance) -> Self {
        Placement {
            gpus: instance
                .servers
                .iter()
                .map(|s| vec![Vec::new(); s.gpus.len()])
                .collect(),
        }
    }

    /// Sets z_{n,g}^e = 1; returns whether it was 0.
    pub fn insert(&mut self, n: ServerId, g: usize, r: ExpertRef) -> bool {
        let list = &mut self.gpus[n.index()][g];
        if list.contains(&r) {
            false
        } else {
            list.push(r);
            true
        }
    }

    /// Sets z_{n,g}^e = 0; returns whether it was 1.
    pub fn remove(&mut self, n: ServerId, g: usize, r: ExpertRef) -> bool {
        let list = &mut self.gpus[n.index()][g];
        match list.iter().position(|&x| x == r) {
            Some(i) => {
                list.remove(i);
                true
            }
            None => false,
        }
    }

    /// z_{n,g}^e.
    pub fn contains(&self, n: ServerId, g: usize, r: ExpertRef) -> bool {
        self.gpus[n.index()][g].contains(&r)
    }

    /// Sorts every GPU's list (layer, then expert), for canonical output.
    pub fn normalize(&mut self) {
        for server in &mut self.gpus {
            for list in server {
                list.sort_unstable();
                list.dedup();
            }
        }
    }

    /// Number of (server, GPU, expert) triples with z = 1.
    pub fn len(&self) -> usize {
        self.gpus.iter().flatten().map(Vec::len).sum()
    }

    /// True when no GPU holds anything.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes held by GPU g of server n: sum_e z_{n,g}^e m_e.
    pub fn gpu_bytes(&self, instance: &Instance, n: ServerId, g: usize) -> u64 {
        self.gpus[n.index()][g]
            .iter()
            .map(|&r| instance.expert_bytes(r))
            .sum()
    }

    /// The per-server holder sets y_n^e = [sum_g z_{n,g}^e >= 1]. The placement must be valid
    /// for the instance (see `validate::validate_placement`).
    pub fn holders(&self, instance: &Instance) -> Holders {
        let experts = instance.expert_count();
        let mut held = vec![false; self.gpus.len() * experts];
        for (n, server) in self.gpus.iter().enumerate() {
            for &r in server.iter().flatten() {
                held[n * experts + instance.expert_index(r)] = true;
            }
        }
        Holders {
            servers: self.gpus.len(),
            experts,
            held,
        }
    }
}

/// y_n^e: which servers hold which experts on any of their GPUs (derived from a [`Placement`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holders {
    servers: usize,
    experts: usize,
    held: Vec<bool>,
}

impl Holders {
    /// Number of servers N.
    pub fn servers(&self) -> usize {
        self.servers
    }

    /// Number of experts L * E.
    pub fn experts(&self) -> usize {
        self.experts
    }

    /// y_n^e for the dense expert index `e`; `1 - 1_remote(n, e)` of Section III-B.
    pub fn holds(&self, n: ServerId, e: usize) -> bool {
        self.held[n.index() * self.experts + e]
    }

    /// The row of server n: `row[e] = y_n^e`.
    pub fn server_row(&self, n: ServerId) -> &[bool] {
        &self.held[n.index() * self.experts..(n.index() + 1) * self.experts]
    }

    /// The servers holding expert `e`, in index order.
    pub fn holders_of(&self, e: usize) -> impl Iterator<Item = ServerId> + '_ {
        (0..self.servers)
            .filter(move |&n| self.held[n * self.experts + e])
            .map(|n| ServerId(n as u32))
    }

    /// Number of servers holding expert `e`.
    pub fn replicas(&self, e: usize) -> usize {
        self.holders_of(e).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_time_is_latency_plus_bits_over_rate_and_zero_locally() {
        // 1000 bytes = 8000 bits at 8000 bit/s is 1 s, plus 0.5 s latency.
        let net = Network {
            latency_s: vec![vec![0.0, 0.5], vec![0.5, 0.0]],
            bandwidth_bps: vec![vec![0.0, 8000.0], vec![8000.0, 0.0]],
        };
        assert_eq!(net.transfer_time(ServerId(0), ServerId(1), 1000), 1.5);
        assert_eq!(net.transfer_time(ServerId(1), ServerId(1), 1000), 0.0);
    }

    #[test]
    fn insert_and_remove_keep_lists_without_duplicates() {
        let mut p = Placement {
            gpus: vec![vec![vec![], vec![]], vec![vec![]]],
        };
        let r = ExpertRef {
            layer: 1,
            expert: 0,
        };
        assert!(p.insert(ServerId(0), 1, r));
        assert!(!p.insert(ServerId(0), 1, r));
        assert!(p.insert(ServerId(1), 0, r));
        assert_eq!(p.len(), 2);
        assert!(p.remove(ServerId(0), 1, r));
        assert!(!p.contains(ServerId(0), 1, r));
    }
}
