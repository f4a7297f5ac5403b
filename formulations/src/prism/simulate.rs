//! Event-driven simulation of collaborative inference under a placement (Section IV-C of
//! paper 001: Poisson prompt arrivals, routing under the placement, a linear time model per
//! token batch, FIFO interleaving of communication and computation).
//!
//! ## Model
//!
//! * Arrivals: at every server n, `workload.requests_per_server` requests with exponential
//!   inter-arrival gaps of rate `workload.arrival_rate_per_s[n]` (the first arrives one gap after
//!   time 0), each of `workload.tokens_per_request` tokens.
//! * Routing: a request runs its L MoE layers in order. At each layer it activates K distinct
//!   experts drawn by successive sampling without replacement, each draw proportional to
//!   f_n^l(e) among the experts not yet drawn (for K = 1 the marginals are exactly f; for K > 1
//!   they are close to, not exactly, f). All tokens of the request go to these K experts as one
//!   token batch (a simplification: real routing is per token).
//! * Serving replica: the rule of eq. (1)'s evaluator ([`Replicas::route`]): the fastest local
//!   GPU if server n holds the expert, else the remote holder minimising T_comm + T_comp without
//!   queueing (or [`RemoteChoice::NearestLink`]); the choice is static, not load-aware.
//! * Resources, each a FIFO single server with non-preemptive service in order of readiness:
//!   every GPU (service a + b tokens, [`super::model::Gpu::compute_time`]) and every directed
//!   link n -> n' (service 8 bytes / bandwidth for `tokens x hidden_bytes` bytes; the link
//!   latency is propagation added after the transmission and occupies nothing). Links are full
//!   duplex (n -> n' and n' -> n are separate resources). A remote invocation is: link out,
//!   latency, GPU, link back, latency.
//! * A layer ends when its last invocation returns; the next layer starts at once (non-MoE
//!   layers, gating, aggregation and the prompt's decode steps are not modelled). A request's
//!   latency is its last layer's end minus its arrival.
//!
//! ## Determinism
//!
//! Server n draws its arrivals and then, request by request, its experts from
//! `ChaCha8Rng::seed_from_u64(seed)` on stream n, before the simulation starts: the same seed
//! gives the same requests under every placement (common random numbers), and events at equal
//! times run in the order they were scheduled. p95 is the nearest-rank percentile
//! (the ceil(0.95 m)-th smallest of m latencies).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::evaluate::{missing, RemoteChoice, Replicas};
use super::model::{Instance, Placement, ServerId};
use super::validate::validate_placement;
use crate::error::ValidationError;

/// One simulated request: server, arrival time, tokens and the experts of every layer.
#[derive(Debug, Clone, PartialEq)]
pub struct SimRequest {
    /// The server it arrives at.
    pub server: ServerId,
    /// Arrival time, seconds.
    pub arrival_s: f64,
    /// Tokens (one batch per invoked expert).
    pub tokens: u32,
    /// `experts[l]`: expert indices invoked at layer l.
    pub experts: Vec<Vec<u32>>,
}

/// Per-server results of a simulation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerStats {
    /// Requests that arrived at this server.
    pub requests: u64,
    /// Mean request latency, seconds.
    pub mean_latency_s: f64,
    /// 95th percentile (nearest rank) of the request latency, seconds.
    pub p95_latency_s: f64,
    /// Local invocations / invocations of this server's requests.
    pub local_compute_ratio: f64,
    /// Expert invocations of this server's requests.
    pub invocations: u64,
}

/// The results of a simulation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimulationReport {
    /// Per server.
    pub servers: Vec<ServerStats>,
    /// All requests.
    pub requests: u64,
    /// Mean request latency over all requests, seconds (Table II's "Total Avg").
    pub mean_latency_s: f64,
    /// 95th percentile over all requests, seconds.
    pub p95_latency_s: f64,
    /// Local invocations / invocations over all requests.
    pub local_compute_ratio: f64,
    /// Expert invocations simulated.
    pub invocations: u64,
    /// Time the last request finished, seconds.
    pub makespan_s: f64,
    /// Each request's latency, seconds, in the order of the requests given (for [`simulate`]:
    /// server by server, in arrival order).
    #[serde(skip)]
    pub request_latency_s: Vec<f64>,
}

