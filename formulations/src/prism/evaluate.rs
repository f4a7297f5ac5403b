//! The one evaluator of Prism: the proxy objective (2), the constraints of Section III-B, the
//! local-compute ratio of Section IV-B and the latency objective (1) for a batch of requests.
//!
//! ## Proxy cost (2)
//!
//! C(P) = sum_n C_n, C_n = sum_l sum_e f_n^l(e) 1_remote(n, e), where 1_remote(n, e) = 1 iff no
//! GPU of server n holds e. With f normalised as in [`super::model`] (each row sums to K),
//! C_n is the expected number of remote expert invocations of one token arriving at server n
//! (unit: invocations per token), and C(P) sums it over the N servers (one token at each).
//! The expected local-compute ratio of server n is `1 - C_n / (L K)`; the overall ratio is the
//! mean over servers (every server weighted equally, as (2) weights them).
//!
//! ## Feasibility
//!
//! Coverage: every expert on at least one GPU; memory: sum_e z_{n,g}^e m_e <= mem_{n,g}.
//! [`evaluate`] reports the uncovered experts and the overloaded GPUs instead of failing, so
//! that an infeasible heuristic placement can still be compared.
//!
//! ## Latency (1)
//!
//! A request x_n^t ([`Request`]) arrives at server n with `tokens` tokens and names, per layer,
//! the experts its tokens activate; all its tokens go to each of them (one token batch per
//! expert). Reading of T(x, l, P) = max over invoked e of T_comm + T_comp (the paper leaves
//! open which replica serves an expert held on several GPUs):
//!
//! * held by server n: served by the holding GPU of n with the smallest compute time,
//!   T_comm = 0 (local invocations never leave the server, Fig. 4);
//! * otherwise: served by the holder (n', g) minimising T_comm + T_comp, ties to the lowest
//!   (n', g), where T_comm = transfer(n -> n') + transfer(n' -> n) of `tokens x hidden_bytes`
//!   (the hidden state goes out and the expert output of the same size comes back) and a
//!   transfer is `latency_s + 8 bytes / bandwidth_bps` ([`Network::transfer_time`]);
//! * T_comp = a_g + b_g tokens on the serving GPU ([`Gpu::compute_time`]).
//!
//! [`RemoteChoice::NearestLink`] offers the other reading (the holder with the smallest
//! T_comm, the compute time breaking ties). The evaluator has no queueing (that is the
//! simulator's job); non-MoE layers are not modelled.

use super::model::{ExpertRef, Gpu, Holders, Instance, Network, Placement, ServerId};
use super::validate::validate_placement;
use crate::error::ValidationError;

/// The proxy cost (2) and the feasibility of a placement.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Evaluation {
    /// C(P) of (2): expected remote invocations, one token at every server.
    pub proxy_cost: f64,
    /// C_n per server: expected remote invocations per token at server n.
    pub server_cost: Vec<f64>,
    /// Per server: expected local-compute ratio 1 - C_n / (L K).
    pub local_compute_ratio: Vec<f64>,
    /// Mean of `local_compute_ratio` over the servers.
    pub overall_local_compute_ratio: f64,
    /// Experts held by no GPU (coverage violations), in (layer, expert) order.
    pub uncovered: Vec<ExpertRef>,
    /// Bytes held by each GPU: `gpu_bytes[n][g]`.
    pub gpu_bytes: Vec<Vec<u64>>,
    /// GPUs (server, gpu) holding more than their memory.
    pub overloaded_gpus: Vec<(ServerId, usize)>,
    /// No uncovered expert and no overloaded GPU.
    pub feasible: bool,
}

/// C_n of (2) for every server, from the holder sets.
pub fn server_costs(instance: &Instance, holders: &Holders) -> Vec<f64> {
    instance
        .servers
        .iter()
        .enumerate()
        .map(|(n, s)| {
            let row = holders.server_row(ServerId(n as u32));
            s.frequencies
                .iter()
                .flatten()
                .zip(row)
                .filter(|(_, &held)| !held)
                .map(|(f, _)| f)
                .sum()
        })
        .collect()
}

/// C(P) of (2) from the holder sets (the fast path of the algorithms).
pub fn proxy_cost_of_holders(instance: &Instance, holders: &Holders) -> f64 {
    server_costs(instance, holders).iter().sum()
}

