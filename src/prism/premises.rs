//! Prism's premises (paper 001; see [`crate::tier`]): the model of Sec. III and the testbed of
//! Sec. IV-A/B, as predicates on an instance, each with the claims it bears on.
//!
//! Model premises (breaking one makes an instance `extension`):
//! - `uniform-expert-size` (Alg. 1 takes one m_e): Thm. 1, Alg. 1 + 2, the evaluation;
//! - `alg1-entropy-defined` (Alg. 1's N_{n,l} divides by the sum of a server's layer entropies,
//!   so some layer row of every server has two positive entries; only Top-1 rows can break it):
//!   the same claims;
//! - `coverage-feasible` (problem (2)'s coverage within the GPUs' slots): the same claims;
//! - `multi-server` (experts spread over several servers): Alg. 1 + 2 against (2), the
//!   evaluation;
//! - `remote-invocation-dominates` (a remote round trip costs at least one expert computation:
//!   moe-opt's weakest reading of "the key source of latency"): the evaluation.
//!
//! Lemma 1 is a statement about any distribution over E experts: no model premise bears on it.
//!
//! Regime premises (the testbed: 3 servers with 1, 1 and 2 A100s, Mixtral-8x7B and
//! DeepSeek-V2-Lite; the bands around single values are moe-opt's readings): `servers` (2 to 6
//! servers of 1 to 4 GPUs, unequal counts), `layers` 13-64, `experts-per-layer` 4-128 (Lemma 1's
//! only one), `top-k` 2-8, `slots-per-gpu` 42-1,488 (half the Mixtral testbed's 85 to twice
//! DeepSeek's 744), `memory-headroom` (total slots over L E in (1, 3.6]), `no-full-copy` (no
//! server holds every expert); for the evaluation also `network` (100 Mbit/s to 1 Gbit/s,
//! Sec. IV-C's range; latency at most 10 ms), `workload` (arrivals every 8-20 s, 10-40 tokens,
//! at least 100 requests per server) and `comm-compute-ratio` (a remote round trip 10-300
//! expert computations: moe-opt's time model gives 24 and 135 at the testbed).

use formulations::prism::validate::validate;
use formulations::prism::{Instance, ServerId};

use super::algorithms::entropy_bits;
use crate::tier::{within, Level, Premise};

const THM1: &str = "prism/thm1-greedy-ratio";
const LEMMA1: &str = "prism/lemma1-entropy-coverage";
const GAP: &str = "prism/alg12-milp-gap";
const EVAL: &str = "prism/eval-beats-baselines";

/// One expert's bytes (the first; `uniform-expert-size` makes it every expert's).
fn m(i: &Instance) -> u64 {
    i.model.expert_bytes[0].max(1)
}

/// Slots of GPU memory for experts of `m` bytes, per server.
fn server_slots(i: &Instance) -> Vec<u64> {
    let m = m(i);
    i.servers
        .iter()
        .map(|s| s.gpus.iter().map(|g| g.memory_bytes / m).sum())
        .collect()
}

fn experts(i: &Instance) -> u64 {
    u64::from(i.model.layers) * u64::from(i.model.experts_per_layer)
}

fn uniform_expert_size(i: &Instance) -> Result<(), String> {
    let b = &i.model.expert_bytes;
    match b.iter().position(|&x| x != b[0]) {
        Some(k) => Err(format!("expert {k} has {} bytes, expert 0 {}", b[k], b[0])),
        None => Ok(()),
    }
}

fn alg1_entropy_defined(i: &Instance) -> Result<(), String> {
    for (n, s) in i.servers.iter().enumerate() {
        let v: f64 = s.frequencies.iter().map(|r| entropy_bits(r)).sum();
        if v <= 1e-12 {
            return Err(format!(
                "server {n}'s layer entropies sum to {:.3e} bits",
                v.max(0.0)
            ));
        }
    }
    Ok(())
}

fn coverage_feasible(i: &Instance) -> Result<(), String> {
    let slots: u64 = server_slots(i).iter().sum();
    if slots >= experts(i) {
        Ok(())
    } else {
        Err(format!("{slots} slots for {} experts", experts(i)))
    }
}

fn multi_server(i: &Instance) -> Result<(), String> {
    if i.servers.len() < 2 {
        return Err(format!("{} server", i.servers.len()));
    }
    if i.network.is_none() || i.workload.is_none() {
        return Err("no network or workload for eq. (1)".into());
    }
    Ok(())
}

