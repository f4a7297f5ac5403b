//! The SlimCaching paper's algorithms (Section V of paper 000) and the baselines of its Section
//! VI-A (LFU, random, U-shaped: `baselines`; the knapsack kernel: `knapsack`), all judged by the one evaluator of `formulations::slimcaching`
//! ([`LatencyModel`] for F(X) of (17), [`IncrementalObjective`] for marginal gains F(i | X)).
//!
//! The ground set is V = {(n, e)}: every (edge server, expert) pair (Section IV-B, "v_i^n"). A
//! placement is feasible when every server's cached bytes are within Q_n (18b).
//!
//! ## Counting evaluations
//!
//! [`Outcome::evaluations`] and [`Successive::evaluations`] count the marginal gains
//! F((n, e) | X) at the current X that an algorithm's choices rest on: calls of
//! [`IncrementalObjective::gain`] (each re-routes only the demands that need expert e), except
//! that Alg. 1 counts every gain its line 5 compares, also those it reuses unchanged from an
//! earlier step (the algorithm's cost as written, O(N^2 E^2); see "Incremental gains").
//! Applying a chosen pair ([`IncrementalObjective::insert`]) is not counted.
//!
//! ## Algorithm 1 (greedy, Section V-A): [`greedy`]
//!
//! S = empty; repeat: among the pairs (n, e) not in S whose size b_e fits server n's remaining
//! capacity, pick the one maximising F((n, e) | S) / b_e (line 5), add it (line 6); stop when
//! no pair fits. Readings:
//! * line 5's argmax ranges over the pairs that fit only; otherwise a pick could break (18b),
//!   and the loop condition of line 4 ("some server is within capacity") would never end it;
//! * a pick is added even when its gain is zero or negative, as written: F need not be monotone
//!   under the evaluator's routing rule (an expert cached at n_u is always served there), so
//!   the paper's monotonicity (Prop. 1) is not assumed;
//! * ties: the lowest (server, expert) index wins (server-major scan, strict `>`).
//!
//! Claimed guarantee: Prop. 3, F_1(S) >= (1 - 1/e) F_1(X*) when every model is Top-1 (F is then
//! monotone submodular by Prop. 1; see the lazy greedy below for when the evaluator's F is).
//! The density greedy alone, without the partial enumeration or best-singleton step of the
//! knapsack-constrained algorithms the proof cites (\[45\]), has no constant factor in general
//! (one small high-density item can block one large item, as in this module's knapsack test);
//! the claim is for the verification to check. Cost: O(N E) gains per pick and at most
//! N E picks, O(N^2 E^2) gains (Section V-A2).
//!
//! ### Incremental gains
//!
//! F of (17) is a sum over routing demands (n_u, m, R), and F((n, e) | S) sums, over the
//! demands d whose R holds e in the order of [`LatencyModel::demands_of`], d's weight times
//! its latency under S minus its latency with (n, e) added
//! ([`IncrementalObjective::gain_term`]). Such a term depends on S only through d's current
//! latency and the placement of d's experts R, so adding (n*, e*) changes only the terms of the
//! demands whose R holds e*: with Top-1 models the gains of e* on every server, with Top-K > 1
//! also those of the experts co-activated with e* in one layer. [`greedy`] keeps every term
//! and every pair's density, and after a pick recomputes exactly the changed terms (with the
//! same function on the same state) and re-sums the affected gains in the same order with the
//! same `Iterator::sum`. Each cached density is thus bit for bit the one a fresh scan would
//! compute, and no near-tie can flip. The argmax runs on a tournament tree with the scan's tie
//! rule, and the pairs of n* that no longer fit are dropped (capacities only shrink). The
//! picks and their order are those of the plain scan (test: every tiny and small preset seed
//! below 2000, against it), while each pick costs route evaluations only for the demands
//! that need e*, times N.
//!
//! ## Lazy greedy (Minoux): [`lazy_greedy`]
//!
//! The same loop with a max-heap of possibly stale ratios keyed by (ratio descending, lower
//! (n, e) index first) and a per-pair stamp of the step its gain was computed at. The popped
//! top is selected when its gain is current (it then dominates every stale key left); a popped
//! pair that no longer fits is dropped for good (capacities only shrink); otherwise its gain is
//! recomputed and it is pushed back. When F is submodular, stale ratios are upper bounds on
//! current ones, so the picks and their order equal [`greedy`]'s exactly, ties included, with
//! fewer evaluations. Otherwise stale ratios are not upper bounds and the picks may differ.
//!
//! When is F submodular? Prop. 1 says: whenever every model is Top-1. Under the evaluator's
//! routing rule that needs one more condition: every other edge server's round trip for a
//! demand (visit + return) must be no slower than the cloud's. The rule sends an expert to the
//! cloud only when no edge server holds it, so a first remote holder slower than the cloud
//! *raises* the latency, and a second, faster holder then gains more than it would have on its
//! own (increasing returns). With that condition and Top-1, the gain of a pair,
//! max(0, G(X) - cost) for a remote server and G(X) - T^CP at n_u, only shrinks as X grows.
//! The associated server may still be slower than a remote holder or the cloud: its gain is
//! then negative and F is not monotone, but F stays submodular. With Top-K > 1 models F is
//! neither submodular nor supermodular (Prop. 2).
//!
//! ## Algorithm 2 (successive decomposition + DP, Section V-B): [`successive_dp`]
//!
//! For n = 1..N in order, with X_{<n} the experts fixed on servers before n (later servers
//! empty), the subproblem P2_n (19)-(21) maximises F~_n(X_n) = F(X_n + X_{<n}) - F(X_{<n});
//! by (22) the F~_n telescope to F. P3_n (23) replaces F~_n by the modular function with item
//! values v_e = F~_n(e | empty) = F((n, e) | X_{<n}): the modular part F~^mod for Top-1
//! models and H_n (the singleton values of the supermodular part F~^super) for Top-K > 1
//! models (Prop. 4); both are just the singleton gain, computed by
//! [`IncrementalObjective::gain`]. P3_n is a 0/1 knapsack solved exactly by the DP of Alg. 2
//! ([`knapsack_dp`]): lines 2-15 fill dp over items x capacity, lines 17-25 trace back the
//! items whose row changed dp. The chosen experts are added to server n and the next server
//! follows. [`Successive::subproblem_values`] records each P3_n optimum (the sum of the chosen
//! v_e; the true F~_n of the chosen set may differ for Top-K > 1).
//!
//! Knapsack details (shared with Alg. 3): items with v_e <= 0 are never worth taking (the DP
//! takes an item only on strict improvement) and items larger than Q_n never fit, so both are
//! left out. Sizes and capacity are divided by g, the gcd of the remaining sizes, which is exact
//! (sum b <= Q iff sum b/g <= floor(Q/g)); the capacity is also capped at the items' total
//! size (if everything fits, all items are taken without a DP). The DP table is a bit table
//! (one "taken" bit per cell, rolling values), and is refused with [`Error::TooLarge`] above
//! [`DP_CELL_LIMIT`] cells = items x (capacity units + 1), asking the user to round expert
//! sizes and storage capacities to a coarser unit.
//!
//! Claimed guarantees: Prop. 5, F~_n(X_n) >= (1 - (kappa_g)_n) F~_n(X_n*) per subproblem;
//! Thm. 1, F(X) >= (1 - kappa_g^max)/2 F(X*) overall ((1 - (kappa_g)_1) when N = 1);
//! Remark 2, 1/2 when every model is Top-1 (P3_n = P2_n is then solved exactly). Cost
//! (Section V-B5): O(N E ceil(Q_n / b_min)); here O(N E C) with C = floor(Q_n / g).
//!
//! ## Algorithm 3 (accelerated, Definition 3): [`successive_maxconv`]
//!
//! The same successive structure and item values, with each P3_n solved by
//! [`knapsack_maxconv`]: items are grouped into the T size classes (line 3); within a class
//! the best value of j items is the prefix sum of its j largest values, a concave sequence
//! (lines 4-6); the classes are combined one by one (lines 8-10) by the (max, +) convolution of
//! the running "best value within capacity q" array with the class's sequence, separately for
//! each residue q mod b_t (the subsequences y^(i) of Definition 3). Concavity makes the argmax
//! monotone in q, so each convolution runs by divide and conquer over the monotone argmax in
//! O((C / b_t) log(C / b_t)) per residue, O(C log C) per class (SMAWK would remove the log; the
//! paper states O(N T ceil(Q_n / b_min)) citing \[46\]). A table per class records how many of
//! its top items were taken, for the traceback. Results equal Alg. 2's optimum per subproblem
//! (ties may select different experts). Tables above [`MAXCONV_CELL_LIMIT`] cells = classes x
//! (capacity units + 1) are refused with [`Error::TooLarge`].
//!
//! ## Baselines of Section VI-A
//!
//! * [`lfu`], "each edge server caches the most frequently requested experts until reaching
//!   its capacity": each server independently ranks experts by the request weight reaching it,
//!   sum of the weights of the routing demands d with d.server = n and e in d.missing (tokens of
//!   its associated users needing e, which they lack); ties by the global weight (all demands),
//!   then by expert id. Walking down the ranking it caches every expert that still fits
//!   (skipping those that do not), including never-requested ones at the tail.
//! * [`random`], "each edge server randomly selects experts to cache": servers in order, each
//!   visits all experts in an order shuffled by one `ChaCha8Rng::seed_from_u64(seed)` stream,
//!   caching each expert that fits.
//! * [`u_shaped`], "caches ... an entire MoE block ... once a layer is selected ... all experts
//!   within that layer are stored together until the storage capacity is reached": each
//!   server ranks the (model, layer) blocks by the request weight reaching it for that layer
//!   (demands with d.server = n of model m whose experts lie in layer l), ties by nearness to
//!   the middle of the model (U-shaped split inference keeps head and tail layers on the user
//!   and runs the body remotely; |2l - (L_m - 1)| ascending), then by (model, layer); it caches
//!   every whole layer that still fits.
//!
//! ## Exhaustive search: [`exhaustive`]
//!
//! Depth-first enumeration of every feasible placement over the *relevant* pairs only: pairs
//! (n, e) where some routing demand needs e and b_e <= Q_n. This is exact: F is a sum over
//! routing demands whose routes query only their own missing experts, so the other experts
//! never change F, and pairs larger than Q_n are in no feasible placement. The limit
//! [`EXHAUSTIVE_LIMIT`] applies to the number of relevant pairs; each enumerated placement is
//! evaluated with [`LatencyModel::objective`].

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use formulations::slimcaching::{
    ExpertId, IncrementalObjective, LatencyModel, Placement, ServerId,
};
use formulations::Error;

