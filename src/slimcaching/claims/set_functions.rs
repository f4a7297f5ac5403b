//! F (17) and its restrictions as set functions over (server, expert) pairs on top of a base
//! placement ([`PlacementFunction`], see the parent module's doc), their ground sets, and the
//! placements they are taken along (X_{<n}, one server alone).
//!
//! [`supermodular_curvature`]: verification::supermodular_curvature

use formulations::slimcaching::{
    ExpertId, Instance, LatencyModel, Placement, RoutingDemand, ServerId,
};
use verification::{Curvature, Mode, SetFunction};

use super::{EXHAUSTIVE_SET_LIMIT, SAMPLED_CHAINS, TOLERANCE};

/// Routes of a demand are tabulated over the subsets of its ground elements up to this many.
const TABLE_BITS: usize = 12;

/// One routing demand's share of a [`PlacementFunction`].
#[derive(Debug, Clone)]
struct Term {
    demand: usize,
    weight: f64,
    /// Ground indices of the pairs (n, e) with e in the demand's R.
    elements: Vec<usize>,
    /// G_d(base + sub) for every subset `sub` of `elements` (bit b = elements[b]); empty when
    /// there are more than [`TABLE_BITS`] elements (then routed on demand).
    latency: Vec<f64>,
    /// G_d(base).
    at_base: f64,
}

/// f(S) = sum over the kept demands d of W_d (G_d(base) - G_d(base + S)) for S a set of
/// (server, expert) pairs of `ground` (see the module doc).
#[derive(Debug, Clone)]
pub(super) struct PlacementFunction<'a> {
    pub(super) model: &'a LatencyModel,
    pub(super) base: Placement,
    pub(super) ground: Vec<(ServerId, ExpertId)>,
    terms: Vec<Term>,
}

impl<'a> PlacementFunction<'a> {
    pub(super) fn new(
        model: &'a LatencyModel,
        base: &Placement,
        ground: Vec<(ServerId, ExpertId)>,
        keep: impl Fn(&RoutingDemand) -> bool,
    ) -> Self {
        let mut terms = Vec::new();
        for (di, d) in model.demands().iter().enumerate() {
            if !keep(d) {
                continue;
            }
            let elements: Vec<usize> = ground
                .iter()
                .enumerate()
                .filter(|(_, (_, e))| d.missing.contains(e))
                .map(|(i, _)| i)
                .collect();
            if elements.is_empty() {
                continue;
            }
            let at_base = model.routing_latency(d, base);
            let latency = if elements.len() <= TABLE_BITS {
                (0..1usize << elements.len())
                    .map(|sub| {
                        model
                            .route(d, |s, e| {
                                base.contains(s, e)
                                    || elements
                                        .iter()
                                        .enumerate()
                                        .any(|(b, &i)| sub >> b & 1 == 1 && ground[i] == (s, e))
                            })
                            .latency
                    })
                    .collect()
            } else {
                Vec::new()
            };
            terms.push(Term {
                demand: di,
                weight: d.weight,
                elements,
                latency,
                at_base,
            });
        }
        PlacementFunction {
            model,
            base: base.clone(),
            ground,
            terms,
        }
    }

    /// No kept demand needs an element of the ground set: f is identically 0.
    pub(super) fn has_no_terms(&self) -> bool {
        self.terms.is_empty()
    }

    /// Term `t`'s routing latency G_d(base + the elements b of t with `on(b)`).
    fn term_latency(&self, t: &Term, on: impl Fn(usize) -> bool) -> f64 {
        if t.latency.is_empty() {
            let d = &self.model.demands()[t.demand];
            self.model
                .route(d, |s, e| {
                    self.base.contains(s, e)
                        || t.elements
                            .iter()
                            .enumerate()
                            .any(|(b, &i)| on(b) && self.ground[i] == (s, e))
                })
                .latency
        } else {
            let sub = (0..t.elements.len())
                .filter(|&b| on(b))
                .fold(0usize, |acc, b| acc | 1 << b);
            t.latency[sub]
        }
    }

    /// The terms grouped by their elements: per distinct set E of ground elements, the sum of
    /// the terms that depend on exactly E, tabulated over the subsets of E. f is the sum of the
    /// groups, each read on its own elements (f(S) = sum_g g(S cap E_g)).
    pub(super) fn groups(&self) -> Vec<Group> {
        let mut by: std::collections::BTreeMap<&[usize], Vec<f64>> = Default::default();
        for t in &self.terms {
            let k = t.elements.len();
            let values = by.entry(&t.elements).or_insert_with(|| vec![0.0; 1 << k]);
            for (mask, v) in values.iter_mut().enumerate() {
                *v += t.weight * (t.at_base - self.term_latency(t, |b| mask >> b & 1 == 1));
            }
        }
        by.into_iter()
            .map(|(elements, values)| Group {
                elements: elements.to_vec(),
                values,
            })
            .collect()
    }

