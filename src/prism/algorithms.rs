//! Prism's placement pipeline (Section III-C of paper 001): Algorithm 1 (layer-wise expert
//! counts), Algorithm 2 (expert-to-server assignment), the assignment of each server's experts
//! to its GPUs, and the migration rule (3)-(4). Every placement is judged by the one evaluator
//! of `formulations::prism` (proxy cost (2)).
//!
//! ## Algorithm 1: [`alg1_counts`]
//!
//! * Lines 2-4: N_{n,l} = floor(M_n / m_e * v_{n,l} / sum_l v_{n,l}), with v_{n,l} the Shannon
//!   entropy (bits) of the normalised row f_n^l (Section III-C1; 0 log 0 = 0, an all-zero row
//!   has entropy 0). Readings: (a) the instance has one expert size per layer (m_l); the
//!   formula is applied with m_l, so that sum_l N_{n,l} m_l <= M_n still holds; (b) when all of
//!   a server's entropies are 0 (every layer has one expert only), the division is undefined
//!   and the memory is split evenly over the layers (share 1/L); (c) a server cannot hold more
//!   than E distinct experts of a layer, so N_{n,l} is capped at E and the surplus stays unused
//!   (the paper does not say where it goes); (d) the floor is taken of the product plus 1e-9,
//!   so that a product that is an integer up to rounding is not floored one below.
//! * Lines 6-7: N_{l,total} = sum_n N_{n,l}.
//! * Lines 8-18: for each layer l in order, while N_{l,total} < E: for the servers in
//!   descending M_n (ties: lower index first), l' = argmax_{l'} N_{l',total} (ties: lowest l'),
//!   and if N_{n,l'} > 0 one expert moves from l' to l on server n, until N_{l,total} = E.
//!   Readings: (e) only over-provisioned layers lend (the text: "borrow experts from layers l'
//!   that are currently over-provisioned"): if the argmax total is <= E no layer can lend
//!   without breaking its own coverage, the memory cannot cover every layer, and Alg. 1 fails
//!   with [`AlgorithmError::Coverage`] (as written, line 11 could pick l' = l and loop forever);
//!   (f) a move is skipped when server n already holds E experts of layer l (cap (c)) or when,
//!   with different sizes per layer, the swap would exceed M_n; (g) if a whole pass over the
//!   servers moves nothing, Alg. 1 fails the same way.
//!
//! ## Algorithm 2: [`alg2_assign`]
//!
//! * Lines 1-3: A_n^l = the top N_{n,l} experts of the preference list P_n^l (f_n^l(e)
//!   descending, ties: lower expert index first).
//! * Lines 4-13, per layer: U_l = experts held by no server; while U_l is not empty: sort the
//!   servers by their number of duplicates in A_n^l ascending (line 7; ties: lower index
//!   first); for each server in that order: e = the unassigned expert with the largest
//!   f_n^l(e) (line 9; ties: lower index), e_rep = the least-used duplicate of A_n^l (line 11:
//!   smallest f_n^l, ties: higher index, i.e. the last in the preference order), replace e_rep
//!   by e (line 12), update U_l (line 13). Readings: (h) a duplicate is an expert of A_n^l that
//!   another server also holds, evaluated at the moment of the replacement, so that a
//!   replacement never uncovers an expert; (i) a server without a duplicate is skipped (it has
//!   nothing to replace); (j) the pass stops when U_l empties; (k) the listing indents line 4
//!   inside the server loop of line 1, which would repair coverage after server 1 alone is
//!   initialised (with no other server to duplicate anything); we run the repair once all
//!   servers are initialised, as the text describes ("we iteratively identify unassigned
//!   experts and reallocate them to servers holding redundant experts"); (l) the order of line
//!   7 is ascending as written ("we prioritize placement on servers with fewest duplicate
//!   assignments"); [`RepairOrder::MostDuplicatesFirst`] offers the other reading. Since Alg. 1
//!   leaves N_{l,total} >= E, an uncovered expert implies a duplicate somewhere, so the repair
//!   always ends with every expert covered.
//!
//! ## GPUs: [`assign_gpus`]
//!
//! The paper places experts on servers; z_{n,g}^e also needs a GPU. Our rule, per server: the
//! experts of A_n sorted by (sole holder in the system first, then f_n^l(e) descending, then
//! layer and index), each onto the GPU with the smallest accumulated frequency among those with
//! room for it (ties: lower GPU index), so the GPUs of a server share its local invocations
//! evenly. An expert that fits no GPU (Alg. 1 budgets the server's total memory, not each GPU's)
//! is dropped and reported in [`GpuAssignment::dropped`]; sole holders go first so that drops
//! hit duplicates, which keeps coverage whenever possible.
//!
//! ## Migration (3)-(4): [`migrate`]
//!
//! A sequence of workload windows, each with its own f_n^l(e). Window 0 is served by the plan
//! of its own statistics (the initial placement from historical data, Section III-B). At the
//! start of window w >= 1 the planner re-runs on the statistics observed so far and the
//! candidate P' is adopted iff C(P') + T_mig(P, P') < C(P) (4), with T_mig of (3) =
//! sum_{n,g,e} [z != z'] m_e / speed_{n,g}. Readings: (m) C(.) is in invocations per token
//! while T_mig is in seconds, so C is converted to seconds of the next window:
//! C_s = proxy (2) x tokens per server per window x seconds per remote invocation (Section
//! IV-A: "historical communication and computation time of expert execution as estimation
//! metrics"); (n) the statistics are either the last window ([`MigrationStats::LastWindow`]) or,
//! as Section IV-A describes, everything since the last placement change
//! ([`MigrationStats::SinceLastChange`], token-weighted mean); (o) (3) counts every changed
//! z, removals included, as written; `charge_removals: false` counts loads only;
//! (p) speed_{n,g} is `io_bps` of the GPU, bytes x 8 / io_bps seconds.