/// The requests of an instance's workload for a seed (module doc), server by server.
pub fn workload_requests(
    instance: &Instance,
    seed: u64,
) -> Result<Vec<SimRequest>, ValidationError> {
    let w = instance
        .workload
        .as_ref()
        .ok_or_else(|| ValidationError::new("workload", "the simulator needs a workload"))?;
    let k = instance.model.top_k as usize;
    let mut out = Vec::with_capacity(w.requests_per_server as usize * instance.servers.len());
    for (n, server) in instance.servers.iter().enumerate() {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(n as u64);
        let rate = w.arrival_rate_per_s[n];
        let mut t = 0.0;
        for _ in 0..w.requests_per_server {
            t += -(1.0 - rng.random::<f64>()).ln() / rate;
            let experts = server
                .frequencies
                .iter()
                .map(|row| draw_without_replacement(row, k, &mut rng))
                .collect();
            out.push(SimRequest {
                server: ServerId(n as u32),
                arrival_s: t,
                tokens: w.tokens_per_request,
                experts,
            });
        }
    }
    Ok(out)
}

/// K distinct indices by successive sampling proportional to `weights` (which has at least K
/// positive entries in a valid instance).
fn draw_without_replacement(weights: &[f64], k: usize, rng: &mut ChaCha8Rng) -> Vec<u32> {
    let mut chosen: Vec<u32> = Vec::with_capacity(k);
    let mut total: f64 = weights.iter().sum();
    for _ in 0..k {
        let mut u = rng.random::<f64>() * total;
        let mut pick = None;
        for (e, &w) in weights.iter().enumerate() {
            if w <= 0.0 || chosen.contains(&(e as u32)) {
                continue;
            }
            pick = Some(e);
            if u < w {
                break;
            }
            u -= w;
        }
        // Rounding may run past the last entry: `pick` is then the last positive one left.
        let e = pick.expect("a valid row has at least K positive entries");
        total -= weights[e];
        chosen.push(e as u32);
    }
    chosen
}

