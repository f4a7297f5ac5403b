//! Prism-specific moves for the worst-case search and for shrinking counterexamples.
//!
//! Every function takes a valid instance (one that passes
//! [`formulations::prism::validate::validate`]) and returns valid instances. Validity does not
//! include feasibility: a move may leave too little GPU memory to cover every expert, and the
//! MILP then reports the instance infeasible.
//!
//! ## Perturbation ([`perturb`])
//!
//! One random neighbour changes one group of numbers and keeps the shapes; the kind of move is
//! uniform among those that apply, then its target uniformly:
//!
//! * **memory**: one GPU's mem_{n,g} times f (rounded, at least 1);
//! * **expert size**: one layer's m_e times f (rounded, at least 1);
//! * **compute**: one GPU's a or b times f (a zero stays zero);
//! * **frequencies**: one row f_n^l: either a fraction t in (0, 1] of a positive entry moves to
//!   another entry (t = 1 only while the row keeps more than K positive entries), or one
//!   positive entry is multiplied by f; the row is then water-filled back to sum K with every
//!   entry at most 1 ([`super::generate::cap_to_k`]);
//! * **link**: one off-diagonal latency (when positive) or bandwidth times f.
//!
//! f = 2^t with t uniform in [-1, 1]. Deterministic given the RNG state.
//!
//! ## Shrinking ([`shrink_candidates`], [`size`])
//!
//! [`size`] = N + sum_n G_n + L + E + K + (number of positive f_n^l(e)). The candidates, each
//! valid with a strictly smaller size: drop a server (N > 1; its network row and column and
//! its arrival rate go), drop a GPU (of a server with more than one), drop a layer (L > 1),
//! drop an expert index from every layer (E > K; rows water-filled back to K, skipped when a
//! row would keep fewer than K positive entries), lower K by one (K > 1; rows water-filled to
//! K - 1), and zero the smallest positive entry of a row with more than K positive entries.

use formulations::prism::{validate::validate, Instance};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::generate::cap_to_k;
use crate::mutate::{factor, smaller_valid};

fn scale_u64(x: u64, f: f64) -> u64 {
    ((x as f64 * f).round() as u64).clamp(1, 1 << 53)
}

fn positives(row: &[f64]) -> usize {
    row.iter().filter(|&&x| x > 0.0).count()
}

#[derive(Clone, Copy)]
enum Move {
    Memory,
    ExpertSize,
    Compute,
    Frequencies,
    Link,
}

/// A random valid neighbour (module doc).
pub fn perturb(instance: &Instance, rng: &mut ChaCha8Rng) -> Instance {
    let mut out = instance.clone();
    let mut moves = vec![
        Move::Memory,
        Move::ExpertSize,
        Move::Compute,
        Move::Frequencies,
    ];
    if out.network.is_some() && out.servers.len() > 1 {
        moves.push(Move::Link);
    }
    let f = factor(rng);
    let gpus: Vec<(usize, usize)> = out
        .servers
        .iter()
        .enumerate()
        .flat_map(|(n, s)| (0..s.gpus.len()).map(move |g| (n, g)))
        .collect();
    match moves[rng.random_range(0..moves.len())] {
        Move::Memory => {
            let (n, g) = gpus[rng.random_range(0..gpus.len())];
            let m = &mut out.servers[n].gpus[g].memory_bytes;
            *m = scale_u64(*m, f);
        }
        Move::ExpertSize => {
            let l = rng.random_range(0..out.model.expert_bytes.len());
            out.model.expert_bytes[l] = scale_u64(out.model.expert_bytes[l], f);
        }
        Move::Compute => {
            let (n, g) = gpus[rng.random_range(0..gpus.len())];
            let gpu = &mut out.servers[n].gpus[g];
            let x = if rng.random_bool(0.5) {
                &mut gpu.compute_base_s
            } else {
                &mut gpu.compute_per_token_s
            };
            *x *= f;
        }
        Move::Frequencies => {
            let n = rng.random_range(0..out.servers.len());
            let l = rng.random_range(0..out.layers());
            let k = out.model.top_k;
            let row = &mut out.servers[n].frequencies[l];
            let pos: Vec<usize> = (0..row.len()).filter(|&e| row[e] > 0.0).collect();
            let from = pos[rng.random_range(0..pos.len())];
            if rng.random_bool(0.5) && row.len() > 1 {
                let mut to = rng.random_range(0..row.len() - 1);
                if to >= from {
                    to += 1;
                }
                let t = if pos.len() > k as usize {
                    1.0 - rng.random::<f64>()
                } else {
                    // Keep the entry positive: at most 90% moves.
                    0.9 * (1.0 - rng.random::<f64>())
                };
                let moved = row[from] * t;
                row[from] -= moved;
                row[to] += moved;
            } else {
                row[from] *= f;
            }
            *row = cap_to_k(row, k);
        }
        Move::Link => {
            let net = out.network.as_mut().expect("checked above");
            let n = net.latency_s.len();
            let a = rng.random_range(0..n);
            let mut b = rng.random_range(0..n - 1);
            if b >= a {
                b += 1;
            }
            if rng.random_bool(0.5) && net.latency_s[a][b] > 0.0 {
                net.latency_s[a][b] *= f;
            } else {
                net.bandwidth_bps[a][b] *= f;
            }
        }
    }
    debug_assert!(
        validate(&out).is_ok(),
        "perturb produced an invalid instance"
    );
    out
}