/// C(P) of (2); the placement must be valid for the instance.
pub fn proxy_cost(instance: &Instance, placement: &Placement) -> f64 {
    proxy_cost_of_holders(instance, &placement.holders(instance))
}

/// Evaluates (2), coverage, memory and the local-compute ratio; rejects a placement that does
/// not fit the instance's shape.
pub fn evaluate(instance: &Instance, placement: &Placement) -> Result<Evaluation, ValidationError> {
    validate_placement(instance, placement)?;
    let holders = placement.holders(instance);
    let server_cost = server_costs(instance, &holders);
    let per_token = (instance.layers() as f64) * f64::from(instance.model.top_k);
    let local_compute_ratio: Vec<f64> = server_cost.iter().map(|c| 1.0 - c / per_token).collect();
    let overall = local_compute_ratio.iter().sum::<f64>() / local_compute_ratio.len() as f64;
    let uncovered: Vec<ExpertRef> = (0..instance.expert_count())
        .filter(|&e| holders.replicas(e) == 0)
        .map(|e| instance.expert_ref(e))
        .collect();
    let mut gpu_bytes = Vec::with_capacity(instance.servers.len());
    let mut overloaded_gpus = Vec::new();
    for (n, server) in instance.servers.iter().enumerate() {
        let id = ServerId(n as u32);
        let bytes: Vec<u64> = (0..server.gpus.len())
            .map(|g| placement.gpu_bytes(instance, id, g))
            .collect();
        for (g, (&b, gpu)) in bytes.iter().zip(&server.gpus).enumerate() {
            if b > gpu.memory_bytes {
                overloaded_gpus.push((id, g));
            }
        }
        gpu_bytes.push(bytes);
    }
    let feasible = uncovered.is_empty() && overloaded_gpus.is_empty();
    Ok(Evaluation {
        proxy_cost: server_cost.iter().sum(),
        server_cost,
        local_compute_ratio,
        overall_local_compute_ratio: overall,
        uncovered,
        gpu_bytes,
        overloaded_gpus,
        feasible,
    })
}

/// Which replica serves an expert the requesting server does not hold (module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RemoteChoice {
    /// The holder minimising T_comm + T_comp (default).
    #[default]
    Fastest,
    /// The holder minimising T_comm; T_comp breaks ties.
    NearestLink,
}

/// One request x_n^t for eq. (1): its server, its token count and per layer the experts
/// activated (expert indices within the layer, distinct).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The server n it arrives at.
    pub server: ServerId,
    /// Tokens processed together at every layer.
    pub tokens: u32,
    /// `experts[l]`: the experts invoked at layer l (L lists).
    pub experts: Vec<Vec<u32>>,
}

/// Where one invocation runs and what it costs.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Invocation {
    /// The serving server n'.
    pub server: ServerId,
    /// The serving GPU g of n'.
    pub gpu: usize,
    /// T_comm, seconds (0 when local).
    pub comm_s: f64,
    /// T_comp, seconds.
    pub comp_s: f64,
}

impl Invocation {
    /// T_comm + T_comp.
    pub fn total_s(&self) -> f64 {
        self.comm_s + self.comp_s
    }
}

/// For every expert, the GPUs holding it: the routing table of (1) and of the simulator.
#[derive(Debug, Clone, PartialEq)]
pub struct Replicas {
    by_expert: Vec<Vec<(ServerId, usize)>>,
}

impl Replicas {
    /// The replica lists of a valid placement, each in (server, gpu) order.
    pub fn new(instance: &Instance, placement: &Placement) -> Self {
        let mut by_expert = vec![Vec::new(); instance.expert_count()];
        for (n, server) in placement.gpus.iter().enumerate() {
            for (g, list) in server.iter().enumerate() {
                for &r in list {
                    by_expert[instance.expert_index(r)].push((ServerId(n as u32), g));
                }
            }
        }
        for list in &mut by_expert {
            list.sort_unstable();
        }
        Replicas { by_expert }
    }

    /// The GPUs holding the expert with dense index `e`.
    pub fn of(&self, e: usize) -> &[(ServerId, usize)] {
        &self.by_expert[e]
    }