use formulations::prism::evaluate::proxy_cost;
use formulations::prism::{ExpertRef, Instance, Placement, ServerId};
use serde::{Deserialize, Serialize};

/// Why a Prism algorithm could not produce a placement.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AlgorithmError {
    /// Alg. 1 cannot reach N_{l,total} >= E for some layer.
    #[error(
        "Alg. 1: layer {layer} gets {total} expert slots < E = {experts} and no layer has \
         slots to spare (the servers' memory holds {capacity} experts; coverage needs {needed})"
    )]
    Coverage {
        /// The layer.
        layer: usize,
        /// Its N_{l,total} when Alg. 1 gave up.
        total: usize,
        /// E.
        experts: usize,
        /// sum_{n,l} N_{n,l}.
        capacity: usize,
        /// L E.
        needed: usize,
    },
    /// A migration needs a field the instance lacks.
    #[error("{field}: {reason}")]
    Missing {
        /// The field.
        field: String,
        /// Why it is needed.
        reason: String,
    },
}

/// Shannon entropy in bits of a row normalised to sum 1 (0 log 0 = 0; 0 for an all-zero row).
pub fn entropy_bits(row: &[f64]) -> f64 {
    let total: f64 = row.iter().sum();
    if total <= 0.0 {
        return 0.0;
    }
    -row.iter()
        .filter(|&&f| f > 0.0)
        .map(|&f| {
            let p = f / total;
            p * p.log2()
        })
        .sum::<f64>()
}

/// Alg. 1's output.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CountAllocation {
    /// v_{n,l}: entropy (bits) of server n's activations at layer l.
    pub entropy: Vec<Vec<f64>>,
    /// N_{n,l} after Step 1 (lines 2-4).
    pub initial: Vec<Vec<usize>>,
    /// N_{n,l} after Step 2 (lines 8-18).
    pub counts: Vec<Vec<usize>>,
    /// Unit moves of Step 2 (line 13-16 executions).
    pub moves: usize,
}