    /// g(z | empty) and g(z | V - z) for every element z, summed over the terms that contain z
    /// only (the terms without z cancel in both differences).
    pub(super) fn end_gains(&self) -> (Vec<f64>, Vec<f64>) {
        let n = self.ground.len();
        let (mut at_empty, mut at_rest) = (vec![0.0f64; n], vec![0.0f64; n]);
        for t in &self.terms {
            let none = self.term_latency(t, |_| false);
            let all = self.term_latency(t, |_| true);
            for (b, &i) in t.elements.iter().enumerate() {
                at_empty[i] += t.weight * (none - self.term_latency(t, |c| c == b));
                at_rest[i] += t.weight * (self.term_latency(t, |c| c != b) - all);
            }
        }
        (at_empty, at_rest)
    }

    /// Whether adding element `i` alone to the base changes no demand's fastest latency, so
    /// that g(i | empty) = 0 exactly, by structure and not by rounding. For every demand d that
    /// needs i's expert e, with i = (n, e), one of:
    ///
    /// * the base holds e on d's own server: the routing rule serves it there with or without
    ///   i (the same route, computed the same way);
    /// * n is not d's server and the base holds e on another server n' that is n's twin for d
    ///   ([`twins`]: the same links to and from d's server, the same compute): a route serving
    ///   e on n costs no less than the same route with e moved to n' (equal if n' was not
    ///   visited, less if it was), a route of the base;
    /// * n is not d's server, the base serves e from another edge server, and every route that
    ///   serves e on n is slower than d's latency without i by more than the tolerance.
    ///
    /// Otherwise (e from the cloud, n d's own server, a new route within the tolerance) the
    /// gain may be 0 by coincidence only, and this says false.
    pub(super) fn unchanged_by(&self, i: usize, instance: &Instance) -> bool {
        let (n, e) = self.ground[i];
        self.terms
            .iter()
            .filter(|t| t.elements.contains(&i))
            .all(|t| {
                let d = &self.model.demands()[t.demand];
                if self.base.contains(d.server, e) {
                    return true;
                }
                let holders: Vec<ServerId> = (0..self.model.servers())
                    .map(sid)
                    .filter(|&s| s != d.server && self.base.contains(s, e))
                    .collect();
                if d.server == n || holders.is_empty() {
                    return false;
                }
                if holders.iter().any(|&h| twins(instance, d.server, h, n)) {
                    return true;
                }
                // The fastest route that serves e on n: e held there alone.
                let via_n = self
                    .model
                    .route(d, |s, x| {
                        if x == e {
                            s == n
                        } else {
                            self.base.contains(s, x)
                        }
                    })
                    .latency;
                let allowance = TOLERANCE.abs + TOLERANCE.rel * via_n.abs().max(t.at_base.abs());
                via_n - t.at_base > allowance
            })
    }

    /// Definition 4's supermodular curvature as [`supermodular_curvature`] computes it (the
    /// same minimising element, skipped elements and ties), but with g(z | empty) and
    /// g(z | V - z) summed over the terms that contain z only ([`Self::end_gains`]): one pass
    /// over the terms instead of 2n + 2 evaluations of all of them, which at the paper's sizes
    /// (n in the thousands) is minutes against milliseconds. Equal up to rounding: the terms
    /// without z, which cancel in the differences of totals, are left out of the sums.
    pub(super) fn curvature(&self) -> Curvature {
        let n = self.ground.len();
        let (at_empty, at_rest) = self.end_gains();
        let mut best: Option<(f64, usize)> = None;
        let mut skipped = Vec::new();
        for z in 0..n {
            if at_rest[z] <= 0.0 {
                skipped.push(z);
                continue;
            }
            let ratio = at_empty[z] / at_rest[z];
            if best.is_none_or(|b| ratio < b.0) {
                best = Some((ratio, z));
            }
        }
        Curvature {
            kappa: best.map(|b| 1.0 - b.0),
            element: best.map(|b| b.1),
            gain_at_empty: best.map(|b| at_empty[b.1]),
            gain_at_rest: best.map(|b| at_rest[b.1]),
            skipped,
        }
    }

    /// Membership flags of a set of ground indices.
    pub(super) fn flags(&self, members: &[usize]) -> Vec<bool> {
        let mut f = vec![false; self.ground.len()];
        for &i in members {
            f[i] = true;
        }
        f
    }
}

/// The terms of a [`PlacementFunction`] that depend on one set of ground elements, summed
/// ([`PlacementFunction::groups`]): a set function on those elements alone.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Group {
    /// The ground indices it depends on, ascending (bit b of a mask is `elements[b]`).
    pub(super) elements: Vec<usize>,
    /// Its value on every subset of `elements`, by mask.
    pub(super) values: Vec<f64>,
}

