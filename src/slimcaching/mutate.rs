//! SlimCaching-specific moves for the worst-case search and for shrinking
//! ([`verification::search::local_search`] and [`verification::search::shrink`]).
//!
//! Every function here takes a valid instance (one that passes
//! [`formulations::slimcaching::validate::validate`]) and returns valid instances, so the
//! search never scores, and shrinking never tests, an instance the evaluator would refuse.
//!
//! ## Perturbation ([`perturb`])
//!
//! One random neighbour changes one group of numbers and keeps the structure (servers, users,
//! models, sets, local experts) intact. The move is drawn uniformly among the kinds that
//! apply to the instance, then its target uniformly:
//!
//! * **storage**: one server's Q_n times a factor f;
//! * **expert size**: one model's b_m times f;
//! * **model cost**: one model's D_m (hidden bytes) or mu_m^CP (FLOPs per expert), times f;
//! * **activation distribution**: one p_{u,S} distribution with at least 2 sets is perturbed
//!   (see below);
//! * **request distribution**: one user's p_{u,m} with at least 2 requests is perturbed;
//! * **link**: one link's latency (when positive) or rate (when present), times f: edge-edge,
//!   edge-cloud, cloud-edge, a user's uplink or downlink. When `backhaul.symmetric` is
//!   declared the mirror link (edge_to_edge\[j\]\[i\] for \[i\]\[j\], cloud_to_edge\[n\] for
//!   edge_to_cloud\[n\] and back) becomes an exact copy of the changed link, so the declared
//!   symmetry stays exact;
//! * **compute**: one compute capability (a server's, the cloud's or a user's), times f.
//!
//! The factor f = 2^t with t uniform in \[-1, 1\] (log-uniform in \[0.5, 2\], so growing and
//! shrinking are equally likely). Integers (Q_n, b_m, D_m) are rounded to the nearest integer
//! and clamped to \[1, 2^53\]; a real that would leave \[1e-300, 1e300\] (never zero, infinite
//! or NaN) keeps its old value. A distribution is perturbed by one of two moves, chosen with
//! probability 1/2 each:
//!
//! * *transfer*: a fraction t in (0, 1] of a positive entry's mass moves to another entry (t = 1
//!   empties it);
//! * *reweight*: one positive entry is multiplied by f.
//!
//! Either way the vector is then renormalised: divided by its sum, and the entry with the
//! largest value (the first on ties) is set to 1 minus the sum of the others (clamped to
//! \[0, 1\]), so the sum is 1 up to the rounding of the validator's own summation (far below
//! 1e-12 for the sizes here). Mass goes to a request whose p_{u,m} is 0 only when that model
//! already has a distribution for every layer: validation requires one for each requested
//! model with p > 0. Zero entries stay zero under reweighting. Perturbation is deterministic
//! given the RNG state.
//!
//! ## Shrinking ([`shrink_candidates`], [`size`])
//!
//! [`size`] is the pair ([`Size::structure`], [`Size::non_round`]), compared
//! lexicographically. `structure` counts the entries of the instance: servers, edge-edge links,
//! edge-cloud and cloud-edge links, models, MoE layers (sum of L_m), experts (sum of L_m E_m),
//! and per user 1 + its uplinks + its downlinks + its requests + its local experts + its
//! activation distributions + their sets. `non_round` counts the numbers that are not
//! "round": an integer (Q_n, b_m, D_m) or a real (compute, latency, rate, FLOPs) is round when
//! it has at most 2 significant decimal digits; a probability when it is a multiple of 0.01.
//!
//! The candidates, each valid and strictly smaller, sorted by size (most reducing first; ties
//! in the order below):
//!
//! * **drop a server** (if N > 1): its storage, its row and column of `edge_to_edge`, its
//!   cloud links and every user's uplink and downlink to it go; servers above it shift down.
//!   A user associated with it gets `associated_server: None` (the evaluator's rule under eq.
//!   (4) picks among the remaining servers); associations above it shift down.
//! * **drop a user** (if U > 1).
//! * **drop a model that no user requests with p > 0** (if M > 1): requests of it with p = 0,
//!   its activations and local experts go; model ids above it shift down everywhere.
//! * **drop a MoE layer l of a model** (if L_m > 1): the distributions of (m, l) and local
//!   experts in layer l go; layers above it shift down.
//! * **drop an expert index e of a model** (if E_m > K_m): every set containing e goes (the
//!   rest of the distribution is renormalised; not offered when some distribution would lose
//!   all its mass), local experts (m, *, e) go, indices above e shift down (sets stay distinct
//!   since the renumbering is injective).
//! * **drop a request** of a user with at least 2 (when the others carry positive mass): its
//!   activations go (its local experts stay, a separate candidate drops them), the remaining
//!   p_{u,m} are renormalised. Zero entries stay zero, so no model needs new activations.
//! * **drop an activation set** from a distribution with at least 2 (when the others carry
//!   positive mass), renormalising the rest.
//! * **drop a local expert**.
//! * **round every number** (offered when at least two groups below change), then **round
//!   one group**: a server (Q_n and compute), the cloud, a link (latency and rate; with
//!   declared symmetry the mirror link becomes a copy of the rounded link), a model (b_m, D_m,
//!   mu_m), a user's compute, a user's request distribution, an activation distribution.
//!   Integers and reals are rounded to 2 significant digits (integers half up, and those
//!   below 100 are round already, so positive stays positive; reals by decimal rounding of
//!   their exact value, then the nearest double, which is again round). A distribution with a
//!   non-round entry becomes multiples of 0.01 by the largest-remainder method: each entry gets
//!   floor(100 p) hundredths and the hundredths left over go to the positive entries with the
//!   largest remainders (first index on ties), so it sums to exactly 100 hundredths and no
//!   zero entry becomes positive. A group is only offered when rounding changes it; every
//!   number in it is round afterwards, so `non_round` strictly decreases.
//!
//! Drops never add an entry or a number, so `structure` strictly decreases (renormalisation
//! may make probabilities non-round, which the lexicographic order allows). Candidates are
//! additionally validated; one that fails validation or is not strictly smaller (neither
//! happens for a valid input, which the tests check) is left out. Not shrunk: K_m (it would
//! change every set), the choice of association (kept or cleared only when its server goes).
//!
//! Each candidate is a full copy, so the list is built lazily in the order above and cut at
//! max(16, 2^22 / structure) candidates (about 4 million entries in all): a `paper` instance
//! (60,000-150,000 entries) gets its first 28-67 candidates (server and user drops), while
//! `tiny` and `small` instances (under 400 entries, at most a few hundred candidates) always
//! get the complete list, so a shrink of them ends at an instance none of whose candidates
//! still fails.

