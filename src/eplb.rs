//! DeepSeek's Expert Parallelism Load Balancer (EPLB), re-implemented from the public reference
//! `eplb.py` of <https://github.com/deepseek-ai/EPLB> (commit d52c72d) and its README. Two
//! problems use it, so it lives above both: Prism (paper 001, Section IV-A) compares against it
//! as a baseline (its heterogeneous adaptation is `crate::prism::baselines`), and the balance
//! problem (`crate::balance`) solves EPLB's own problem exactly and places EPLB's plans beside
//! the optimum. [`rebalance_experts`] is the reference algorithm for homogeneous clusters,
//! unchanged.
//!
//! ## The algorithm
//!
//! Input: a load (weight) per layer and logical expert, the number of physical expert slots
//! (`num_replicas`, logical experts plus redundant copies), the number of expert groups, of
//! nodes and of GPUs. Output per layer: which logical expert each physical slot holds
//! (physical slot `p` lives on GPU `p / (num_replicas / num_gpus)`), the replicas of each
//! logical expert, and the replica counts.
//!
//! Three building blocks, applied row by row (a row is one layer, or one layer on one node):
//! * [`balanced_packing`]: items into packs holding exactly `items / packs` items each. Items
//!   are visited heaviest first; each goes to the lightest pack that is not full. When every
//!   pack holds one item, item `i` goes to pack `i` with no sorting (the reference's shortcut,
//!   which is not what the greedy would do).
//! * [`replicate_experts`]: start with one replica per logical expert; while slots remain, add
//!   a replica to the expert with the largest load per replica `w_e / c_e`.
//! * the hierarchical policy (used when `num_groups % num_nodes == 0`): (1) the summed load of
//!   each group of `num_logical / num_groups` consecutive experts is packed onto the nodes
//!   (`num_groups / num_nodes` groups each); the experts are renumbered node-major
//!   ("mlog"), a node's groups in their rank order; (2) each node replicates its own
//!   `num_logical / num_nodes` experts into `num_replicas / num_nodes` slots; (3) each node's
//!   physical experts, loaded `w_e / c_e`, are packed onto its `num_gpus / num_nodes` GPUs,
//!   `num_replicas / num_gpus` each, and slot `gpu * per_gpu + rank_in_pack` is assigned.
//!   The global policy (otherwise) is the same procedure with one group and one node.
//!
//! Arguments the reference rejects (by `assert`, or a Python error for zeros) are rejected here
//! with an [`EplbError`] naming the argument: `num_logical % num_groups` (hierarchical only),
//! `num_gpus % num_nodes`, `num_replicas % num_gpus`, `num_replicas >= num_logical`, zero
//! arguments, no layer, no expert. Loads must be finite and >= 0 (the reference accepts any
//! float; a negative or NaN load has no meaning as a load and would make `max` and the sort
//! order NaN-dependent). Beyond the reference, `num_replicas` is at most
//! [`MAX_REPLICAS_PER_EXPERT`] times the experts per layer (the plan is sized by it).
//!
//! ## Arithmetic and ties (reproduced from the reference)
//!
//! The reference converts the weights to `float32` (`weight.float()`), so every quantity here
//! is `f32` too: group sums, `w / c` ratios, per-replica loads and pack sums (the Python loop
//! accumulates 0-dim `float32` tensors). Two loads that differ in `f64` but round to the same
//! `f32` therefore tie, as they do in the reference. Group sums are added left to right; torch's
//! reduction may associate differently, which can change the last bit for non-integral loads
//! (integral loads whose sums stay below 2^24 are exact either way).
//!
//! Ties:
//! * `replicate_experts` uses `(weight / logcnt).max(dim=-1).indices`; torch documents that
//!   `max` along a dimension returns the index of the *first* maximal value, so the lowest
//!   logical index wins. Reproduced exactly.
//! * `balanced_packing` picks the pack with Python's `min(..., key=pack_weights)` over the
//!   non-full packs in index order; `min` returns the first minimal item, so the lowest pack
//!   index wins. Reproduced exactly.
//! * `balanced_packing` orders the items by `weight.sort(-1, descending=True)` with torch's
//!   default `stable=False`. The order of equal weights is then *not specified* by torch and
//!   depends on its build: PyTorch's CPU kernel calls `std::sort` (libstdc++ sorts 16 items or
//!   fewer by insertion sort, which keeps equal items in index order, and uses an unstable
//!   introsort above that) or, in x86 builds with AVX2/AVX-512 since about 2.4, the unstable
//!   x86-simd-sort. We use the stable order (equal weights by ascending index), which is what
//!   the libstdc++ kernel yields for rows of at most 16 items; for larger rows with equal loads
//!   the reference itself may differ between PyTorch builds, so no implementation can match
//!   "the" reference there. Ties in this sort are common in step 3, where the replicas of one
//!   expert carry equal loads; swapping two equal items does not change any pack's load, only
//!   which of two replicas of the same expert, or of equally loaded experts, sits where.

use std::path::Path;

use formulations::Error;
use serde::{Deserialize, Serialize};

use crate::report::{canonical_sha256, VERSION};

/// Which policy [`rebalance_experts`] applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EplbPolicy {
    /// Groups packed onto nodes, replication within nodes, replicas packed onto GPUs
    /// (`num_groups % num_nodes == 0`).
    Hierarchical,
    /// Replication over all experts, replicas packed onto all GPUs (otherwise).
    Global,
}

/// EPLB's replication and placement plan for every layer (the reference's three outputs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EplbPlan {
    /// Which policy produced the plan.
    pub policy: EplbPolicy,
    /// Physical slots per GPU, `num_replicas / num_gpus`; slot `p` is on GPU `p / this`.
    pub slots_per_gpu: usize,
    /// `[layer][physical slot]`: the logical expert the slot holds (`phy2log`).
    pub physical_to_logical: Vec<Vec<usize>>,
    /// `[layer][physical slot]`: the replica's rank among its expert's replicas (`phyrank`).
    pub physical_rank: Vec<Vec<usize>>,
    /// `[layer][logical expert]`: the expert's physical slots, by replica rank (`log2phy`
    /// without the reference's `-1` padding; see [`EplbPlan::logical_to_physical_padded`]).
    pub logical_to_physical: Vec<Vec<Vec<usize>>>,
    /// `[layer][logical expert]`: the number of replicas (`logcnt`).
    pub replica_count: Vec<Vec<usize>>,
}