impl Group {
    /// The mask of the members of a ground set (membership flags) among its elements.
    pub(super) fn mask(&self, set: &[bool]) -> usize {
        (self.elements.iter().enumerate())
            .filter(|&(_, &i)| set[i])
            .fold(0, |m, (b, _)| m | 1 << b)
    }
}

impl SetFunction for Group {
    fn ground_size(&self) -> usize {
        self.elements.len()
    }

    fn value(&self, set: &[bool]) -> f64 {
        let mask = (0..set.len())
            .filter(|&b| set[b])
            .fold(0, |m, b| m | 1 << b);
        self.values[mask]
    }
}

impl SetFunction for PlacementFunction<'_> {
    fn ground_size(&self) -> usize {
        self.ground.len()
    }

    fn value(&self, set: &[bool]) -> f64 {
        let mut total = 0.0;
        for t in &self.terms {
            let after = self.term_latency(t, |b| set[t.elements[b]]);
            total += t.weight * (t.at_base - after);
        }
        total
    }
}

/// Servers `a` and `b` cost the same to a token of server `home` (eq. (7)), by identical
/// inputs rather than equal rounded costs: the same link from `home` and back, the same
/// compute capability. Every visit and return cost of one is then the other's, exactly.
pub(super) fn twins(instance: &Instance, home: ServerId, a: ServerId, b: ServerId) -> bool {
    let e2e = &instance.backhaul.edge_to_edge;
    let (h, a, b) = (home.index(), a.index(), b.index());
    e2e[h][a] == e2e[h][b]
        && e2e[a][h] == e2e[b][h]
        && instance.servers[a].compute_flops == instance.servers[b].compute_flops
}

pub(super) fn sid(n: usize) -> ServerId {
    ServerId(n as u32)
}

pub(super) fn eid(e: usize) -> ExpertId {
    ExpertId(e as u32)
}

/// Experts some routing demand needs.
fn demanded_experts(model: &LatencyModel) -> Vec<ExpertId> {
    (0..model.experts())
        .map(eid)
        .filter(|&e| model.demands_of(e).next().is_some())
        .collect()
}

/// F(X) over [`full_ground`] from the empty placement, and the ground set in words.
pub(super) fn full_function(model: &LatencyModel) -> (PlacementFunction<'_>, String) {
    let (ground, described) = full_ground(model);
    let f = PlacementFunction::new(model, &model.empty_placement(), ground, |_| true);
    (f, described)
}

/// V for Props. 1-2: every (server, expert) pair, index n E + e, when N x E <= 20; otherwise
/// the pairs of demanded experts (the others have identically zero gains). Returns the pairs
/// and a description.
pub(super) fn full_ground(model: &LatencyModel) -> (Vec<(ServerId, ExpertId)>, String) {
    let (servers, experts) = (model.servers(), model.experts());
    if servers * experts <= EXHAUSTIVE_SET_LIMIT {
        let pairs = (0..servers)
            .flat_map(|n| (0..experts).map(move |e| (sid(n), eid(e))))
            .collect();
        return (pairs, format!("all {servers} x {experts} pairs"));
    }
    let demanded = demanded_experts(model);
    let pairs: Vec<_> = (0..servers)
        .flat_map(|n| demanded.iter().map(move |&e| (sid(n), e)))
        .collect();
    let d = format!(
        "the {} pairs of demanded experts ({servers} x {experts} pairs in all)",
        pairs.len()
    );
    (pairs, d)
}

/// V_n: server n's demanded experts.
pub(super) fn server_ground(model: &LatencyModel, n: usize) -> Vec<(ServerId, ExpertId)> {
    demanded_experts(model)
        .into_iter()
        .map(|e| (sid(n), e))
        .collect()
}

pub(super) fn set_mode(n: usize, seed: u64) -> Mode {
    Mode::auto(n, SAMPLED_CHAINS, seed)
}

pub(super) fn exhaustive_mode(mode: Mode) -> bool {
    mode == Mode::Exhaustive
}

/// K_m of a demand's model.
pub(super) fn top_k(instance: &Instance, d: &RoutingDemand) -> u32 {
    instance.models[d.model.index()].top_k
}

/// The placement restricted to servers before n (later servers empty): X_{<n}.
pub(super) fn prefix(x: &Placement, n: usize) -> Placement {
    let mut p = Placement::empty(x.servers(), x.experts());
    for s in 0..n.min(x.servers()) {
        for e in x.experts_on(sid(s)) {
            p.insert(sid(s), e);
        }
    }
    p
}

/// The experts x caches on server n, as a placement alone.
pub(super) fn only_server(x: &Placement, n: usize) -> Placement {
    let mut p = Placement::empty(x.servers(), x.experts());
    for e in x.experts_on(sid(n)) {
        p.insert(sid(n), e);
    }
    p
}