/// Algorithm 1 (module doc): N_{n,l} for every server and layer.
///
/// # Complexity
/// N servers, L layers, E experts per layer. Time: O(N L E) for the entropies (lines 2-4), then
/// at most L E unit moves, each pass over the servers costing O(N L) (line 11's argmax and the
/// memory check), O(N L^2 E) in the worst case, which dominates. Memory: O(N L).
///
/// # Examples
/// ```
/// use formulations::prism::{Gpu, Instance, MoeModel, Server};
/// use formulations::ProblemKind;
///
/// // L = 2 layers of E = 4 one-byte experts. Server 0 (one 4-byte GPU): layer 0 = [1, 0, 0, 0]
/// // (entropy 0), layer 1 uniform (2 bits); server 1 (two 2-byte GPUs): [0.5, 0.5, 0, 0] at both
/// // layers (1 bit each).
/// let gpu = |memory_bytes| Gpu {
///     memory_bytes,
///     compute_base_s: 0.0,
///     compute_per_token_s: 0.0,
///     io_bps: Some(8.0),
/// };
/// let server = |gpus, frequencies| Server { name: String::new(), gpus, frequencies };
/// let instance = Instance {
///     problem: ProblemKind::Prism,
///     name: "two servers".into(),
///     model: MoeModel {
///         name: "m".into(),
///         layers: 2,
///         experts_per_layer: 4,
///         top_k: 1,
///         expert_bytes: vec![1; 2],
///         hidden_bytes: 1,
///     },
///     servers: vec![
///         server(vec![gpu(4)], vec![vec![1.0, 0.0, 0.0, 0.0], vec![0.25; 4]]),
///         server(vec![gpu(2), gpu(2)], vec![vec![0.5, 0.5, 0.0, 0.0]; 2]),
///     ],
///     network: None,
///     workload: None,
/// };
/// use moe_opt::prism::algorithms::alg1_counts;
///
/// // Lines 2-4: server 0 shares its 4 slots 0/2 and 2/2 -> [0, 4], server 1 1/2 and 1/2 ->
/// // [2, 2]; totals [2, 6]. Lines 8-18, layer 0: server 0 lends one of layer 1's slots (6 > 4),
/// // then server 1 (5 > 4): totals [4, 4].
/// let a = alg1_counts(&instance)?;
/// assert_eq!(a.initial, vec![vec![0, 4], vec![2, 2]]);
/// assert_eq!(a.counts, vec![vec![1, 3], vec![3, 1]]);
/// assert_eq!(a.moves, 2);
/// # Ok::<(), moe_opt::prism::algorithms::AlgorithmError>(())
/// ```
pub fn alg1_counts(instance: &Instance) -> Result<CountAllocation, AlgorithmError> {
    let (layers, experts) = (instance.layers(), instance.experts_per_layer());
    let size = |l: usize| instance.model.expert_bytes[l] as f64;
    let memory: Vec<u64> = (0..instance.servers.len())
        .map(|n| instance.server_memory(ServerId(n as u32)))
        .collect();
    let entropy: Vec<Vec<f64>> = instance
        .servers
        .iter()
        .map(|s| s.frequencies.iter().map(|r| entropy_bits(r)).collect())
        .collect();
    // Lines 2-4.
    let initial: Vec<Vec<usize>> = entropy
        .iter()
        .zip(&memory)
        .map(|(v, &m)| {
            let sum: f64 = v.iter().sum();
            (0..layers)
                .map(|l| {
                    let share = if sum > 0.0 {
                        v[l] / sum
                    } else {
                        1.0 / layers as f64
                    };
                    let count = (m as f64 / size(l) * share + 1e-9).floor() as usize;
                    count.min(experts)
                })
                .collect()
        })
        .collect();
    let mut counts = initial.clone();
    // Lines 6-7.
    let mut totals: Vec<usize> = (0..layers)
        .map(|l| counts.iter().map(|c| c[l]).sum())
        .collect();
    let mut order: Vec<usize> = (0..instance.servers.len()).collect();
    order.sort_by(|&a, &b| memory[b].cmp(&memory[a]));
    let used =
        |c: &[usize]| -> f64 { c.iter().enumerate().map(|(l, &k)| k as f64 * size(l)).sum() };
    let mut moves = 0;
    let fail = |l: usize, totals: &[usize]| AlgorithmError::Coverage {
        layer: l,
        total: totals[l],
        experts,
        capacity: totals.iter().sum(),
        needed: layers * experts,
    };
    // Lines 8-18.
    for l in 0..layers {
        while totals[l] < experts {
            let mut progress = false;
            for &n in &order {
                // Line 11 (ties: lowest l').
                let lp = (0..layers)
                    .max_by(|&a, &b| totals[a].cmp(&totals[b]).then(b.cmp(&a)))
                    .expect("L >= 1");
                if totals[lp] <= experts {
                    return Err(fail(l, &totals));
                }
                let c = &counts[n];
                let fits = used(c) - size(lp) + size(l) <= memory[n] as f64 * (1.0 + 1e-12);
                // Line 12, with readings (f).
                if c[lp] > 0 && c[l] < experts && fits {
                    counts[n][lp] -= 1;
                    counts[n][l] += 1;
                    totals[lp] -= 1;
                    totals[l] += 1;
                    moves += 1;
                    progress = true;
                    if totals[l] == experts {
                        break;
                    }
                }
            }
            if !progress {
                return Err(fail(l, &totals));
            }
        }
    }
    Ok(CountAllocation {
        entropy,
        initial,
        counts,
        moves,
    })
}

/// Order of the servers in Alg. 2's coverage repair (line 7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RepairOrder {
    /// Fewest duplicates first, as written (default).
    #[default]
    FewestDuplicatesFirst,
    /// Most duplicates first (the other reading).
    MostDuplicatesFirst,
}

/// One replacement of Alg. 2's line 12.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Repair {
    /// The server.
    pub server: usize,
    /// The layer.
    pub layer: usize,
    /// The unassigned expert placed (e).
    pub added: usize,
    /// The duplicate it replaced (e_rep).
    pub removed: usize,
}

/// Alg. 2's output.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Assignment {
    /// A_n^l: `sets[n][l]`, the experts of layer l on server n (initial top-N order, repairs
    /// in place).
    pub sets: Vec<Vec<Vec<usize>>>,
    /// Every replacement, in order.
    pub repairs: Vec<Repair>,
}

impl Assignment {
    /// U_n(A_n) of Theorem 1: the local frequency mass of server n.
    pub fn utility(&self, instance: &Instance, n: usize) -> f64 {
        let f = &instance.servers[n].frequencies;
        self.sets[n]
            .iter()
            .enumerate()
            .map(|(l, set)| set.iter().map(|&e| f[l][e]).sum::<f64>())
            .sum()
    }
}

/// The top `k` experts of a frequency row: f descending, ties to the lower index.
pub fn top_k(row: &[f64], k: usize) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..row.len()).collect();
    idx.sort_by(|&a, &b| row[b].total_cmp(&row[a]).then(a.cmp(&b)));
    idx.truncate(k);
    idx
}