impl EplbPlan {
    /// The GPU of physical slot `p`.
    pub fn gpu_of(&self, p: usize) -> usize {
        p / self.slots_per_gpu
    }

    /// The number of GPUs the plan spreads over.
    pub fn gpus(&self) -> usize {
        self.physical_to_logical
            .first()
            .map_or(0, |row| row.len() / self.slots_per_gpu)
    }

    /// `log2phy` exactly as the reference returns it: every expert's list padded with `-1` to
    /// the largest replica count over all layers.
    pub fn logical_to_physical_padded(&self) -> Vec<Vec<Vec<i64>>> {
        let width = self
            .replica_count
            .iter()
            .flatten()
            .copied()
            .max()
            .unwrap_or(0);
        self.logical_to_physical
            .iter()
            .map(|layer| {
                layer
                    .iter()
                    .map(|slots| {
                        let mut row: Vec<i64> = slots.iter().map(|&p| p as i64).collect();
                        row.resize(width, -1);
                        row
                    })
                    .collect()
            })
            .collect()
    }

    /// `[layer][gpu]`: the load each GPU serves when every expert's load `weight[l][e]` is split
    /// evenly over its replicas (the quantity EPLB balances), in `f64`.
    pub fn gpu_loads(&self, weight: &[Vec<f64>]) -> Vec<Vec<f64>> {
        self.physical_to_logical
            .iter()
            .zip(&self.replica_count)
            .zip(weight)
            .map(|((phy, cnt), w)| {
                let mut loads = vec![0.0; self.gpus()];
                for (p, &e) in phy.iter().enumerate() {
                    loads[self.gpu_of(p)] += w[e] / cnt[e] as f64;
                }
                loads
            })
            .collect()
    }
}

impl EplbPlan {
    /// The plan of a `phy2log` per layer (from another method): ranks by slot order, the
    /// slots and counts of each expert.
    pub fn from_phy2log(
        policy: EplbPolicy,
        slots_per_gpu: usize,
        phy2log: Vec<Vec<usize>>,
        experts: usize,
    ) -> Self {
        let mut plan = EplbPlan {
            policy,
            slots_per_gpu,
            physical_to_logical: Vec::with_capacity(phy2log.len()),
            physical_rank: Vec::with_capacity(phy2log.len()),
            logical_to_physical: Vec::with_capacity(phy2log.len()),
            replica_count: Vec::with_capacity(phy2log.len()),
        };
        for row in phy2log {
            let mut log2phy: Vec<Vec<usize>> = vec![Vec::new(); experts];
            let mut rank = Vec::with_capacity(row.len());
            for (p, &e) in row.iter().enumerate() {
                rank.push(log2phy[e].len());
                log2phy[e].push(p);
            }
            plan.replica_count
                .push(log2phy.iter().map(Vec::len).collect());
            plan.physical_rank.push(rank);
            plan.logical_to_physical.push(log2phy);
            plan.physical_to_logical.push(row);
        }
        plan
    }
}

/// The exact method's account of a plan `moe-opt eplb --method exact` returns (the balance
/// problem's exact method, `crate::balance::exact`): the sums over layers and each layer's.
#[derive(Debug, Clone, Serialize)]
pub struct EplbExact {
    /// Status, incumbent (sum of the layers' busiest GPU loads), bound and gap over layers.
    pub total: crate::problem::ExactReport,
    /// Each layer's.
    pub layers: Vec<crate::problem::ExactReport>,
}

/// Arguments or weights EPLB cannot work with; each names the argument (or weight entry).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EplbError {
    /// An argument is 0.
    #[error("{argument}: must be > 0")]
    Zero {
        /// The argument's name.
        argument: &'static str,
    },
    /// `weight` has no layer, or a layer has no expert.
    #[error("weight: needs at least one layer and one expert per layer")]
    Empty,
    /// A layer has a different number of experts than layer 0.
    #[error("weight[{layer}]: has {got} experts, layer 0 has {expected}")]
    Ragged {
        /// The layer.
        layer: usize,
        /// Its number of experts.
        got: usize,
        /// Layer 0's.
        expected: usize,
    },
    /// A load is negative, NaN or infinite.
    #[error("weight[{layer}][{expert}]: load {value} must be finite and >= 0")]
    BadLoad {
        /// The layer.
        layer: usize,
        /// The expert.
        expert: usize,
        /// The load.
        value: f64,
    },
    /// A divisibility the reference asserts does not hold.
    #[error("{argument}: {value} is not a multiple of {of_name} = {of}")]
    NotMultiple {
        /// The argument that must be a multiple.
        argument: &'static str,
        /// Its value.
        value: usize,
        /// What it must be a multiple of.
        of_name: &'static str,
        /// That value.
        of: usize,
    },
    /// More physical slots than [`MAX_REPLICAS_PER_EXPERT`] per logical expert.
    #[error(
        "replicas: {replicas} replicas exceeds the limit of {limit} ({MAX_REPLICAS_PER_EXPERT} \
         per logical expert x {experts} experts, moe_opt::eplb::MAX_REPLICAS_PER_EXPERT)"
    )]
    TooManyReplicas {
        /// `num_replicas`.
        replicas: usize,
        /// Logical experts per layer.
        experts: usize,
        /// The most replicas allowed.
        limit: usize,
    },
    /// Fewer physical slots than logical experts.
    #[error("replicas: {replicas} is fewer than the {experts} logical experts per layer")]
    TooFewReplicas {
        /// `num_replicas`.
        replicas: usize,
        /// Logical experts per layer.
        experts: usize,
    },
}

impl EplbError {
    /// The argument or weight entry the error is about (for [`Error::Invalid`]'s `field`).
    pub fn field(&self) -> String {
        match self {
            EplbError::Zero { argument } | EplbError::NotMultiple { argument, .. } => {
                (*argument).to_string()
            }
            EplbError::Empty => "weight".into(),
            EplbError::Ragged { layer, .. } => format!("weight[{layer}]"),
            EplbError::BadLoad { layer, expert, .. } => format!("weight[{layer}][{expert}]"),
            EplbError::TooFewReplicas { .. } | EplbError::TooManyReplicas { .. } => {
                "replicas".into()
            }
        }
    }