    /// The invocation serving expert `e` (dense index) for a batch of `tokens` tokens from
    /// server `from` (module doc); `None` when no GPU holds e or when a remote holder is needed
    /// and `network` is `None`.
    pub fn route(
        &self,
        instance: &Instance,
        network: Option<&Network>,
        choice: RemoteChoice,
        from: ServerId,
        e: usize,
        tokens: u32,
    ) -> Option<Invocation> {
        let gpu = |n: ServerId, g: usize| -> &Gpu { &instance.servers[n.index()].gpus[g] };
        let holders = &self.by_expert[e];
        let local = holders
            .iter()
            .filter(|(n, _)| *n == from)
            .map(|&(n, g)| Invocation {
                server: n,
                gpu: g,
                comm_s: 0.0,
                comp_s: gpu(n, g).compute_time(tokens),
            })
            .min_by(|a, b| a.comp_s.total_cmp(&b.comp_s));
        if local.is_some() {
            return local;
        }
        let network = network?;
        let bytes = u64::from(tokens) * instance.model.hidden_bytes;
        let key = |i: &Invocation| match choice {
            RemoteChoice::Fastest => (i.total_s(), 0.0),
            RemoteChoice::NearestLink => (i.comm_s, i.comp_s),
        };
        holders
            .iter()
            .map(|&(n, g)| Invocation {
                server: n,
                gpu: g,
                comm_s: network.transfer_time(from, n, bytes)
                    + network.transfer_time(n, from, bytes),
                comp_s: gpu(n, g).compute_time(tokens),
            })
            // min_by keeps the first of equal elements: ties go to the lowest (n', g).
            .min_by(|a, b| {
                let (ka, kb) = (key(a), key(b));
                ka.0.total_cmp(&kb.0).then(ka.1.total_cmp(&kb.1))
            })
    }
}

/// Eq. (1) for a batch of requests.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LatencyEvaluation {
    /// sum over requests and layers of T(x, l, P), seconds: the objective (1).
    pub total_latency_s: f64,
    /// Per request: sum over layers of T(x, l, P), seconds.
    pub request_latency_s: Vec<f64>,
    /// Invocations served on the requesting server.
    pub local_invocations: u64,
    /// All invocations.
    pub invocations: u64,
}

fn check_request(instance: &Instance, i: usize, r: &Request) -> Result<(), ValidationError> {
    check_routed(
        instance,
        &format!("requests[{i}]"),
        r.server,
        r.tokens,
        &r.experts,
    )
}

/// A request's server, token count and per-layer expert sets (`at` names it in errors): shared
/// by the evaluator's and the simulator's requests.
pub(crate) fn check_routed(
    instance: &Instance,
    at: &str,
    server: ServerId,
    tokens: u32,
    experts: &[Vec<u32>],
) -> Result<(), ValidationError> {
    if server.index() >= instance.servers.len() {
        return Err(ValidationError::new(
            format!("{at}.server"),
            format!("{} is out of range 0..{}", server, instance.servers.len()),
        ));
    }
    if tokens == 0 {
        return Err(ValidationError::new(format!("{at}.tokens"), "must be >= 1"));
    }
    if experts.len() != instance.layers() {
        return Err(ValidationError::new(
            format!("{at}.experts"),
            format!(
                "has {} layers, expected {}",
                experts.len(),
                instance.layers()
            ),
        ));
    }
    for (l, set) in experts.iter().enumerate() {
        for (j, &e) in set.iter().enumerate() {
            if e >= instance.model.experts_per_layer {
                return Err(ValidationError::new(
                    format!("{at}.experts[{l}][{j}]"),
                    format!(
                        "{e} is out of range 0..{}",
                        instance.model.experts_per_layer
                    ),
                ));
            }
            if set[..j].contains(&e) {
                return Err(ValidationError::new(
                    format!("{at}.experts[{l}][{j}]"),
                    format!("expert {e} is listed twice"),
                ));
            }
        }
    }
    Ok(())
}

/// Eq. (1): sum over the requests and layers of T(x, l, P) = max over the invoked experts of
/// T_comm + T_comp (module doc for the replica rule). Fails, naming the field, on a malformed
/// request or placement, on an invoked expert no GPU holds, and on a remote invocation without
/// `network`.
pub fn latency(
    instance: &Instance,
    placement: &Placement,
    requests: &[Request],
    choice: RemoteChoice,
) -> Result<LatencyEvaluation, ValidationError> {
    validate_placement(instance, placement)?;
    let replicas = Replicas::new(instance, placement);
    let network = instance.network.as_ref();
    let mut out = LatencyEvaluation {
        total_latency_s: 0.0,
        request_latency_s: Vec::with_capacity(requests.len()),
        local_invocations: 0,
        invocations: 0,
    };
    for (i, r) in requests.iter().enumerate() {
        check_request(instance, i, r)?;
        let mut sum = 0.0;
        for (l, set) in r.experts.iter().enumerate() {
            let mut slowest = 0.0f64;
            for &e in set {
                let expert = ExpertRef {
                    layer: l as u32,
                    expert: e,
                };
                let idx = instance.expert_index(expert);
                let inv = replicas
                    .route(instance, network, choice, r.server, idx, r.tokens)
                    .ok_or_else(|| missing(instance, &replicas, idx))?;
                out.invocations += 1;
                if inv.server == r.server {
                    out.local_invocations += 1;
                }
                slowest = slowest.max(inv.total_s());
            }
            sum += slowest;
        }
        out.total_latency_s += sum;
        out.request_latency_s.push(sum);
    }
    Ok(out)
}