/// Algorithm 2 (module doc) on the counts `counts[n][l]` of Alg. 1.
///
/// # Complexity
/// N servers, L layers, E experts per layer. Time: O(N L E log E) for the preference lists
/// (lines 1-3); per layer at most E repair passes, each O(N E) (duplicate counts, line 9's and
/// line 11's scans), O(N L E^2) in all, which dominates. Memory: O(N L E).
///
/// # Examples
/// The instance of [`alg1_counts`]'s example (two servers, L = 2, E = 4, one-byte experts).
///
/// ```
/// # use formulations::prism::{Gpu, Instance, MoeModel, Server};
/// # use formulations::ProblemKind;
/// #
/// # // L = 2 layers of E = 4 one-byte experts. Server 0 (one 4-byte GPU): layer 0 = [1, 0, 0, 0]
/// # // (entropy 0), layer 1 uniform (2 bits); server 1 (two 2-byte GPUs): [0.5, 0.5, 0, 0] at both
/// # // layers (1 bit each).
/// # let gpu = |memory_bytes| Gpu {
/// #     memory_bytes,
/// #     compute_base_s: 0.0,
/// #     compute_per_token_s: 0.0,
/// #     io_bps: Some(8.0),
/// # };
/// # let server = |gpus, frequencies| Server { name: String::new(), gpus, frequencies };
/// # let instance = Instance {
/// #     problem: ProblemKind::Prism,
/// #     name: "two servers".into(),
/// #     model: MoeModel {
/// #         name: "m".into(),
/// #         layers: 2,
/// #         experts_per_layer: 4,
/// #         top_k: 1,
/// #         expert_bytes: vec![1; 2],
/// #         hidden_bytes: 1,
/// #     },
/// #     servers: vec![
/// #         server(vec![gpu(4)], vec![vec![1.0, 0.0, 0.0, 0.0], vec![0.25; 4]]),
/// #         server(vec![gpu(2), gpu(2)], vec![vec![0.5, 0.5, 0.0, 0.0]; 2]),
/// #     ],
/// #     network: None,
/// #     workload: None,
/// # };
/// use moe_opt::prism::algorithms::{alg1_counts, alg2_assign, RepairOrder};
///
/// let counts = alg1_counts(&instance)?.counts;
/// let a = alg2_assign(&instance, &counts, RepairOrder::FewestDuplicatesFirst);
/// for l in 0..2 {
///     // A_n^l has N_{n,l} experts, and the repair leaves every expert of the layer covered.
///     for n in 0..2 {
///         assert_eq!(a.sets[n][l].len(), counts[n][l]);
///     }
///     for e in 0..4 {
///         assert!(a.sets.iter().any(|s| s[l].contains(&e)));
///     }
/// }
/// # Ok::<(), moe_opt::prism::algorithms::AlgorithmError>(())
/// ```
pub fn alg2_assign(instance: &Instance, counts: &[Vec<usize>], order: RepairOrder) -> Assignment {
    let (layers, experts, servers) = (
        instance.layers(),
        instance.experts_per_layer(),
        instance.servers.len(),
    );
    let freq = |n: usize, l: usize, e: usize| instance.servers[n].frequencies[l][e];
    // Lines 1-3.
    let mut sets: Vec<Vec<Vec<usize>>> = (0..servers)
        .map(|n| {
            (0..layers)
                .map(|l| top_k(&instance.servers[n].frequencies[l], counts[n][l]))
                .collect()
        })
        .collect();
    let mut repairs = Vec::new();
    for l in 0..layers {
        let mut holders = vec![0usize; experts];
        for set in &sets {
            for &e in &set[l] {
                holders[e] += 1;
            }
        }
        // Line 5.
        let mut unassigned: Vec<usize> = (0..experts).filter(|&e| holders[e] == 0).collect();
        while !unassigned.is_empty() {
            // Line 7.
            let dups: Vec<usize> = sets
                .iter()
                .map(|s| s[l].iter().filter(|&&e| holders[e] >= 2).count())
                .collect();
            let mut server_order: Vec<usize> = (0..servers).collect();
            match order {
                RepairOrder::FewestDuplicatesFirst => server_order.sort_by_key(|&n| dups[n]),
                RepairOrder::MostDuplicatesFirst => {
                    server_order.sort_by_key(|&n| std::cmp::Reverse(dups[n]))
                }
            }
            let mut progress = false;
            for n in server_order {
                if unassigned.is_empty() {
                    break;
                }
                // Line 11: the least-used current duplicate (ties: higher index).
                let Some(pos) = (0..sets[n][l].len())
                    .filter(|&i| holders[sets[n][l][i]] >= 2)
                    .min_by(|&a, &b| {
                        let (x, y) = (sets[n][l][a], sets[n][l][b]);
                        freq(n, l, x).total_cmp(&freq(n, l, y)).then(y.cmp(&x))
                    })
                else {
                    continue;
                };
                // Line 9 (ties: lower index).
                let (ui, &e) = unassigned
                    .iter()
                    .enumerate()
                    .max_by(|(_, &a), (_, &b)| {
                        freq(n, l, a).total_cmp(&freq(n, l, b)).then(b.cmp(&a))
                    })
                    .expect("not empty");
                let removed = sets[n][l][pos];
                // Line 12.
                sets[n][l][pos] = e;
                holders[removed] -= 1;
                holders[e] += 1;
                // Line 13.
                unassigned.remove(ui);
                repairs.push(Repair {
                    server: n,
                    layer: l,
                    added: e,
                    removed,
                });
                progress = true;
            }
            if !progress {
                // Only when N_{l,total} < E, which Alg. 1 rules out.
                break;
            }
        }
    }
    Assignment { sets, repairs }
}