use std::cmp::Ordering;

use crate::mutate::{factor, is_round, round_real};
use formulations::slimcaching::validate::validate;
use formulations::slimcaching::{ActivationSet, Instance, LayerActivation, Link, ServerId, User};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Largest integer a perturbation produces (2^53, exactly representable as an f64).
const MAX_INTEGER: u64 = 1 << 53;
/// Smallest positive real a perturbation produces.
const MIN_REAL: f64 = 1e-300;
/// Largest real a perturbation produces.
const MAX_REAL: f64 = 1e300;
/// Probabilities are rounded to multiples of 1 / PROBABILITY_UNITS.
const PROBABILITY_UNITS: u64 = 100;

// ---------------------------------------------------------------------------------------------
// Perturbation
// ---------------------------------------------------------------------------------------------

/// The kinds of perturbation (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Move {
    Storage,
    ExpertBytes,
    ModelCost,
    Activation,
    Request,
    Link,
    Compute,
}

/// A random neighbour of a valid instance: one perturbation of its numbers (see the module
/// doc for the moves). The result is valid and has the same structure (and [`Size::structure`]);
/// it may equal the input when the drawn change rounds away (an integer of 1 scaled by 0.7).
pub fn perturb(instance: &Instance, rng: &mut ChaCha8Rng) -> Instance {
    let mut out = instance.clone();
    let moves = applicable_moves(instance);
    if moves.is_empty() {
        return out;
    }
    match moves[rng.random_range(0..moves.len())] {
        Move::Storage => {
            let n = rng.random_range(0..out.servers.len());
            let f = factor(rng);
            let s = &mut out.servers[n];
            s.storage_bytes = scale_integer(s.storage_bytes, f);
        }
        Move::ExpertBytes => {
            let m = rng.random_range(0..out.models.len());
            let f = factor(rng);
            let model = &mut out.models[m];
            model.expert_bytes = scale_integer(model.expert_bytes, f);
        }
        Move::ModelCost => {
            let m = rng.random_range(0..out.models.len());
            let hidden = rng.random_bool(0.5);
            let f = factor(rng);
            let model = &mut out.models[m];
            if hidden {
                model.hidden_bytes = scale_integer(model.hidden_bytes, f);
            } else {
                model.expert_flops = scale_real(model.expert_flops, f);
            }
        }
        Move::Activation => {
            let targets = perturbable_activations(instance);
            let (u, a) = targets[rng.random_range(0..targets.len())];
            let act = &mut out.users[u].activations[a];
            let mut ps: Vec<f64> = act.sets.iter().map(|s| s.p).collect();
            let can_receive = vec![true; ps.len()];
            perturb_distribution(&mut ps, &can_receive, rng);
            for (s, p) in act.sets.iter_mut().zip(ps) {
                s.p = p;
            }
        }
        Move::Request => {
            let targets = perturbable_requests(instance);
            let u = targets[rng.random_range(0..targets.len())];
            let can_receive: Vec<bool> = instance.users[u]
                .requests
                .iter()
                .map(|r| has_every_layer(instance, &instance.users[u], r.model.index()))
                .collect();
            let user = &mut out.users[u];
            let mut ps: Vec<f64> = user.requests.iter().map(|r| r.p).collect();
            perturb_distribution(&mut ps, &can_receive, rng);
            for (r, p) in user.requests.iter_mut().zip(ps) {
                r.p = p;
            }
        }
        Move::Link => {
            let targets = scalable_link_parts(instance);
            let (slot, rate) = targets[rng.random_range(0..targets.len())];
            let f = factor(rng);
            if let Some(mut link) = link_at(instance, slot).copied() {
                if rate {
                    link.rate_bps = link.rate_bps.map(|r| scale_real(r, f));
                } else {
                    link.latency_s = scale_real(link.latency_s, f);
                }
                set_link(&mut out, slot, link);
            }
        }
        Move::Compute => {
            let n = out.servers.len();
            let k = rng.random_range(0..n + 1 + out.users.len());
            let f = factor(rng);
            let c = if k < n {
                &mut out.servers[k].compute_flops
            } else if k == n {
                &mut out.cloud.compute_flops
            } else {
                &mut out.users[k - n - 1].compute_flops
            };
            *c = scale_real(*c, f);
        }
    }
    out
}

