//! The balance methods that are not a MILP, one layer at a time: the greedy (EPLB's building
//! blocks in f64, respecting the options), the local search started from the best of the
//! greedy and EPLB's plans, and exhaustive search (the test oracle). Every plan is a layer's
//! `phy2log` ([`formulations::balance::Plan`]); the evaluator judges them all.
//!
//! * [`greedy`]: counts by the largest load per replica (`replicate_experts`' rule, at most
//!   [`Shape::cap`] replicas each), then the replicas, heaviest first, each onto the least
//!   loaded GPU with a free slot that does not hold the expert when one replica per GPU is
//!   asked (`balanced_packing`'s rule). Hierarchical: EPLB's three steps, groups onto nodes by
//!   the same packing rule first. [`greedy_with`] takes some experts' counts as given.
//! * [`local_search`]: from a plan, moves that lower the busiest GPU while no other GPU rises to
//!   its load: a swap of two replicas between the busiest GPU and another, a slot handed from
//!   one expert to another (a count change that moves the load of both experts' replicas), or
//!   an exchange of two replicas of the busiest GPU with two of another; failing those, a
//!   re-split of two GPUs' replicas that lowers the larger of their loads (up to 6 slots per
//!   GPU), which lets the search cross plateaus where several GPUs share the top load.
//!   Under the options, a move that breaks one is not tried (the node of a slot is kept when
//!   hierarchical). It stops at a plan no move improves.
//! * [`exhaustive`]: every choice of a multiset of m experts for every GPU (at most
//!   [`MAX_EXHAUSTIVE`] combinations), each checked and scored by the evaluator: independent of
//!   the counts, the packing and the MILP, so the tests compare them with it.

use formulations::balance::evaluate::{check_layer, gpu_loads, max_load};
use formulations::balance::model::replica_counts;
use formulations::balance::Shape;
use formulations::Error;

/// The least relative drop of the busiest GPU a local-search move must make (rounding of the
/// loads must not let moves cycle).
const IMPROVEMENT: f64 = 1e-12;

/// The most slots per GPU local search re-splits two GPUs at (C(2 m, m) / 2 splits a pair: 462
/// at m = 6).
const MAX_RESPLIT: usize = 6;

/// Most GPU-content combinations exhaustive search visits per layer.
pub const MAX_EXHAUSTIVE: f64 = 2e6;

/// Counts of `w.len()` experts in `slots` slots: one each, then each further slot to the expert
/// with the largest load per replica among those below `cap` (first on ties).
///
/// # Complexity
/// E experts, S slots. Time: O((S - E) E) (a scan per redundant slot). Memory: O(E).
///
/// # Examples
/// ```
/// use moe_opt::balance::algorithms::replicate;
///
/// // Loads per replica 6, 3, 2, 1: slot 5 goes to expert 0 (then 3 per replica, at the cap 2),
/// // slot 6 to expert 1.
/// assert_eq!(replicate(&[6.0, 3.0, 2.0, 1.0], 6, 2), vec![2, 2, 1, 1]);
/// ```
pub fn replicate(w: &[f64], slots: usize, cap: usize) -> Vec<usize> {
    replicate_with(w, slots, cap, &[]).expect("validation keeps slots within the caps")
}