mod baselines;
mod knapsack;
#[cfg(test)]
mod tests;

pub use baselines::{lfu, random, u_shaped};
pub use knapsack::{knapsack_dp, knapsack_maxconv, DP_CELL_LIMIT, MAXCONV_CELL_LIMIT};

/// Most relevant (server, expert) pairs [`exhaustive`] accepts: 2^22 (about 4.2 million)
/// subsets, each evaluated with [`LatencyModel::objective`].
pub const EXHAUSTIVE_LIMIT: usize = 22;

/// What a greedy algorithm returns.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The placement found (feasible by construction).
    pub placement: Placement,
    /// Marginal-gain evaluations performed (calls of [`IncrementalObjective::gain`]).
    pub evaluations: u64,
}

/// What the successive algorithms (Algs. 2 and 3) return.
#[derive(Debug, Clone, PartialEq)]
pub struct Successive {
    /// X = union of the per-server choices.
    pub placement: Placement,
    /// Per server n, the optimum of the knapsack P3_n: the sum of the chosen experts' values
    /// F((n, e) | X_{<n}).
    pub subproblem_values: Vec<f64>,
    /// Marginal-gain evaluations performed: E per server (every item value).
    pub evaluations: u64,
}

fn sid(n: usize) -> ServerId {
    ServerId(n as u32)
}

