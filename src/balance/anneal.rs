//! Simulated annealing over a layer's plans with the counts free: the exact method's start at
//! three slots per GPU or more, where local search stops on real layers 0.3-0.8 % above the
//! mean load, often the only bound there (two slots per GPU are solved exactly by
//! [`super::pairing`]).
//!
//! The state is a plan (`phy2log`) with its counts, and two moves:
//! * swap: two replicas of different experts on different GPUs trade places;
//! * recount: a slot of an expert with two replicas or more goes to another expert below
//!   [`Shape::cap`], which changes the load of every replica of both.
//!
//! A move that would break an option is not tried: two replicas of an expert on one GPU under one
//! replica per GPU; under the hierarchical option, a swap across nodes, or a slot handed to an
//! expert whose group is on another node. The energy is the sum over GPUs of max(0, load - mean)^2:
//! it is zero only at a perfect balance and sees every GPU above the mean, not the busiest alone,
//! so the search moves across the plateaus where local search stops. A move that raises the energy
//! by d is accepted with probability exp(-d / t), the temperature t falling linearly from (0.15 %
//! of the mean)^2 to 0 over the budget ([`iterations`]). The plan returned is the best seen by its
//! busiest GPU (checked every [`CHECK_EVERY`] moves and at the end), never worse than the start.
//! The same start and seed give the same plan: a seeded ChaCha8 stream and a budget in moves, not
//! time.

use formulations::balance::evaluate::{check_layer, max_load};
use formulations::balance::Shape;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Moves per pair of the layer's slots (a swap picks one of the S^2 pairs).
pub const MOVES_PER_SLOT_PAIR: usize = 1_000;

/// The most moves of one run (about half a second).
pub const MAX_ITERATIONS: usize = 10_000_000;

/// Moves between two reads of the busiest GPU.
pub const CHECK_EVERY: usize = 32;

/// The starting temperature's square root, as a share of the mean GPU load.
const START_TEMPERATURE: f64 = 0.0015;

/// The move budget of a layer of `slots` slots: [`MOVES_PER_SLOT_PAIR`] per pair of slots, at
/// most [`MAX_ITERATIONS`] (reached from 100 slots on).
pub fn iterations(slots: usize) -> usize {
    (slots * slots * MOVES_PER_SLOT_PAIR).min(MAX_ITERATIONS)
}

/// The annealed plan from `start` (module doc): a valid plan of `shape` whose busiest GPU
/// carries no more than `start`'s.
///
/// # Complexity
/// S slots, G GPUs, m = S / G, c the largest count: O(S) memory; each of the
/// [`iterations`]`(S)` moves takes O(m) (the one-per-GPU check) or O(c) (a recount), and every
/// [`CHECK_EVERY`] moves O(G).
///
/// # Examples
/// ```
/// use formulations::balance::evaluate::max_load;
/// use formulations::balance::Shape;
/// use moe_opt::balance::algorithms::exhaustive;
/// use moe_opt::balance::anneal::anneal;
///
/// // 4 experts, 9 slots on 3 GPUs. The start's GPU 0 holds expert 0 (9) and two of expert 1's
/// // three replicas (2 each): 13.
/// let shape = Shape { experts: 4, slots: 9, gpus: 3, nodes: 1, groups: 1,
///                     one_per_gpu: false, hierarchical: false };
/// let w = [9.0, 6.0, 3.0, 3.0];
/// let start = [0, 1, 1, 1, 2, 3, 2, 3, 3];
/// let plan = anneal(&shape, &w, &start, 7);
/// let optimum = max_load(&shape, &w, &exhaustive(&shape, &w)?);
/// assert!(max_load(&shape, &w, &plan) < 13.0);
/// assert!(max_load(&shape, &w, &plan) >= optimum);
/// # Ok::<(), formulations::Error>(())
/// ```
pub fn anneal(shape: &Shape, w: &[f64], start: &[usize], seed: u64) -> Vec<usize> {
    let mut state = State::new(shape, w, start);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let budget = iterations(shape.slots);
    let hot = (START_TEMPERATURE * state.mean).powi(2);
    let redundant = shape.slots > shape.experts;
    let mut best = (state.busiest(), state.plan.clone());
    for it in 0..budget {
        let temperature = hot * (1.0 - it as f64 / budget as f64);
        if redundant && rng.random_bool(0.3) {
            state.recount(&mut rng, temperature);
        } else {
            state.swap(&mut rng, temperature);
        }
        if it % CHECK_EVERY == 0 || it + 1 == budget {
            let busiest = state.busiest();
            if busiest < best.0 {
                best = (busiest, state.plan.clone());
            }
        }
    }
    // Judged on loads recomputed from scratch, not the moves' running sums.
    let plan = best.1;
    debug_assert!(check_layer(shape, &plan).is_ok());
    if max_load(shape, w, &plan) < max_load(shape, w, start) {
        plan
    } else {
        start.to_vec()
    }
}

/// A plan under annealing, with what the moves read.
struct State<'a> {
    w: &'a [f64],
    m: usize,
    /// Slots per node under the hierarchical option (moves stay on a node), else all slots.
    node_slots: usize,
    cap: usize,
    one_per_gpu: bool,
    mean: f64,
    plan: Vec<usize>,
    counts: Vec<usize>,
    /// The slots of each expert.
    slots_of: Vec<Vec<usize>>,
    loads: Vec<f64>,
    /// A recount's load change per GPU, and the GPUs it touches (scratch).
    change: Vec<f64>,
    touched: Vec<usize>,
}