/// The shortest remote round trip of one request's hidden states over the longest compute.
fn comm_ratio(i: &Instance) -> Option<f64> {
    let (net, w) = (i.network.as_ref()?, i.workload.as_ref()?);
    let bytes = u64::from(w.tokens_per_request) * i.model.hidden_bytes;
    let n = i.servers.len();
    let round_trip = (0..n)
        .flat_map(|a| (0..n).filter(move |&b| b != a).map(move |b| (a, b)))
        .map(|(a, b)| {
            let (a, b) = (ServerId(a as u32), ServerId(b as u32));
            net.transfer_time(a, b, bytes) + net.transfer_time(b, a, bytes)
        })
        .fold(f64::INFINITY, f64::min);
    let compute = i
        .servers
        .iter()
        .flat_map(|s| &s.gpus)
        .map(|g| g.compute_time(w.tokens_per_request))
        .fold(0.0, f64::max);
    (round_trip.is_finite() && compute > 0.0).then(|| round_trip / compute)
}

fn remote_invocation_dominates(i: &Instance) -> Result<(), String> {
    match comm_ratio(i) {
        Some(r) if r >= 1.0 => Ok(()),
        Some(r) => Err(format!("a remote round trip is {r:.3} expert computations")),
        None => Err("no network, workload or second server".into()),
    }
}

fn servers(i: &Instance) -> Result<(), String> {
    within("servers", i.servers.len(), 2, 6)?;
    let g: Vec<usize> = i.servers.iter().map(|s| s.gpus.len()).collect();
    if let Some(n) = g.iter().position(|&x| !(1..=4).contains(&x)) {
        return Err(format!("server {n} has {} GPUs, outside 1..=4", g[n]));
    }
    if g.iter().all(|&x| x == g[0]) {
        return Err("every server has the same GPU count (the testbed's are 1, 1, 2)".into());
    }
    Ok(())
}

fn slots_per_gpu(i: &Instance) -> Result<(), String> {
    for g in i.servers.iter().flat_map(|s| &s.gpus) {
        within("slots on a GPU", g.memory_bytes / m(i), 42, 1488)?;
    }
    Ok(())
}

fn memory_headroom(i: &Instance) -> Result<(), String> {
    let h = server_slots(i).iter().sum::<u64>() as f64 / experts(i) as f64;
    if h > 1.0 && h <= 3.6 {
        Ok(())
    } else {
        Err(format!("{h:.3} slots per expert, outside (1, 3.6]"))
    }
}

fn no_full_copy(i: &Instance) -> Result<(), String> {
    match server_slots(i).iter().position(|&s| s >= experts(i)) {
        Some(n) => Err(format!("server {n} can hold every expert")),
        None => Ok(()),
    }
}

fn network(i: &Instance) -> Result<(), String> {
    let net = i.network.as_ref().ok_or("no network")?;
    let n = i.servers.len();
    for a in 0..n {
        for b in (0..n).filter(|&b| b != a) {
            within("bit/s between servers", net.bandwidth_bps[a][b], 1e8, 1e9)?;
            within("s latency between servers", net.latency_s[a][b], 0.0, 0.01)?;
        }
    }
    Ok(())
}

fn workload(i: &Instance) -> Result<(), String> {
    let w = i.workload.as_ref().ok_or("no workload")?;
    for &r in &w.arrival_rate_per_s {
        within("arrivals per second", r, 0.05, 0.125)?;
    }
    within("tokens per request", w.tokens_per_request, 10, 40)?;
    within("requests per server", w.requests_per_server, 100, u32::MAX)
}

fn comm_compute_ratio(i: &Instance) -> Result<(), String> {
    let r = comm_ratio(i).ok_or("no network, workload or second server")?;
    within("expert computations per remote round trip", r, 10.0, 300.0)
}