/// [`replicate`] with the counts of some experts given (`fixed`: expert, count): the others
/// share the remaining slots by the same rule. `None` when the given counts leave the others
/// too few slots, or too many for their caps.
///
/// # Complexity
/// As [`replicate`], plus O(|fixed|) per scan.
///
/// # Examples
/// ```
/// use moe_opt::balance::algorithms::replicate_with;
///
/// // Expert 0 held at one replica: slot 5 goes to expert 1 (3 per replica), slot 6 to expert 2
/// // (2; expert 1 is at the cap).
/// assert_eq!(replicate_with(&[6.0, 3.0, 2.0, 1.0], 6, 2, &[(0, 1)]), Some(vec![1, 2, 2, 1]));
/// assert_eq!(replicate_with(&[6.0, 3.0, 2.0, 1.0], 4, 2, &[(0, 2)]), None);
/// ```
pub fn replicate_with(
    w: &[f64],
    slots: usize,
    cap: usize,
    fixed: &[(usize, usize)],
) -> Option<Vec<usize>> {
    let mut c = vec![1usize; w.len()];
    for &(e, n) in fixed {
        c[e] = n;
    }
    let given = |e: usize| fixed.iter().any(|&(f, _)| f == e);
    let used: usize = c.iter().sum();
    for _ in used..slots {
        let best = (0..w.len())
            .filter(|&e| !given(e) && c[e] < cap)
            .max_by(|&a, &b| {
                (w[a] / c[a] as f64)
                    .total_cmp(&(w[b] / c[b] as f64))
                    .then(b.cmp(&a))
            })?;
        c[best] += 1;
    }
    (used <= slots).then_some(c)
}

/// Replicas of `experts` (with `counts`, loads `w`) onto `gpus` GPUs of `m` slots: heaviest
/// first, each to the least loaded GPU with room (and without the expert when `one_per_gpu`);
/// a replica that finds no such GPU trades places with a replica on a GPU that has room
/// (`place_with_swap`). `None` if even that fails. Returns the experts of each GPU.
///
/// # Complexity
/// R replicas (the sum of the counts), G GPUs of m slots. Time: O(R log R + R G m) (the sort,
/// then for each replica the GPUs with room and, one per GPU, the membership test), plus
/// O((G m)^2 + R) for each replica that needs `place_with_swap`. Memory: O(R + G m).
///
/// # Examples
/// ```
/// use moe_opt::balance::algorithms::pack;
///
/// // Replica loads 3, 3 (expert 0), 2 (2), 1.5, 1.5 (1), 1 (3), heaviest first onto the
/// // lightest GPU that has room and lacks the expert: GPU 0 = 0, 2, 1 (6.5), GPU 1 = 0, 1, 3
/// // (5.5).
/// let bins = pack(&[6.0, 3.0, 2.0, 1.0], &[0, 1, 2, 3], &[2, 2, 1, 1], 2, 3, true);
/// assert_eq!(bins, Some(vec![vec![0, 2, 1], vec![0, 1, 3]]));
/// ```
pub fn pack(
    w: &[f64],
    experts: &[usize],
    counts: &[usize],
    gpus: usize,
    m: usize,
    one_per_gpu: bool,
) -> Option<Vec<Vec<usize>>> {
    let mut items: Vec<usize> = experts
        .iter()
        .flat_map(|&e| std::iter::repeat_n(e, counts[e]))
        .collect();
    let load = |e: usize| w[e] / counts[e] as f64;
    items.sort_by(|&a, &b| load(b).total_cmp(&load(a)).then(a.cmp(&b)));
    let mut bins: Vec<Vec<usize>> = vec![Vec::with_capacity(m); gpus];
    let mut loads = vec![0.0f64; gpus];
    for e in items {
        let best = (0..gpus)
            .filter(|&g| bins[g].len() < m && !(one_per_gpu && bins[g].contains(&e)))
            .min_by(|&a, &b| loads[a].total_cmp(&loads[b]));
        match best {
            Some(g) => {
                bins[g].push(e);
                loads[g] += load(e);
            }
            None => {
                place_with_swap(&mut bins, e, m)?;
                for (g, bin) in bins.iter().enumerate() {
                    loads[g] = bin.iter().map(|&f| load(f)).sum();
                }
            }
        }
    }
    Some(bins)
}

/// Puts `e` on a full GPU g without it, moving one of g's replicas f to a GPU h with room
/// that does not hold f (one replica per GPU).
fn place_with_swap(bins: &mut [Vec<usize>], e: usize, m: usize) -> Option<()> {
    let open: Vec<usize> = (0..bins.len()).filter(|&h| bins[h].len() < m).collect();
    for g in 0..bins.len() {
        if bins[g].len() < m || bins[g].contains(&e) {
            continue;
        }
        for i in 0..bins[g].len() {
            let f = bins[g][i];
            if let Some(&h) = open.iter().find(|&&h| !bins[h].contains(&f)) {
                bins[g][i] = e;
                bins[h].push(f);
                return Some(());
            }
        }
    }
    None
}