fn eid(e: usize) -> ExpertId {
    ExpertId(e as u32)
}

/// gain / bytes with -0.0 mapped to 0.0, so that a total order and `>` agree on ties.
fn density(gain: f64, bytes: u64) -> f64 {
    gain / bytes as f64 + 0.0
}

fn capacities(model: &LatencyModel) -> Vec<u64> {
    (0..model.servers())
        .map(|n| model.capacity(sid(n)))
        .collect()
}

/// Algorithm 1 as written (see the module doc): density greedy over the pairs that fit.
///
/// # Complexity
/// N servers, E experts, D routing demands, K the most experts a demand misses, D_e the demands
/// that need expert e. Time: O(N D K) gain terms to start; a pick (n, e) re-evaluates the
/// O(N K D_e) terms of the demands that need e, re-sums the gains they touch and updates their
/// densities in the tournament tree (O(log(N E)) each); at most N E picks. These term
/// re-evaluations dominate; Alg. 1 as written costs O(N^2 E^2) gains, the count in
/// [`Outcome::evaluations`]. Memory: O(N D K) cached terms and O(N E) densities.
///
/// # Examples
/// ```
/// use formulations::slimcaching::{ExpertId, ServerId, LatencyModel};
/// use moe_opt::slimcaching::generate::{generate, GeneratorConfig, Preset};
/// use moe_opt::slimcaching::algorithms::{exhaustive, greedy};
///
/// let model = LatencyModel::new(&generate(&GeneratorConfig::preset(Preset::Tiny), 1));
/// let x = greedy(&model).placement;
/// assert!(model.is_feasible(&x));
/// // Stopped only when nothing more fits: every expert not on a server exceeds its room.
/// for n in (0..model.servers() as u32).map(ServerId) {
///     let used: u64 = x.experts_on(n).map(|e| model.expert_bytes(e)).sum();
///     for e in (0..model.experts() as u32).map(ExpertId) {
///         assert!(x.contains(n, e) || model.expert_bytes(e) > model.capacity(n) - used);
///     }
/// }
/// let (_, optimum) = exhaustive(&model)?;
/// assert!(model.objective(&x) <= optimum + 1e-9);
/// # Ok::<(), formulations::Error>(())
/// ```
pub fn greedy(model: &LatencyModel) -> Outcome {
    greedy_trace(model).0
}