/// Why an expert cannot be routed: no GPU holds it, or its replicas are remote and no network
/// is given.
pub(crate) fn missing(instance: &Instance, replicas: &Replicas, idx: usize) -> ValidationError {
    let expert = instance.expert_ref(idx);
    if replicas.of(idx).is_empty() {
        ValidationError::new(
            "placement",
            format!("expert {expert} is held by no GPU (coverage)"),
        )
    } else {
        ValidationError::new(
            "network",
            format!("needed for the remote invocation of {expert}"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prism::fixtures::{two_servers, two_servers_placement};

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn proxy_cost_by_hand() {
        // Server 0 holds l0.e0, l1.e0, l1.e1 and misses l0.e1 (f = 0.3), l0.e2 (0.2), l1.e2
        // (0.0): C_0 = 0.5. Server 1 holds l0.e1, l0.e2, l1.e2 and misses l0.e0 (0.1), l1.e0
        // (0.2), l1.e1 (0.2): C_1 = 0.5. C = 1.0; ratios 1 - 0.5 / (L K = 2) = 0.75.
        let (inst, p) = (two_servers(), two_servers_placement());
        let ev = evaluate(&inst, &p).unwrap();
        assert!(close(ev.server_cost[0], 0.5) && close(ev.server_cost[1], 0.5));
        assert!(close(ev.proxy_cost, 1.0));
        assert!(close(proxy_cost(&inst, &p), 1.0));
        assert!(close(ev.local_compute_ratio[0], 0.75));
        assert!(close(ev.overall_local_compute_ratio, 0.75));
        // GPU bytes 30, 20, 20 against 30, 20, 20: all fit, all six experts covered.
        assert_eq!(ev.gpu_bytes, vec![vec![30], vec![20, 20]]);
        assert!(ev.feasible && ev.uncovered.is_empty());
    }

    #[test]
    fn infeasibility_is_reported_not_rejected() {
        let inst = two_servers();
        let mut p = two_servers_placement();
        // l0.e0 onto server 1 GPU 1: 30 > 20 bytes, and C_1 drops by f_1(l0.e0) = 0.1.
        p.insert(
            ServerId(1),
            1,
            ExpertRef {
                layer: 0,
                expert: 0,
            },
        );
        // Removing l1.e1 from server 0 uncovers it and adds f_0(l1.e1) = 0.4 to C_0.
        p.remove(
            ServerId(0),
            0,
            ExpertRef {
                layer: 1,
                expert: 1,
            },
        );
        let ev = evaluate(&inst, &p).unwrap();
        assert_eq!(ev.overloaded_gpus, vec![(ServerId(1), 1)]);
        assert_eq!(
            ev.uncovered,
            vec![ExpertRef {
                layer: 1,
                expert: 1
            }]
        );
        assert!(!ev.feasible);
        assert!(close(ev.proxy_cost, 1.0 - 0.1 + 0.4));
    }

    #[test]
    fn latency_of_eq_1_by_hand() {
        // Transfers carry 10 tokens x 1000 bytes = 80,000 bits: 0.1 s + 80,000 / 800,000 =
        // 0.2 s each way, T_comm = 0.4 s. T_comp(10 tokens): 0.02 s on s0.g0 and s1.g1, 0.04
        // s on s1.g0.
        // Request A at s0: layer 0 {e0 local 0.02, e2 remote: s1.g1 at 0.4 + 0.02 beats s1.g0
        // at 0.44} -> 0.42; layer 1 {e1 local 0.02} -> 0.02. Total 0.44.
        // Request B at s1: layer 0 {e2 local on the faster s1.g1: 0.02}; layer 1 {e0 remote
        // s0.g0 0.42, e2 local 0.02} -> 0.42. Total 0.44. Sum (1) = 0.88; 4 of 6 invocations local.
        let (inst, p) = (two_servers(), two_servers_placement());
        let requests = vec![
            Request {
                server: ServerId(0),
                tokens: 10,
                experts: vec![vec![0, 2], vec![1]],
            },
            Request {
                server: ServerId(1),
                tokens: 10,
                experts: vec![vec![2], vec![0, 2]],
            },
        ];
        let out = latency(&inst, &p, &requests, RemoteChoice::Fastest).unwrap();
        assert!(close(out.request_latency_s[0], 0.44));
        assert!(close(out.request_latency_s[1], 0.44));
        assert!(close(out.total_latency_s, 0.88));
        assert_eq!((out.local_invocations, out.invocations), (4, 6));
    }

    #[test]
    fn remote_choice_rules_differ_when_the_nearest_link_has_the_slower_gpu() {
        // Expert l0.e2 only on s1.g0 (0.04 s) and on a third server s2 whose link is slower
        // (0.15 s latency: T_comm = 2 (0.15 + 0.1) = 0.5) but whose GPU is 0.001 s. From s0:
        // Fastest picks s1.g0 at 0.44 < 0.501; NearestLink also picks s1 (0.4 < 0.5). Make s2's
        // link faster instead (latency 0.05: T_comm = 0.3) with a slow GPU (1.0 s): Fastest
        // keeps s1.g0 (0.44 < 1.3), NearestLink picks s2 (0.3 < 0.4).
        let mut inst = two_servers();
        let mut s2 = inst.servers[1].clone();
        s2.gpus = vec![Gpu {
            memory_bytes: 10,
            compute_base_s: 1.0 - 0.01,
            compute_per_token_s: 0.001,
            io_bps: None,
        }];
        inst.servers.push(s2);
        let net = inst.network.as_mut().unwrap();
        net.latency_s = vec![
            vec![0.0, 0.1, 0.05],
            vec![0.1, 0.0, 0.1],
            vec![0.05, 0.1, 0.0],
        ];
        net.bandwidth_bps = vec![
            vec![0.0, 8e5, 8e5],
            vec![8e5, 0.0, 8e5],
            vec![8e5, 8e5, 0.0],
        ];
        let mut p = two_servers_placement();
        p.remove(
            ServerId(1),
            1,
            ExpertRef {
                layer: 0,
                expert: 2,
            },
        );
        p.gpus.push(vec![vec![ExpertRef {
            layer: 0,
            expert: 2,
        }]]);
        let r = Replicas::new(&inst, &p);
        let e = inst.expert_index(ExpertRef {
            layer: 0,
            expert: 2,
        });
        let net = inst.network.as_ref();
        let fast = r
            .route(&inst, net, RemoteChoice::Fastest, ServerId(0), e, 10)
            .unwrap();
        assert_eq!((fast.server, fast.gpu), (ServerId(1), 0));
        assert!(close(fast.total_s(), 0.44));
        let near = r
            .route(&inst, net, RemoteChoice::NearestLink, ServerId(0), e, 10)
            .unwrap();
        assert_eq!(near.server, ServerId(2));
        assert!(close(near.total_s(), 1.3));
    }

    #[test]
    fn latency_names_the_uncovered_expert_and_a_bad_request() {
        let inst = two_servers();
        let mut p = two_servers_placement();
        p.remove(
            ServerId(0),
            0,
            ExpertRef {
                layer: 1,
                expert: 1,
            },
        );
        let req = |experts: Vec<Vec<u32>>| Request {
            server: ServerId(1),
            tokens: 1,
            experts,
        };
        let e = latency(
            &inst,
            &p,
            &[req(vec![vec![], vec![1]])],
            RemoteChoice::Fastest,
        )
        .unwrap_err();
        assert_eq!(e.field, "placement");
        assert!(e.reason.contains("l1.e1"), "{e}");
        let e = latency(
            &inst,
            &p,
            &[req(vec![vec![3], vec![]])],
            RemoteChoice::Fastest,
        )
        .unwrap_err();
        assert_eq!(e.field, "requests[0].experts[0][0]");
        let e = latency(&inst, &p, &[req(vec![vec![]])], RemoteChoice::Fastest).unwrap_err();
        assert_eq!(e.field, "requests[0].experts");
    }
}