/// Items into `packs` packs of `items.len() / packs` each, heaviest first into the lightest
/// pack with room (EPLB's `balanced_packing` rule in f64). Returns each item's pack.
fn balanced_packing(weights: &[f64], packs: usize) -> Vec<usize> {
    let per = weights.len() / packs;
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|&a, &b| weights[b].total_cmp(&weights[a]).then(a.cmp(&b)));
    let mut sum = vec![0.0f64; packs];
    let mut size = vec![0; packs];
    let mut pack = vec![0; weights.len()];
    for i in order {
        let p = (0..packs)
            .filter(|&p| size[p] < per)
            .min_by(|&a, &b| sum[a].total_cmp(&sum[b]))
            .expect("room for every item");
        pack[i] = p;
        sum[p] += weights[i];
        size[p] += 1;
    }
    pack
}

/// The greedy plan of one layer (module doc); `None` if the packing finds no feasible place.
///
/// # Complexity
/// E experts, S slots, G GPUs (m = S / G slots each), K groups and N nodes when hierarchical.
/// Time: O(K log K + K N) for the groups, O((S - E) E) for the counts and [`pack`]'s
/// O(S log S + S G m) for the replicas (with its swap fallback), which dominates. Memory: O(S + E).
///
/// # Examples
/// ```
/// use formulations::balance::Shape;
///
/// // E = 4 experts in S = 6 slots on G = 2 GPUs (m = 3 slots each), one replica per GPU (so at
/// // most 2 replicas each); loads 6, 3, 2, 1.
/// let shape = Shape {
///     experts: 4,
///     slots: 6,
///     gpus: 2,
///     nodes: 1,
///     groups: 1,
///     one_per_gpu: true,
///     hierarchical: false,
/// };
/// let w = [6.0, 3.0, 2.0, 1.0];
/// use formulations::balance::evaluate::{check_layer, max_load};
/// use moe_opt::balance::algorithms::greedy;
///
/// let plan = greedy(&shape, &w).expect("a feasible packing");
/// assert!(check_layer(&shape, &plan).is_ok());
/// // The optimum by hand: expert 0 needs both GPUs (alone, its GPU carries at least
/// // 6 + 1 + 0.5); then one other expert doubles, and the best is 3 + 1.5 + 2 = 6.5.
/// assert!(max_load(&shape, &w, &plan) >= 6.5);
/// ```
pub fn greedy(shape: &Shape, w: &[f64]) -> Option<Vec<usize>> {
    greedy_with(shape, w, &[])
}

/// [`greedy`] with the counts of some experts given ([`replicate_with`]; when hierarchical,
/// within their node); `None` also when the given counts do not fit.
pub fn greedy_with(shape: &Shape, w: &[f64], fixed: &[(usize, usize)]) -> Option<Vec<usize>> {
    let m = shape.per_gpu();
    let cap = shape.cap();
    let nodes_experts: Vec<Vec<usize>> = if shape.hierarchical {
        let gs = shape.group_size();
        let group_loads: Vec<f64> = w.chunks(gs).map(|g| g.iter().sum()).collect();
        let node_of_group = balanced_packing(&group_loads, shape.nodes);
        (0..shape.nodes)
            .map(|n| {
                (0..shape.experts)
                    .filter(|&e| node_of_group[shape.group_of(e)] == n)
                    .collect()
            })
            .collect()
    } else {
        vec![(0..shape.experts).collect()]
    };
    let slots_per_node = shape.slots / nodes_experts.len();
    let gpus_per_node = shape.gpus / nodes_experts.len();
    let mut counts = vec![0; shape.experts];
    let mut plan = Vec::with_capacity(shape.slots);
    for experts in &nodes_experts {
        let sub: Vec<f64> = experts.iter().map(|&e| w[e]).collect();
        let sub_fixed: Vec<(usize, usize)> = fixed
            .iter()
            .filter_map(|&(e, n)| Some((experts.iter().position(|&x| x == e)?, n)))
            .collect();
        let sub_counts = replicate_with(&sub, slots_per_node, cap, &sub_fixed)?;
        for (&e, c) in experts.iter().zip(sub_counts) {
            counts[e] = c;
        }
        let bins = pack(w, experts, &counts, gpus_per_node, m, shape.one_per_gpu)?;
        plan.extend(bins.into_iter().flatten());
    }
    Some(plan)
}

