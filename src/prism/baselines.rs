//! The baselines of Section IV-A of paper 001, on the same instance and judged by the same
//! evaluator as Prism. GPUs are numbered globally server-major (server 0's GPUs first).
//!
//! * [`uniform`] (Megatron-style expert parallelism): one copy of every expert; per layer the
//!   experts are dealt to the G = sum_n G_n GPUs in equal blocks (E / G each, the first E mod G
//!   GPUs one more). The paper says "each device hosts 2 random experts per layer", so the
//!   experts of each layer are shuffled first (seeded); `seed = None` keeps Megatron's
//!   contiguous order (GPU k gets experts k E/G ..). Memory is not consulted: if a GPU cannot
//!   hold its share, the placement is infeasible and the evaluator says so.
//! * [`redundance`]: the paper's own heuristic "enables expert duplication across servers by
//!   randomly distributing experts up to each device's capacity". Reading: start from
//!   [`uniform`] (so every expert exists once), then, GPU by GPU, add experts not yet on that
//!   server in a seeded random order while they fit in the GPU's remaining memory.
//! * [`smartmoe`]: Prism "implements SmartMoE's placement module, which strategically
//!   distributes experts across GPUs based on real-time workload ... balances workload
//!   distribution to maintain uniform expert allocation across devices". Reading: no
//!   replication, the per-GPU counts of [`uniform`], and per layer the experts sorted by load
//!   w_l(e) = sum_n f_n^l(e) (descending, ties: lower index) each go to the least-loaded GPU
//!   with a free slot (ties: lower GPU index), i.e. load-balanced but locality-unaware. (The
//!   SmartMoE paper, Zhai et al., USENIX ATC 2023, searches placements offline and adjusts them
//!   online; only the balancing goal is described by Prism.)
//! * [`eplb_heterogeneous`]: EPLB ([`crate::eplb`]) adapted to servers with different GPU
//!   counts or memories ("we re-implement the algorithm ... to accommodate heterogeneous system
//!   configurations"). Our adaptation: the global policy over all G GPUs, with loads
//!   w_l(e) = sum_n f_n^l(e). GPU g gets c_g = floor(mem_g / sum_l m_l) slots in every layer
//!   (a whole number of layer sets, so every layer gets the same slots); the layer has R =
//!   sum_g c_g replicas. When every c_g is equal this is exactly the reference
//!   `rebalance_experts(w, R, 1, 1, G)`; otherwise replication is the reference's and the
//!   packing is its balanced packing generalised to unequal pack sizes (heaviest physical
//!   expert first into the least-loaded GPU with a free slot, ties to the lower GPU). EPLB
//!   requires R >= E; otherwise the baseline has no placement. Two replicas of one expert on
//!   the same GPU collapse into one entry (z is binary). Memory left over after c_g layer sets
//!   stays unused.

use formulations::prism::{ExpertRef, Instance, Placement, ServerId};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::eplb::{rebalance_experts, replicate_experts};

/// The global GPU list: (server, gpu) server-major.
pub fn gpu_list(instance: &Instance) -> Vec<(ServerId, usize)> {
    instance
        .servers
        .iter()
        .enumerate()
        .flat_map(|(n, s)| (0..s.gpus.len()).map(move |g| (ServerId(n as u32), g)))
        .collect()
}

/// Per-GPU expert counts of one layer under expert parallelism: E / G each, the first E mod G
/// GPUs one more.
fn ep_counts(experts: usize, gpus: usize) -> Vec<usize> {
    (0..gpus)
        .map(|k| experts / gpus + usize::from(k < experts % gpus))
        .collect()
}

fn er(l: usize, e: usize) -> ExpertRef {
    ExpertRef {
        layer: l as u32,
        expert: e as u32,
    }
}

/// Uniform (module doc); `seed = None` for Megatron's contiguous order.
pub fn uniform(instance: &Instance, seed: Option<u64>) -> Placement {
    let gpus = gpu_list(instance);
    let counts = ep_counts(instance.experts_per_layer(), gpus.len());
    let mut rng = seed.map(ChaCha8Rng::seed_from_u64);
    let mut placement = Placement::empty_for(instance);
    for l in 0..instance.layers() {
        let mut order: Vec<usize> = (0..instance.experts_per_layer()).collect();
        if let Some(rng) = rng.as_mut() {
            order.shuffle(rng);
        }
        let mut next = order.into_iter();
        for (&(n, g), &c) in gpus.iter().zip(&counts) {
            for e in next.by_ref().take(c) {
                placement.insert(n, g, er(l, e));
            }
        }
    }
    placement
}