/// Every premise, model premises first (module doc).
pub fn premises() -> Vec<Premise<Instance>> {
    let pipeline: &'static [&'static str] = &[THM1, GAP, EVAL];
    let regime_all: &'static [&'static str] = &[THM1, LEMMA1, GAP, EVAL];
    use Level::{Model, Regime};
    vec![
        Premise::new(
            "uniform-expert-size",
            Model,
            "Alg. 1 (Sec. III-C1)",
            "Input : Total experts per layer E , expert size m_e",
            pipeline,
            uniform_expert_size,
        ),
        Premise::new(
            "alg1-entropy-defined",
            Model,
            "Alg. 1, N_{n,l} (Sec. III-C1): the sum of a server's layer entropies is a divisor",
            "Servers are prioritized in descending order of memory capacity to ensure feasibility.",
            pipeline,
            |i| validate(i).map_err(|e| e.to_string()).and_then(|()| alg1_entropy_defined(i)),
        ),
        Premise::new(
            "coverage-feasible",
            Model,
            "Problem (2), first constraint (Sec. III-B)",
            "The first constraint ensures that every expert is deployed on at least one GPU in the system (expert coverage).",
            pipeline,
            coverage_feasible,
        ),
        Premise::new(
            "multi-server",
            Model,
            "Sec. I; Sec. III-A",
            "with each server hosting only a subset of the experts due to memory constraints",
            &[GAP, EVAL],
            multi_server,
        ),
        Premise::new(
            "remote-invocation-dominates",
            Model,
            "Sec. III-B (moe-opt's weakest reading: a remote round trip costs at least one expert computation)",
            "the key source of latency in distributed MoE inference",
            &[EVAL],
            remote_invocation_dominates,
        ),
        Premise::new(
            "servers",
            Regime,
            "Sec. IV-A (3 servers with 1, 1 and 2 GPUs; 2-6 servers of 1-4 GPUs, unequal: moe-opt's band)",
            "configured to simulate three edge servers with GPU allocations of 1, 1, and 2 respectively",
            pipeline,
            servers,
        ),
        Premise::new(
            "layers",
            Regime,
            "Sec. IV-A (32 and 26 layers; 13-64: moe-opt's band)",
            "32 layers",
            pipeline,
            |i| within("layers", i.model.layers, 13, 64),
        ),
        Premise::new(
            "experts-per-layer",
            Regime,
            "Sec. IV-A (8 and 64 experts; 4-128: moe-opt's band)",
            "2 active experts out of 8 per layer",
            regime_all,
            |i| within("experts per layer", i.model.experts_per_layer, 4, 128),
        ),
        Premise::new(
            "top-k",
            Regime,
            "Sec. IV-A (Top-2 and Top-8)",
            "8 active experts from 64 per layer",
            pipeline,
            |i| within("top-k", i.model.top_k, 2, 8),
        ),
        Premise::new(
            "slots-per-gpu",
            Regime,
            "Sec. IV-A (70 % and 30 % of 40 GB: 85 and 744 expert slots; half the first to twice the second: moe-opt's band)",
            "we artificially constrain GPU memory allocation to 70% of total capacity for Mixtral-8x7B and 30% for Deepseek-V2-Lite",
            pipeline,
            slots_per_gpu,
        ),
        Premise::new(
            "memory-headroom",
            Regime,
            "Sec. IV-A (1.33 and 1.79 slots per expert; (1, 3.6]: moe-opt's band)",
            "GPU memory in the system surpasses the model’s memory demands",
            pipeline,
            memory_headroom,
        ),
        Premise::new(
            "no-full-copy",
            Regime,
            "Sec. I; Sec. IV-A",
            "To simulate realistic edge deployment scenarios, we artificially constrain GPU memory",
            pipeline,
            no_full_copy,
        ),
        Premise::new(
            "network",
            Regime,
            "Sec. IV-A, IV-C (latency not stated; at most 10 ms: moe-opt's reading)",
            "a range of 100 Mbps to 1000 Mbps",
            &[EVAL],
            network,
        ),
        Premise::new(
            "workload",
            Regime,
            "Sec. IV-B (10-40 tokens and at least 100 requests: moe-opt's band)",
            "We constrain the model’s maximum output length to 20 tokens.",
            &[EVAL],
            workload,
        ),
        Premise::new(
            "comm-compute-ratio",
            Regime,
            "moe-opt's time model at the testbed (24 and 135; 10-300: moe-opt's band); the paper gives no breakdown",
            "the inference latency per layer increases sharply with the proportion of experts executed remotely",
            &[EVAL],
            comm_compute_ratio,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prism::claims::family_small;
    use crate::prism::generate::{try_generate, GeneratorConfig, Preset};
    use crate::tier::{classify, Tier};

    #[test]
    fn the_testbed_is_the_regime_and_the_claims_family_is_not() {
        for preset in [Preset::TestbedMixtral, Preset::TestbedDeepseek] {
            let i = try_generate(&GeneratorConfig::preset(preset), 0).unwrap();
            for claim in [THM1, LEMMA1, EVAL] {
                let c = classify(&premises(), claim, &i);
                assert_eq!(c.tier, Tier::Regime, "{preset:?} {claim}: {:?}", c.broken);
            }
        }
        let c = classify(&premises(), THM1, &family_small(0));
        assert_eq!(c.tier, Tier::Model, "{:?}", c.broken);
    }

    #[test]
    fn top1_point_masses_leave_the_model_and_lemma1_ignores_it() {
        let mut i = family_small(0);
        assert_eq!(i.model.top_k, 1, "even seeds are Top-1");
        for s in &mut i.servers {
            for row in &mut s.frequencies {
                row.iter_mut()
                    .enumerate()
                    .for_each(|(e, x)| *x = f64::from(e == 0));
            }
        }
        let c = classify(&premises(), THM1, &i);
        assert_eq!(c.tier, Tier::Extension);
        assert!(
            c.broken[0].starts_with("alg1-entropy-defined"),
            "{:?}",
            c.broken
        );
        assert_ne!(classify(&premises(), LEMMA1, &i).tier, Tier::Extension);
    }
}