/// Algorithm 1, also returning the picks (server, expert) in order. Each step's argmax (line 5)
/// runs over cached densities (see the module doc, "Incremental gains"): after a pick (n, e),
/// only the terms of the demands that need e are re-evaluated, the gains of their experts
/// re-summed, and the pairs of server n that no longer fit dropped.
fn greedy_trace(model: &LatencyModel) -> (Outcome, Vec<(usize, usize)>) {
    let (servers, experts) = (model.servers(), model.experts());
    let bytes: Vec<u64> = (0..experts).map(|e| model.expert_bytes(eid(e))).collect();
    let mut inc = IncrementalObjective::new(model, model.empty_placement());
    let mut remaining = capacities(model);
    let mut terms = GainTerms::new(model);
    let mut ratios = vec![0.0; servers * experts];
    let mut live = vec![false; servers * experts];
    for (n, &room) in remaining.iter().enumerate() {
        for e in (0..experts).filter(|&e| bytes[e] <= room) {
            for (j, d) in model.demands_of(eid(e)).enumerate() {
                *terms.of(n, e, j) = inc.gain_term(sid(n), eid(e), d);
            }
            ratios[n * experts + e] = density(terms.gain(n, e), bytes[e]);
            live[n * experts + e] = true;
        }
    }
    let mut candidates = live.iter().filter(|&&l| l).count() as u64;
    let mut tree = Tournament::new(&live, &ratios);
    // Experts largest first: those that no longer fit server n are a prefix, of length
    // too_large[n] (capacities only shrink).
    let mut by_size: Vec<usize> = (0..experts).collect();
    by_size.sort_by_key(|&e| std::cmp::Reverse(bytes[e]));
    let mut too_large = vec![0usize; servers];
    let mut refreshed = vec![usize::MAX; experts];
    let mut changed = Vec::new();
    let mut evaluations = 0u64;
    let mut picks = Vec::new();
    loop {
        // Line 5 consults the gain of every pair that fits (cached or fresh, the same value).
        evaluations += candidates;
        let Some(best) = tree.best() else { break };
        let (n, e) = (best / experts, best % experts);
        inc.insert(sid(n), eid(e));
        remaining[n] -= bytes[e];
        let step = picks.len();
        picks.push((n, e));
        tree.remove(best, &ratios);
        candidates -= 1;
        while let Some(&f) = by_size.get(too_large[n]) {
            if bytes[f] <= remaining[n] {
                break;
            }
            too_large[n] += 1;
            if tree.contains(n * experts + f) {
                tree.remove(n * experts + f, &ratios);
                candidates -= 1;
            }
        }
        for d in model.demands_of(eid(e)) {
            for (k, &f) in model.demands()[d].missing.iter().enumerate() {
                let j = terms.position(d, k);
                for s in (0..servers).filter(|&s| tree.contains(s * experts + f.index())) {
                    *terms.of(s, f.index(), j) = inc.gain_term(sid(s), f, d);
                }
                if std::mem::replace(&mut refreshed[f.index()], step) != step {
                    changed.push(f.index());
                }
            }
        }
        for f in changed.drain(..) {
            for s in 0..servers {
                let i = s * experts + f;
                if tree.contains(i) {
                    ratios[i] = density(terms.gain(s, f), bytes[f]);
                    tree.update(i, &ratios);
                }
            }
        }
    }
    let outcome = Outcome {
        placement: inc.into_placement(),
        evaluations,
    };
    (outcome, picks)
}

/// Alg. 1's cache of the terms of every pair's gain ([`IncrementalObjective::gain_term`]): per
/// server, expert e's terms are contiguous, in the order of [`LatencyModel::demands_of`] e, so
/// that their sum is [`IncrementalObjective::gain`] bit for bit.
struct GainTerms {
    /// first[e]..first[e + 1]: expert e's terms within a server's row.
    first: Vec<usize>,
    /// position[at[d] + k]: the index of demand d within demands_of(d.missing[k]).
    at: Vec<usize>,
    position: Vec<usize>,
    /// Row n, entry first[e] + j: the term of the j-th demand of e for the pair (n, e).
    terms: Vec<f64>,
}

impl GainTerms {
    fn new(model: &LatencyModel) -> Self {
        let demands = model.demands();
        let mut first = vec![0];
        for e in 0..model.experts() {
            first.push(first[e] + model.demands_of(eid(e)).count());
        }
        let mut at = vec![0];
        for (d, demand) in demands.iter().enumerate() {
            at.push(at[d] + demand.missing.len());
        }
        let mut position = vec![0; at[demands.len()]];
        for e in 0..model.experts() {
            for (j, d) in model.demands_of(eid(e)).enumerate() {
                let k = demands[d]
                    .missing
                    .binary_search(&eid(e))
                    .expect("demands_of(e) lists demands that need e");
                position[at[d] + k] = j;
            }
        }
        let terms = vec![0.0; model.servers() * first[model.experts()]];
        GainTerms {
            first,
            at,
            position,
            terms,
        }
    }