/// A layer under local search: the replicas per GPU and expert, the counts and the loads.
struct State<'a> {
    shape: &'a Shape,
    w: &'a [f64],
    gpus: Vec<Vec<usize>>,
    counts: Vec<usize>,
    /// on[e][g]: replicas of e on GPU g.
    on: Vec<Vec<usize>>,
    loads: Vec<f64>,
}

impl<'a> State<'a> {
    fn new(shape: &'a Shape, w: &'a [f64], phy2log: &[usize]) -> Self {
        let gpus: Vec<Vec<usize>> = phy2log
            .chunks(shape.per_gpu())
            .map(<[usize]>::to_vec)
            .collect();
        let mut on = vec![vec![0; shape.gpus]; shape.experts];
        for (g, gpu) in gpus.iter().enumerate() {
            for &e in gpu {
                on[e][g] += 1;
            }
        }
        State {
            shape,
            w,
            counts: replica_counts(phy2log, shape.experts),
            loads: gpu_loads(shape, w, phy2log),
            gpus,
            on,
        }
    }

    fn load(&self, e: usize) -> f64 {
        self.w[e] / self.counts[e] as f64
    }

    fn busiest(&self) -> (usize, f64) {
        self.loads
            .iter()
            .copied()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
            .expect("at least one GPU")
    }

    /// May expert e go onto GPU h (one replica per GPU; `leaving` is a replica of h that
    /// leaves it in the same move)?
    fn allowed(&self, e: usize, h: usize, leaving: usize) -> bool {
        !self.shape.one_per_gpu || self.on[e][h] == 0 || (leaving == e && self.on[e][h] == 1)
    }

    /// The best swap of a replica on the busiest GPU g with a replica elsewhere that leaves
    /// both below g's load; applied if found.
    fn swap(&mut self) -> bool {
        let (g, top) = self.busiest();
        let node = self.shape.node_of(g);
        let mut best: Option<(f64, usize, usize, usize)> = None;
        for (i, &a) in self.gpus[g].iter().enumerate() {
            let pa = self.load(a);
            for h in 0..self.shape.gpus {
                if h == g || (self.shape.hierarchical && self.shape.node_of(h) != node) {
                    continue;
                }
                for (j, &b) in self.gpus[h].iter().enumerate() {
                    let d = pa - self.load(b);
                    if d <= 0.0 || a == b {
                        continue;
                    }
                    let new_max = (top - d).max(self.loads[h] + d);
                    if new_max < top * (1.0 - IMPROVEMENT)
                        && best.is_none_or(|(v, ..)| new_max < v)
                        && self.allowed(a, h, b)
                        && self.allowed(b, g, a)
                    {
                        best = Some((new_max, i, h, j));
                    }
                }
            }
        }
        let Some((_, i, h, j)) = best else {
            return false;
        };
        self.exchange(g, i, h, j);
        true
    }

    /// Swaps the replica in slot i of GPU g with the one in slot j of GPU h.
    fn exchange(&mut self, g: usize, i: usize, h: usize, j: usize) {
        let (a, b) = (self.gpus[g][i], self.gpus[h][j]);
        let d = self.load(a) - self.load(b);
        self.gpus[g][i] = b;
        self.gpus[h][j] = a;
        self.on[a][g] -= 1;
        self.on[a][h] += 1;
        self.on[b][h] -= 1;
        self.on[b][g] += 1;
        self.loads[g] -= d;
        self.loads[h] += d;
    }

