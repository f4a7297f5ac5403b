//! The paper's baselines (Sec. VI-A): LFU, random and U-shaped caching, each filling a server's
//! storage in its own order.

use formulations::slimcaching::{ExpertId, LatencyModel, LayerId, ModelId, Placement};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::*;

/// Caches on server n every expert of `order` that still fits, in that order.
pub(super) fn fill(
    model: &LatencyModel,
    x: &mut Placement,
    n: usize,
    order: impl IntoIterator<Item = usize>,
) {
    let mut room = model.capacity(sid(n));
    for e in order {
        let bytes = model.expert_bytes(eid(e));
        if bytes <= room {
            x.insert(sid(n), eid(e));
            room -= bytes;
        }
    }
}

/// LFU baseline (Section VI-A): per server, the experts most requested by its associated users
/// first (see the module doc for the ranking and tie rules).
///
/// # Complexity
/// N servers, E experts, D routing demands of at most K missing experts each. Time:
/// O(D K + N E log E) (the request counts, then one sort per server). Memory: O(N E).
///
/// # Examples
/// ```
/// use formulations::slimcaching::{ExpertId, ServerId, LatencyModel};
/// use moe_opt::slimcaching::generate::{generate, GeneratorConfig, Preset};
/// use moe_opt::slimcaching::algorithms::lfu;
///
/// let model = LatencyModel::new(&generate(&GeneratorConfig::preset(Preset::Tiny), 1));
/// let x = lfu(&model);
/// assert!(model.is_feasible(&x));
/// // Stopped only when nothing more fits: every expert not on a server exceeds its room.
/// for n in (0..model.servers() as u32).map(ServerId) {
///     let used: u64 = x.experts_on(n).map(|e| model.expert_bytes(e)).sum();
///     for e in (0..model.experts() as u32).map(ExpertId) {
///         assert!(x.contains(n, e) || model.expert_bytes(e) > model.capacity(n) - used);
///     }
/// }
/// ```
pub fn lfu(model: &LatencyModel) -> Placement {
    let experts = model.experts();
    let mut global = vec![0.0f64; experts];
    let mut local = vec![vec![0.0f64; experts]; model.servers()];
    for d in model.demands() {
        for e in &d.missing {
            global[e.index()] += d.weight;
            local[d.server.index()][e.index()] += d.weight;
        }
    }
    let mut x = model.empty_placement();
    for (n, freq) in local.iter().enumerate() {
        let mut order: Vec<usize> = (0..experts).collect();
        order.sort_by(|&a, &b| {
            freq[b]
                .total_cmp(&freq[a])
                .then(global[b].total_cmp(&global[a]))
                .then(a.cmp(&b))
        });
        fill(model, &mut x, n, order);
    }
    x
}

/// Random baseline (Section VI-A): per server, experts in a seeded random order, each cached if
/// it fits. One `ChaCha8Rng::seed_from_u64(seed)` stream serves the servers in order.
///
/// # Complexity
/// N servers, E experts. Time: O(N E) (one shuffle and one pass per server). Memory: O(N E).
///
/// # Examples
/// ```
/// use formulations::slimcaching::{ExpertId, ServerId, LatencyModel};
/// use moe_opt::slimcaching::generate::{generate, GeneratorConfig, Preset};
/// use moe_opt::slimcaching::algorithms::random;
///
/// let model = LatencyModel::new(&generate(&GeneratorConfig::preset(Preset::Tiny), 1));
/// let x = random(&model, 7);
/// assert!(model.is_feasible(&x));
/// // Stopped only when nothing more fits: every expert not on a server exceeds its room.
/// for n in (0..model.servers() as u32).map(ServerId) {
///     let used: u64 = x.experts_on(n).map(|e| model.expert_bytes(e)).sum();
///     for e in (0..model.experts() as u32).map(ExpertId) {
///         assert!(x.contains(n, e) || model.expert_bytes(e) > model.capacity(n) - used);
///     }
/// }
/// assert_eq!(x, random(&model, 7));
/// ```
pub fn random(model: &LatencyModel, seed: u64) -> Placement {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut x = model.empty_placement();
    for n in 0..model.servers() {
        let mut order: Vec<usize> = (0..model.experts()).collect();
        order.shuffle(&mut rng);
        fill(model, &mut x, n, order);
    }
    x
}

/// U-shaped (layer) baseline (Section VI-A): per server, whole MoE layers ranked by the request
/// weight reaching the server, middle layers first on ties (see the module doc).
///
/// # Complexity
/// N servers, E experts, B (model, layer) blocks, D routing demands. Time:
/// O(D + N (B log B + E)) (block weights, one sort and one pass over the layers per server).
/// Memory: O(N B) block weights and O(N E) for the placement.
///
/// # Examples
/// ```
/// use formulations::slimcaching::{LayerId, ModelId, ServerId, LatencyModel};
/// use moe_opt::slimcaching::generate::{generate, GeneratorConfig, Preset};
/// use moe_opt::slimcaching::algorithms::u_shaped;
///
/// let model = LatencyModel::new(&generate(&GeneratorConfig::preset(Preset::Tiny), 1));
/// let x = u_shaped(&model);
/// assert!(model.is_feasible(&x));
/// // Whole layers only: a server holds all of a layer's experts or none.
/// let cat = model.catalogue();
/// for n in (0..model.servers() as u32).map(ServerId) {
///     for m in (0..cat.models() as u32).map(ModelId) {
///         for l in (0..cat.shape(m).0).map(LayerId) {
///             let held = cat.layer_experts(m, l).filter(|&e| x.contains(n, e)).count();
///             assert!(held == 0 || held == cat.layer_experts(m, l).count());
///         }
///     }
/// }
/// ```
pub fn u_shaped(model: &LatencyModel) -> Placement {
    let cat = model.catalogue();
    let mut blocks: Vec<(ModelId, LayerId)> = Vec::new();
    let mut first_block = Vec::with_capacity(cat.models());
    for m in 0..cat.models() {
        let m = ModelId(m as u32);
        first_block.push(blocks.len());
        let (layers, _) = cat.shape(m);
        blocks.extend((0..layers).map(|l| (m, LayerId(l))));
    }
    let mut weight = vec![vec![0.0f64; blocks.len()]; model.servers()];
    for d in model.demands() {
        // A demand's experts come from one activated set, hence one layer.
        if let Some(&e) = d.missing.first() {
            let r = cat.expert_ref(e);
            weight[d.server.index()][first_block[r.model.index()] + r.layer.index()] += d.weight;
        }
    }
    let middle_distance = |(m, l): (ModelId, LayerId)| {
        let (layers, _) = cat.shape(m);
        (2 * i64::from(l.0) - (i64::from(layers) - 1)).abs()
    };
    let mut x = model.empty_placement();
    for (n, w) in weight.iter().enumerate() {
        let mut order: Vec<usize> = (0..blocks.len()).collect();
        order.sort_by(|&a, &b| {
            w[b].total_cmp(&w[a])
                .then(middle_distance(blocks[a]).cmp(&middle_distance(blocks[b])))
                .then(blocks[a].cmp(&blocks[b]))
        });
        let mut room = model.capacity(sid(n));
        for k in order {
            let (m, l) = blocks[k];
            let layer: Vec<ExpertId> = cat.layer_experts(m, l).collect();
            let bytes = layer
                .iter()
                .fold(0u64, |acc, &e| acc.saturating_add(model.expert_bytes(e)));
            if bytes <= room {
                for e in layer {
                    x.insert(sid(n), e);
                }
                room -= bytes;
            }
        }
    }
    x
}