    /// The index of demand d within demands_of(d.missing[k]).
    fn position(&self, d: usize, k: usize) -> usize {
        self.position[self.at[d] + k]
    }

    /// The term of the j-th demand of e, for the pair (n, e).
    fn of(&mut self, n: usize, e: usize, j: usize) -> &mut f64 {
        let width = self.first[self.first.len() - 1];
        &mut self.terms[n * width + self.first[e] + j]
    }

    /// F((n, e) | X) as [`IncrementalObjective::gain`] sums it.
    fn gain(&self, n: usize, e: usize) -> f64 {
        let width = self.first[self.first.len() - 1];
        self.terms[n * width + self.first[e]..n * width + self.first[e + 1]]
            .iter()
            .copied()
            .sum()
    }
}

/// A tournament tree over the pairs n * E + e: each node holds the winner of its leaves, the
/// pair of highest density with the lowest index on ties, i.e. what Alg. 1's server-major scan
/// with strict `>` selects. The two agree unless a density is NaN, which takes an infinite route
/// cost (a transfer time overflowing f64; validation requires finite inputs). An update costs
/// O(log(N E)) instead of a scan of all N E pairs.
struct Tournament {
    /// Number of leaves, a power of two.
    leaves: usize,
    /// Node k's winner ([`Tournament::NONE`]: no live pair below it); leaf i is node leaves + i.
    winner: Vec<usize>,
}

impl Tournament {
    const NONE: usize = usize::MAX;

    /// The tree over the pairs with `live[i]`, judged by `ratios`.
    fn new(live: &[bool], ratios: &[f64]) -> Self {
        let leaves = live.len().next_power_of_two();
        let mut winner = vec![Self::NONE; 2 * leaves];
        for (i, _) in live.iter().enumerate().filter(|(_, &l)| l) {
            winner[leaves + i] = i;
        }
        let mut tree = Tournament { leaves, winner };
        for k in (1..leaves).rev() {
            tree.winner[k] = tree.play(k, ratios);
        }
        tree
    }

    /// The winner of node k's two children: the left one unless the right one is strictly
    /// denser.
    fn play(&self, k: usize, ratios: &[f64]) -> usize {
        let (a, b) = (self.winner[2 * k], self.winner[2 * k + 1]);
        if a == Self::NONE || (b != Self::NONE && ratios[b] > ratios[a]) {
            b
        } else {
            a
        }
    }

    /// The overall winner, if any pair is live.
    fn best(&self) -> Option<usize> {
        Some(self.winner[1]).filter(|&w| w != Self::NONE)
    }

    fn contains(&self, i: usize) -> bool {
        self.winner[self.leaves + i] != Self::NONE
    }

    /// Replays the matches above leaf i after its density changed.
    fn update(&mut self, i: usize, ratios: &[f64]) {
        let mut k = (self.leaves + i) / 2;
        while k >= 1 {
            self.winner[k] = self.play(k, ratios);
            k /= 2;
        }
    }

    /// Takes pair i out (picked, or no longer fitting).
    fn remove(&mut self, i: usize, ratios: &[f64]) {
        self.winner[self.leaves + i] = Self::NONE;
        self.update(i, ratios);
    }
}

/// A heap entry of the lazy greedy: a possibly stale density.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    ratio: f64,
    /// n * E + e: lower means lower (server, expert) in server-major order.
    index: usize,
    /// The step (number of picks made) at which `ratio` was computed.
    stamp: usize,
}

impl Ord for Candidate {
    /// Larger density first; on equal density the lower index is "larger" (popped first).
    fn cmp(&self, other: &Self) -> Ordering {
        self.ratio
            .total_cmp(&other.ratio)
            .then_with(|| other.index.cmp(&self.index))
    }
}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Candidate {}

