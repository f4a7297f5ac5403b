//! Helpers shared by the SlimCaching integration tests: a tiny deterministic PRNG (SplitMix64,
//! so the tests need no RNG crate), a seeded generator of small valid instances, brute-force
//! enumeration of placements (the independent reference for the MILP tests) and float
//! comparison. Not every test file uses every helper.
#![allow(dead_code)]

use formulations::slimcaching::{
    ActivationSet, Backhaul, Cloud, EdgeServer, ExpertId, ExpertRef, Instance, LatencyModel,
    LayerActivation, LayerId, Link, ModelId, ModelRequest, MoeModel, Placement, ServerId, User,
};

/// SplitMix64 (Steele, Lea, Flood 2014): a 64-bit state, one multiply-xorshift output.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in 0..n (n > 0; the modulo bias is irrelevant for tests).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// Uniform integer in lo..=hi.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [lo, hi).
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }

    /// True with probability p.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
}

/// `|a - b| <= rel * max(|a|, |b|) + abs`.
pub fn close(a: f64, b: f64, rel: f64, abs: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()) + abs
}

/// Asserts [`close`] with a message naming both values.
#[track_caller]
pub fn assert_close(actual: f64, expected: f64, rel: f64, what: &str) {
    assert!(
        close(actual, expected, rel, 1e-15),
        "{what}: got {actual:.17e}, expected {expected:.17e} (rel tol {rel:e})"
    );
}

/// A latency-only link.
pub fn lat(s: f64) -> Link {
    Link {
        latency_s: s,
        rate_bps: None,
    }
}

/// A rate-only link.
pub fn rate(bps: f64) -> Link {
    Link {
        latency_s: 0.0,
        rate_bps: Some(bps),
    }
}

/// Shape of one random model: (K, layers, experts per layer).
pub type ModelShape = (u32, u32, u32);

fn random_link(rng: &mut SplitMix64, lo: f64, hi: f64) -> Link {
    Link {
        latency_s: if rng.chance(0.8) {
            rng.uniform(lo, hi)
        } else {
            0.0
        },
        rate_bps: rng.chance(0.5).then(|| rng.uniform(1e6, 1e8)),
    }
}

/// Normalises positive weights into probabilities.
pub fn normalise(weights: &[f64]) -> Vec<f64> {
    let sum: f64 = weights.iter().sum();
    weights.iter().map(|w| w / sum).collect()
}

/// All K-subsets of 0..e in lexicographic order.
pub fn k_subsets(e: u32, k: u32) -> Vec<Vec<u32>> {
    let mut out = Vec::new();
    for mask in 0u32..(1 << e) {
        if mask.count_ones() == k {
            out.push((0..e).filter(|i| mask & (1 << i) != 0).collect());
        }
    }
    out
}

/// A random valid instance with the given shape. Sizes, rates and times are drawn from ranges
/// that keep every latency within a few orders of magnitude of the others.
pub fn random_instance(
    rng: &mut SplitMix64,
    servers: usize,
    shapes: &[ModelShape],
    users: usize,
) -> Instance {
    let models: Vec<MoeModel> = shapes
        .iter()
        .enumerate()
        .map(|(i, &(k, layers, experts))| MoeModel {
            name: format!("m{i}"),
            top_k: k,
            layers,
            experts_per_layer: experts,
            expert_bytes: 100 * rng.range(1, 3),
            hidden_bytes: rng.range(500, 5000),
            expert_flops: rng.uniform(1e6, 1e7),
        })
        .collect();
    let max_bytes = models.iter().map(|m| m.expert_bytes).max().unwrap_or(100);
    let servers_v: Vec<EdgeServer> = (0..servers)
        .map(|_| EdgeServer {
            // Between one smallest expert and about four of the largest.
            storage_bytes: rng.range(100, 4 * max_bytes),
            compute_flops: rng.uniform(1e8, 1e9),
        })
        .collect();
    let edge_to_edge = (0..servers)
        .map(|a| {
            (0..servers)
                .map(|b| (a != b).then(|| random_link(rng, 0.001, 0.03)))
                .collect()
        })
        .collect();
    let edge_to_cloud = (0..servers).map(|_| random_link(rng, 0.02, 0.1)).collect();
    let cloud_to_edge = (0..servers).map(|_| random_link(rng, 0.02, 0.1)).collect();
    let users_v = (0..users)
        .map(|_| {
            let mut local_experts = Vec::new();
            for (m, model) in models.iter().enumerate() {
                for l in 0..model.layers {
                    for e in 0..model.experts_per_layer {
                        if rng.chance(0.15) {
                            local_experts.push(ExpertRef {
                                model: ModelId(m as u32),
                                layer: LayerId(l),
                                expert: e,
                            });
                        }
                    }
                }
            }
            // Request weights: model 0 always positive, the others sometimes 0.
            let weights: Vec<f64> = (0..models.len())
                .map(|m| {
                    if m > 0 && rng.chance(0.25) {
                        0.0
                    } else {
                        rng.uniform(0.1, 1.0)
                    }
                })
                .collect();
            let probabilities = normalise(&weights);
            let requests = probabilities
                .iter()
                .enumerate()
                .map(|(m, &p)| ModelRequest {
                    model: ModelId(m as u32),
                    p,
                })
                .collect();
            let mut activations = Vec::new();
            for (m, model) in models.iter().enumerate() {
                if probabilities[m] == 0.0 {
                    continue;
                }
                let all = k_subsets(model.experts_per_layer, model.top_k);
                for l in 0..model.layers {
                    let mut chosen: Vec<Vec<u32>> =
                        all.iter().filter(|_| rng.chance(0.5)).cloned().collect();
                    if chosen.is_empty() {
                        chosen.push(all[rng.below(all.len() as u64) as usize].clone());
                    }
                    let w: Vec<f64> = chosen.iter().map(|_| rng.uniform(0.05, 1.0)).collect();
                    let p = normalise(&w);
                    activations.push(LayerActivation {
                        model: ModelId(m as u32),
                        layer: LayerId(l),
                        sets: chosen
                            .into_iter()
                            .zip(p)
                            .map(|(experts, p)| ActivationSet { experts, p })
                            .collect(),
                    });
                }
            }
            User {
                compute_flops: rng.uniform(1e7, 1e8),
                associated_server: rng
                    .chance(0.5)
                    .then(|| ServerId(rng.below(servers as u64) as u32)),
                uplink: (0..servers).map(|_| random_link(rng, 0.0, 0.01)).collect(),
                downlink: (0..servers).map(|_| random_link(rng, 0.0, 0.01)).collect(),
                local_experts,
                requests,
                activations,
            }
        })
        .collect();
    Instance {
        name: "random".into(),
        servers: servers_v,
        cloud: Cloud {
            compute_flops: rng.uniform(1e9, 1e10),
        },
        backhaul: Backhaul {
            symmetric: false,
            edge_to_edge,
            edge_to_cloud,
            cloud_to_edge,
        },
        models,
        users: users_v,
    }
}