    /// The best exchange of two replicas on the busiest GPU g with two on another GPU that
    /// leaves both below g's load; applied if found.
    fn swap_pairs(&mut self) -> bool {
        let (g, top) = self.busiest();
        let node = self.shape.node_of(g);
        let m = self.gpus[g].len();
        let mut best: Option<(f64, [usize; 2], usize, [usize; 2])> = None;
        for h in 0..self.shape.gpus {
            if h == g || (self.shape.hierarchical && self.shape.node_of(h) != node) {
                continue;
            }
            for i1 in 0..m {
                for i2 in i1 + 1..m {
                    let (a1, a2) = (self.gpus[g][i1], self.gpus[g][i2]);
                    let pa = self.load(a1) + self.load(a2);
                    for j1 in 0..m {
                        for j2 in j1 + 1..m {
                            let (b1, b2) = (self.gpus[h][j1], self.gpus[h][j2]);
                            let d = pa - self.load(b1) - self.load(b2);
                            if d <= 0.0 {
                                continue;
                            }
                            let new_max = (top - d).max(self.loads[h] + d);
                            if new_max < top * (1.0 - IMPROVEMENT)
                                && best.is_none_or(|(v, ..)| new_max < v)
                                && self.pair_allowed(g, [a1, a2], h, [b1, b2])
                            {
                                best = Some((new_max, [i1, i2], h, [j1, j2]));
                            }
                        }
                    }
                }
            }
        }
        let Some((_, [i1, i2], h, [j1, j2])) = best else {
            return false;
        };
        self.exchange(g, i1, h, j1);
        self.exchange(g, i2, h, j2);
        true
    }

    /// One replica per GPU after two replicas of g and two of h trade GPUs.
    fn pair_allowed(&self, g: usize, a: [usize; 2], h: usize, b: [usize; 2]) -> bool {
        if !self.shape.one_per_gpu {
            return true;
        }
        let mut on_g = self.gpus[g].clone();
        let mut on_h = self.gpus[h].clone();
        for (x, y) in a.iter().zip(b) {
            let i = on_g.iter().position(|e| e == x).expect("on g");
            on_g[i] = y;
            let j = on_h.iter().position(|e| *e == y).expect("on h");
            on_h[j] = *x;
        }
        let distinct = |v: &mut Vec<usize>| {
            let n = v.len();
            v.sort_unstable();
            v.dedup();
            v.len() == n
        };
        distinct(&mut on_g) && distinct(&mut on_h)
    }

    /// The loads after a replica of `from` on GPU h becomes one of `to`.
    fn loads_after(&self, from: usize, to: usize, h: usize) -> Vec<f64> {
        let (wf, wt) = (self.w[from], self.w[to]);
        let (cf, ct) = (self.counts[from] as f64, self.counts[to] as f64);
        let df = wf / (cf - 1.0) - wf / cf;
        let dt = wt / (ct + 1.0) - wt / ct;
        let mut loads = self.loads.clone();
        for (g, l) in loads.iter_mut().enumerate() {
            *l += self.on[from][g] as f64 * df + self.on[to][g] as f64 * dt;
        }
        loads[h] += -wf / (cf - 1.0) + wt / (ct + 1.0);
        loads
    }