/// Minoux's accelerated greedy (see the module doc): Algorithm 1's picks when every model is
/// Top-1, with fewer gain evaluations.
///
/// # Complexity
/// N servers, E experts, D_e the routing demands that need expert e (a gain of (n, e) evaluates
/// their D_e routes). Time: N E gains to start, then each heap pop selects, drops or re-evaluates
/// one pair, O(log(N E)) per heap operation; in the worst case every pair is re-evaluated at each
/// of the at most N E picks, O(N^2 E^2) gains as Alg. 1, far fewer when stale ratios are upper
/// bounds (F submodular). Memory: O(N E) heap entries.
///
/// # Examples
/// ```
/// use formulations::slimcaching::{ExpertId, ServerId, LatencyModel};
/// use moe_opt::slimcaching::generate::{generate, GeneratorConfig, Preset};
/// use moe_opt::slimcaching::algorithms::lazy_greedy;
///
/// let model = LatencyModel::new(&generate(&GeneratorConfig::preset(Preset::Tiny), 1));
/// let x = lazy_greedy(&model).placement;
/// assert!(model.is_feasible(&x));
/// // Stopped only when nothing more fits: every expert not on a server exceeds its room.
/// for n in (0..model.servers() as u32).map(ServerId) {
///     let used: u64 = x.experts_on(n).map(|e| model.expert_bytes(e)).sum();
///     for e in (0..model.experts() as u32).map(ExpertId) {
///         assert!(x.contains(n, e) || model.expert_bytes(e) > model.capacity(n) - used);
///     }
/// }
/// ```
pub fn lazy_greedy(model: &LatencyModel) -> Outcome {
    lazy_greedy_trace(model).0
}

/// The lazy greedy, also returning the picks (server, expert) in order.
fn lazy_greedy_trace(model: &LatencyModel) -> (Outcome, Vec<(usize, usize)>) {
    let experts = model.experts();
    let mut inc = IncrementalObjective::new(model, model.empty_placement());
    let mut remaining = capacities(model);
    let mut evaluations = 0u64;
    let mut picks = Vec::new();
    let mut heap = BinaryHeap::new();
    for (n, &room) in remaining.iter().enumerate() {
        for e in 0..experts {
            let bytes = model.expert_bytes(eid(e));
            if bytes > room {
                continue;
            }
            evaluations += 1;
            heap.push(Candidate {
                ratio: density(inc.gain(sid(n), eid(e)), bytes),
                index: n * experts + e,
                stamp: 0,
            });
        }
    }
    while let Some(top) = heap.pop() {
        let (n, e) = (top.index / experts, top.index % experts);
        let bytes = model.expert_bytes(eid(e));
        if bytes > remaining[n] {
            continue;
        }
        if top.stamp == picks.len() {
            inc.insert(sid(n), eid(e));
            remaining[n] -= bytes;
            picks.push((n, e));
            continue;
        }
        evaluations += 1;
        heap.push(Candidate {
            ratio: density(inc.gain(sid(n), eid(e)), bytes),
            stamp: picks.len(),
            ..top
        });
    }
    let outcome = Outcome {
        placement: inc.into_placement(),
        evaluations,
    };
    (outcome, picks)
}

/// A knapsack solver: (values, sizes, capacity) -> (optimum, chosen item indices ascending).
type Knapsack = fn(&[f64], &[u64], u64) -> Result<(f64, Vec<usize>), Error>;

/// Algorithm 2: successive decomposition (19)-(22), each P3_n (23) solved by the DP of Alg. 2.
///
/// # Complexity
/// N servers, E experts, C_n = floor(Q_n / g) server n's capacity in units of the gcd g of the
/// sizes (capped at the items' total). Time: O(N E) gains (E per server) plus the DPs,
/// O(sum_n E C_n) cell updates, which dominate. Memory: one server's table at a time,
/// O(E C_n / 64) words of bits and O(C_n) values.
///
/// # Examples
/// ```
/// use formulations::slimcaching::LatencyModel;
/// use moe_opt::slimcaching::generate::{generate, GeneratorConfig, Preset};
/// use moe_opt::slimcaching::algorithms::{exhaustive, successive_dp};
///
/// let model = LatencyModel::new(&generate(&GeneratorConfig::preset(Preset::Tiny), 1));
/// let out = successive_dp(&model)?;
/// assert!(model.is_feasible(&out.placement));
/// assert_eq!(out.subproblem_values.len(), model.servers());
/// assert_eq!(out.evaluations, (model.servers() * model.experts()) as u64);
/// let (_, optimum) = exhaustive(&model)?;
/// assert!(model.objective(&out.placement) <= optimum + 1e-9);
/// # Ok::<(), formulations::Error>(())
/// ```
pub fn successive_dp(model: &LatencyModel) -> Result<Successive, Error> {
    successive(model, knapsack_dp)
}

