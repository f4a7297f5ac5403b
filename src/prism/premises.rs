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
    use crate::tier::boundary::{assert_boundaries, Boundary};
    use crate::tier::{classify, Tier};

    /// A row of `each_premise_just_inside_and_just_outside`: a change of a testbed preset (seed
    /// 0, `regime`; Mixtral unless the row says `.base(deepseek)`) just inside the premise's
    /// limit and one just outside it, classified for the evaluation unless the row says
    /// `.claim(..)`.
    type Row = Boundary<Instance>;

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

    /// Sec. IV-A's testbed with Mixtral-8x7B: 3 servers of 1, 1, 2 GPUs, 32 layers of 8
    /// experts, Top-2, experts of 352,321,536 B, 85 slots a GPU (340 for 256 experts), 500
    /// Mbit/s and 1 ms links, 20 tokens a request, 0.1 arrivals/s, 200 requests a server.
    fn mixtral() -> Instance {
        try_generate(&GeneratorConfig::preset(Preset::TestbedMixtral), 0).unwrap()
    }

    /// The same with DeepSeek-V2-Lite: 26 layers of 64 experts, Top-6, experts of 17,301,504
    /// B, 744 slots a GPU (2,976 for 1,664 experts).
    fn deepseek() -> Instance {
        try_generate(&GeneratorConfig::preset(Preset::TestbedDeepseek), 0).unwrap()
    }

    /// GPU g of server n holds exactly `slots` experts.
    fn gpu_slots(i: &mut Instance, n: usize, g: usize, slots: u64) {
        i.servers[n].gpus[g].memory_bytes = slots * i.model.expert_bytes[0];
    }

    /// Every GPU holds exactly `slots` experts.
    fn slots(i: &mut Instance, slots: u64) {
        let m = i.model.expert_bytes[0];
        for g in i.servers.iter_mut().flat_map(|s| &mut s.gpus) {
            g.memory_bytes = slots * m;
        }
    }

    /// Server n gets another GPU like its first.
    fn add_gpu(i: &mut Instance, n: usize) {
        let g = i.servers[n].gpus[0].clone();
        i.servers[n].gpus.push(g);
    }

    /// Another server like server 0 with `gpus` GPUs, linked and loaded like the others.
    fn add_server(i: &mut Instance, gpus: usize) {
        let mut s = i.servers[0].clone();
        s.gpus.resize(gpus, s.gpus[0].clone());
        i.servers.push(s);
        let net = i.network.as_mut().unwrap();
        let (lat, bw) = (net.latency_s[0][1], net.bandwidth_bps[0][1]);
        for (m, x) in [(&mut net.latency_s, lat), (&mut net.bandwidth_bps, bw)] {
            m.iter_mut().for_each(|row| row.push(x));
            let n = m.len();
            m.push((0..=n).map(|b| if b == n { 0.0 } else { x }).collect());
        }
        let w = i.workload.as_mut().unwrap();
        w.arrival_rate_per_s.push(w.arrival_rate_per_s[0]);
    }

    /// Server n removed, with its links and arrivals.
    fn drop_server(i: &mut Instance, n: usize) {
        i.servers.remove(n);
        let net = i.network.as_mut().unwrap();
        for m in [&mut net.latency_s, &mut net.bandwidth_bps] {
            m.remove(n);
            m.iter_mut().for_each(|row| {
                row.remove(n);
            });
        }
        i.workload.as_mut().unwrap().arrival_rate_per_s.remove(n);
    }

    /// L layers (the new ones copies of layer 0).
    fn layers(i: &mut Instance, l: u32) {
        i.model.layers = l;
        let m = i.model.expert_bytes[0];
        i.model.expert_bytes.resize(l as usize, m);
        for s in &mut i.servers {
            let row = s.frequencies[0].clone();
            s.frequencies.resize(l as usize, row);
        }
    }

    /// E experts and Top-K, every frequency row uniform (K / E each).
    fn shape(i: &mut Instance, e: u32, k: u32) {
        (i.model.experts_per_layer, i.model.top_k) = (e, k);
        for row in i.servers.iter_mut().flat_map(|s| &mut s.frequencies) {
            *row = vec![f64::from(k) / f64::from(e); e as usize];
        }
    }

    /// GPU 0 of server n takes `seconds` per expert invocation, whatever the tokens.
    fn compute(i: &mut Instance, n: usize, seconds: f64) {
        let g = &mut i.servers[n].gpus[0];
        (g.compute_base_s, g.compute_per_token_s) = (seconds, 0.0);
    }

    /// Every GPU takes `seconds` per expert invocation, whatever the tokens.
    fn compute_all(i: &mut Instance, seconds: f64) {
        for g in i.servers.iter_mut().flat_map(|s| &mut s.gpus) {
            (g.compute_base_s, g.compute_per_token_s) = (seconds, 0.0);
        }
    }

    /// Top-1 with uniform rows, and server 0's rows point masses on expert 0 but for layer
    /// 0, which gives expert 1 the frequency `eps`.
    fn top1_server0_nearly_certain(i: &mut Instance, eps: f64) {
        shape(i, 8, 1);
        for (l, row) in i.servers[0].frequencies.iter_mut().enumerate() {
            row.iter_mut().for_each(|x| *x = 0.0);
            row[0] = 1.0;
            if l == 0 {
                (row[0], row[1]) = (1.0 - eps, eps);
            }
        }
    }

    /// Every link at `bps` bit/s.
    fn bandwidth(i: &mut Instance, bps: f64) {
        let net = i.network.as_mut().unwrap();
        for (a, row) in net.bandwidth_bps.iter_mut().enumerate() {
            for (b, x) in row.iter_mut().enumerate() {
                *x = if a == b { 0.0 } else { bps };
            }
        }
    }

    /// Every link's latency `s` seconds.
    fn latency(i: &mut Instance, s: f64) {
        let net = i.network.as_mut().unwrap();
        for (a, row) in net.latency_s.iter_mut().enumerate() {
            for (b, x) in row.iter_mut().enumerate() {
                *x = if a == b { 0.0 } else { s };
            }
        }
    }

    fn workload(i: &mut Instance) -> &mut formulations::prism::Workload {
        i.workload.as_mut().unwrap()
    }

    #[test]
    fn each_premise_just_inside_and_just_outside() {
        const E: f64 = 1e-6;
        let rows = [
            // --- Model premises (Sec. III) ---
            // Alg. 1's one m_e: Mixtral's 3 x 4096 x 14336 x 2 B = 352,321,536 B; one byte
            // more on layer 1 outside.
            Row::model(
                "uniform-expert-size",
                |i| i.model.expert_bytes[1] = 352_321_536,
                |i| i.model.expert_bytes[1] = 352_321_537,
            ),
            // Alg. 1's divisor, the sum of a server's layer entropies, positive: only Top-1
            // rows can make it 0 (Top-1 leaves Sec. IV-A's Top-2..8, `top-k`). Server 0's rows
            // point masses but one, [1 - eps, eps, 0, ...]: eps = 1e-13 gives 4.46e-12 bits,
            // above the code's zero 1e-12; eps = 1e-14 gives 4.79e-13 bits, below it.
            Row::model(
                "alg1-entropy-defined",
                |i| top1_server0_nearly_certain(i, 1e-13),
                |i| top1_server0_nearly_certain(i, 1e-14),
            )
            .inside_is(Tier::Model, &["top-k"])
            .outside_is(Tier::Extension, &["top-k"]),
            // Problem (2)'s coverage: as many slots as experts, L E = 32 x 8 = 256, i.e. 64 a
            // GPU, inside; one GPU with a byte less (63 slots, 255 in all) outside. Exactly
            // full is no headroom: (1, 3.6] excludes 1 (`memory-headroom`).
            Row::model(
                "coverage-feasible",
                |i| slots(i, 64),
                |i| {
                    slots(i, 64);
                    let m = i.model.expert_bytes[0];
                    i.servers[0].gpus[0].memory_bytes = 64 * m - 1;
                },
            )
            .inside_is(Tier::Model, &["memory-headroom"])
            .outside_is(Tier::Extension, &["memory-headroom"]),
            // Eq. (1) needs a network: the testbed's inside, none outside (classified for the
            // Alg. 1 + 2 vs (2) claim, the one the premise bears on that needs no network
            // otherwise; for the evaluation the premises on the network break too).
            Row::model(
                "multi-server",
                |i| assert!(i.network.is_some()),
                |i| i.network = None,
            )
            .claim(GAP),
            // Several servers (Sec. III-A): DeepSeek without server 0, 2 servers of 1 and 2
            // GPUs (2,232 slots for 1,664 experts), inside; one server of 2 GPUs outside. One
            // server is outside `servers` (2-6) too, and its 1,488 slots hold < 1,664 experts
            // (`coverage-feasible`, `memory-headroom`); with more memory it would be a full
            // copy (`no-full-copy`) instead.
            Row::model(
                "multi-server",
                |i| drop_server(i, 0),
                |i| {
                    drop_server(i, 0);
                    drop_server(i, 0);
                },
            )
            .base(deepseek)
            .claim(GAP)
            .outside_is(
                Tier::Extension,
                &["coverage-feasible", "servers", "memory-headroom"],
            ),
            // A remote round trip at least one expert computation: Mixtral's round trip is 2 x
            // (1 ms + 8 x 20 x 8,192 B / 500 Mbit/s) = 7.24288 ms; server 0's GPU computing
            // that long (ratio 1) inside, 1e-6 longer outside. Both are outside the 10-300
            // band (`comm-compute-ratio`).
            Row::model(
                "remote-invocation-dominates",
                |i| compute(i, 0, 7.24288e-3),
                |i| compute(i, 0, 7.24288e-3 * (1.0 + E)),
            )
            .inside_is(Tier::Model, &["comm-compute-ratio"])
            .outside_is(Tier::Extension, &["comm-compute-ratio"]),
            // --- Regime premises (Sec. IV) ---
            // At most 6 servers (Mixtral plus one-GPU servers: 595 and 680 slots for 256).
            Row::regime(
                "servers",
                |i| (0..3).for_each(|_| add_server(i, 1)),
                |i| (0..4).for_each(|_| add_server(i, 1)),
            ),
            // At most 4 GPUs a server (Sec. IV-A's 1, 1, 2): server 2 with 4 GPUs inside, 5
            // outside, at 50 slots a GPU so that it holds no full copy (200, 250 < 256).
            Row::regime(
                "servers",
                |i| {
                    slots(i, 50);
                    (0..2).for_each(|_| add_gpu(i, 2));
                },
                |i| {
                    slots(i, 50);
                    (0..3).for_each(|_| add_gpu(i, 2));
                },
            ),
            // Unequal GPU counts (the testbed's 1, 1, 2): 2, 1, 2 inside, 2, 2, 2 outside.
            Row::regime(
                "servers",
                |i| add_gpu(i, 0),
                |i| {
                    add_gpu(i, 0);
                    add_gpu(i, 1);
                },
            ),
            // Layers: twice Mixtral's 32 = 64 inside, 65 outside, at 170 slots a GPU (680 for
            // 512 or 520 experts, 340 on server 2) ...
            Row::regime(
                "layers",
                |i| {
                    layers(i, 64);
                    slots(i, 170);
                },
                |i| {
                    layers(i, 65);
                    slots(i, 170);
                },
            ),
            // ... half DeepSeek's 26 = 13 inside, 12 outside, at 42 slots a GPU (168 for 104
            // or 96 experts, 84 on server 2).
            Row::regime(
                "layers",
                |i| {
                    layers(i, 13);
                    slots(i, 42);
                },
                |i| {
                    layers(i, 12);
                    slots(i, 42);
                },
            ),
            // Experts a layer: twice DeepSeek's 64 = 128 inside, 129 outside, at 1,400 slots a
            // GPU (5,600 for 4,096 or 4,128 experts, 2,800 on server 2) ...
            Row::regime(
                "experts-per-layer",
                |i| {
                    shape(i, 128, 2);
                    slots(i, 1400);
                },
                |i| {
                    shape(i, 129, 2);
                    slots(i, 1400);
                },
            ),
            // ... half Mixtral's 8 = 4 inside, 3 outside, at 42 slots a GPU (168 for 128 or 96
            // experts, 84 on server 2).
            Row::regime(
                "experts-per-layer",
                |i| {
                    shape(i, 4, 2);
                    slots(i, 42);
                },
                |i| {
                    shape(i, 3, 2);
                    slots(i, 42);
                },
            ),
            // Top-K: Sec. IV-A's Top-8 (of 64) inside, Top-9 outside, on DeepSeek ...
            Row::regime("top-k", |i| shape(i, 64, 8), |i| shape(i, 64, 9)).base(deepseek),
            // ... and Mixtral's Top-2 inside, Top-1 outside.
            Row::regime("top-k", |i| shape(i, 8, 2), |i| shape(i, 8, 1)),
            // Slots a GPU: half Mixtral's 85 is 42.5, the code's limit 42 (42 x 352,321,536 B
            // inside, a byte less outside) ...
            Row::regime(
                "slots-per-gpu",
                |i| gpu_slots(i, 0, 0, 42),
                |i| i.servers[0].gpus[0].memory_bytes = 42 * 352_321_536 - 1,
            ),
            // ... twice DeepSeek's 744 is 1,488 (1,489 x 17,301,504 B less a byte inside, not
            // less outside; server 0 still no full copy of 1,664).
            Row::regime(
                "slots-per-gpu",
                |i| i.servers[0].gpus[0].memory_bytes = 1489 * 17_301_504 - 1,
                |i| gpu_slots(i, 0, 0, 1489),
            )
            .base(deepseek),
            // Slots over L E = 256 in (1, 3.6]: 257 slots (64, 64, 64 + 65) inside, 256
            // outside (still covering: `coverage-feasible` holds) ...
            Row::regime(
                "memory-headroom",
                |i| {
                    slots(i, 64);
                    gpu_slots(i, 2, 1, 65);
                },
                |i| slots(i, 64),
            ),
            // ... 3.6 x 256 = 921.6: 921 slots inside, 922 outside. No server may hold 256, so
            // 3 servers hold < 768: a fourth (1 GPU) holds 231 or 232 beside 230, 230, 115 +
            // 115.
            Row::regime(
                "memory-headroom",
                |i| {
                    add_server(i, 1);
                    slots(i, 230);
                    (0..2).for_each(|g| gpu_slots(i, 2, g, 115));
                    gpu_slots(i, 3, 0, 231);
                },
                |i| {
                    add_server(i, 1);
                    slots(i, 230);
                    (0..2).for_each(|g| gpu_slots(i, 2, g, 115));
                    gpu_slots(i, 3, 0, 232);
                },
            ),
            // No server holds all L E = 256 experts: server 2's GPUs 128 + 127 inside, 128 +
            // 128 outside.
            Row::regime(
                "no-full-copy",
                |i| {
                    gpu_slots(i, 2, 0, 128);
                    gpu_slots(i, 2, 1, 127);
                },
                |i| (0..2).for_each(|g| gpu_slots(i, 2, g, 128)),
            ),
            // Sec. IV-C's 100 Mbit/s to 1 Gbit/s ...
            Row::regime(
                "network",
                |i| bandwidth(i, 1e9),
                |i| bandwidth(i, 1e9 * (1.0 + E)),
            ),
            Row::regime(
                "network",
                |i| bandwidth(i, 1e8),
                |i| bandwidth(i, 1e8 * (1.0 - E)),
            ),
            // ... and a latency of at most 10 ms (moe-opt's reading; the paper states none).
            Row::regime(
                "network",
                |i| latency(i, 0.01),
                |i| latency(i, 0.01 * (1.0 + E)),
            ),
            // Sec. IV-B/C's Poisson arrivals every 8 s (0.125 /s) ...
            Row::regime(
                "workload",
                |i| workload(i).arrival_rate_per_s[0] = 0.125,
                |i| workload(i).arrival_rate_per_s[0] = 0.125 * (1.0 + E),
            ),
            // ... to every 20 s (0.05 /s) ...
            Row::regime(
                "workload",
                |i| workload(i).arrival_rate_per_s[0] = 0.05,
                |i| workload(i).arrival_rate_per_s[0] = 0.05 * (1.0 - E),
            ),
            // ... twice Sec. IV-B's 20 output tokens ...
            Row::regime(
                "workload",
                |i| workload(i).tokens_per_request = 40,
                |i| workload(i).tokens_per_request = 41,
            ),
            // ... half of them ...
            Row::regime(
                "workload",
                |i| workload(i).tokens_per_request = 10,
                |i| workload(i).tokens_per_request = 9,
            ),
            // ... and at least 100 requests a server (moe-opt's band).
            Row::regime(
                "workload",
                |i| workload(i).requests_per_server = 100,
                |i| workload(i).requests_per_server = 99,
            ),
            // A round trip (7.24288 ms, as above) of 10 to 300 expert computations: server 0's
            // GPU at 7.24288 ms / 10 inside, 1e-6 slower outside ...
            Row::regime(
                "comm-compute-ratio",
                |i| compute(i, 0, 7.24288e-4),
                |i| compute(i, 0, 7.24288e-4 * (1.0 + E)),
            ),
            // ... every GPU at 7.24288 ms / 300 = 24.1429333... us (rounded inward, up)
            // inside, 1e-6 faster outside.
            Row::regime(
                "comm-compute-ratio",
                |i| compute_all(i, 2.414_293_333_333_4e-5),
                |i| compute_all(i, 2.414_293_333_333_4e-5 * (1.0 - E)),
            ),
        ];
        for base in [mixtral, deepseek] {
            for claim in [GAP, EVAL] {
                assert_eq!(classify(&premises(), claim, &base()).tier, Tier::Regime);
            }
        }
        assert_boundaries(&premises(), EVAL, &mixtral(), &rows, |_| {});
    }
}