/// A random small instance with N * E <= `max_pairs` (N servers, E experts in the catalogue),
/// 1-3 servers, 1-2 models with K in {1, 2}, 1-3 users.
pub fn random_small_instance(rng: &mut SplitMix64, max_pairs: usize) -> Instance {
    loop {
        let servers = rng.range(1, 3) as usize;
        let models = rng.range(1, 2) as usize;
        let shapes: Vec<ModelShape> = (0..models)
            .map(|_| {
                let k = rng.range(1, 2) as u32;
                let layers = rng.range(1, 2) as u32;
                let experts = rng.range(k as u64, 3) as u32;
                (k, layers, experts)
            })
            .collect();
        let experts: usize = shapes.iter().map(|&(_, l, e)| (l * e) as usize).sum();
        if servers * experts > max_pairs {
            continue;
        }
        let users = rng.range(1, 3) as usize;
        return random_instance(rng, servers, &shapes, users);
    }
}

/// Every placement of the listed (server, expert) pairs, as subsets (2^pairs of them).
pub fn all_subsets(model: &LatencyModel, pairs: &[(ServerId, ExpertId)]) -> Vec<Placement> {
    assert!(pairs.len() <= 20, "brute force over {} pairs", pairs.len());
    (0u32..(1 << pairs.len()))
        .map(|mask| {
            let mut x = model.empty_placement();
            for (i, &(n, e)) in pairs.iter().enumerate() {
                if mask & (1 << i) != 0 {
                    x.insert(n, e);
                }
            }
            x
        })
        .collect()
}

/// Every (server, expert) pair of the model, server-major.
pub fn all_pairs(model: &LatencyModel) -> Vec<(ServerId, ExpertId)> {
    (0..model.servers())
        .flat_map(|n| (0..model.experts()).map(move |e| (ServerId(n as u32), ExpertId(e as u32))))
        .collect()
}

/// Brute-force max F over the feasible supersets of `base` that add pairs from `pairs`.
pub fn brute_force_max(
    model: &LatencyModel,
    base: &Placement,
    pairs: &[(ServerId, ExpertId)],
) -> (f64, Placement) {
    let mut best: Option<(f64, Placement)> = None;
    for extra in all_subsets(model, pairs) {
        let mut x = base.clone();
        x.union_with(&extra);
        if !model.is_feasible(&x) {
            continue;
        }
        let f = model.objective(&x);
        if best.as_ref().is_none_or(|(b, _)| f > *b) {
            best = Some((f, x));
        }
    }
    best.expect("the base placement itself is feasible")
}

/// A random placement: each pair with probability `p` (capacity ignored).
pub fn random_placement(rng: &mut SplitMix64, model: &LatencyModel, p: f64) -> Placement {
    let mut x = model.empty_placement();
    for (n, e) in all_pairs(model) {
        if rng.chance(p) {
            x.insert(n, e);
        }
    }
    x
}

/// A random feasible placement: pairs in random order, each kept if it fits.
pub fn random_feasible_placement(rng: &mut SplitMix64, model: &LatencyModel) -> Placement {
    let mut x = model.empty_placement();
    for (n, e) in all_pairs(model) {
        if rng.chance(0.5) && model.used_bytes(&x, n) + model.expert_bytes(e) <= model.capacity(n) {
            x.insert(n, e);
        }
    }
    x
}