    /// The best count change (a slot of one expert handed to an expert on the busiest GPU)
    /// that lowers the busiest load, or the number of GPUs at it; applied if found.
    fn recount(&mut self) -> bool {
        let (g, top) = self.busiest();
        let at_top = |loads: &[f64], t: f64| {
            loads
                .iter()
                .filter(|&&l| l >= t * (1.0 - IMPROVEMENT))
                .count()
        };
        let now = at_top(&self.loads, top);
        let cap = self.shape.cap();
        let mut best: Option<(f64, usize, usize, usize, usize)> = None;
        let mut targets = self.gpus[g].clone();
        targets.sort_unstable();
        targets.dedup();
        for &to in &targets {
            if self.counts[to] >= cap {
                continue;
            }
            for from in 0..self.shape.experts {
                if from == to || self.counts[from] < 2 {
                    continue;
                }
                for h in 0..self.shape.gpus {
                    if self.on[from][h] == 0 || !self.allowed(to, h, from) {
                        continue;
                    }
                    if self.shape.hierarchical && self.shape.node_of(h) != self.node_of_expert(to) {
                        continue;
                    }
                    let loads = self.loads_after(from, to, h);
                    let new_top = loads.iter().copied().fold(0.0, f64::max);
                    let better = new_top < top * (1.0 - IMPROVEMENT)
                        || (new_top <= top && at_top(&loads, top) < now);
                    if better && best.is_none_or(|(v, ..)| new_top < v) {
                        best = Some((new_top, from, to, h, 0));
                    }
                }
            }
        }
        let Some((_, from, to, h, _)) = best else {
            return false;
        };
        let i = self.gpus[h]
            .iter()
            .position(|&e| e == from)
            .expect("on[from][h] > 0");
        self.loads = self.loads_after(from, to, h);
        self.gpus[h][i] = to;
        self.on[from][h] -= 1;
        self.on[to][h] += 1;
        self.counts[from] -= 1;
        self.counts[to] += 1;
        true
    }

    /// The best re-split of two GPUs' replicas (any m of their 2 m on g, the rest on h) that
    /// lowers the larger of their two loads, for the busiest g that has one (GPUs tried from
    /// the busiest down); applied if found. Below the busiest GPU it is a plateau move: the
    /// busiest load stays, but the loads sorted in decreasing order fall lexicographically, as
    /// after every other move (so still no plan repeats).
    fn resplit(&mut self) -> bool {
        let m = self.shape.per_gpu();
        if m > MAX_RESPLIT {
            return false;
        }
        // The splits: which of the 2 m pooled replicas go to g (the first always does, as g
        // and h are interchangeable).
        let masks: Vec<u32> = (0u32..1 << (2 * m))
            .filter(|mask| mask & 1 == 1 && mask.count_ones() as usize == m)
            .collect();
        let mut order: Vec<usize> = (0..self.shape.gpus).collect();
        order.sort_by(|&a, &b| self.loads[b].total_cmp(&self.loads[a]).then(a.cmp(&b)));
        for &g in &order {
            let node = self.shape.node_of(g);
            let mut best: Option<(f64, usize, u32)> = None;
            for h in 0..self.shape.gpus {
                if h == g || (self.shape.hierarchical && self.shape.node_of(h) != node) {
                    continue;
                }
                let pool: Vec<usize> = self.gpus[g].iter().chain(&self.gpus[h]).copied().collect();
                let (now, total) = (
                    self.loads[g].max(self.loads[h]),
                    self.loads[g] + self.loads[h],
                );
                for &mask in &masks {
                    let on_g: f64 = (0..2 * m)
                        .filter(|i| mask >> i & 1 == 1)
                        .map(|i| self.load(pool[i]))
                        .sum();
                    let new_max = on_g.max(total - on_g);
                    if new_max < now * (1.0 - IMPROVEMENT)
                        && best.is_none_or(|(v, ..)| new_max < v)
                        && self.split_allowed(&pool, mask)
                    {
                        best = Some((new_max, h, mask));
                    }
                }
            }
            if let Some((_, h, mask)) = best {
                let pool: Vec<usize> = self.gpus[g].iter().chain(&self.gpus[h]).copied().collect();
                for &e in &pool {
                    self.on[e][g] = 0;
                    self.on[e][h] = 0;
                }
                let (to_g, to_h): (Vec<_>, Vec<_>) = (0..2 * m).partition(|i| mask >> i & 1 == 1);
                self.gpus[g] = to_g.iter().map(|&i| pool[i]).collect();
                self.gpus[h] = to_h.iter().map(|&i| pool[i]).collect();
                for (x, gpu) in [(g, &self.gpus[g]), (h, &self.gpus[h])] {
                    for &e in gpu {
                        self.on[e][x] += 1;
                    }
                }
                return true;
            }
        }
        false
    }

