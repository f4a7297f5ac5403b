//! Eq. (1) and the simulator of Section IV-C on a placement, as the reports and the claims use
//! them: a batch of requests sampled once per instance (the simulator's request sampler
//! `workload_requests`, so every method meets the same batch), eq. (1)'s latency on it, and the
//! simulated mean and p95 latency per server. Both need the instance's `workload` (eq. (1) also
//! its `network`); without them there is no report.

use formulations::prism::simulate::workload_requests;
use formulations::prism::{latency, simulate, Instance, Placement, RemoteChoice, Request};
use serde::Serialize;

/// Latency of one placement on the sampled batch and in simulation.
#[derive(Debug, Clone, Serialize)]
pub struct LatencyReport {
    /// Objective (1) on the sampled batch: sum over requests and layers of T(x, l, P), seconds.
    pub eq1_total_s: f64,
    /// Invocations of the batch served by another server.
    pub remote_invocations: u64,
    /// All invocations of the batch.
    pub invocations: u64,
    /// Simulated mean latency per server, seconds (null without a network).
    pub sim_mean_latency_s: Option<Vec<f64>>,
    /// Simulated p95 latency per server, seconds.
    pub sim_p95_latency_s: Option<Vec<f64>>,
    /// Simulated mean over all requests, seconds.
    pub sim_overall_mean_s: Option<f64>,
}

/// The requests of eq. (1)'s batch: the simulator's sampled workload, without arrival times.
pub fn sampled_batch(instance: &Instance, seed: u64) -> Option<Vec<Request>> {
    let requests = workload_requests(instance, seed).ok()?;
    Some(
        requests
            .into_iter()
            .map(|r| Request {
                server: r.server,
                tokens: r.tokens,
                experts: r.experts,
            })
            .collect(),
    )
}

/// Eq. (1) and the simulation of a placement; `None` without a workload and network.
pub fn latency_of(
    instance: &Instance,
    placement: &Placement,
    batch: Option<&[Request]>,
    seed: u64,
) -> Option<LatencyReport> {
    let batch = batch?;
    instance.network.as_ref()?;
    let eq1 = latency(instance, placement, batch, RemoteChoice::Fastest).ok()?;
    let sim = simulate(instance, placement, seed, RemoteChoice::Fastest).ok();
    Some(LatencyReport {
        eq1_total_s: eq1.total_latency_s,
        remote_invocations: eq1.invocations - eq1.local_invocations,
        invocations: eq1.invocations,
        sim_mean_latency_s: sim
            .as_ref()
            .map(|s| s.servers.iter().map(|x| x.mean_latency_s).collect()),
        sim_p95_latency_s: sim
            .as_ref()
            .map(|s| s.servers.iter().map(|x| x.p95_latency_s).collect()),
        sim_overall_mean_s: sim.as_ref().map(|s| s.mean_latency_s),
    })
}