/// Algorithm 3: successive decomposition, each P3_n solved by (max, +) convolution of the
/// size classes' concave value sequences (Definition 3).
///
/// # Complexity
/// N servers, E experts, T_n the distinct expert sizes that fit server n, C_n its capacity units
/// (as [`successive_dp`]). Time: O(N E) gains plus per server O(E log E) to sort the classes and
/// O(T_n C_n log C_n) for the convolutions, which dominate. Memory: O(T_n C_n) choice-table
/// cells.
///
/// # Examples
/// The first subproblem P3_1 is the same knapsack for Algs. 2 and 3 (values against an empty
/// X_{<1}), and both solve it exactly.
/// ```
/// use formulations::slimcaching::LatencyModel;
/// use moe_opt::slimcaching::generate::{generate, GeneratorConfig, Preset};
/// use moe_opt::slimcaching::algorithms::{successive_dp, successive_maxconv};
///
/// let model = LatencyModel::new(&generate(&GeneratorConfig::preset(Preset::Tiny), 1));
/// let out = successive_maxconv(&model)?;
/// assert!(model.is_feasible(&out.placement));
/// let first = successive_dp(&model)?.subproblem_values[0];
/// assert!((out.subproblem_values[0] - first).abs() <= 1e-9 * first.abs().max(1.0));
/// # Ok::<(), formulations::Error>(())
/// ```
pub fn successive_maxconv(model: &LatencyModel) -> Result<Successive, Error> {
    successive(model, knapsack_maxconv)
}

fn successive(model: &LatencyModel, solve: Knapsack) -> Result<Successive, Error> {
    let experts = model.experts();
    let sizes: Vec<u64> = (0..experts).map(|e| model.expert_bytes(eid(e))).collect();
    let mut inc = IncrementalObjective::new(model, model.empty_placement());
    let mut subproblem_values = Vec::with_capacity(model.servers());
    let mut evaluations = 0u64;
    for n in 0..model.servers() {
        // v_e = F~_n(e | empty) of (20)-(21): the gain of (n, e) given X_{<n}; server n is
        // still empty here, so every value is taken against the same X_{<n}.
        let values: Vec<f64> = (0..experts).map(|e| inc.gain(sid(n), eid(e))).collect();
        evaluations += experts as u64;
        let (optimum, chosen) =
            solve(&values, &sizes, model.capacity(sid(n))).map_err(|err| match err {
                Error::TooLarge(msg) => Error::TooLarge(format!("server {n}: {msg}")),
                other => other,
            })?;
        for e in chosen {
            inc.insert(sid(n), eid(e));
        }
        subproblem_values.push(optimum);
    }
    Ok(Successive {
        placement: inc.into_placement(),
        subproblem_values,
        evaluations,
    })
}

/// moe-opt's repair of Alg. 1 (claim `prop3-repaired`; the module doc of
/// `claims::references` proves its ratio): for n = 1..N in order, with X_{<n} fixed, solve the
/// knapsack of server n for the gain g_n(X) = F(X_{<n} + X) - F(X_{<n}) by the better of two
/// candidates (Khuller, Moss and Naor's modified greedy): the density greedy restricted to
/// server n (Alg. 1's rule: the pair of n that fits with the largest gain / size, until none
/// fits) and the best single expert that fits n. Ties: the greedy, then the lowest expert.
/// `subproblem_values` holds each g_n of the kept candidate. Cost: O(E^2) gains per server.
///
/// # Complexity
/// N servers, E experts, D_e the routing demands that need expert e (one gain of (n, e)
/// evaluates their routes). Time: O(N E^2) gains, E per greedy step and at most E steps per
/// server, which dominate. Memory: O(N E) (the placement and its copies).
///
/// # Examples
/// The kept gains telescope to F (eq. (22)): F(X) - F(empty) = sum_n g_n.
/// ```
/// use formulations::slimcaching::LatencyModel;
/// use moe_opt::slimcaching::generate::{generate, GeneratorConfig, Preset};
/// use moe_opt::slimcaching::algorithms::successive_greedy;
///
/// let model = LatencyModel::new(&generate(&GeneratorConfig::preset(Preset::Tiny), 1));
/// let out = successive_greedy(&model);
/// assert!(model.is_feasible(&out.placement));
/// let gained = model.objective(&out.placement) - model.objective(&model.empty_placement());
/// let sum: f64 = out.subproblem_values.iter().sum();
/// assert!((gained - sum).abs() <= 1e-9 * gained.abs().max(1.0));
/// ```
pub fn successive_greedy(model: &LatencyModel) -> Successive {
    let experts = model.experts();
    let bytes: Vec<u64> = (0..experts).map(|e| model.expert_bytes(eid(e))).collect();
    let mut placement = model.empty_placement();
    let mut subproblem_values = Vec::with_capacity(model.servers());
    let mut evaluations = 0u64;
    for n in 0..model.servers() {
        let capacity = model.capacity(sid(n));
        // Candidate 1: the density greedy on server n alone.
        let mut greedy = IncrementalObjective::new(model, placement.clone());
        let base = greedy.value();
        let mut room = capacity;
        let mut fits: Vec<usize> = (0..experts).filter(|&e| bytes[e] <= room).collect();
        while !fits.is_empty() {
            let mut best = (f64::NEG_INFINITY, 0usize);
            for &e in &fits {
                let r = density(greedy.gain(sid(n), eid(e)), bytes[e]);
                if r > best.0 {
                    best = (r, e);
                }
            }
            evaluations += fits.len() as u64;
            greedy.insert(sid(n), eid(best.1));
            room -= bytes[best.1];
            fits.retain(|&e| e != best.1 && bytes[e] <= room);
        }
        let greedy_value = greedy.value() - base;
        // Candidate 2: the best single expert that fits server n (its gain given X_{<n}).
        let start = IncrementalObjective::new(model, placement.clone());
        let single = (0..experts)
            .filter(|&e| bytes[e] <= capacity)
            .map(|e| (start.gain(sid(n), eid(e)), e))
            .fold(None, |best: Option<(f64, usize)>, (g, e)| match best {
                Some((b, _)) if b >= g => best,
                _ => Some((g, e)),
            });
        evaluations += (0..experts).filter(|&e| bytes[e] <= capacity).count() as u64;
        match single {
            Some((g, e)) if g > greedy_value => {
                placement.insert(sid(n), eid(e));
                subproblem_values.push(g);
            }
            _ => {
                placement = greedy.into_placement();
                subproblem_values.push(greedy_value);
            }
        }
    }
    Successive {
        placement,
        subproblem_values,
        evaluations,
    }
}