/// The move kinds that have a target in `instance`, in a fixed order.
fn applicable_moves(instance: &Instance) -> Vec<Move> {
    let mut moves = Vec::with_capacity(7);
    if !instance.servers.is_empty() {
        moves.push(Move::Storage);
    }
    if !instance.models.is_empty() {
        moves.push(Move::ExpertBytes);
        moves.push(Move::ModelCost);
    }
    if !perturbable_activations(instance).is_empty() {
        moves.push(Move::Activation);
    }
    if !perturbable_requests(instance).is_empty() {
        moves.push(Move::Request);
    }
    if !scalable_link_parts(instance).is_empty() {
        moves.push(Move::Link);
    }
    // The cloud's compute always exists.
    moves.push(Move::Compute);
    moves
}

/// (user, activation index) of every distribution with at least 2 sets.
fn perturbable_activations(instance: &Instance) -> Vec<(usize, usize)> {
    instance
        .users
        .iter()
        .enumerate()
        .flat_map(|(u, user)| {
            user.activations
                .iter()
                .enumerate()
                .filter(|(_, a)| a.sets.len() >= 2)
                .map(move |(a, _)| (u, a))
        })
        .collect()
}

/// Users with at least 2 requests.
fn perturbable_requests(instance: &Instance) -> Vec<usize> {
    (0..instance.users.len())
        .filter(|&u| instance.users[u].requests.len() >= 2)
        .collect()
}

/// Whether `user` has a distribution for every MoE layer of model `m` (so p_{u,m} may become
/// positive).
fn has_every_layer(instance: &Instance, user: &User, m: usize) -> bool {
    let Some(model) = instance.models.get(m) else {
        return false;
    };
    (0..model.layers).all(|l| {
        user.activations
            .iter()
            .any(|a| a.model.index() == m && a.layer.0 == l)
    })
}

/// The factor of a scaling move: 2^t, t uniform in [-1, 1].
/// `x * f` rounded to an integer in [1, 2^53].
fn scale_integer(x: u64, f: f64) -> u64 {
    let y = (x as f64 * f).round();
    if y.is_nan() {
        return x;
    }
    y.clamp(1.0, MAX_INTEGER as f64) as u64
}

/// `x * f` when it stays in [MIN_REAL, MAX_REAL], else `x`.
fn scale_real(x: f64, f: f64) -> f64 {
    let y = x * f;
    if (MIN_REAL..=MAX_REAL).contains(&y) {
        y
    } else {
        x
    }
}

/// One random transfer or reweighting of a probability vector, then renormalisation; entry i
/// may go from 0 to positive only when `can_receive[i]`.
fn perturb_distribution(ps: &mut [f64], can_receive: &[bool], rng: &mut ChaCha8Rng) {
    let positive: Vec<usize> = (0..ps.len()).filter(|&i| ps[i] > 0.0).collect();
    if positive.is_empty() {
        return;
    }
    if rng.random_bool(0.5) {
        let src = positive[rng.random_range(0..positive.len())];
        let receivers: Vec<usize> = (0..ps.len())
            .filter(|&i| i != src && (ps[i] > 0.0 || can_receive.get(i).copied().unwrap_or(false)))
            .collect();
        if !receivers.is_empty() {
            let dst = receivers[rng.random_range(0..receivers.len())];
            // random::<f64>() is in [0, 1), so t is in (0, 1].
            let t = 1.0 - rng.random::<f64>();
            let delta = ps[src] * t;
            ps[src] = if t == 1.0 { 0.0 } else { ps[src] - delta };
            ps[dst] += delta;
            normalise(ps);
            return;
        }
    }
    let i = positive[rng.random_range(0..positive.len())];
    ps[i] = scale_real(ps[i], factor(rng));
    normalise(ps);
}

/// Divides by the sum and puts the rounding residue on the largest entry (first on ties), so
/// the entries lie in [0, 1] and sum to 1 up to summation rounding. Returns false (and leaves
/// `ps` alone) when the sum is not positive and finite.
fn normalise(ps: &mut [f64]) -> bool {
    let total: f64 = ps.iter().sum();
    if !(total.is_finite() && total > 0.0) {
        return false;
    }
    for p in ps.iter_mut() {
        *p = (*p / total).clamp(0.0, 1.0);
    }
    let largest = (0..ps.len())
        .max_by(|&a, &b| ps[a].total_cmp(&ps[b]).then(b.cmp(&a)))
        .expect("a positive sum needs an entry");
    let rest: f64 = ps
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != largest)
        .map(|(_, p)| p)
        .sum();
    ps[largest] = (1.0 - rest).clamp(0.0, 1.0);
    true
}