/// The GPU assignment of the server-level sets.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuAssignment {
    /// z_{n,g}^e.
    pub placement: Placement,
    /// Experts of A_n that fit no GPU of server n, as (server, expert).
    pub dropped: Vec<(ServerId, ExpertRef)>,
}

/// Places each server's experts `sets[n][l]` on its GPUs (module doc, "GPUs").
///
/// # Complexity
/// K_n experts in server n's sets, G_n its GPUs. Time: O(sum_n K_n (log K_n + G_n)) (one sort
/// per server, then a scan of its GPUs per expert). Memory: O(L E + max_n K_n).
///
/// # Examples
/// The instance of [`alg1_counts`]'s example (two servers, L = 2, E = 4, one-byte experts).
///  Server 0 takes 4 one-byte experts on one 4-byte GPU, server 1 four on two 2-byte GPUs:
/// everything fits.
/// ```
/// # use formulations::prism::{Gpu, Instance, MoeModel, Server};
/// # use formulations::ProblemKind;
/// #
/// # // L = 2 layers of E = 4 one-byte experts. Server 0 (one 4-byte GPU): layer 0 = [1, 0, 0, 0]
/// # // (entropy 0), layer 1 uniform (2 bits); server 1 (two 2-byte GPUs): [0.5, 0.5, 0, 0] at both
/// # // layers (1 bit each).
/// # let gpu = |memory_bytes| Gpu {
/// #     memory_bytes,
/// #     compute_base_s: 0.0,
/// #     compute_per_token_s: 0.0,
/// #     io_bps: Some(8.0),
/// # };
/// # let server = |gpus, frequencies| Server { name: String::new(), gpus, frequencies };
/// # let instance = Instance {
/// #     problem: ProblemKind::Prism,
/// #     name: "two servers".into(),
/// #     model: MoeModel {
/// #         name: "m".into(),
/// #         layers: 2,
/// #         experts_per_layer: 4,
/// #         top_k: 1,
/// #         expert_bytes: vec![1; 2],
/// #         hidden_bytes: 1,
/// #     },
/// #     servers: vec![
/// #         server(vec![gpu(4)], vec![vec![1.0, 0.0, 0.0, 0.0], vec![0.25; 4]]),
/// #         server(vec![gpu(2), gpu(2)], vec![vec![0.5, 0.5, 0.0, 0.0]; 2]),
/// #     ],
/// #     network: None,
/// #     workload: None,
/// # };
/// use moe_opt::prism::algorithms::{alg1_counts, alg2_assign, assign_gpus, RepairOrder};
///
/// let counts = alg1_counts(&instance)?.counts;
/// let sets = alg2_assign(&instance, &counts, RepairOrder::default()).sets;
/// let gpus = assign_gpus(&instance, &sets);
/// assert!(gpus.dropped.is_empty());
/// for (n, server) in instance.servers.iter().enumerate() {
///     for (g, gpu) in server.gpus.iter().enumerate() {
///         assert!(gpus.placement.gpus[n][g].len() as u64 <= gpu.memory_bytes);
///     }
/// }
/// # Ok::<(), moe_opt::prism::algorithms::AlgorithmError>(())
/// ```
pub fn assign_gpus(instance: &Instance, sets: &[Vec<Vec<usize>>]) -> GpuAssignment {
    let experts = instance.experts_per_layer();
    let mut holders = vec![0usize; instance.expert_count()];
    for set in sets {
        for (l, layer) in set.iter().enumerate() {
            for &e in layer {
                holders[l * experts + e] += 1;
            }
        }
    }
    let mut placement = Placement::empty_for(instance);
    let mut dropped = Vec::new();
    for (n, server) in instance.servers.iter().enumerate() {
        let mut items: Vec<(usize, usize)> = sets[n]
            .iter()
            .enumerate()
            .flat_map(|(l, layer)| layer.iter().map(move |&e| (l, e)))
            .collect();
        let f = &server.frequencies;
        items.sort_by(|&(la, ea), &(lb, eb)| {
            let sole_a = holders[la * experts + ea] == 1;
            let sole_b = holders[lb * experts + eb] == 1;
            sole_b
                .cmp(&sole_a)
                .then(f[lb][eb].total_cmp(&f[la][ea]))
                .then((la, ea).cmp(&(lb, eb)))
        });
        let mut free: Vec<u64> = server.gpus.iter().map(|g| g.memory_bytes).collect();
        let mut load = vec![0.0f64; server.gpus.len()];
        for (l, e) in items {
            let bytes = instance.model.expert_bytes[l];
            let r = ExpertRef {
                layer: l as u32,
                expert: e as u32,
            };
            let best = (0..free.len())
                .filter(|&g| free[g] >= bytes)
                .min_by(|&a, &b| load[a].total_cmp(&load[b]).then(a.cmp(&b)));
            match best {
                Some(g) => {
                    free[g] -= bytes;
                    load[g] += f[l][e];
                    placement.insert(ServerId(n as u32), g, r);
                }
                None => {
                    holders[l * experts + e] -= 1;
                    dropped.push((ServerId(n as u32), r));
                }
            }
        }
    }
    GpuAssignment { placement, dropped }
}