/// The optimum of P1 by enumerating every feasible placement over the relevant pairs (see the
/// module doc); returns the best placement (the first found in depth-first order, exclusion
/// before inclusion, on ties) and its F. [`Error::TooLarge`] above [`EXHAUSTIVE_LIMIT`]
/// relevant pairs.
///
/// # Complexity
/// Exponential: P relevant pairs (P <= [`EXHAUSTIVE_LIMIT`]) give at most 2^P feasible
/// placements, each scored by one full evaluation of F over the D routing demands, O(2^P D K)
/// with K the most experts a demand misses; this dominates. Memory: O(P) recursion depth and
/// O(N E) for the current and best placements.
///
/// # Examples
/// ```
/// use formulations::slimcaching::LatencyModel;
/// use moe_opt::slimcaching::generate::{generate, GeneratorConfig, Preset};
/// use moe_opt::slimcaching::algorithms::{exhaustive, greedy};
///
/// let model = LatencyModel::new(&generate(&GeneratorConfig::preset(Preset::Tiny), 1));
/// let (x, optimum) = exhaustive(&model)?;
/// assert!(model.is_feasible(&x));
/// assert_eq!(model.objective(&x), optimum);
/// assert!(optimum >= model.objective(&greedy(&model).placement));
/// assert!(optimum >= model.objective(&model.empty_placement()));
/// # Ok::<(), formulations::Error>(())
/// ```
pub fn exhaustive(model: &LatencyModel) -> Result<(Placement, f64), Error> {
    let mut pairs: Vec<(ServerId, ExpertId, u64)> = Vec::new();
    for n in 0..model.servers() {
        for e in 0..model.experts() {
            let (n, e) = (sid(n), eid(e));
            let bytes = model.expert_bytes(e);
            if model.demands_of(e).next().is_some() && bytes <= model.capacity(n) {
                pairs.push((n, e, bytes));
            }
        }
    }
    if pairs.len() > EXHAUSTIVE_LIMIT {
        return Err(Error::TooLarge(format!(
            "exhaustive search over {} relevant (server, expert) pairs exceeds the limit of {} \
             ({} servers x {} experts in total); use the MILP instead",
            pairs.len(),
            EXHAUSTIVE_LIMIT,
            model.servers(),
            model.experts()
        )));
    }
    let mut search = Search {
        model,
        pairs: &pairs,
        room: capacities(model),
        x: model.empty_placement(),
        best: None,
    };
    search.visit(0);
    let (value, placement) = search
        .best
        .expect("the empty placement is always enumerated");
    Ok((placement, value))
}

struct Search<'a> {
    model: &'a LatencyModel,
    pairs: &'a [(ServerId, ExpertId, u64)],
    room: Vec<u64>,
    x: Placement,
    best: Option<(f64, Placement)>,
}

impl Search<'_> {
    fn visit(&mut self, k: usize) {
        let Some(&(n, e, bytes)) = self.pairs.get(k) else {
            let value = self.model.objective(&self.x);
            if self.best.as_ref().is_none_or(|(b, _)| value > *b) {
                self.best = Some((value, self.x.clone()));
            }
            return;
        };
        self.visit(k + 1);
        if bytes <= self.room[n.index()] {
            self.room[n.index()] -= bytes;
            self.x.insert(n, e);
            self.visit(k + 1);
            self.x.remove(n, e);
            self.room[n.index()] += bytes;
        }
    }
}