// ---------------------------------------------------------------------------------------------
// Links
// ---------------------------------------------------------------------------------------------

/// The position of one link in an instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LinkSlot {
    /// `backhaul.edge_to_edge[i][j]`, i != j.
    EdgeEdge(usize, usize),
    /// `backhaul.edge_to_cloud[n]`.
    EdgeCloud(usize),
    /// `backhaul.cloud_to_edge[n]`.
    CloudEdge(usize),
    /// `users[u].uplink[n]`.
    Uplink(usize, usize),
    /// `users[u].downlink[n]`.
    Downlink(usize, usize),
}

/// Every link slot, in a fixed order.
fn link_slots(instance: &Instance) -> Vec<LinkSlot> {
    let b = &instance.backhaul;
    let mut slots = Vec::new();
    for (i, row) in b.edge_to_edge.iter().enumerate() {
        for (j, l) in row.iter().enumerate() {
            if i != j && l.is_some() {
                slots.push(LinkSlot::EdgeEdge(i, j));
            }
        }
    }
    slots.extend((0..b.edge_to_cloud.len()).map(LinkSlot::EdgeCloud));
    slots.extend((0..b.cloud_to_edge.len()).map(LinkSlot::CloudEdge));
    for (u, user) in instance.users.iter().enumerate() {
        slots.extend((0..user.uplink.len()).map(|n| LinkSlot::Uplink(u, n)));
        slots.extend((0..user.downlink.len()).map(|n| LinkSlot::Downlink(u, n)));
    }
    slots
}

/// The link at a slot.
fn link_at(instance: &Instance, slot: LinkSlot) -> Option<&Link> {
    let b = &instance.backhaul;
    match slot {
        LinkSlot::EdgeEdge(i, j) => b.edge_to_edge.get(i)?.get(j)?.as_ref(),
        LinkSlot::EdgeCloud(n) => b.edge_to_cloud.get(n),
        LinkSlot::CloudEdge(n) => b.cloud_to_edge.get(n),
        LinkSlot::Uplink(u, n) => instance.users.get(u)?.uplink.get(n),
        LinkSlot::Downlink(u, n) => instance.users.get(u)?.downlink.get(n),
    }
}

/// The mutable link at a slot.
fn link_at_mut(instance: &mut Instance, slot: LinkSlot) -> Option<&mut Link> {
    let b = &mut instance.backhaul;
    match slot {
        LinkSlot::EdgeEdge(i, j) => b.edge_to_edge.get_mut(i)?.get_mut(j)?.as_mut(),
        LinkSlot::EdgeCloud(n) => b.edge_to_cloud.get_mut(n),
        LinkSlot::CloudEdge(n) => b.cloud_to_edge.get_mut(n),
        LinkSlot::Uplink(u, n) => instance.users.get_mut(u)?.uplink.get_mut(n),
        LinkSlot::Downlink(u, n) => instance.users.get_mut(u)?.downlink.get_mut(n),
    }
}

/// The link that must equal `slot`'s under declared symmetry.
fn mirror(instance: &Instance, slot: LinkSlot) -> Option<LinkSlot> {
    if !instance.backhaul.symmetric {
        return None;
    }
    match slot {
        LinkSlot::EdgeEdge(i, j) => Some(LinkSlot::EdgeEdge(j, i)),
        LinkSlot::EdgeCloud(n) => Some(LinkSlot::CloudEdge(n)),
        LinkSlot::CloudEdge(n) => Some(LinkSlot::EdgeCloud(n)),
        LinkSlot::Uplink(..) | LinkSlot::Downlink(..) => None,
    }
}

/// Writes `link` at `slot` and, under declared symmetry, at its mirror.
fn set_link(instance: &mut Instance, slot: LinkSlot, link: Link) {
    let mirrored = mirror(instance, slot);
    for s in std::iter::once(slot).chain(mirrored) {
        if let Some(l) = link_at_mut(instance, s) {
            *l = link;
        }
    }
}

/// (slot, is-rate) of every positive latency and every rate.
fn scalable_link_parts(instance: &Instance) -> Vec<(LinkSlot, bool)> {
    let mut parts = Vec::new();
    for slot in link_slots(instance) {
        if let Some(l) = link_at(instance, slot) {
            if l.latency_s > 0.0 {
                parts.push((slot, false));
            }
            if l.rate_bps.is_some() {
                parts.push((slot, true));
            }
        }
    }
    parts
}

// ---------------------------------------------------------------------------------------------
// Size and round numbers
// ---------------------------------------------------------------------------------------------

/// The measure shrinking decreases, compared lexicographically (structure first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Size {
    /// Entries of the instance: servers, edge-edge links, edge-cloud and cloud-edge links,
    /// models, MoE layers, experts (sum of L_m E_m), and per user 1 + uplinks + downlinks +
    /// requests + local experts + activation distributions + their sets.
    pub structure: u64,
    /// Numbers that are not round: integers and reals with more than 2 significant digits,
    /// probabilities that are not multiples of 0.01.
    pub non_round: u64,
}