/// The whole pipeline's output.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PrismOutcome {
    /// Alg. 1.
    pub allocation: CountAllocation,
    /// Alg. 2.
    pub assignment: Assignment,
    /// The placement on GPUs and the experts that did not fit.
    pub gpus: GpuAssignment,
}

/// Options of the pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PrismOptions {
    /// Server order of Alg. 2's repair.
    pub repair_order: RepairOrder,
}

/// Alg. 1, Alg. 2 and the GPU assignment.
///
/// # Complexity
/// The sum of its three steps' ([`alg1_counts`], [`alg2_assign`], [`assign_gpus`]); Alg. 2's
/// O(N L E^2) dominates. Memory: O(N L E).
///
/// # Examples
/// The instance of [`alg1_counts`]'s example (two servers, L = 2, E = 4, one-byte experts).
///  Every expert of every layer ends on some GPU.
/// ```
/// # use formulations::prism::{Gpu, Instance, MoeModel, Server};
/// # use formulations::ProblemKind;
/// #
/// # // L = 2 layers of E = 4 one-byte experts. Server 0 (one 4-byte GPU): layer 0 = [1, 0, 0, 0]
/// # // (entropy 0), layer 1 uniform (2 bits); server 1 (two 2-byte GPUs): [0.5, 0.5, 0, 0] at both
/// # // layers (1 bit each).
/// # let gpu = |memory_bytes| Gpu {
/// #     memory_bytes,
/// #     compute_base_s: 0.0,
/// #     compute_per_token_s: 0.0,
/// #     io_bps: Some(8.0),
/// # };
/// # let server = |gpus, frequencies| Server { name: String::new(), gpus, frequencies };
/// # let instance = Instance {
/// #     problem: ProblemKind::Prism,
/// #     name: "two servers".into(),
/// #     model: MoeModel {
/// #         name: "m".into(),
/// #         layers: 2,
/// #         experts_per_layer: 4,
/// #         top_k: 1,
/// #         expert_bytes: vec![1; 2],
/// #         hidden_bytes: 1,
/// #     },
/// #     servers: vec![
/// #         server(vec![gpu(4)], vec![vec![1.0, 0.0, 0.0, 0.0], vec![0.25; 4]]),
/// #         server(vec![gpu(2), gpu(2)], vec![vec![0.5, 0.5, 0.0, 0.0]; 2]),
/// #     ],
/// #     network: None,
/// #     workload: None,
/// # };
/// use formulations::prism::ExpertRef;
/// use moe_opt::prism::algorithms::{prism, PrismOptions};
///
/// let out = prism(&instance, PrismOptions::default())?;
/// assert!(out.gpus.dropped.is_empty());
/// for (layer, expert) in (0..2).flat_map(|l| (0..4).map(move |e| (l, e))) {
///     let r = ExpertRef { layer, expert };
///     assert!(out.gpus.placement.gpus.iter().flatten().any(|list| list.contains(&r)));
/// }
/// # Ok::<(), moe_opt::prism::algorithms::AlgorithmError>(())
/// ```
pub fn prism(instance: &Instance, options: PrismOptions) -> Result<PrismOutcome, AlgorithmError> {
    let allocation = alg1_counts(instance)?;
    let assignment = alg2_assign(instance, &allocation.counts, options.repair_order);
    let gpus = assign_gpus(instance, &assignment.sets);
    Ok(PrismOutcome {
        allocation,
        assignment,
        gpus,
    })
}

/// Which statistics the planner sees at a window boundary (reading (n)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MigrationStats {
    /// Everything since the last placement change (Section IV-A), the default.
    #[default]
    SinceLastChange,
    /// The last window only.
    LastWindow,
}

/// Parameters of the migration rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MigrationConfig {
    /// Tokens each server receives per window.
    pub tokens_per_window: f64,
    /// Seconds one remote invocation costs (reading (m)).
    pub remote_invocation_s: f64,
    /// Statistics the planner sees.
    pub stats: MigrationStats,
    /// Charge removed experts in (3) too (as written).
    pub charge_removals: bool,
}

/// One window of a migration run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WindowReport {
    /// Window index.
    pub window: usize,
    /// C(P) of (4) at the window's start, seconds (null for window 0).
    pub current_cost_s: Option<f64>,
    /// C(P') of (4), seconds (null for window 0).
    pub candidate_cost_s: Option<f64>,
    /// T_mig(P, P') of (3), seconds (null for window 0).
    pub migration_s: Option<f64>,
    /// Whether (4) held and P' was adopted.
    pub migrated: bool,
    /// z entries that changed (3).
    pub changed_entries: usize,
    /// Bytes loaded onto GPUs by the migration.
    pub transferred_bytes: u64,
    /// Proxy cost (2) of the window's own frequencies under the placement serving it.
    pub served_proxy_cost: f64,
    /// The same in seconds (x tokens per window x seconds per remote invocation).
    pub served_cost_s: f64,
}