    /// The reason alone, without the field.
    pub fn reason(&self) -> String {
        let text = self.to_string();
        let prefix = format!("{}: ", self.field());
        text.strip_prefix(&prefix).unwrap_or(&text).to_string()
    }

    /// Ties the error to a file as [`Error::Invalid`].
    pub fn in_file(&self, path: &Path) -> Error {
        Error::Invalid {
            path: path.to_path_buf(),
            field: self.field(),
            reason: self.reason(),
        }
    }
}

/// Packs `weight.len()` items into `num_packs` packs of exactly `weight.len() / num_packs`
/// items, heaviest item first into the lightest non-full pack (lowest pack index on ties;
/// items of equal weight in index order). Returns `(pack_index, rank_in_pack)` per item, where
/// the rank is the order in which the item entered its pack. With one item per pack, item `i`
/// goes to pack `i` (the reference's shortcut).
///
/// The caller guarantees `num_packs > 0` and `weight.len() % num_packs == 0`.
///
/// # Complexity
/// n items, P packs. Time: O(n log n + n P) (the sort, then a scan of the packs per item).
/// Memory: O(n + P).
///
/// # Examples
/// ```
/// use moe_opt::eplb::balanced_packing;
///
/// // Heaviest first into the lightest open pack: 5 -> 0, 4 -> 1, 3 -> 1 (4 < 5), 2 -> 0
/// // (5 < 7), 1 -> 0 (7 = 7: lower index), and the last 1 -> 1 (pack 0 is full): 8 and 8.
/// let (pack, rank) = balanced_packing(&[5.0, 4.0, 3.0, 2.0, 1.0, 1.0], 2);
/// assert_eq!(pack, vec![0, 1, 1, 0, 0, 1]);
/// assert_eq!(rank, vec![0, 0, 1, 1, 2, 2]);
/// ```
pub fn balanced_packing(weight: &[f32], num_packs: usize) -> (Vec<usize>, Vec<usize>) {
    let n = weight.len();
    let per_pack = n / num_packs;
    if per_pack == 1 {
        return ((0..n).collect(), vec![0; n]);
    }
    let mut order: Vec<usize> = (0..n).collect();
    // Stable: equal weights keep ascending index order (see the module doc).
    order.sort_by(|&a, &b| weight[b].total_cmp(&weight[a]));
    let mut pack_weight = vec![0.0f32; num_packs];
    let mut pack_items = vec![0usize; num_packs];
    let mut pack_index = vec![0; n];
    let mut rank_in_pack = vec![0; n];
    for item in order {
        let mut best: Option<usize> = None;
        for p in 0..num_packs {
            if pack_items[p] < per_pack && best.is_none_or(|b| pack_weight[p] < pack_weight[b]) {
                best = Some(p);
            }
        }
        let p = best.expect("the packs have room for every item");
        pack_index[item] = p;
        rank_in_pack[item] = pack_items[p];
        pack_weight[p] += weight[item];
        pack_items[p] += 1;
    }
    (pack_index, rank_in_pack)
}

/// One row's replication: `(phy2log, rank, logcnt)`.
pub type Replication = (Vec<usize>, Vec<usize>, Vec<usize>);

/// Replicates `weight.len()` logical experts into `num_phy` physical ones: slot `i <
/// weight.len()` holds expert `i`; each further slot goes to the expert with the largest load
/// per replica `weight[e] / count[e]` (first such expert on ties). Returns `(phy2log, rank,
/// logcnt)`: each slot's expert, its rank among that expert's replicas, and each expert's
/// replica count.
///
/// The caller guarantees `num_phy >= weight.len()`.
///
/// # Complexity
/// X logical experts, R = `num_phy` physical slots. Time: O((R - X) X) (a scan of the loads per
/// replica per redundant slot). Memory: O(R).
///
/// # Examples
/// ```
/// use moe_opt::eplb::replicate_experts;
///
/// // Loads per replica 6, 3, 2: slot 3 copies expert 0 (now 3 per replica), slot 4 again
/// // expert 0 (3 = 3: the first wins).
/// let (phy2log, rank, logcnt) = replicate_experts(&[6.0, 3.0, 2.0], 5);
/// assert_eq!(phy2log, vec![0, 1, 2, 0, 0]);
/// assert_eq!(rank, vec![0, 0, 0, 1, 2]);
/// assert_eq!(logcnt, vec![3, 1, 1]);
/// ```
pub fn replicate_experts(weight: &[f32], num_phy: usize) -> Replication {
    let num_log = weight.len();
    let mut phy2log: Vec<usize> = (0..num_log).collect();
    let mut rank = vec![0; num_log];
    let mut logcnt = vec![1usize; num_log];
    for _ in num_log..num_phy {
        let mut best = 0;
        let mut best_ratio = weight[0] / logcnt[0] as f32;
        for e in 1..num_log {
            let r = weight[e] / logcnt[e] as f32;
            if r > best_ratio {
                best = e;
                best_ratio = r;
            }
        }
        phy2log.push(best);
        rank.push(logcnt[best]);
        logcnt[best] += 1;
    }
    (phy2log, rank, logcnt)
}

/// The inverse of a permutation.
fn inverse(perm: &[usize]) -> Vec<usize> {
    let mut inv = vec![0; perm.len()];
    for (i, &p) in perm.iter().enumerate() {
        inv[p] = i;
    }
    inv
}