/// The size of an instance (see [`Size`]).
pub fn size(instance: &Instance) -> Size {
    Size {
        structure: structure(instance),
        non_round: non_round(instance),
    }
}

/// [`Size::structure`].
fn structure(instance: &Instance) -> u64 {
    let len = |n: usize| n as u64;
    let b = &instance.backhaul;
    let mut s = len(instance.servers.len())
        + b.edge_to_edge
            .iter()
            .map(|row| len(row.iter().filter(|l| l.is_some()).count()))
            .sum::<u64>()
        + len(b.edge_to_cloud.len())
        + len(b.cloud_to_edge.len())
        + len(instance.models.len());
    for m in &instance.models {
        s += u64::from(m.layers) * (1 + u64::from(m.experts_per_layer));
    }
    for u in &instance.users {
        s += 1
            + len(u.uplink.len())
            + len(u.downlink.len())
            + len(u.requests.len())
            + len(u.local_experts.len())
            + u.activations
                .iter()
                .map(|a| 1 + len(a.sets.len()))
                .sum::<u64>();
    }
    s
}

/// [`Size::non_round`].
fn non_round(instance: &Instance) -> u64 {
    let mut count = 0u64;
    let mut int = |x: u64| count += u64::from(round_integer(x) != x);
    for s in &instance.servers {
        int(s.storage_bytes);
    }
    for m in &instance.models {
        int(m.expert_bytes);
        int(m.hidden_bytes);
    }
    let mut reals: Vec<f64> = Vec::new();
    let mut probabilities: Vec<f64> = Vec::new();
    reals.extend(instance.servers.iter().map(|s| s.compute_flops));
    reals.push(instance.cloud.compute_flops);
    reals.extend(instance.models.iter().map(|m| m.expert_flops));
    for slot in link_slots(instance) {
        if let Some(l) = link_at(instance, slot) {
            reals.push(l.latency_s);
            reals.extend(l.rate_bps);
        }
    }
    for u in &instance.users {
        reals.push(u.compute_flops);
        probabilities.extend(u.requests.iter().map(|r| r.p));
        for a in &u.activations {
            probabilities.extend(a.sets.iter().map(|s| s.p));
        }
    }
    count += reals.iter().filter(|&&x| !is_round(x)).count() as u64;
    count += probabilities
        .iter()
        .filter(|&&p| !is_round_probability(p))
        .count() as u64;
    count
}

/// `x` rounded to 2 significant digits, half up (values below 100 are unchanged; `x` itself
/// when the result would overflow).
fn round_integer(x: u64) -> u64 {
    if x < 100 {
        return x;
    }
    let mut unit = 1u64;
    while x / unit >= 100 {
        unit *= 10;
    }
    let (q, r) = (x / unit, x % unit);
    let q = if r >= unit - r { q + 1 } else { q };
    q.checked_mul(unit).unwrap_or(x)
}

/// Whether `p` is a multiple of 0.01 (as the nearest double).
fn is_round_probability(p: f64) -> bool {
    let units = PROBABILITY_UNITS as f64;
    (p * units).round() / units == p
}

/// A link with latency and rate rounded.
fn round_link(l: &Link) -> Link {
    Link {
        latency_s: round_real(l.latency_s),
        rate_bps: l.rate_bps.map(round_real),
    }
}

/// Rounds a distribution with a non-round entry to multiples of 0.01 by the largest-remainder
/// method; hundredths left over only go to positive entries. Unchanged when every entry is
/// round already or the input is not a distribution.
fn round_distribution(ps: &mut [f64]) {
    if ps.iter().all(|&p| is_round_probability(p)) {
        return;
    }
    let total_units = PROBABILITY_UNITS as f64;
    let scaled: Vec<f64> = ps.iter().map(|&p| p * total_units).collect();
    let mut units: Vec<u64> = scaled
        .iter()
        .map(|&q| q.floor().clamp(0.0, total_units) as u64)
        .collect();
    let assigned: u64 = units.iter().sum();
    if assigned > PROBABILITY_UNITS {
        return;
    }
    let mut order: Vec<usize> = (0..ps.len()).filter(|&i| ps[i] > 0.0).collect();
    if order.is_empty() {
        return;
    }
    let remainder = |i: usize| scaled[i] - scaled[i].floor();
    order.sort_by(|&a, &b| remainder(b).total_cmp(&remainder(a)).then(a.cmp(&b)));
    for k in 0..(PROBABILITY_UNITS - assigned) as usize {
        units[order[k % order.len()]] += 1;
    }
    for (p, u) in ps.iter_mut().zip(units) {
        *p = u as f64 / total_units;
    }
}

/// A group of numbers rounded together by one candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RoundGroup {
    Server(usize),
    Cloud,
    /// A link and, under declared symmetry, its mirror (listed once).
    Link(LinkSlot),
    Model(usize),
    UserCompute(usize),
    Requests(usize),
    Activation(usize, usize),
}