/// Simulates the instance's workload for `seed` under a placement.
pub fn simulate(
    instance: &Instance,
    placement: &Placement,
    seed: u64,
    choice: RemoteChoice,
) -> Result<SimulationReport, ValidationError> {
    let requests = workload_requests(instance, seed)?;
    simulate_requests(instance, placement, &requests, choice)
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Step {
    /// The request starts its next layer.
    Layer,
    /// A remote invocation's hidden state reached GPU `gpu` of `server`.
    AtGpu { server: u32, gpu: u32 },
    /// A remote invocation's output is ready on `server` to go back.
    Back { server: u32 },
    /// An invocation returned.
    Done,
}

#[derive(Debug, Clone, Copy)]
struct Event {
    time: f64,
    seq: u64,
    req: u32,
    step: Step,
}

impl PartialEq for Event {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Event {}
impl PartialOrd for Event {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Event {
    /// Reversed, so that the max-heap pops the earliest event (then the first scheduled).
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .time
            .total_cmp(&self.time)
            .then(other.seq.cmp(&self.seq))
    }
}

struct State {
    layer: u32,
    pending: u32,
    done_s: f64,
    local: u64,
    invocations: u64,
}

/// Simulates the given requests (their arrival times need not be sorted) under a placement.
/// Fails on a malformed placement or request, on an invoked expert no GPU holds, and on a
/// remote invocation without a network.
pub fn simulate_requests(
    instance: &Instance,
    placement: &Placement,
    requests: &[SimRequest],
    choice: RemoteChoice,
) -> Result<SimulationReport, ValidationError> {
    validate_placement(instance, placement)?;
    for (i, r) in requests.iter().enumerate() {
        check_request(instance, i, r)?;
    }
    let n = instance.servers.len();
    let experts = instance.expert_count();
    let replicas = Replicas::new(instance, placement);
    let network = instance.network.as_ref();
    let hidden = instance.model.hidden_bytes;
    // Free time of every GPU and of every directed link.
    let mut gpu_free: Vec<Vec<f64>> = instance
        .servers
        .iter()
        .map(|s| vec![0.0; s.gpus.len()])
        .collect();
    let mut link_free = vec![0.0f64; n * n];
    let mut route_cache: Vec<Option<(u32, Option<super::evaluate::Invocation>)>> =
        vec![None; n * experts];
    let mut heap = BinaryHeap::with_capacity(requests.len() * 4);
    let mut seq = 0u64;
    let mut push = |heap: &mut BinaryHeap<Event>, time: f64, req: u32, step: Step| {
        heap.push(Event {
            time,
            seq,
            req,
            step,
        });
        seq += 1;
    };
    for (i, r) in requests.iter().enumerate() {
        push(&mut heap, r.arrival_s, i as u32, Step::Layer);
    }
    let mut state: Vec<State> = requests
        .iter()
        .map(|_| State {
            layer: 0,
            pending: 0,
            done_s: 0.0,
            local: 0,
            invocations: 0,
        })
        .collect();
    while let Some(ev) = heap.pop() {
        let t = ev.time;
        let r = &requests[ev.req as usize];
        let from = r.server.index();
        let bytes = u64::from(r.tokens) * hidden;
        match ev.step {
            Step::Layer => {
                let st = &mut state[ev.req as usize];
                if st.layer as usize == r.experts.len() {
                    st.done_s = t;
                    continue;
                }
                let layer = st.layer as usize;
                st.layer += 1;
                let set = &r.experts[layer];
                if set.is_empty() {
                    push(&mut heap, t, ev.req, Step::Layer);
                    continue;
                }
                st.pending = set.len() as u32;
                st.invocations += set.len() as u64;
                for &e in set {
                    let idx = layer * instance.experts_per_layer() + e as usize;
                    let slot = &mut route_cache[from * experts + idx];
                    let inv = match slot {
                        Some((tokens, inv)) if *tokens == r.tokens => *inv,
                        _ => {
                            let inv =
                                replicas.route(instance, network, choice, r.server, idx, r.tokens);
                            *slot = Some((r.tokens, inv));
                            inv
                        }
                    };
                    let inv = inv.ok_or_else(|| missing(instance, &replicas, idx))?;
                    let (to, g) = (inv.server.index(), inv.gpu);
                    if to == from {
                        st.local += 1;
                        let free = &mut gpu_free[to][g];
                        let end = free.max(t) + inv.comp_s;
                        *free = end;
                        push(&mut heap, end, ev.req, Step::Done);
                    } else {
                        let net = network.expect("a remote route implies a network");
                        let free = &mut link_free[from * n + to];
                        let sent = free.max(t) + 8.0 * bytes as f64 / net.bandwidth_bps[from][to];
                        *free = sent;
                        let step = Step::AtGpu {
                            server: to as u32,
                            gpu: g as u32,
                        };
                        push(&mut heap, sent + net.latency_s[from][to], ev.req, step);
                    }
                }
            }
            Step::AtGpu { server, gpu } => {
                let compute = &instance.servers[server as usize].gpus[gpu as usize];
                let free = &mut gpu_free[server as usize][gpu as usize];
                let end = free.max(t) + compute.compute_time(r.tokens);
                *free = end;
                push(&mut heap, end, ev.req, Step::Back { server });
            }
            Step::Back { server } => {
                let net = network.expect("a remote route implies a network");
                let s = server as usize;
                let free = &mut link_free[s * n + from];
                let sent = free.max(t) + 8.0 * bytes as f64 / net.bandwidth_bps[s][from];
                *free = sent;
                push(&mut heap, sent + net.latency_s[s][from], ev.req, Step::Done);
            }
            Step::Done => {
                let st = &mut state[ev.req as usize];
                st.pending -= 1;
                if st.pending == 0 {
                    push(&mut heap, t, ev.req, Step::Layer);
                }
            }
        }
    }
    Ok(report(instance, requests, &state))
}

fn check_request(instance: &Instance, i: usize, r: &SimRequest) -> Result<(), ValidationError> {
    let at = format!("requests[{i}]");
    if !(r.arrival_s.is_finite() && r.arrival_s >= 0.0) {
        return Err(ValidationError::new(
            format!("{at}.arrival_s"),
            format!("must be finite and >= 0, got {}", r.arrival_s),
        ));
    }
    super::evaluate::check_routed(instance, &at, r.server, r.tokens, &r.experts)
}

/// Nearest-rank percentile of unsorted values (0 for none).
fn percentile(values: &mut [f64], q: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_unstable_by(f64::total_cmp);
    let rank = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len());
    values[rank - 1]
}

fn stats(latencies: &mut [f64], local: u64, invocations: u64) -> ServerStats {
    let m = latencies.len();
    ServerStats {
        requests: m as u64,
        mean_latency_s: if m == 0 {
            0.0
        } else {
            latencies.iter().sum::<f64>() / m as f64
        },
        p95_latency_s: percentile(latencies, 0.95),
        local_compute_ratio: if invocations == 0 {
            0.0
        } else {
            local as f64 / invocations as f64
        },
        invocations,
    }
}

fn report(instance: &Instance, requests: &[SimRequest], state: &[State]) -> SimulationReport {
    let latency: Vec<f64> = requests
        .iter()
        .zip(state)
        .map(|(r, s)| s.done_s - r.arrival_s)
        .collect();
    let servers = (0..instance.servers.len())
        .map(|n| {
            let mine = || {
                requests
                    .iter()
                    .zip(state)
                    .filter(move |(r, _)| r.server.index() == n)
            };
            let mut lat: Vec<f64> = mine().map(|(r, s)| s.done_s - r.arrival_s).collect();
            let local = mine().map(|(_, s)| s.local).sum();
            let inv = mine().map(|(_, s)| s.invocations).sum();
            stats(&mut lat, local, inv)
        })
        .collect();
    let local = state.iter().map(|s| s.local).sum();
    let invocations = state.iter().map(|s| s.invocations).sum();
    let all = stats(&mut latency.clone(), local, invocations);
    SimulationReport {
        servers,
        requests: all.requests,
        mean_latency_s: all.mean_latency_s,
        p95_latency_s: all.p95_latency_s,
        local_compute_ratio: all.local_compute_ratio,
        invocations,
        makespan_s: state.iter().map(|s| s.done_s).fold(0.0, f64::max),
        request_latency_s: latency,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prism::fixtures::{two_servers, two_servers_placement};

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    fn req(server: u32, arrival_s: f64, experts: Vec<Vec<u32>>) -> SimRequest {
        SimRequest {
            server: ServerId(server),
            arrival_s,
            tokens: 10,
            experts,
        }
    }

    #[test]
    fn a_single_request_by_hand() {
        // Request at s0, t = 1, 10 tokens (10,000 bytes = 80,000 bits, 0.1 s on an 800 kbit/s
        // link, then 0.1 s latency). Layer 0: e0 local on s0.g0 1.00 -> 1.02; e2 remote on
        // s1.g1: link out 1.0 -> 1.1, arrives 1.2, GPU 1.2 -> 1.22, link back 1.22 -> 1.32,
        // arrives 1.42. Layer 1: e1 local 1.42 -> 1.44. Latency 0.44 (eq. (1)'s value: no
        // queueing for a single request), 2 of 3 invocations local.
        let (inst, p) = (two_servers(), two_servers_placement());
        let out = simulate_requests(
            &inst,
            &p,
            &[req(0, 1.0, vec![vec![0, 2], vec![1]])],
            RemoteChoice::Fastest,
        )
        .unwrap();
        assert!(close(out.request_latency_s[0], 0.44), "{out:?}");
        assert!(close(out.makespan_s, 1.44));
        assert_eq!(out.invocations, 3);
        assert!(close(out.servers[0].local_compute_ratio, 2.0 / 3.0));
        assert_eq!(out.servers[1].requests, 0);
    }

    #[test]
    fn fifo_queueing_on_a_shared_gpu_by_hand() {
        // A and B arrive at s0 at t = 0, both using l0.e0 then l1.e0 on s0.g0 (0.02 s each).
        // A: layer 0 0 -> 0.02. B: layer 0 queued 0.02 -> 0.04. A's layer 1 is ready at 0.02 but
        // waits for B: 0.04 -> 0.06. B's layer 1: 0.06 -> 0.08. Latencies 0.06 and 0.08, mean
        // 0.07, p95 (2nd of 2) 0.08.
        let (inst, p) = (two_servers(), two_servers_placement());
        let rs = [
            req(0, 0.0, vec![vec![0], vec![0]]),
            req(0, 0.0, vec![vec![0], vec![0]]),
        ];
        let out = simulate_requests(&inst, &p, &rs, RemoteChoice::Fastest).unwrap();
        assert!(close(out.request_latency_s[0], 0.06));
        assert!(close(out.request_latency_s[1], 0.08));
        assert!(close(out.servers[0].mean_latency_s, 0.07));
        assert!(close(out.servers[0].p95_latency_s, 0.08));
        assert!(close(out.local_compute_ratio, 1.0));
    }

    #[test]
    fn link_contention_by_hand() {
        // Two requests at s1 at t = 0, each needing l1.e0 (only on s0.g0) at layer 1 and
        // nothing at layer 0. Link s1 -> s0 carries A 0 -> 0.1 and B 0.1 -> 0.2; arrivals at s0
        // 0.2 and 0.3. GPU: A 0.2 -> 0.22, B 0.3 -> 0.32. Link back: A 0.22 -> 0.32 (arrives
        // 0.42), B 0.32 -> 0.42 (arrives 0.52).
        let (inst, p) = (two_servers(), two_servers_placement());
        let rs = [
            req(1, 0.0, vec![vec![], vec![0]]),
            req(1, 0.0, vec![vec![], vec![0]]),
        ];
        let out = simulate_requests(&inst, &p, &rs, RemoteChoice::Fastest).unwrap();
        assert!(close(out.request_latency_s[0], 0.42), "{out:?}");
        assert!(close(out.request_latency_s[1], 0.52));
        assert!(close(out.local_compute_ratio, 0.0));
    }

    #[test]
    fn same_seed_same_report_and_draws_follow_f() {
        let mut inst = two_servers();
        inst.workload.as_mut().unwrap().requests_per_server = 2000;
        let p = two_servers_placement();
        let a = simulate(&inst, &p, 7, RemoteChoice::Fastest).unwrap();
        let b = simulate(&inst, &p, 7, RemoteChoice::Fastest).unwrap();
        assert_eq!(a, b);
        let c = simulate(&inst, &p, 8, RemoteChoice::Fastest).unwrap();
        assert_ne!(a.mean_latency_s, c.mean_latency_s);
        // K = 1, so draws follow f exactly in expectation: the local ratio of s0 tends to
        // 1 - C_0 / (L K) = 0.75 (evaluate's proxy); 4000 invocations, sd about 0.007.
        assert_eq!(a.servers[0].invocations, 4000);
        assert!(
            (a.servers[0].local_compute_ratio - 0.75).abs() < 0.03,
            "{a:?}"
        );
        assert!((a.servers[1].local_compute_ratio - 0.75).abs() < 0.03);
    }

    #[test]
    fn draws_are_distinct_and_never_pick_zero_weights() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for _ in 0..1000 {
            let d = draw_without_replacement(&[0.5, 0.0, 1.0, 0.5], 2, &mut rng);
            assert_eq!(d.len(), 2);
            assert_ne!(d[0], d[1]);
            assert!(!d.contains(&1));
        }
    }
}