/// One layer of `rebalance_experts_hierarchical`: `(phy2log, phyrank, logcnt)`.
fn hierarchical_layer(
    w: &[f32],
    num_replicas: usize,
    num_groups: usize,
    num_nodes: usize,
    num_gpus: usize,
) -> Replication {
    let num_log = w.len();
    let group_size = num_log / num_groups;
    let groups_per_node = num_groups / num_nodes;
    let per_gpu = num_replicas / num_gpus;
    let log_per_node = num_log / num_nodes;
    let phy_per_node = num_replicas / num_nodes;

    // Step 1: pack the groups onto the nodes; renumber the experts node-major (mlog).
    let group_load: Vec<f32> = w
        .chunks(group_size)
        .map(|g| g.iter().fold(0.0f32, |s, &x| s + x))
        .collect();
    let (group_pack, group_rank) = balanced_packing(&group_load, num_nodes);
    let log2mlog: Vec<usize> = (0..num_log)
        .map(|e| {
            let g = e / group_size;
            (group_pack[g] * groups_per_node + group_rank[g]) * group_size + e % group_size
        })
        .collect();
    let mlog2log = inverse(&log2mlog);

    let mut phy2log = Vec::with_capacity(num_replicas);
    let mut phyrank = Vec::with_capacity(num_replicas);
    let mut mlogcnt = Vec::with_capacity(num_log);
    for node in 0..num_nodes {
        let base = node * log_per_node;
        // Step 2: replicate the node's experts within the node.
        let load: Vec<f32> = (0..log_per_node).map(|i| w[mlog2log[base + i]]).collect();
        let (phy2mlog, rank, cnt) = replicate_experts(&load, phy_per_node);
        // Step 3: pack the node's physical experts onto its GPUs.
        let phy_load: Vec<f32> = phy2mlog.iter().map(|&m| load[m] / cnt[m] as f32).collect();
        let (pack, rank_in_pack) = balanced_packing(&phy_load, num_gpus / num_nodes);
        let phy2pphy: Vec<usize> = pack
            .iter()
            .zip(&rank_in_pack)
            .map(|(&p, &r)| p * per_gpu + r)
            .collect();
        for phy in inverse(&phy2pphy) {
            phy2log.push(mlog2log[base + phy2mlog[phy]]);
            phyrank.push(rank[phy]);
        }
        mlogcnt.extend(cnt);
    }
    let logcnt = log2mlog.iter().map(|&m| mlogcnt[m]).collect();
    (phy2log, phyrank, logcnt)
}

/// Most physical replicas per logical expert (`--replicas` at most this many times the experts
/// per layer): deployments add a few redundant copies (DeepSeek-V3: 288 slots for 256
/// experts), and the plan's size grows with the replicas.
pub const MAX_REPLICAS_PER_EXPERT: usize = 64;

/// Checks the weights and arguments as the reference does (its asserts, in its order, plus
/// zeros and loads); returns the policy.
fn check(
    weight: &[Vec<f64>],
    num_replicas: usize,
    num_groups: usize,
    num_nodes: usize,
    num_gpus: usize,
) -> Result<EplbPolicy, EplbError> {
    for (argument, v) in [
        ("replicas", num_replicas),
        ("groups", num_groups),
        ("nodes", num_nodes),
        ("gpus", num_gpus),
    ] {
        if v == 0 {
            return Err(EplbError::Zero { argument });
        }
    }
    let num_log = weight.first().map_or(0, Vec::len);
    if num_log == 0 {
        return Err(EplbError::Empty);
    }
    for (layer, row) in weight.iter().enumerate() {
        if row.len() != num_log {
            return Err(EplbError::Ragged {
                layer,
                got: row.len(),
                expected: num_log,
            });
        }
        if let Some((expert, &value)) = row
            .iter()
            .enumerate()
            .find(|(_, v)| !v.is_finite() || **v < 0.0)
        {
            return Err(EplbError::BadLoad {
                layer,
                expert,
                value,
            });
        }
    }
    // The plan has `num_replicas` slots per layer; groups, nodes and GPUs divide it or the
    // experts (checked below), so this bounds every size the plan allocates.
    let limit = MAX_REPLICAS_PER_EXPERT.saturating_mul(num_log);
    if num_replicas > limit {
        return Err(EplbError::TooManyReplicas {
            replicas: num_replicas,
            experts: num_log,
            limit,
        });
    }
    let policy = if num_groups.is_multiple_of(num_nodes) {
        EplbPolicy::Hierarchical
    } else {
        EplbPolicy::Global
    };
    if policy == EplbPolicy::Hierarchical && !num_log.is_multiple_of(num_groups) {
        return Err(EplbError::NotMultiple {
            argument: "experts",
            value: num_log,
            of_name: "groups",
            of: num_groups,
        });
    }
    if policy == EplbPolicy::Hierarchical && !num_gpus.is_multiple_of(num_nodes) {
        return Err(EplbError::NotMultiple {
            argument: "gpus",
            value: num_gpus,
            of_name: "nodes",
            of: num_nodes,
        });
    }
    if !num_replicas.is_multiple_of(num_gpus) {
        return Err(EplbError::NotMultiple {
            argument: "replicas",
            value: num_replicas,
            of_name: "gpus",
            of: num_gpus,
        });
    }
    if num_replicas < num_log {
        return Err(EplbError::TooFewReplicas {
            replicas: num_replicas,
            experts: num_log,
        });
    }
    Ok(policy)
}