    /// One replica per GPU on both sides of a split of `pool` (see [`State::resplit`]).
    fn split_allowed(&self, pool: &[usize], mask: u32) -> bool {
        if !self.shape.one_per_gpu {
            return true;
        }
        let mut sides = [Vec::new(), Vec::new()];
        for (i, &e) in pool.iter().enumerate() {
            sides[(mask >> i & 1) as usize].push(e);
        }
        sides.iter_mut().all(|v| {
            let n = v.len();
            v.sort_unstable();
            v.dedup();
            v.len() == n
        })
    }

    /// The node holding an expert's replicas (hierarchical plans keep groups on one node).
    fn node_of_expert(&self, e: usize) -> usize {
        let g = (0..self.shape.gpus)
            .find(|&g| self.on[e][g] > 0)
            .expect("every expert has a replica");
        self.shape.node_of(g)
    }

    fn plan(&self) -> Vec<usize> {
        self.gpus.concat()
    }

    /// Recomputes the loads from the replicas (no drift from incremental updates).
    fn refresh(&mut self) {
        self.loads = gpu_loads(self.shape, self.w, &self.plan());
    }
}

/// Local search from a feasible plan (module doc); the result is never worse.
///
/// # Complexity
/// E experts, S slots, G GPUs of m = S / G slots. Each round tries the swaps (O(G m^2)), the
/// count changes (O(m E G^2)), the pair exchanges (O(G m^4)) and, at m <= 6, the re-splits of
/// two GPUs (O(G^2 4^m m) when none applies), then recomputes the loads (O(S)). The number of
/// rounds has no polynomial bound here: each accepted move lowers the loads sorted in
/// decreasing order lexicographically, so no plan repeats.
/// Memory: O(E G + S).
///
/// # Examples
/// ```
/// use formulations::balance::Shape;
///
/// // E = 4 experts in S = 6 slots on G = 2 GPUs (m = 3 slots each), one replica per GPU (so at
/// // most 2 replicas each); loads 6, 3, 2, 1.
/// let shape = Shape {
///     experts: 4,
///     slots: 6,
///     gpus: 2,
///     nodes: 1,
///     groups: 1,
///     one_per_gpu: true,
///     hierarchical: false,
/// };
/// let w = [6.0, 3.0, 2.0, 1.0];
/// use formulations::balance::evaluate::{check_layer, max_load};
/// use moe_opt::balance::algorithms::local_search;
///
/// // A poor start: GPU 0 = 0, 1, 2 (6 + 1.5 + 1 = 8.5), GPU 1 = 1, 2, 3 (3.5).
/// let start = [0, 1, 2, 1, 2, 3];
/// let plan = local_search(&shape, &w, &start);
/// assert!(check_layer(&shape, &plan).is_ok());
/// let busiest = max_load(&shape, &w, &plan);
/// // The optimum by hand: expert 0 needs both GPUs (alone, its GPU carries at least
/// // 6 + 1 + 0.5); then one other expert doubles, and the best is 3 + 1.5 + 2 = 6.5.
/// assert!((6.5..=8.5).contains(&busiest));
/// ```
pub fn local_search(shape: &Shape, w: &[f64], phy2log: &[usize]) -> Vec<usize> {
    let mut state = State::new(shape, w, phy2log);
    // Each accepted move lowers the GPU loads sorted in decreasing order lexicographically (a
    // swap takes the busiest GPU below it, by a relative IMPROVEMENT at least, and keeps the
    // other below it; a re-split lowers the larger of two loads), on loads recomputed after
    // every move: no state repeats, the loop ends.
    while state.swap() || state.recount() || state.swap_pairs() || state.resplit() {
        state.refresh();
    }
    let out = state.plan();
    debug_assert!(check_layer(shape, &out).is_ok());
    if max_load(shape, w, &out) <= max_load(shape, w, phy2log) {
        out
    } else {
        phy2log.to_vec()
    }
}