/// Every group, in a fixed order; mirrored links appear once (edge_to_edge\[i\]\[j\] with
/// i < j, edge_to_cloud\[n\]).
fn round_groups(instance: &Instance) -> Vec<RoundGroup> {
    let mut groups: Vec<RoundGroup> = (0..instance.servers.len())
        .map(RoundGroup::Server)
        .collect();
    groups.push(RoundGroup::Cloud);
    let symmetric = instance.backhaul.symmetric;
    for slot in link_slots(instance) {
        let canonical = match slot {
            LinkSlot::EdgeEdge(i, j) => !symmetric || i < j,
            LinkSlot::CloudEdge(_) => !symmetric,
            _ => true,
        };
        if canonical {
            groups.push(RoundGroup::Link(slot));
        }
    }
    groups.extend((0..instance.models.len()).map(RoundGroup::Model));
    for (u, user) in instance.users.iter().enumerate() {
        groups.push(RoundGroup::UserCompute(u));
        groups.push(RoundGroup::Requests(u));
        groups.extend((0..user.activations.len()).map(|a| RoundGroup::Activation(u, a)));
    }
    groups
}

/// Rounds every number of a group in place.
fn round_group(instance: &mut Instance, group: RoundGroup) {
    match group {
        RoundGroup::Server(n) => {
            let s = &mut instance.servers[n];
            s.storage_bytes = round_integer(s.storage_bytes);
            s.compute_flops = round_real(s.compute_flops);
        }
        RoundGroup::Cloud => {
            let c = &mut instance.cloud.compute_flops;
            *c = round_real(*c);
        }
        RoundGroup::Link(slot) => {
            if let Some(l) = link_at(instance, slot) {
                let rounded = round_link(l);
                set_link(instance, slot, rounded);
            }
        }
        RoundGroup::Model(m) => {
            let model = &mut instance.models[m];
            model.expert_bytes = round_integer(model.expert_bytes);
            model.hidden_bytes = round_integer(model.hidden_bytes);
            model.expert_flops = round_real(model.expert_flops);
        }
        RoundGroup::UserCompute(u) => {
            let c = &mut instance.users[u].compute_flops;
            *c = round_real(*c);
        }
        RoundGroup::Requests(u) => {
            let user = &mut instance.users[u];
            let mut ps: Vec<f64> = user.requests.iter().map(|r| r.p).collect();
            round_distribution(&mut ps);
            for (r, p) in user.requests.iter_mut().zip(ps) {
                r.p = p;
            }
        }
        RoundGroup::Activation(u, a) => {
            let act = &mut instance.users[u].activations[a];
            let mut ps: Vec<f64> = act.sets.iter().map(|s| s.p).collect();
            round_distribution(&mut ps);
            for (s, p) in act.sets.iter_mut().zip(ps) {
                s.p = p;
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Shrinking
// ---------------------------------------------------------------------------------------------

/// Smaller candidates of a valid instance, most reducing first (by [`size`], then in the order
/// of the module doc); each is valid and strictly smaller. Deterministic.
pub fn shrink_candidates(instance: &Instance) -> Vec<Instance> {
    let current = size(instance);
    let mut sized: Vec<(Size, Instance)> = raw_candidates(instance)
        .into_iter()
        .filter(|c| validate(c).is_ok())
        .map(|c| (size(&c), c))
        .filter(|(s, _)| *s < current)
        .collect();
    // Stable: equal sizes keep the order of the moves.
    sized.sort_by_key(|a| a.0);
    sized.into_iter().map(|(_, c)| c).collect()
}

/// The most candidates listed for an instance: max(16, 2^22 / structure), so that the copies
/// hold about 4 million entries at most (a `paper` instance, 60,000-150,000 entries, gets
/// 28-67; `tiny` and `small` instances, under 400 entries, get far more than they have).
fn max_candidates(instance: &Instance) -> usize {
    let budget: u64 = 1 << 22;
    let per_copy = structure(instance).max(1);
    usize::try_from(budget / per_copy).map_or(usize::MAX, |n| n.max(16))
}

/// Every candidate of the moves, in the order of the module doc, before the safety filter of
/// [`shrink_candidates`]; built lazily and cut at [`max_candidates`].
fn raw_candidates(instance: &Instance) -> Vec<Instance> {
    let models = &instance.models;
    let users = &instance.users;
    let servers = (0..instance.servers.len()).filter_map(|s| drop_server(instance, s));
    let drop_users = (0..users.len()).filter_map(|u| drop_user(instance, u));
    let drop_models = (0..models.len()).filter_map(|m| drop_model(instance, m));
    let layers = models
        .iter()
        .enumerate()
        .flat_map(|(m, model)| (0..model.layers).filter_map(move |l| drop_layer(instance, m, l)));
    let experts = models.iter().enumerate().flat_map(|(m, model)| {
        (0..model.experts_per_layer).filter_map(move |e| drop_expert(instance, m, e))
    });
    let requests = users.iter().enumerate().flat_map(|(u, user)| {
        (0..user.requests.len()).filter_map(move |r| drop_request(instance, u, r))
    });
    let sets = users.iter().enumerate().flat_map(|(u, user)| {
        user.activations
            .iter()
            .enumerate()
            .flat_map(move |(a, act)| {
                (0..act.sets.len()).filter_map(move |s| drop_set(instance, u, a, s))
            })
    });
    let locals = users.iter().enumerate().flat_map(|(u, user)| {
        (0..user.local_experts.len()).filter_map(move |i| drop_local_expert(instance, u, i))
    });
    // Only computed when the cap was not reached before.
    let rounding = std::iter::once(()).flat_map(|()| rounding_candidates(instance));
    servers
        .chain(drop_users)
        .chain(drop_models)
        .chain(layers)
        .chain(experts)
        .chain(requests)
        .chain(sets)
        .chain(locals)
        .chain(rounding)
        .take(max_candidates(instance))
        .collect()
}

/// Round-everything (when at least two groups change), then each group that changes.
fn rounding_candidates(instance: &Instance) -> impl Iterator<Item = Instance> + '_ {
    let changing: Vec<RoundGroup> = round_groups(instance)
        .into_iter()
        .filter(|&g| !group_is_round(instance, g))
        .collect();
    let all = (changing.len() >= 2).then(|| {
        let mut all = instance.clone();
        for &g in &changing {
            round_group(&mut all, g);
        }
        all
    });
    all.into_iter().chain(changing.into_iter().map(move |g| {
        let mut one = instance.clone();
        round_group(&mut one, g);
        one
    }))
}

/// Whether [`round_group`] would leave the group unchanged.
fn group_is_round(instance: &Instance, group: RoundGroup) -> bool {
    match group {
        RoundGroup::Server(n) => instance.servers.get(n).is_none_or(|s| {
            round_integer(s.storage_bytes) == s.storage_bytes && is_round(s.compute_flops)
        }),
        RoundGroup::Cloud => is_round(instance.cloud.compute_flops),
        RoundGroup::Link(slot) => link_at(instance, slot).is_none_or(|l| {
            round_link(l) == *l
                && mirror(instance, slot).is_none_or(|m| link_at(instance, m) == Some(l))
        }),
        RoundGroup::Model(m) => instance.models.get(m).is_none_or(|model| {
            round_integer(model.expert_bytes) == model.expert_bytes
                && round_integer(model.hidden_bytes) == model.hidden_bytes
                && is_round(model.expert_flops)
        }),
        RoundGroup::UserCompute(u) => instance
            .users
            .get(u)
            .is_none_or(|user| is_round(user.compute_flops)),
        RoundGroup::Requests(u) => instance
            .users
            .get(u)
            .is_none_or(|user| user.requests.iter().all(|r| is_round_probability(r.p))),
        RoundGroup::Activation(u, a) => instance
            .users
            .get(u)
            .and_then(|user| user.activations.get(a))
            .is_none_or(|act| act.sets.iter().all(|s| is_round_probability(s.p))),
    }
}

/// Renormalises the set probabilities of a distribution; false when their sum is not positive.
fn renormalise_sets(sets: &mut [ActivationSet]) -> bool {
    let mut ps: Vec<f64> = sets.iter().map(|s| s.p).collect();
    if !normalise(&mut ps) {
        return false;
    }
    for (s, p) in sets.iter_mut().zip(ps) {
        s.p = p;
    }
    true
}

/// Renormalises a user's p_{u,m}; false when their sum is not positive.
fn renormalise_requests(user: &mut User) -> bool {
    let mut ps: Vec<f64> = user.requests.iter().map(|r| r.p).collect();
    if !normalise(&mut ps) {
        return false;
    }
    for (r, p) in user.requests.iter_mut().zip(ps) {
        r.p = p;
    }
    true
}

/// Removes index `i` of `v` when it exists.
fn remove_at<T>(v: &mut Vec<T>, i: usize) {
    if i < v.len() {
        v.remove(i);
    }
}

/// Server `s` removed; associations to it cleared, those above it shifted.
fn drop_server(instance: &Instance, s: usize) -> Option<Instance> {
    if instance.servers.len() < 2 || s >= instance.servers.len() {
        return None;
    }
    let mut out = instance.clone();
    out.servers.remove(s);
    let b = &mut out.backhaul;
    remove_at(&mut b.edge_to_edge, s);
    for row in &mut b.edge_to_edge {
        remove_at(row, s);
    }
    remove_at(&mut b.edge_to_cloud, s);
    remove_at(&mut b.cloud_to_edge, s);
    for user in &mut out.users {
        remove_at(&mut user.uplink, s);
        remove_at(&mut user.downlink, s);
        user.associated_server = match user.associated_server {
            Some(n) => match n.index().cmp(&s) {
                Ordering::Less => Some(n),
                Ordering::Equal => None,
                Ordering::Greater => Some(ServerId(n.0 - 1)),
            },
            None => None,
        };
    }
    Some(out)
}

/// User `u` removed.
fn drop_user(instance: &Instance, u: usize) -> Option<Instance> {
    if instance.users.len() < 2 || u >= instance.users.len() {
        return None;
    }
    let mut out = instance.clone();
    out.users.remove(u);
    Some(out)
}

/// Model `m` removed when no user requests it with p > 0; ids above it shift down.
fn drop_model(instance: &Instance, m: usize) -> Option<Instance> {
    if instance.models.len() < 2 || m >= instance.models.len() {
        return None;
    }
    let requested = instance
        .users
        .iter()
        .any(|u| u.requests.iter().any(|r| r.model.index() == m && r.p > 0.0));
    if requested {
        return None;
    }
    let mut out = instance.clone();
    out.models.remove(m);
    let m = m as u32;
    for user in &mut out.users {
        user.requests.retain(|r| r.model.0 != m);
        user.activations.retain(|a| a.model.0 != m);
        user.local_experts.retain(|r| r.model.0 != m);
        for r in &mut user.requests {
            if r.model.0 > m {
                r.model.0 -= 1;
            }
        }
        for a in &mut user.activations {
            if a.model.0 > m {
                a.model.0 -= 1;
            }
        }
        for r in &mut user.local_experts {
            if r.model.0 > m {
                r.model.0 -= 1;
            }
        }
    }
    Some(out)
}

/// Layer `l` of model `m` removed; layers above it shift down.
fn drop_layer(instance: &Instance, m: usize, l: u32) -> Option<Instance> {
    let model = instance.models.get(m)?;
    if model.layers < 2 || l >= model.layers {
        return None;
    }
    let mut out = instance.clone();
    out.models[m].layers -= 1;
    let m = m as u32;
    for user in &mut out.users {
        user.activations
            .retain(|a| !(a.model.0 == m && a.layer.0 == l));
        for a in &mut user.activations {
            if a.model.0 == m && a.layer.0 > l {
                a.layer.0 -= 1;
            }
        }
        user.local_experts
            .retain(|r| !(r.model.0 == m && r.layer.0 == l));
        for r in &mut user.local_experts {
            if r.model.0 == m && r.layer.0 > l {
                r.layer.0 -= 1;
            }
        }
    }
    Some(out)
}

/// Expert index `e` of model `m` removed from every layer: sets containing it go (the rest
/// renormalised), indices above it shift down. `None` when a distribution would lose all mass.
fn drop_expert(instance: &Instance, m: usize, e: u32) -> Option<Instance> {
    let model = instance.models.get(m)?;
    if model.experts_per_layer <= model.top_k || e >= model.experts_per_layer {
        return None;
    }
    let mut out = instance.clone();
    out.models[m].experts_per_layer -= 1;
    let mu = m as u32;
    for user in &mut out.users {
        for act in user.activations.iter_mut().filter(|a| a.model.0 == mu) {
            let before = act.sets.len();
            act.sets.retain(|s| !s.experts.contains(&e));
            if act.sets.len() != before && !renormalise_sets(&mut act.sets) {
                return None;
            }
            for s in &mut act.sets {
                for x in &mut s.experts {
                    if *x > e {
                        *x -= 1;
                    }
                }
            }
        }
        user.local_experts
            .retain(|r| !(r.model.0 == mu && r.expert == e));
        for r in &mut user.local_experts {
            if r.model.0 == mu && r.expert > e {
                r.expert -= 1;
            }
        }
    }
    Some(out)
}

/// Request `r` of user `u` removed with its activations; the rest renormalised.
fn drop_request(instance: &Instance, u: usize, r: usize) -> Option<Instance> {
    let user = instance.users.get(u)?;
    if user.requests.len() < 2 || r >= user.requests.len() {
        return None;
    }
    let mut out = instance.clone();
    let user = &mut out.users[u];
    let model = user.requests.remove(r).model;
    if !renormalise_requests(user) {
        return None;
    }
    user.activations
        .retain(|a: &LayerActivation| a.model != model);
    Some(out)
}

/// Set `s` of distribution `a` of user `u` removed; the rest renormalised.
fn drop_set(instance: &Instance, u: usize, a: usize, s: usize) -> Option<Instance> {
    let act = instance.users.get(u)?.activations.get(a)?;
    if act.sets.len() < 2 || s >= act.sets.len() {
        return None;
    }
    let mut out = instance.clone();
    let sets = &mut out.users[u].activations[a].sets;
    sets.remove(s);
    renormalise_sets(sets).then_some(out)
}

/// Local expert `i` of user `u` removed.
fn drop_local_expert(instance: &Instance, u: usize, i: usize) -> Option<Instance> {
    if i >= instance.users.get(u)?.local_experts.len() {
        return None;
    }
    let mut out = instance.clone();
    out.users[u].local_experts.remove(i);
    Some(out)
}

/// SlimCaching instances in `moe-opt verify`.
impl crate::verify::Searchable for Instance {
    const DIMS: &'static [&'static str] = &["servers", "users", "experts", "max_top_k"];
    type Size = Size;

    fn load(path: &std::path::Path) -> Result<Self, formulations::Error> {
        formulations::slimcaching::load(path)
    }

    fn dims(&self) -> Vec<u64> {
        let info = crate::slimcaching::commands::InstanceInfo::new(self);
        vec![
            info.servers as u64,
            info.users as u64,
            info.experts as u64,
            u64::from(info.max_top_k),
        ]
    }

    fn size(&self) -> Size {
        size(self)
    }

    fn perturb(&self, rng: &mut ChaCha8Rng) -> Self {
        perturb(self, rng)
    }

    fn premises() -> Vec<crate::tier::Premise<Self>> {
        super::premises::premises()
    }

    fn shrink_candidates(&self) -> Vec<Self> {
        shrink_candidates(self)
    }
}

#[cfg(test)]
mod tests;