/// EPLB's `rebalance_experts`: the replication and placement plan of every layer.
///
/// `weight[l][e]` is the load of logical expert `e` in layer `l`; `num_replicas` the physical
/// slots per layer (a multiple of `num_gpus`, at least the number of experts); `num_groups`
/// the expert groups (consecutive experts); `num_nodes` the server nodes; `num_gpus` all GPUs
/// (a multiple of `num_nodes` for the hierarchical policy). The hierarchical policy is used
/// when `num_groups % num_nodes == 0`, the global one otherwise.
///
/// # Complexity
/// L layers, X logical experts, R = `num_replicas` slots, G groups, N nodes, M GPUs (G = N = 1
/// for the global policy). Time per layer: O(G log G + G N) to pack the groups onto the nodes,
/// O((R - X) X / N) to replicate within the nodes and O(R log R + R M / N) to pack the
/// replicas onto the GPUs; the replication or the GPU packing dominates. Memory: O(L R) for the
/// plan.
///
/// # Examples
/// The example of EPLB's README (2 layers, 12 experts, 16 slots, 4 groups, 2 nodes, 8 GPUs) and
/// its published output.
/// ```
/// use moe_opt::eplb::rebalance_experts;
///
/// let weight = vec![
///     vec![90.0, 132.0, 40.0, 61.0, 104.0, 165.0, 39.0, 4.0, 73.0, 56.0, 183.0, 86.0],
///     vec![20.0, 107.0, 104.0, 64.0, 19.0, 197.0, 187.0, 157.0, 172.0, 86.0, 16.0, 27.0],
/// ];
/// let plan = rebalance_experts(&weight, 16, 4, 2, 8)?;
/// assert_eq!(
///     plan.physical_to_logical,
///     vec![
///         vec![5, 6, 5, 7, 8, 4, 3, 4, 10, 9, 10, 2, 0, 1, 11, 1],
///         vec![7, 10, 6, 8, 6, 11, 8, 9, 2, 4, 5, 1, 5, 0, 3, 1],
///     ]
/// );
/// # Ok::<(), moe_opt::eplb::EplbError>(())
/// ```
pub fn rebalance_experts(
    weight: &[Vec<f64>],
    num_replicas: usize,
    num_groups: usize,
    num_nodes: usize,
    num_gpus: usize,
) -> Result<EplbPlan, EplbError> {
    let policy = check(weight, num_replicas, num_groups, num_nodes, num_gpus)?;
    let (groups, nodes) = match policy {
        EplbPolicy::Hierarchical => (num_groups, num_nodes),
        EplbPolicy::Global => (1, 1),
    };
    let num_log = weight[0].len();
    let mut plan = EplbPlan {
        policy,
        slots_per_gpu: num_replicas / num_gpus,
        physical_to_logical: Vec::with_capacity(weight.len()),
        physical_rank: Vec::with_capacity(weight.len()),
        logical_to_physical: Vec::with_capacity(weight.len()),
        replica_count: Vec::with_capacity(weight.len()),
    };
    for row in weight {
        // The reference's `weight.float()`.
        let w: Vec<f32> = row.iter().map(|&x| x as f32).collect();
        let (phy2log, rank, cnt) = hierarchical_layer(&w, num_replicas, groups, nodes, num_gpus);
        let mut log2phy: Vec<Vec<usize>> = cnt.iter().map(|&c| vec![0; c]).collect();
        for (p, (&e, &r)) in phy2log.iter().zip(&rank).enumerate() {
            log2phy[e][r] = p;
        }
        debug_assert_eq!(log2phy.len(), num_log);
        plan.physical_to_logical.push(phy2log);
        plan.physical_rank.push(rank);
        plan.logical_to_physical.push(log2phy);
        plan.replica_count.push(cnt);
    }
    Ok(plan)
}

/// The weights file of `moe-opt eplb`: one row per MoE layer, one load (e.g. a token count)
/// per logical expert, all rows the same length. [`EplbWeights::read`] takes it as JSON
/// `{"weight": [[load, ...], ...]}`, as a bare JSON matrix (what `weight.tolist()` writes
/// from numpy or torch), as CSV without a header (`.csv`: a line per layer) or as numpy's
/// `.npy` of a 2-D array (`np.save`; [`crate::npy`]), chosen by the file's extension.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EplbWeights {
    /// `[layer][logical expert]`: the expert's load, finite and >= 0.
    pub weight: Vec<Vec<f64>>,
}

/// The JSON forms of a weights file.
#[derive(Deserialize)]
#[serde(untagged)]
enum WeightsJson {
    Object(EplbWeights),
    Matrix(Vec<Vec<f64>>),
}

impl EplbWeights {
    /// Reads a weights file in any of its forms (type doc); errors name the file, and for CSV
    /// the line and column. The values' rules are [`rebalance_experts`]'s.
    pub fn read(path: &Path) -> Result<Self, Error> {
        let has = |ext: &str| {
            path.extension()
                .is_some_and(|e| e.eq_ignore_ascii_case(ext))
        };
        if has("npy") {
            return Ok(EplbWeights {
                weight: crate::npy::read_matrix(path)?,
            });
        }
        let is_csv = has("csv");
        if !is_csv {
            let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
                path: path.to_path_buf(),
                source,
            })?;
            // Tried as an object first, so a misspelt key is named by serde.
            if let Ok(w) = formulations::error::parse_json::<EplbWeights>(path, &text) {
                return Ok(w);
            }
            return match formulations::error::parse_json::<WeightsJson>(path, &text) {
                Ok(WeightsJson::Object(w)) => Ok(w),
                Ok(WeightsJson::Matrix(weight)) => Ok(EplbWeights { weight }),
                Err(_) => formulations::error::parse_json::<EplbWeights>(path, &text),
            };
        }
        let invalid = |field: String, reason: String| Error::Invalid {
            path: path.to_path_buf(),
            field,
            reason,
        };
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .from_path(path)
            .map_err(|e| invalid("csv".into(), e.to_string()))?;
        let mut weight = Vec::new();
        for (l, record) in reader.records().enumerate() {
            let record = record.map_err(|e| invalid(format!("line {}", l + 1), e.to_string()))?;
            let row = record
                .iter()
                .enumerate()
                .map(|(e, cell)| {
                    cell.trim().parse::<f64>().map_err(|_| {
                        invalid(
                            format!("line {}, column {}", l + 1, e + 1),
                            format!("{cell:?} is not a number"),
                        )
                    })
                })
                .collect::<Result<Vec<f64>, _>>()?;
            weight.push(row);
        }
        Ok(EplbWeights { weight })
    }
}

/// Output of `moe-opt eplb`.
#[derive(Debug, Clone, Serialize)]
pub struct EplbReport {
    /// moe-opt version.
    pub moe_opt_version: &'static str,
    /// The weights file as given.
    pub weights_file: String,
    /// SHA-256 of the weights' canonical JSON.
    pub weights_sha256: String,
    /// MoE layers.
    pub layers: usize,
    /// Logical experts per layer.
    pub logical_experts: usize,
    /// Physical slots per layer.
    pub replicas: usize,
    /// Expert groups.
    pub groups: usize,
    /// Server nodes.
    pub nodes: usize,
    /// GPUs.
    pub gpus: usize,
    /// The plan.
    pub plan: EplbPlan,
    /// `[layer][gpu]`: load per GPU with each expert's load split evenly over its replicas.
    pub gpu_load: Vec<Vec<f64>>,
    /// `[layer]`: mean GPU load / max GPU load (1 = perfectly balanced; 1 for an all-zero layer).
    pub balancedness: Vec<f64>,
    /// `--method exact`: the exact method's status, bound and gap (absent for EPLB's own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exact: Option<EplbExact>,
    /// The weights as read (for `--csv`; not in the JSON, whose `weights_sha256` names them).
    #[serde(skip)]
    pub weights: EplbWeights,
}