/// Number of multisets of size m from e kinds, C(e + m - 1, m), as f64 (or sets, C(e, m), when
/// `distinct`).
fn multisets(e: usize, m: usize, distinct: bool) -> f64 {
    let n = if distinct { e } else { e + m - 1 };
    (0..m).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

/// The optimum of one layer by exhaustive search (module doc); [`Error::TooLarge`] beyond
/// [`MAX_EXHAUSTIVE`] combinations.
///
/// # Complexity
/// Exponential: C = C(E + m - 1, m) multisets of m experts per GPU (C(E, m) sets with one
/// replica per GPU), C^G combinations (at most [`MAX_EXHAUSTIVE`]), each checked and scored in
/// O(S). Time: O(C^G S). Memory: O(C m + S).
///
/// # Examples
/// ```
/// use formulations::balance::Shape;
///
/// // E = 4 experts in S = 6 slots on G = 2 GPUs (m = 3 slots each), one replica per GPU (so at
/// // most 2 replicas each); loads 6, 3, 2, 1.
/// let shape = Shape {
///     experts: 4,
///     slots: 6,
///     gpus: 2,
///     nodes: 1,
///     groups: 1,
///     one_per_gpu: true,
///     hierarchical: false,
/// };
/// let w = [6.0, 3.0, 2.0, 1.0];
/// use formulations::balance::evaluate::max_load;
/// use moe_opt::balance::algorithms::exhaustive;
///
/// let plan = exhaustive(&shape, &w)?;
/// // The optimum by hand: expert 0 needs both GPUs (alone, its GPU carries at least
/// // 6 + 1 + 0.5); then one other expert doubles, and the best is 3 + 1.5 + 2 = 6.5.
/// assert_eq!(max_load(&shape, &w, &plan), 6.5);
/// # Ok::<(), formulations::Error>(())
/// ```
pub fn exhaustive(shape: &Shape, w: &[f64]) -> Result<Vec<usize>, Error> {
    let m = shape.per_gpu();
    let per_gpu = multisets(shape.experts, m, shape.one_per_gpu);
    let total = per_gpu.powi(shape.gpus as i32);
    if total > MAX_EXHAUSTIVE {
        return Err(Error::TooLarge(format!(
            "balance exhaustive: {total:.3e} combinations exceeds the limit of {MAX_EXHAUSTIVE:.0e} \
             (moe_opt::balance::algorithms::MAX_EXHAUSTIVE)"
        )));
    }
    // Every multiset of m experts (nondecreasing; increasing when one per GPU).
    let mut contents: Vec<Vec<usize>> = Vec::new();
    let mut cur = Vec::with_capacity(m);
    fn fill(
        e: usize,
        m: usize,
        from: usize,
        strict: bool,
        cur: &mut Vec<usize>,
        out: &mut Vec<Vec<usize>>,
    ) {
        if cur.len() == m {
            out.push(cur.clone());
            return;
        }
        for x in from..e {
            cur.push(x);
            fill(e, m, if strict { x + 1 } else { x }, strict, cur, out);
            cur.pop();
        }
    }
    fill(
        shape.experts,
        m,
        0,
        shape.one_per_gpu,
        &mut cur,
        &mut contents,
    );
    let mut best: Option<(f64, Vec<usize>)> = None;
    let mut choice = vec![0usize; shape.gpus];
    let mut plan = vec![0usize; shape.slots];
    'outer: loop {
        for (g, &c) in choice.iter().enumerate() {
            plan[g * m..(g + 1) * m].copy_from_slice(&contents[c]);
        }
        if check_layer(shape, &plan).is_ok() {
            let v = max_load(shape, w, &plan);
            if best.as_ref().is_none_or(|(b, _)| v < *b) {
                best = Some((v, plan.clone()));
            }
        }
        for slot in choice.iter_mut() {
            *slot += 1;
            if *slot < contents.len() {
                continue 'outer;
            }
            *slot = 0;
        }
        break;
    }
    Ok(best.expect("validation guarantees a feasible plan").1)
}