/// The size ordering of shrinking (module doc); smaller is simpler.
pub fn size(instance: &Instance) -> u64 {
    let d: u64 = dims(instance).iter().map(|&(_, x)| x).sum();
    let positive: usize = instance
        .servers
        .iter()
        .flat_map(|s| &s.frequencies)
        .map(|r| positives(r))
        .sum();
    d + positive as u64
}

/// The instance's dimensions: servers, GPUs, layers, experts (per layer), top_k.
pub fn dims(instance: &Instance) -> Vec<(&'static str, u64)> {
    vec![
        ("servers", instance.servers.len() as u64),
        ("gpus", instance.gpu_count() as u64),
        ("layers", u64::from(instance.model.layers)),
        ("experts", u64::from(instance.model.experts_per_layer)),
        ("top_k", u64::from(instance.model.top_k)),
    ]
}

fn drop_server(instance: &Instance, n: usize) -> Instance {
    let mut out = instance.clone();
    out.servers.remove(n);
    if let Some(net) = &mut out.network {
        for m in [&mut net.latency_s, &mut net.bandwidth_bps] {
            m.remove(n);
            for row in m.iter_mut() {
                row.remove(n);
            }
        }
    }
    if let Some(w) = &mut out.workload {
        w.arrival_rate_per_s.remove(n);
    }
    out
}

/// Strictly smaller valid instances, most reducing first (module doc).
pub fn shrink_candidates(instance: &Instance) -> Vec<Instance> {
    let mut out = Vec::new();
    let k = instance.model.top_k;
    if instance.servers.len() > 1 {
        out.extend((0..instance.servers.len()).map(|n| drop_server(instance, n)));
    }
    for (n, s) in instance.servers.iter().enumerate() {
        if s.gpus.len() > 1 {
            for g in 0..s.gpus.len() {
                let mut c = instance.clone();
                c.servers[n].gpus.remove(g);
                out.push(c);
            }
        }
    }
    if instance.model.layers > 1 {
        for l in 0..instance.layers() {
            let mut c = instance.clone();
            c.model.layers -= 1;
            c.model.expert_bytes.remove(l);
            for s in &mut c.servers {
                s.frequencies.remove(l);
            }
            out.push(c);
        }
    }
    if instance.model.experts_per_layer > k {
        for e in 0..instance.experts_per_layer() {
            let mut c = instance.clone();
            c.model.experts_per_layer -= 1;
            let mut ok = true;
            for row in c.servers.iter_mut().flat_map(|s| s.frequencies.iter_mut()) {
                row.remove(e);
                if positives(row) < k as usize {
                    ok = false;
                    break;
                }
                *row = cap_to_k(row, k);
            }
            if ok {
                out.push(c);
            }
        }
    }
    if k > 1 {
        let mut c = instance.clone();
        c.model.top_k -= 1;
        for row in c.servers.iter_mut().flat_map(|s| s.frequencies.iter_mut()) {
            *row = cap_to_k(row, k - 1);
        }
        out.push(c);
    }
    for (n, s) in instance.servers.iter().enumerate() {
        for (l, row) in s.frequencies.iter().enumerate() {
            if positives(row) > k as usize {
                let e = (0..row.len())
                    .filter(|&e| row[e] > 0.0)
                    .min_by(|&a, &b| row[a].total_cmp(&row[b]))
                    .expect("the row has positive entries");
                let mut c = instance.clone();
                let r = &mut c.servers[n].frequencies[l];
                r[e] = 0.0;
                *r = cap_to_k(r, k);
                out.push(c);
            }
        }
    }
    smaller_valid(out, instance, size, |c| validate(c).is_ok())
}