impl EplbReport {
    /// The maps and counts as the reference prints them (`-1` pads `log2phy`), and the balance.
    pub fn text(&self) -> String {
        use std::fmt::Write;
        let p = &self.plan;
        let mut out = String::new();
        let who = match &self.exact {
            None => "EPLB".to_string(),
            Some(x) => format!(
                "exact method, {}: sum of busiest GPU loads {:.6}, bound {:.6}, gap {:.4}%; EPLB's locality",
                crate::render::status(&x.total),
                x.total.objective.unwrap_or(f64::NAN),
                x.total.best_bound.unwrap_or(f64::NAN),
                x.total.gap.unwrap_or(f64::NAN) * 100.0
            ),
        };
        let _ = writeln!(
            out,
            "{who} ({} policy): {} layers x {} experts -> {} replicas on {} GPUs ({} per GPU), {} groups, {} nodes",
            crate::render::name(&p.policy),
            self.layers,
            self.logical_experts,
            self.replicas,
            self.gpus,
            p.slots_per_gpu,
            self.groups,
            self.nodes
        );
        let row = |v: &[usize]| {
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(out, "physical_to_logical (layer: expert of each slot):");
        for (l, r) in p.physical_to_logical.iter().enumerate() {
            let _ = writeln!(out, "  {l}: [{}]", row(r));
        }
        let _ = writeln!(
            out,
            "logical_to_physical (layer: slots of each expert, -1 = none):"
        );
        for (l, layer) in p.logical_to_physical_padded().iter().enumerate() {
            let cells: Vec<String> = layer
                .iter()
                .map(|s| {
                    format!(
                        "[{}]",
                        s.iter()
                            .map(|x| x.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                })
                .collect();
            let _ = writeln!(out, "  {l}: [{}]", cells.join(", "));
        }
        let _ = writeln!(out, "replica_count (layer: replicas of each expert):");
        for (l, r) in p.replica_count.iter().enumerate() {
            let _ = writeln!(out, "  {l}: [{}]", row(r));
        }
        let rows: Vec<Vec<String>> = self
            .balancedness
            .iter()
            .enumerate()
            .map(|(l, b)| vec![l.to_string(), format!("{b:.4}")])
            .collect();
        out.push_str(&crate::render::table(
            &["layer", "balancedness (mean/max GPU load)"],
            &rows,
            1,
        ));
        out
    }
}

/// `moe-opt eplb --weights FILE --replicas R --groups G --nodes N --gpus P`: reads the weights
/// file ([`EplbWeights`]) and runs [`rebalance_experts`]. Errors name the file and the field
/// (`weight[1][3]`, or the argument: `replicas`, `groups`, `nodes`, `gpus`, `experts`).
pub fn eplb_command(
    weights_path: &Path,
    replicas: usize,
    groups: usize,
    nodes: usize,
    gpus: usize,
) -> Result<EplbReport, Error> {
    let weights = EplbWeights::read(weights_path)?;
    let plan = rebalance_experts(&weights.weight, replicas, groups, nodes, gpus)
        .map_err(|e| e.in_file(weights_path))?;
    Ok(eplb_report(
        weights_path,
        weights,
        plan,
        [replicas, groups, nodes, gpus],
        None,
    ))
}

/// The report of a plan of the weights read from `weights_path`; `arguments` are the
/// replicas, groups, nodes and GPUs as given.
pub fn eplb_report(
    weights_path: &Path,
    weights: EplbWeights,
    plan: EplbPlan,
    arguments: [usize; 4],
    exact: Option<EplbExact>,
) -> EplbReport {
    let [replicas, groups, nodes, gpus] = arguments;
    let gpu_load = plan.gpu_loads(&weights.weight);
    let balancedness = gpu_load
        .iter()
        .map(|loads| {
            let max = loads.iter().copied().fold(0.0, f64::max);
            if max > 0.0 {
                loads.iter().sum::<f64>() / loads.len() as f64 / max
            } else {
                1.0
            }
        })
        .collect();
    EplbReport {
        moe_opt_version: VERSION,
        weights_file: weights_path.display().to_string(),
        weights_sha256: canonical_sha256(&weights),
        layers: weights.weight.len(),
        logical_experts: weights.weight[0].len(),
        replicas,
        groups,
        nodes,
        gpus,
        plan,
        gpu_load,
        balancedness,
        exact,
        weights,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The README example of <https://github.com/deepseek-ai/EPLB> (section "Interface and
    /// Example", commit d52c72d): 2 layers x 12 experts, 16 replicas, 4 groups, 2 nodes, 8
    /// GPUs; its printed `phy2log` output.
    #[test]
    fn reproduces_the_readme_example_exactly() {
        let weight = vec![
            vec![
                90.0, 132.0, 40.0, 61.0, 104.0, 165.0, 39.0, 4.0, 73.0, 56.0, 183.0, 86.0,
            ],
            vec![
                20.0, 107.0, 104.0, 64.0, 19.0, 197.0, 187.0, 157.0, 172.0, 86.0, 16.0, 27.0,
            ],
        ];
        let plan = rebalance_experts(&weight, 16, 4, 2, 8).unwrap();
        assert_eq!(plan.policy, EplbPolicy::Hierarchical);
        assert_eq!(
            plan.physical_to_logical,
            vec![
                vec![5, 6, 5, 7, 8, 4, 3, 4, 10, 9, 10, 2, 0, 1, 11, 1],
                vec![7, 10, 6, 8, 6, 11, 8, 9, 2, 4, 5, 1, 5, 0, 3, 1],
            ]
        );
        // Counted by hand from the printed map: layer 0 duplicates 1, 4, 5, 10; layer 1
        // duplicates 1, 5, 6, 8.
        assert_eq!(
            plan.replica_count,
            vec![
                vec![1, 2, 1, 1, 2, 2, 1, 1, 1, 1, 2, 1],
                vec![1, 2, 1, 1, 1, 2, 2, 1, 2, 1, 1, 1],
            ]
        );
        // Layer 0 by hand. Group loads (3 experts each) 262, 330, 116, 325; packing onto 2
        // nodes: g1 -> n0, g3 -> n1, g0 -> n1 (325 < 330), g2 -> n0. Node 1 holds experts
        // 9, 10, 11, 0, 1, 2 (g3 then g0) with loads 56, 183, 86, 90, 132, 40; its 8 slots add
        // 10 (183) then 1 (132 > 91.5): physical loads 56, 91.5, 86, 90, 66, 40, 91.5, 66 for
        // experts 9, 10, 11, 0, 1, 2, 10, 1 (ranks 0 except the last two, rank 1). Packing
        // 4 GPUs x 2: 91.5 -> G0, 91.5 -> G1, 90 -> G2, 86 -> G3, 66 (expert 1, rank 0) -> G3,
        // 66 (expert 1, rank 1) -> G2, 56 -> G0, 40 -> G1. So expert 1's rank-0 replica is
        // in slot 15 (G3's second) and its rank-1 replica in slot 13 (G2's second). Node 0:
        // expert 5's rank 0 lands in slot 0 and rank 1 in slot 2.
        assert_eq!(plan.logical_to_physical[0][5], vec![0, 2]);
        assert_eq!(plan.logical_to_physical[0][1], vec![15, 13]);
        assert_eq!(plan.logical_to_physical_padded()[0][7], vec![3, -1]);
    }

    #[test]
    fn balanced_packing_by_hand() {
        // [5, 1, 4, 2] into 2 packs of 2: order 0 (5), 2 (4), 3 (2), 1 (1).
        // 0 -> pack 0 (both empty, lowest index) = 5; 2 -> pack 1 = 4; 3 -> pack 1 (4 < 5) = 6,
        // full; 1 -> pack 0 = 6.
        let (pack, rank) = balanced_packing(&[5.0, 1.0, 4.0, 2.0], 2);
        assert_eq!(pack, vec![0, 0, 1, 1]);
        assert_eq!(rank, vec![0, 1, 0, 1]);
        // Equal weights: index order, ties to the lowest pack: 0 -> 0, 1 -> 1, 2 -> 0, 3 -> 1.
        let (pack, rank) = balanced_packing(&[3.0; 4], 2);
        assert_eq!(pack, vec![0, 1, 0, 1]);
        assert_eq!(rank, vec![0, 0, 1, 1]);
        // One item per pack: identity, whatever the weights.
        assert_eq!(balanced_packing(&[1.0, 9.0], 2), (vec![0, 1], vec![0, 0]));
    }

    #[test]
    fn replicate_experts_by_hand() {
        // [6, 3, 2] into 5 slots. Slot 3: ratios 6, 3, 2 -> expert 0 (count 2). Slot 4: ratios
        // 3, 3, 2 -> tie, first index: expert 0 (count 3).
        let (phy2log, rank, cnt) = replicate_experts(&[6.0, 3.0, 2.0], 5);
        assert_eq!(phy2log, vec![0, 1, 2, 0, 0]);
        assert_eq!(rank, vec![0, 0, 0, 1, 2]);
        assert_eq!(cnt, vec![3, 1, 1]);
    }

    #[test]
    fn global_policy_by_hand() {
        // 3 groups, 2 nodes: 3 % 2 != 0 -> global. 4 experts [8, 1, 3, 4], 6 replicas, 2 GPUs.
        // Replication: slot 4 -> expert 0 (8), ratios now 4, 1, 3, 4 -> slot 5 -> expert 0
        // (first of the tie 4, 4 at index 0). Counts [3, 1, 1, 1]; physical loads
        // [8/3, 1, 3, 4, 8/3, 8/3] for slots 0..5 of phy2log [0, 1, 2, 3, 0, 0].
        // Packing 2 packs of 3, order 3 (4), 2 (3), 0, 4, 5 (8/3 each, index order), 1 (1):
        // 3 -> g0 = 4; 2 -> g1 = 3; 0 -> g1 = 5.67; 4 -> g0 = 6.67; 5 -> g1 = 8.33 (full);
        // 1 -> g0 = 7.67. GPU 0 holds phys 3, 4, 1 (ranks 0, 1, 2) = experts 3, 0, 1;
        // GPU 1 holds phys 2, 0, 5 = experts 2, 0, 0.
        let plan = rebalance_experts(&[vec![8.0, 1.0, 3.0, 4.0]], 6, 3, 2, 2).unwrap();
        assert_eq!(plan.policy, EplbPolicy::Global);
        assert_eq!(plan.physical_to_logical, vec![vec![3, 0, 1, 2, 0, 0]]);
        assert_eq!(plan.replica_count, vec![vec![3, 1, 1, 1]]);
        // Ranks: phys 4 had rank 1, phys 0 rank 0, phys 5 rank 2.
        assert_eq!(plan.logical_to_physical[0][0], vec![4, 1, 5]);
        let loads = plan.gpu_loads(&[vec![8.0, 1.0, 3.0, 4.0]]);
        assert!((loads[0][0] - (4.0 + 8.0 / 3.0 + 1.0)).abs() < 1e-12);
    }

    #[test]
    fn f32_rounding_creates_the_references_ties() {
        // 2^24 and 2^24 + 1 are equal in f32: the reference replicates the first.
        let w = vec![vec![16_777_216.0, 16_777_217.0]];
        let plan = rebalance_experts(&w, 3, 1, 1, 1).unwrap();
        assert_eq!(plan.replica_count, vec![vec![2, 1]]);
    }

    #[test]
    fn errors_name_the_argument() {
        let w = vec![vec![1.0; 12]];
        let field = |r, g, n, p| rebalance_experts(&w, r, g, n, p).unwrap_err().field();
        assert_eq!(field(16, 4, 2, 0), "gpus");
        assert_eq!(field(16, 5, 5, 8), "experts"); // 12 % 5 in the hierarchical policy
        assert_eq!(field(16, 4, 2, 3), "gpus"); // 3 % 2
        assert_eq!(field(18, 4, 2, 8), "replicas"); // 18 % 8
        assert_eq!(field(8, 4, 2, 8), "replicas"); // 8 < 12
        let bad = rebalance_experts(&[vec![1.0, f64::NAN]], 2, 1, 1, 1).unwrap_err();
        assert_eq!(bad.field(), "weight[0][1]");
        let ragged = rebalance_experts(&[vec![1.0, 2.0], vec![1.0]], 2, 1, 1, 1).unwrap_err();
        assert_eq!(
            ragged.to_string(),
            "weight[1]: has 1 experts, layer 0 has 2"
        );
        assert_eq!(
            rebalance_experts(&[], 2, 1, 1, 1).unwrap_err(),
            EplbError::Empty
        );
    }

    #[test]
    fn command_reads_the_file_and_names_it_in_errors() {
        let dir = std::env::temp_dir().join(format!("moe-opt-eplb-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("w.json");
        std::fs::write(&good, r#"{"weight": [[8, 1, 3, 4]]}"#).unwrap();
        let report = eplb_command(&good, 6, 3, 2, 2).unwrap();
        assert_eq!(
            report.plan.physical_to_logical,
            vec![vec![3, 0, 1, 2, 0, 0]]
        );
        // GPU loads 4 + 8/3 + 1 = 7.667 and 3 + 8/3 + 8/3 = 8.333: mean 8 / max 8.333 = 0.96.
        assert!((report.balancedness[0] - 0.96).abs() < 1e-12);
        let text = report.text();
        assert!(text.contains("0: [3, 0, 1, 2, 0, 0]"), "{text}");
        assert!(text.contains("0: [[4, 1, 5], [2, -1, -1]"), "{text}");
        let e = eplb_command(&good, 7, 3, 2, 2).unwrap_err().to_string();
        assert!(e.contains("w.json") && e.contains("replicas"), "{e}");
        let bad = dir.join("bad.json");
        std::fs::write(&bad, r#"{"weight": [[1, 2], [3, -1]]}"#).unwrap();
        let e = eplb_command(&bad, 2, 1, 1, 1).unwrap_err().to_string();
        assert!(e.contains("bad.json") && e.contains("weight[1][1]"), "{e}");
        let unknown = dir.join("unknown.json");
        std::fs::write(&unknown, r#"{"weights": [[1]]}"#).unwrap();
        let e = eplb_command(&unknown, 1, 1, 1, 1).unwrap_err().to_string();
        assert!(e.contains("unknown.json") && e.contains("weights"), "{e}");
        // The same weights as a bare matrix (numpy's tolist()) and as CSV give the same plan.
        let matrix = dir.join("matrix.json");
        std::fs::write(&matrix, "[[8, 1, 3, 4]]").unwrap();
        let csv = dir.join("w.csv");
        std::fs::write(&csv, "8,1,3,4\n").unwrap();
        for other in [&matrix, &csv] {
            let r = eplb_command(other, 6, 3, 2, 2).unwrap();
            assert_eq!(r.plan, report.plan);
            assert_eq!(r.weights_sha256, report.weights_sha256);
        }
        let bad_csv = dir.join("bad.csv");
        std::fs::write(&bad_csv, "8,1\n3,x\n").unwrap();
        let e = eplb_command(&bad_csv, 2, 1, 1, 1).unwrap_err().to_string();
        assert!(
            e.contains("bad.csv") && e.contains("line 2, column 2"),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Arguments valid for either policy: (weights, replicas, groups, nodes, gpus).
    fn instance() -> impl Strategy<Value = (Vec<Vec<f64>>, usize, usize, usize, usize)> {
        (
            1usize..4,
            1usize..4,
            1usize..4,
            1usize..4,
            1usize..4,
            0usize..3,
        )
            .prop_flat_map(
                |(layers, nodes, groups_per_node, group_size, gpus_per_node, extra_per_gpu)| {
                    // Half the cases make groups indivisible by nodes (global policy).
                    let groups = groups_per_node * nodes;
                    let experts = groups * group_size;
                    let gpus = gpus_per_node * nodes;
                    // Smallest multiple of gpus >= experts, plus extra slots per GPU.
                    let replicas = experts.div_ceil(gpus) * gpus + extra_per_gpu * gpus;
                    (
                        prop::collection::vec(prop::collection::vec(0u32..50, experts), layers),
                        Just(replicas),
                        prop_oneof![Just(groups), Just(groups + 1)],
                        Just(nodes),
                        Just(gpus),
                    )
                        .prop_map(|(w, r, g, n, p)| {
                            let w = w
                                .into_iter()
                                .map(|row| row.into_iter().map(f64::from).collect())
                                .collect();
                            (w, r, g, n, p)
                        })
                },
            )
    }

    proptest! {
        #[test]
        fn plans_are_consistent((w, r, g, n, p) in instance()) {
            let plan = match rebalance_experts(&w, r, g, n, p) {
                Ok(plan) => plan,
                // groups + 1 may not divide the experts, or be divisible by the nodes again.
                Err(EplbError::NotMultiple { argument: "experts", .. }) => return Ok(()),
                Err(e) => panic!("{e}"),
            };
            prop_assert_eq!(plan.replica_count[0].len(), w[0].len());
            for l in 0..w.len() {
                let phy = &plan.physical_to_logical[l];
                let cnt = &plan.replica_count[l];
                prop_assert_eq!(phy.len(), r);
                prop_assert!(cnt.iter().all(|&c| c >= 1));
                prop_assert_eq!(cnt.iter().sum::<usize>(), r);
                // Each GPU has r / p slots, all filled.
                prop_assert_eq!(plan.slots_per_gpu * p, r);
                prop_assert_eq!(plan.gpus(), p);
                for (x, &c) in cnt.iter().enumerate() {
                    prop_assert_eq!(phy.iter().filter(|&&y| y == x).count(), c);
                    prop_assert_eq!(plan.logical_to_physical[l][x].len(), c);
                    for (rank, &slot) in plan.logical_to_physical[l][x].iter().enumerate() {
                        prop_assert_eq!(phy[slot], x);
                        prop_assert_eq!(plan.physical_rank[l][slot], rank);
                    }
                }
                // Loads are conserved.
                let total: f64 = plan.gpu_loads(&w)[l].iter().sum();
                prop_assert!((total - w[l].iter().sum::<f64>()).abs() < 1e-9);
            }
            // Hierarchical: every expert's replicas stay on the GPUs of one node.
            if plan.policy == EplbPolicy::Hierarchical {
                let gpus_per_node = p / n;
                for l in 0..w.len() {
                    for slots in &plan.logical_to_physical[l] {
                        let node = plan.gpu_of(slots[0]) / gpus_per_node;
                        prop_assert!(slots.iter().all(|&s| plan.gpu_of(s) / gpus_per_node == node));
                    }
                }
            }
        }
    }
}