/// Redundance (module doc), seeded.
pub fn redundance(instance: &Instance, seed: u64) -> Placement {
    let mut placement = uniform(instance, Some(seed));
    let mut rng = ChaCha8Rng::seed_from_u64(seed.wrapping_add(1));
    for (n, g) in gpu_list(instance) {
        let held = placement.holders(instance);
        let mut free = instance.servers[n.index()].gpus[g]
            .memory_bytes
            .saturating_sub(placement.gpu_bytes(instance, n, g));
        let mut candidates: Vec<usize> = (0..instance.expert_count())
            .filter(|&e| !held.holds(n, e))
            .collect();
        candidates.shuffle(&mut rng);
        for e in candidates {
            let r = instance.expert_ref(e);
            let bytes = instance.expert_bytes(r);
            if bytes <= free {
                free -= bytes;
                placement.insert(n, g, r);
            }
        }
    }
    placement
}

/// w_l(e) = sum_n f_n^l(e): the load of every expert over all servers.
pub fn total_load(instance: &Instance) -> Vec<Vec<f64>> {
    (0..instance.layers())
        .map(|l| {
            (0..instance.experts_per_layer())
                .map(|e| instance.servers.iter().map(|s| s.frequencies[l][e]).sum())
                .collect()
        })
        .collect()
}

/// Heaviest item first into the least-loaded pack with room (ties: lower pack); items of
/// equal weight in index order. Returns each item's pack.
fn pack_unequal(weight: &[f64], capacity: &[usize]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..weight.len()).collect();
    order.sort_by(|&a, &b| weight[b].total_cmp(&weight[a]));
    let mut load = vec![0.0f64; capacity.len()];
    let mut used = vec![0; capacity.len()];
    let mut pack = vec![0; weight.len()];
    for i in order {
        let p = (0..capacity.len())
            .filter(|&p| used[p] < capacity[p])
            .min_by(|&a, &b| load[a].total_cmp(&load[b]).then(a.cmp(&b)))
            .expect("the capacities hold every item");
        pack[i] = p;
        used[p] += 1;
        load[p] += weight[i];
    }
    pack
}

/// SmartMoE (module doc).
pub fn smartmoe(instance: &Instance) -> Placement {
    let gpus = gpu_list(instance);
    let counts = ep_counts(instance.experts_per_layer(), gpus.len());
    let mut placement = Placement::empty_for(instance);
    for (l, w) in total_load(instance).iter().enumerate() {
        for (e, k) in pack_unequal(w, &counts).into_iter().enumerate() {
            let (n, g) = gpus[k];
            placement.insert(n, g, er(l, e));
        }
    }
    placement
}