// Instances of this problem in `moe-opt verify`.
use super::premises::premises;
crate::searchable_from_mutate!(
    Instance,
    formulations::prism::load,
    ["servers", "gpus", "layers", "experts", "top_k"]
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prism::generate::{try_generate, GeneratorConfig, Preset};
    use rand::SeedableRng;

    #[test]
    fn size_and_dims_by_hand() {
        // Tiny seed 0: dims are read off the instance; size adds the positive frequencies,
        // which the generator's floor makes all L E entries of every row.
        let inst = try_generate(&GeneratorConfig::preset(Preset::Tiny), 0).unwrap();
        let (n, g, l, e, k) = (
            inst.servers.len() as u64,
            inst.gpu_count() as u64,
            u64::from(inst.model.layers),
            u64::from(inst.model.experts_per_layer),
            u64::from(inst.model.top_k),
        );
        assert_eq!(
            dims(&inst),
            vec![
                ("servers", n),
                ("gpus", g),
                ("layers", l),
                ("experts", e),
                ("top_k", k)
            ]
        );
        assert_eq!(size(&inst), n + g + l + e + k + n * l * e);
    }

    #[test]
    fn perturb_keeps_instances_valid_and_is_deterministic() {
        for p in [Preset::Tiny, Preset::Small] {
            let mut inst = try_generate(&GeneratorConfig::preset(p), 1).unwrap();
            let mut rng = ChaCha8Rng::seed_from_u64(9);
            let mut changed = 0;
            for step in 0..500 {
                let next = perturb(&inst, &mut rng);
                validate(&next).unwrap_or_else(|e| panic!("{p} step {step}: {e}"));
                changed += usize::from(next != inst);
                inst = next;
            }
            assert!(changed > 400, "{p}: only {changed} moves changed anything");
            let base = try_generate(&GeneratorConfig::preset(p), 1).unwrap();
            let a = perturb(&base, &mut ChaCha8Rng::seed_from_u64(3));
            let b = perturb(&base, &mut ChaCha8Rng::seed_from_u64(3));
            assert_eq!(a, b);
        }
    }

    #[test]
    fn shrinking_reaches_a_minimal_instance() {
        // Repeatedly take the first candidate: every step is valid and strictly smaller, and it
        // ends at 1 server, 1 GPU, 1 layer, K = 1 and E = 1 (size 1 + 1 + 1 + 1 + 1 + 1).
        let mut inst = try_generate(&GeneratorConfig::preset(Preset::Small), 2).unwrap();
        loop {
            let cands = shrink_candidates(&inst);
            for c in &cands {
                validate(c).unwrap();
                assert!(size(c) < size(&inst));
            }
            match cands.into_iter().next() {
                Some(c) => inst = c,
                None => break,
            }
        }
        assert_eq!(size(&inst), 6);
        assert_eq!(
            dims(&inst).iter().map(|d| d.1).collect::<Vec<_>>(),
            [1, 1, 1, 1, 1]
        );
    }
}