impl<'a> State<'a> {
    fn new(shape: &Shape, w: &'a [f64], plan: &[usize]) -> Self {
        let m = shape.per_gpu();
        let mut counts = vec![0; shape.experts];
        let mut slots_of = vec![Vec::new(); shape.experts];
        for (s, &e) in plan.iter().enumerate() {
            counts[e] += 1;
            slots_of[e].push(s);
        }
        let mut loads = vec![0.0; shape.gpus];
        for (s, &e) in plan.iter().enumerate() {
            loads[s / m] += w[e] / counts[e] as f64;
        }
        State {
            w,
            m,
            node_slots: if shape.hierarchical {
                shape.slots / shape.nodes
            } else {
                shape.slots
            },
            cap: shape.cap(),
            one_per_gpu: shape.one_per_gpu,
            mean: w.iter().sum::<f64>() / shape.gpus as f64,
            plan: plan.to_vec(),
            counts,
            slots_of,
            loads,
            change: vec![0.0; shape.gpus],
            touched: Vec::new(),
        }
    }

    fn busiest(&self) -> f64 {
        self.loads.iter().copied().fold(f64::NEG_INFINITY, f64::max)
    }

    fn energy(&self, load: f64) -> f64 {
        (load - self.mean).max(0.0).powi(2)
    }

    /// Whether GPU `g` holds a replica of `e`.
    fn holds(&self, g: usize, e: usize) -> bool {
        self.plan[g * self.m..(g + 1) * self.m].contains(&e)
    }

    fn replica(&self, e: usize) -> f64 {
        self.w[e] / self.counts[e] as f64
    }

    fn accept(rng: &mut ChaCha8Rng, delta: f64, temperature: f64) -> bool {
        delta <= 0.0 || (temperature > 0.0 && rng.random::<f64>() < (-delta / temperature).exp())
    }

    fn swap(&mut self, rng: &mut ChaCha8Rng, temperature: f64) {
        let slots = self.plan.len();
        let (s, t) = (rng.random_range(0..slots), rng.random_range(0..slots));
        let (g, h, a, b) = (s / self.m, t / self.m, self.plan[s], self.plan[t]);
        if g == h
            || a == b
            || s / self.node_slots != t / self.node_slots
            || (self.one_per_gpu && (self.holds(g, b) || self.holds(h, a)))
        {
            return;
        }
        let d = self.replica(a) - self.replica(b);
        let (lg, lh) = (self.loads[g] - d, self.loads[h] + d);
        let delta = self.energy(lg) + self.energy(lh)
            - self.energy(self.loads[g])
            - self.energy(self.loads[h]);
        if Self::accept(rng, delta, temperature) {
            (self.plan[s], self.plan[t]) = (b, a);
            (self.loads[g], self.loads[h]) = (lg, lh);
            let at = self.slots_of[a]
                .iter()
                .position(|&x| x == s)
                .expect("listed");
            self.slots_of[a][at] = t;
            let at = self.slots_of[b]
                .iter()
                .position(|&x| x == t)
                .expect("listed");
            self.slots_of[b][at] = s;
        }
    }

    fn recount(&mut self, rng: &mut ChaCha8Rng, temperature: f64) {
        let s = rng.random_range(0..self.plan.len());
        let (a, b) = (self.plan[s], rng.random_range(0..self.counts.len()));
        let g = s / self.m;
        if a == b
            || self.counts[a] < 2
            || self.counts[b] >= self.cap
            || self.slots_of[b][0] / self.node_slots != s / self.node_slots
            || (self.one_per_gpu && self.holds(g, b))
        {
            return;
        }
        let (ca, cb) = (self.counts[a] as f64, self.counts[b] as f64);
        let add = |state: &mut Self, gpu: usize, d: f64| {
            if !state.touched.contains(&gpu) {
                state.touched.push(gpu);
            }
            state.change[gpu] += d;
        };
        for i in 0..self.slots_of[a].len() {
            let t = self.slots_of[a][i];
            let d = if t == s {
                -self.w[a] / ca
            } else {
                self.w[a] / (ca - 1.0) - self.w[a] / ca
            };
            add(self, t / self.m, d);
        }
        for i in 0..self.slots_of[b].len() {
            let t = self.slots_of[b][i];
            add(self, t / self.m, self.w[b] / (cb + 1.0) - self.w[b] / cb);
        }
        add(self, g, self.w[b] / (cb + 1.0));
        let delta: f64 = self
            .touched
            .iter()
            .map(|&h| self.energy(self.loads[h] + self.change[h]) - self.energy(self.loads[h]))
            .sum();
        let accepted = Self::accept(rng, delta, temperature);
        for i in 0..self.touched.len() {
            let h = self.touched[i];
            if accepted {
                self.loads[h] += self.change[h];
            }
            self.change[h] = 0.0;
        }
        self.touched.clear();
        if accepted {
            self.plan[s] = b;
            self.counts[a] -= 1;
            self.counts[b] += 1;
            self.slots_of[a].retain(|&x| x != s);
            self.slots_of[b].push(s);
        }
    }
}