/// EPLB adapted to heterogeneous servers (module doc); an error when the GPUs hold fewer than
/// E slots per layer.
pub fn eplb_heterogeneous(instance: &Instance) -> Result<Placement, String> {
    let gpus = gpu_list(instance);
    let layer_set: u64 = instance.model.expert_bytes.iter().sum();
    let slots: Vec<usize> = gpus
        .iter()
        .map(|&(n, g)| (instance.servers[n.index()].gpus[g].memory_bytes / layer_set) as usize)
        .collect();
    let replicas: usize = slots.iter().sum();
    let experts = instance.experts_per_layer();
    if replicas < experts {
        return Err(format!(
            "EPLB: the GPUs hold {replicas} experts of every layer (one slot per {layer_set} \
             bytes, a full set of layers), fewer than E = {experts}"
        ));
    }
    let weight = total_load(instance);
    let mut placement = Placement::empty_for(instance);
    if slots.iter().all(|&c| c == slots[0]) {
        let plan = rebalance_experts(&weight, replicas, 1, 1, gpus.len())
            .map_err(|e| format!("EPLB: {e}"))?;
        for (l, phy) in plan.physical_to_logical.iter().enumerate() {
            for (p, &e) in phy.iter().enumerate() {
                let (n, g) = gpus[plan.gpu_of(p)];
                placement.insert(n, g, er(l, e));
            }
        }
        return Ok(placement);
    }
    for (l, w) in weight.iter().enumerate() {
        let w32: Vec<f32> = w.iter().map(|&x| x as f32).collect();
        let (phy2log, _, cnt) = replicate_experts(&w32, replicas);
        let phy_load: Vec<f64> = phy2log
            .iter()
            .map(|&e| f64::from(w32[e] / cnt[e] as f32))
            .collect();
        for (p, k) in pack_unequal(&phy_load, &slots).into_iter().enumerate() {
            let (n, g) = gpus[k];
            placement.insert(n, g, er(l, phy2log[p]));
        }
    }
    Ok(placement)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prism::algorithms::tests::{instance, r};
    use formulations::prism::evaluate::evaluate;

    /// Two servers with 1 and 2 GPUs of the given memories, L = 1, E = 4, 1-byte experts.
    /// Loads over servers: s0 [0.4, 0.3, 0.2, 0.1] + s1 [0.1, 0.1, 0.1, 0.7] =
    /// [0.5, 0.4, 0.3, 0.8].
    fn three_gpus(mem: [u64; 3]) -> Instance {
        instance(
            &[&[mem[0]], &[mem[1], mem[2]]],
            vec![
                vec![vec![0.4, 0.3, 0.2, 0.1]],
                vec![vec![0.1, 0.1, 0.1, 0.7]],
            ],
        )
    }

    #[test]
    fn uniform_contiguous_by_hand() {
        // E = 4 over 3 GPUs: counts 2, 1, 1 -> GPU0 {0, 1}, GPU1 {2}, GPU2 {3}.
        let p = uniform(&three_gpus([2, 2, 2]), None);
        assert_eq!(
            p.gpus,
            vec![
                vec![vec![r(0, 0), r(0, 1)]],
                vec![vec![r(0, 2)], vec![r(0, 3)]]
            ]
        );
        // Seeded: still one copy each, counts 2, 1, 1.
        let p = uniform(&three_gpus([2, 2, 2]), Some(7));
        let counts: Vec<usize> = p.gpus.iter().flatten().map(Vec::len).collect();
        assert_eq!(counts, vec![2, 1, 1]);
        assert_eq!(p.len(), 4);
        assert_eq!(p, uniform(&three_gpus([2, 2, 2]), Some(7)));
    }

    #[test]
    fn redundance_fills_every_gpu() {
        // Memories 2, 3, 3. Uniform fills server 0's GPU (2 experts) and puts one expert on
        // each GPU of server 1. Server 1's GPU 0 then adds the 2 experts server 1 lacks (3
        // bytes used); its GPU 1 finds no expert server 1 lacks. So server 0 holds 2,
        // server 1 all 4 distinct experts.
        let inst = three_gpus([2, 3, 3]);
        let p = redundance(&inst, 3);
        let e = evaluate(&inst, &p).unwrap();
        assert!(e.feasible);
        assert_eq!(p.gpus[0][0].len(), 2);
        assert_eq!(p.gpus[1][0].len() + p.gpus[1][1].len(), 4);
        assert_eq!(p, redundance(&inst, 3));
    }

    #[test]
    fn smartmoe_by_hand() {
        // Loads: [0.5, 0.4, 0.3, 0.8]. Counts 2, 1, 1. Order e3 (.8), e0 (.5), e1 (.4),
        // e2 (.3): e3 -> GPU0 (.8); e0 -> GPU1 (.5, full); e1 -> GPU2 (.4, full); e2 -> GPU0.
        let mut p = smartmoe(&three_gpus([2, 2, 2]));
        p.normalize();
        assert_eq!(
            p.gpus,
            vec![
                vec![vec![r(0, 2), r(0, 3)]],
                vec![vec![r(0, 0)], vec![r(0, 1)]]
            ]
        );
    }

    #[test]
    fn eplb_equal_slots_is_the_reference_global_policy() {
        // Memories 2, 2, 2 with one 1-byte layer: 2 slots per GPU, R = 6. Loads [.5, .4, .3,
        // .8] (f32). Replication: slot 4 -> e3 (.8; now .4), slot 5 -> e0 (.5 > .4, .4).
        // Physical loads [.25, .4, .3, .4, .4, .25] for experts [0, 1, 2, 3, 3, 0] (.8 / 2
        // equals .4 in f32). Pack 3 GPUs x 2, order p1, p3, p4 (.4, index order), p2 (.3),
        // p0, p5 (.25): p1 -> G0, p3 -> G1, p4 -> G2; p2 -> G0 (all at .4, lowest) = .7,
        // full; p0 -> G1 (.4 = .4, lower) = .65, full; p5 -> G2. GPU0 {1, 2}, GPU1 {3, 0},
        // GPU2 {3, 0}.
        let mut p = eplb_heterogeneous(&three_gpus([2, 2, 2])).unwrap();
        p.normalize();
        assert_eq!(
            p.gpus,
            vec![
                vec![vec![r(0, 1), r(0, 2)]],
                vec![vec![r(0, 0), r(0, 3)], vec![r(0, 0), r(0, 3)]]
            ]
        );
        // Memories 1, 1, 1: R = 3 < E = 4.
        assert!(eplb_heterogeneous(&three_gpus([1, 1, 1])).is_err());
    }

    #[test]
    fn eplb_unequal_slots_by_hand() {
        // Memories 3, 1, 1: slots 3, 1, 1, R = 5. Replication: slot 4 -> e3 (.8). Physical
        // loads [.5, .4, .3, .4, .4] for experts [0, 1, 2, 3, 3]. Order p0 (.5), p1, p3, p4
        // (.4), p2 (.3): p0 -> G0; p1 -> G1 (full); p3 -> G2 (full); p4 -> G0; p2 -> G0.
        let mut p = eplb_heterogeneous(&three_gpus([3, 1, 1])).unwrap();
        p.normalize();
        assert_eq!(
            p.gpus,
            vec![
                vec![vec![r(0, 0), r(0, 2), r(0, 3)]],
                vec![vec![r(0, 1)], vec![r(0, 3)]]
            ]
        );
    }
}