/// A migration run over a window sequence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MigrationRun {
    /// One line per window.
    pub windows: Vec<WindowReport>,
    /// Number of migrations.
    pub migrations: usize,
    /// Sum of the served costs, seconds.
    pub total_served_cost_s: f64,
    /// Sum of the migration times of adopted plans, seconds.
    pub total_migration_s: f64,
    /// Bytes transferred by all migrations.
    pub total_transferred_bytes: u64,
}

/// The instance with other frequencies.
pub fn with_frequencies(instance: &Instance, freq: &[Vec<Vec<f64>>]) -> Instance {
    let mut inst = instance.clone();
    for (s, f) in inst.servers.iter_mut().zip(freq) {
        s.frequencies = f.clone();
    }
    inst
}

/// T_mig of (3), changed entries and bytes loaded.
pub fn migration_cost(
    instance: &Instance,
    from: &Placement,
    to: &Placement,
    charge_removals: bool,
) -> Result<(f64, usize, u64), AlgorithmError> {
    let (mut seconds, mut changed, mut bytes) = (0.0, 0, 0u64);
    for (n, server) in instance.servers.iter().enumerate() {
        for (g, gpu) in server.gpus.iter().enumerate() {
            let added = to.gpus[n][g]
                .iter()
                .filter(|r| !from.gpus[n][g].contains(r));
            let removed = from.gpus[n][g]
                .iter()
                .filter(|r| !to.gpus[n][g].contains(r));
            let mut entries: Vec<(ExpertRef, bool)> = added.map(|&r| (r, true)).collect();
            entries.extend(removed.map(|&r| (r, false)));
            if entries.is_empty() {
                continue;
            }
            let speed = gpu.io_bps.ok_or_else(|| AlgorithmError::Missing {
                field: format!("servers[{n}].gpus[{g}].io_bps"),
                reason: "the migration cost (3) needs speed_{n,g}".into(),
            })?;
            for (r, is_load) in entries {
                let m = instance.expert_bytes(r);
                changed += 1;
                if is_load {
                    bytes += m;
                }
                if is_load || charge_removals {
                    seconds += 8.0 * m as f64 / speed;
                }
            }
        }
    }
    Ok((seconds, changed, bytes))
}

/// Runs the migration rule (3)-(4) over `windows[w][n][l][e]` (module doc) with `planner`
/// computing a placement from an instance carrying the observed frequencies.
///
/// # Complexity
/// W windows, N servers, L layers, E experts per layer, P the planner's cost. Time: W - 1
/// planner calls, and per window two proxy costs (2), T_mig (3) (O(k^2) per GPU of k experts)
/// and the mean of the statistics, O(W N L E) with [`MigrationStats::SinceLastChange`] (O(N L E)
/// with the last window); O(W P + W^2 N L E) in all, the planner usually dominating. Memory:
/// O(N L E) for the statistics and two placements.
///
/// # Examples
/// The instance of [`alg1_counts`]'s example (two servers, L = 2, E = 4, one-byte experts).
///  With the same statistics in every window the candidate P' is the current plan, so
/// T_mig = 0 and (4), C(P') + T_mig < C(P), never holds.
/// ```
/// # use formulations::prism::{Gpu, Instance, MoeModel, Server};
/// # use formulations::ProblemKind;
/// #
/// # // L = 2 layers of E = 4 one-byte experts. Server 0 (one 4-byte GPU): layer 0 = [1, 0, 0, 0]
/// # // (entropy 0), layer 1 uniform (2 bits); server 1 (two 2-byte GPUs): [0.5, 0.5, 0, 0] at both
/// # // layers (1 bit each).
/// # let gpu = |memory_bytes| Gpu {
/// #     memory_bytes,
/// #     compute_base_s: 0.0,
/// #     compute_per_token_s: 0.0,
/// #     io_bps: Some(8.0),
/// # };
/// # let server = |gpus, frequencies| Server { name: String::new(), gpus, frequencies };
/// # let instance = Instance {
/// #     problem: ProblemKind::Prism,
/// #     name: "two servers".into(),
/// #     model: MoeModel {
/// #         name: "m".into(),
/// #         layers: 2,
/// #         experts_per_layer: 4,
/// #         top_k: 1,
/// #         expert_bytes: vec![1; 2],
/// #         hidden_bytes: 1,
/// #     },
/// #     servers: vec![
/// #         server(vec![gpu(4)], vec![vec![1.0, 0.0, 0.0, 0.0], vec![0.25; 4]]),
/// #         server(vec![gpu(2), gpu(2)], vec![vec![0.5, 0.5, 0.0, 0.0]; 2]),
/// #     ],
/// #     network: None,
/// #     workload: None,
/// # };
/// use moe_opt::prism::algorithms::{migrate, prism, MigrationConfig, MigrationStats};
///
/// let planner = |i: &Instance| {
///     prism(i, Default::default())
///         .map(|out| out.gpus.placement)
///         .map_err(|e| e.to_string())
/// };
/// let frequencies: Vec<_> = instance.servers.iter().map(|s| s.frequencies.clone()).collect();
/// let config = MigrationConfig {
///     tokens_per_window: 100.0,
///     remote_invocation_s: 0.01,
///     stats: MigrationStats::SinceLastChange,
///     charge_removals: true,
/// };
/// let run = migrate(&instance, &vec![frequencies; 3], &config, &planner)?;
/// assert_eq!((run.windows.len(), run.migrations), (3, 0));
/// assert_eq!(run.total_migration_s, 0.0);
/// # Ok::<(), String>(())
/// ```
pub fn migrate(
    instance: &Instance,
    windows: &[Vec<Vec<Vec<f64>>>],
    config: &MigrationConfig,
    planner: &dyn Fn(&Instance) -> Result<Placement, String>,
) -> Result<MigrationRun, String> {
    let scale = config.tokens_per_window * config.remote_invocation_s;
    let mut out = Vec::with_capacity(windows.len());
    let Some(first) = windows.first() else {
        return Err("windows: at least one window is needed".into());
    };
    let mut current = planner(&with_frequencies(instance, first))?;
    let mut since_change: Vec<usize> = vec![0];
    let (mut migrations, mut total_mig, mut total_bytes) = (0, 0.0, 0u64);
    for (w, freq) in windows.iter().enumerate() {
        let mut line = WindowReport {
            window: w,
            current_cost_s: None,
            candidate_cost_s: None,
            migration_s: None,
            migrated: false,
            changed_entries: 0,
            transferred_bytes: 0,
            served_proxy_cost: 0.0,
            served_cost_s: 0.0,
        };
        if w > 0 {
            let observed: Vec<&Vec<Vec<Vec<f64>>>> = match config.stats {
                MigrationStats::LastWindow => vec![&windows[w - 1]],
                MigrationStats::SinceLastChange => {
                    since_change.iter().map(|&i| &windows[i]).collect()
                }
            };
            let stats = mean_frequencies(&observed);
            let seen = with_frequencies(instance, &stats);
            let candidate = planner(&seen)?;
            let c_now = proxy_cost(&seen, &current) * scale;
            let c_new = proxy_cost(&seen, &candidate) * scale;
            let (t_mig, changed, bytes) =
                migration_cost(instance, &current, &candidate, config.charge_removals)
                    .map_err(|e| e.to_string())?;
            line.current_cost_s = Some(c_now);
            line.candidate_cost_s = Some(c_new);
            line.migration_s = Some(t_mig);
            // (4).
            if c_new + t_mig < c_now {
                line.migrated = true;
                line.changed_entries = changed;
                line.transferred_bytes = bytes;
                migrations += 1;
                total_mig += t_mig;
                total_bytes += bytes;
                current = candidate;
                since_change.clear();
            }
            since_change.push(w);
        }
        line.served_proxy_cost = proxy_cost(&with_frequencies(instance, freq), &current);
        line.served_cost_s = line.served_proxy_cost * scale;
        out.push(line);
    }
    let total_served = out.iter().map(|l| l.served_cost_s).sum();
    Ok(MigrationRun {
        windows: out,
        migrations,
        total_served_cost_s: total_served,
        total_migration_s: total_mig,
        total_transferred_bytes: total_bytes,
    })
}

/// Entry-wise mean of equally weighted windows (every window has the same tokens per server).
fn mean_frequencies(windows: &[&Vec<Vec<Vec<f64>>>]) -> Vec<Vec<Vec<f64>>> {
    let k = windows.len() as f64;
    let mut mean = windows[0].clone();
    for w in &windows[1..] {
        for (a, b) in mean
            .iter_mut()
            .flatten()
            .flatten()
            .zip(w.iter().flatten().flatten())
        {
            *a += b;
        }
    }
    for x in mean.iter_mut().flatten().flatten() {
        *x /= k;
    }
    mean
}

/// A window sequence with a drift: `windows` copies of the instance's frequencies, where from
/// window `drift_at` on, server `server`'s rows become `(1 - mix) f_server + mix f_to` (its task
/// mix moves to server `to`'s).
pub fn drift_windows(
    instance: &Instance,
    windows: usize,
    drift_at: usize,
    server: usize,
    to: usize,
    mix: f64,
) -> Vec<Vec<Vec<Vec<f64>>>> {
    let base: Vec<Vec<Vec<f64>>> = instance
        .servers
        .iter()
        .map(|s| s.frequencies.clone())
        .collect();
    let mut drifted = base.clone();
    for (l, row) in drifted[server].iter_mut().enumerate() {
        for (e, x) in row.iter_mut().enumerate() {
            *x = (1.0 - mix) * *x + mix * base[to][l][e];
        }
    }
    (0..windows)
        .map(|w| {
            if w < drift_at {
                base.clone()
            } else {
                drifted.clone()
            }
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests;
