//! The one evaluator of SlimCaching: per-token latency (5)-(12), T^max (15)-(16), F(X) (17).
//!
//! For a token of user u that activates the set S in layer l of model m, let R = S \ rho_u be the
//! experts the user lacks (|R| = K_m - sum rho). If R is empty the token runs locally in
//! T_u^CP = mu_m E_m / C_u (eqs. (6), (12)). Otherwise (eq. (11))
//!
//! T^token = T^UL_{u,n_u,m} + |R| T^DL_{u,n_u,m} + G(R, X), where the routing latency G is
//!
//! * `T^CP_{E,m}(n_u)` if any expert of R is cached on the associated server n_u (eq. (9));
//!   those experts are always served there (beta_{u,n_u}, item 2 above eq. (7));
//! * for the experts not on n_u but on some other edge server: the token is sent to a set of
//!   servers O, each costing `T_{n_u,n',m} + T^CP_{E,m}(n')` once and `T_{n',n_u,m}` per
//!   expert it returns (eq. (7)); O and the expert-to-server choice beta are those of lowest
//!   latency (Section III-C: "determined in a way that leads to the lowest per-token latency");
//! * for the experts no edge server holds: the cloud, `T_{n_u,C,m} + T^CP_{C,m}` once and
//!   `T_{C,n_u,m}` per expert (eq. (10)). The cloud is used only for those experts.
//!
//! With X empty every lacking expert goes to the cloud, which is T^max of (16); so the latency
//! reduction r = T^max - T^token of (17) is G(R, empty) - G(R, X), and F(X) depends on X only
//! through the routing demands (n_u, m, R) weighted by p_{u,m} p_{u,S} / U. [`LatencyModel`]
//! compiles an instance into those demands once; all algorithms and the MILP work on them.
//!
//! Choices where the paper is silent, documented here once:
//! * compute per expert is C / E_m at the user, at every edge server and at the cloud (eq. (6)
//!   states it for the user; the paper gives the edge and cloud only as phi_{E,m}, phi_{C,m});
//!   edge servers may have different capabilities, so T^CP_E depends on the server;
//! * T^token of (11) adds no local compute for the experts the user does hold (as in (11));
//! * F of (17) carries the factor 1/U; the per-server objectives F~_n of (20) are given the same
//!   factor so that (22), F = sum_n F~_n, holds exactly.
//!
//! F need not be monotone under this routing rule: caching an expert at n_u forces it to be
//! served there even when the cloud or another server would have been faster for the token as
//! a whole. moe-opt evaluates the rule as written and lets the verification find out.

use std::collections::HashMap;

use super::model::{ExpertCatalogue, ExpertId, Instance, ModelId, Placement, ServerId, UserId};

/// Routing costs of one (model m, associated server n_u) pair, seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct RouteCosts {
    /// T^CP_{E,m} at n_u: paid once if n_u serves any expert.
    pub associated_compute: f64,
    /// Per server n': T_{n_u,n',m} + T^CP_{E,m}(n'), paid once if the token visits n'
    /// (0 and unused for n' = n_u).
    pub edge_visit: Vec<f64>,
    /// Per server n': T_{n',n_u,m}, paid per expert output n' returns.
    pub edge_return: Vec<f64>,
    /// T_{n_u,C,m} + T^CP_{C,m}: paid once if any expert goes to the cloud.
    pub cloud_visit: f64,
    /// T_{C,n_u,m}: paid per expert output the cloud returns.
    pub cloud_return: f64,
}

impl RouteCosts {
    /// Serving `count` remote experts at server `n`: its visit once, a return per expert (the
    /// cost both assignment DPs build their groups from).
    fn at_server(&self, n: usize, count: usize) -> f64 {
        self.edge_visit[n] + count as f64 * self.edge_return[n]
    }
}

/// Routing demand: tokens of users associated with `server` that need the experts `missing`
/// of `model` from outside, with total weight sum p_{u,m} p_{u,S} / U.
#[derive(Debug, Clone, PartialEq)]
pub struct RoutingDemand {
    /// n_u.
    pub server: ServerId,
    /// m.
    pub model: ModelId,
    /// R = S \ rho_u, sorted by id.
    pub missing: Vec<ExpertId>,
    /// Weight in F and in the average latency.
    pub weight: f64,
}

/// Where each expert of a demand is served, and the routing latency G.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    /// Experts served on the associated server.
    pub at_associated: Vec<ExpertId>,
    /// Experts served on other edge servers, with the server.
    pub at_edge: Vec<(ExpertId, ServerId)>,
    /// Experts served by the cloud.
    pub at_cloud: Vec<ExpertId>,
    /// G(R, X), seconds.
    pub latency: f64,
}

/// One user's share of the evaluation.
#[derive(Debug, Clone, PartialEq)]
pub struct UserLatency {
    /// The user.
    pub user: UserId,
    /// Its associated server n_u.
    pub associated_server: ServerId,
    /// sum_m p_{u,m} T-bar_{u,m}: its average per-token latency over all MoE layers, seconds.
    pub avg_latency_s: f64,
    /// sum_m p_{u,m} T^max_{u,m}, seconds.
    pub max_latency_s: f64,
    /// Its latency reduction T^max - T-bar (its term of F before the 1/U).
    pub reduction_s: f64,
}

/// Result of evaluating a placement.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    /// F(X) of (17), seconds.
    pub objective: f64,
    /// (1/U) sum_u sum_m p_{u,m} T-bar_{u,m}(X): average per-token latency, seconds.
    pub avg_latency_s: f64,
    /// (1/U) sum_u sum_m p_{u,m} T^max_{u,m}: the same with nothing cached on edge servers.
    pub max_latency_s: f64,
    /// Bytes cached per server.
    pub storage_used: Vec<u64>,
    /// Storage constraint (18b) holds on every server.
    pub feasible: bool,
    /// Per-user breakdown.
    pub users: Vec<UserLatency>,
}

/// An instance compiled for evaluation: costs per (model, server) and the routing demands.
/// Build it from a validated instance.
#[derive(Debug, Clone)]
pub struct LatencyModel {
    catalogue: ExpertCatalogue,
    servers: usize,
    capacity: Vec<u64>,
    expert_bytes: Vec<u64>,
    costs: Vec<RouteCosts>,
    demands: Vec<RoutingDemand>,
    demands_of_expert: Vec<Vec<u32>>,
    users: Vec<UserTerms>,
    users_count: usize,
}

/// A user's demands (not aggregated) and constant terms, for the per-user breakdown.
#[derive(Debug, Clone)]
struct UserTerms {
    associated: ServerId,
    /// sum p_{u,m} p_{u,S} (T^UL + |R| T^DL) over sets with R nonempty, plus
    /// sum p_{u,m} p_{u,S} T_u^CP over sets run locally.
    constant: f64,
    demands: Vec<RoutingDemand>,
}

impl LatencyModel {
    /// Compiles a validated instance.
    pub fn new(instance: &Instance) -> Self {
        let catalogue = ExpertCatalogue::new(&instance.models);
        let servers = instance.servers.len();
        let costs = route_costs(instance);
        let users_count = instance.users.len();
        let mut users = Vec::with_capacity(users_count);
        let mut demands: Vec<RoutingDemand> = Vec::new();
        let mut index: HashMap<(ServerId, ModelId, Vec<ExpertId>), usize> = HashMap::new();
        for (u, user) in instance.users.iter().enumerate() {
            let associated = associated_server(instance, UserId(u as u32));
            let local: std::collections::HashSet<ExpertId> = user
                .local_experts
                .iter()
                .filter_map(|r| catalogue.id(*r))
                .collect();
            let mut constant = 0.0;
            let mut own: HashMap<(ModelId, Vec<ExpertId>), usize> = HashMap::new();
            let mut own_demands: Vec<RoutingDemand> = Vec::new();
            for act in &user.activations {
                let p_model = user
                    .requests
                    .iter()
                    .find(|r| r.model == act.model)
                    .map_or(0.0, |r| r.p);
                if p_model == 0.0 {
                    continue;
                }
                let model = &instance.models[act.model.index()];
                let hidden = model.hidden_bytes;
                let uplink = user.uplink[associated.index()].transfer_time(hidden);
                let downlink = user.downlink[associated.index()].transfer_time(hidden);
                let local_compute =
                    model.expert_flops * model.experts_per_layer as f64 / user.compute_flops;
                for set in &act.sets {
                    let p = p_model * set.p;
                    if p == 0.0 {
                        continue;
                    }
                    let mut missing: Vec<ExpertId> = set
                        .experts
                        .iter()
                        .filter_map(|&i| {
                            catalogue.id(super::model::ExpertRef {
                                model: act.model,
                                layer: act.layer,
                                expert: i,
                            })
                        })
                        .filter(|e| !local.contains(e))
                        .collect();
                    if missing.is_empty() {
                        constant += p * local_compute;
                        continue;
                    }
                    missing.sort_unstable();
                    constant += p * (uplink + missing.len() as f64 * downlink);
                    let slot = *own.entry((act.model, missing.clone())).or_insert_with(|| {
                        own_demands.push(RoutingDemand {
                            server: associated,
                            model: act.model,
                            missing: missing.clone(),
                            weight: 0.0,
                        });
                        own_demands.len() - 1
                    });
                    own_demands[slot].weight += p;
                }
            }
            for d in &own_demands {
                let key = (d.server, d.model, d.missing.clone());
                let slot = *index.entry(key).or_insert_with(|| {
                    demands.push(RoutingDemand {
                        weight: 0.0,
                        ..d.clone()
                    });
                    demands.len() - 1
                });
                demands[slot].weight += d.weight / users_count as f64;
            }
            users.push(UserTerms {
                associated,
                constant,
                demands: own_demands,
            });
        }
        let mut demands_of_expert = vec![Vec::new(); catalogue.len()];
        for (d, demand) in demands.iter().enumerate() {
            for e in &demand.missing {
                demands_of_expert[e.index()].push(d as u32);
            }
        }
        let expert_bytes = (0..catalogue.len())
            .map(|e| instance.models[catalogue.model_of(ExpertId(e as u32)).index()].expert_bytes)
            .collect();
        LatencyModel {
            catalogue,
            servers,
            capacity: instance.servers.iter().map(|s| s.storage_bytes).collect(),
            expert_bytes,
            costs,
            demands,
            demands_of_expert,
            users,
            users_count,
        }
    }

    /// The expert numbering.
    pub fn catalogue(&self) -> &ExpertCatalogue {
        &self.catalogue
    }

    /// Number of edge servers N.
    pub fn servers(&self) -> usize {
        self.servers
    }

    /// Number of experts E in the catalogue.
    pub fn experts(&self) -> usize {
        self.catalogue.len()
    }

    /// Storage Q_n, bytes.
    pub fn capacity(&self, n: ServerId) -> u64 {
        self.capacity[n.index()]
    }

    /// Size b_{m(i)} of expert i, bytes.
    pub fn expert_bytes(&self, e: ExpertId) -> u64 {
        self.expert_bytes[e.index()]
    }

    /// The routing demands, aggregated over users.
    pub fn demands(&self) -> &[RoutingDemand] {
        &self.demands
    }

    /// Indices into [`Self::demands`] of the demands that need expert e.
    pub fn demands_of(&self, e: ExpertId) -> impl Iterator<Item = usize> + '_ {
        self.demands_of_expert[e.index()]
            .iter()
            .map(|&d| d as usize)
    }

    /// The routing costs of model m for tokens of users associated with n_u.
    pub fn costs(&self, m: ModelId, associated: ServerId) -> &RouteCosts {
        &self.costs[m.index() * self.servers + associated.index()]
    }

    /// An empty placement of the right shape.
    pub fn empty_placement(&self) -> Placement {
        Placement::empty(self.servers, self.catalogue.len())
    }

    /// Bytes cached on server n.
    pub fn used_bytes(&self, x: &Placement, n: ServerId) -> u64 {
        x.experts_on(n).map(|e| self.expert_bytes(e)).sum()
    }

    /// Storage constraint (18b) on every server.
    pub fn is_feasible(&self, x: &Placement) -> bool {
        (0..self.servers).all(|n| {
            let n = ServerId(n as u32);
            self.used_bytes(x, n) <= self.capacity(n)
        })
    }

    /// G(R, empty): every lacking expert from the cloud (the routing part of T^max, eq. (16)).
    pub fn cloud_latency(&self, d: &RoutingDemand) -> f64 {
        let c = self.costs(d.model, d.server);
        c.cloud_visit + d.missing.len() as f64 * c.cloud_return
    }

    /// The least routing latency any placement can give demand `d`: each lacking expert is
    /// served at the associated server (its compute once), on one other server n' (its visit
    /// once and a return per expert) or by the cloud (its visit once and a return per expert).
    /// A route that mixes places pays each place's once-cost and no less per expert than the
    /// cheapest place it uses, so one place alone is at least as fast; the routing rule (an
    /// expert cached at n_u is served there, the cloud only for experts no edge server holds)
    /// only removes routes. So G_d(X) >= this for every X.
    pub fn least_latency(&self, d: &RoutingDemand) -> f64 {
        let c = self.costs(d.model, d.server);
        let r = d.missing.len();
        let own = d.server.index();
        let remote = (0..self.servers)
            .filter(|&n| n != own)
            .map(|n| c.at_server(n, r))
            .fold(f64::INFINITY, f64::min);
        c.associated_compute.min(remote).min(self.cloud_latency(d))
    }

    /// The latency-optimal route of a demand given which (server, expert) pairs are cached.
    pub fn route(&self, d: &RoutingDemand, holds: impl Fn(ServerId, ExpertId) -> bool) -> Route {
        route(self.costs(d.model, d.server), d, self.servers, holds)
    }

    /// G(R, X) of one demand (the latency of [`Self::route`], computed without building the
    /// route: this is the evaluator's hot path).
    pub fn routing_latency(&self, d: &RoutingDemand, x: &Placement) -> f64 {
        route_latency(self.costs(d.model, d.server), d, self.servers, |n, e| {
            x.contains(n, e)
        })
    }

    /// F(X) of (17), seconds.
    pub fn objective(&self, x: &Placement) -> f64 {
        self.demands
            .iter()
            .map(|d| d.weight * (self.cloud_latency(d) - self.routing_latency(d, x)))
            .sum()
    }

    /// F(X), average and maximal latency, storage use, feasibility and the per-user breakdown.
    pub fn evaluate(&self, x: &Placement) -> Evaluation {
        let users: Vec<UserLatency> = self
            .users
            .iter()
            .enumerate()
            .map(|(u, terms)| {
                let (mut avg, mut max) = (terms.constant, terms.constant);
                for d in &terms.demands {
                    avg += d.weight * self.routing_latency(d, x);
                    max += d.weight * self.cloud_latency(d);
                }
                UserLatency {
                    user: UserId(u as u32),
                    associated_server: terms.associated,
                    avg_latency_s: avg,
                    max_latency_s: max,
                    reduction_s: max - avg,
                }
            })
            .collect();
        let per_user = 1.0 / self.users_count as f64;
        let storage_used: Vec<u64> = (0..self.servers)
            .map(|n| self.used_bytes(x, ServerId(n as u32)))
            .collect();
        Evaluation {
            objective: self.objective(x),
            avg_latency_s: users.iter().map(|u| u.avg_latency_s).sum::<f64>() * per_user,
            max_latency_s: users.iter().map(|u| u.max_latency_s).sum::<f64>() * per_user,
            feasible: storage_used
                .iter()
                .zip(&self.capacity)
                .all(|(used, cap)| used <= cap),
            storage_used,
            users,
        }
    }
}

/// F(X) maintained under insertions, with marginal gains F(i | X) computed from the demands
/// that need expert i only: the evaluator of the greedy and DP algorithms.
#[derive(Debug, Clone)]
pub struct IncrementalObjective<'a> {
    model: &'a LatencyModel,
    placement: Placement,
    latency: Vec<f64>,
    value: f64,
}

impl<'a> IncrementalObjective<'a> {
    /// Starts from placement `x`.
    pub fn new(model: &'a LatencyModel, x: Placement) -> Self {
        let latency: Vec<f64> = model
            .demands
            .iter()
            .map(|d| model.routing_latency(d, &x))
            .collect();
        let value = model.objective(&x);
        IncrementalObjective {
            model,
            placement: x,
            latency,
            value,
        }
    }

    /// The current placement.
    pub fn placement(&self) -> &Placement {
        &self.placement
    }

    /// Consumes the state, returning the placement.
    pub fn into_placement(self) -> Placement {
        self.placement
    }

    /// F of the current placement (sum of the marginal gains applied so far).
    pub fn value(&self) -> f64 {
        self.value
    }

    /// F(X + (n, e)) - F(X); 0 if already cached.
    pub fn gain(&self, n: ServerId, e: ExpertId) -> f64 {
        if self.placement.contains(n, e) {
            return 0.0;
        }
        self.model
            .demands_of(e)
            .map(|d| self.gain_term(n, e, d))
            .sum()
    }

    /// Demand d's term of [`Self::gain`] (n, e), for a demand d that needs e and (n, e) not
    /// cached: its weight times its latency reduction when e is added on n. It depends on X only
    /// through d's current latency and the placement of d's experts, so a caller may keep it
    /// until one of d's experts is inserted on some server; summing the terms over
    /// [`LatencyModel::demands_of`] e in order (`Iterator::sum`) gives [`Self::gain`] bit for
    /// bit (Alg. 1's incremental gains rely on both).
    pub fn gain_term(&self, n: ServerId, e: ExpertId, d: usize) -> f64 {
        let x = &self.placement;
        let demand = &self.model.demands[d];
        let after = route_latency(
            self.model.costs(demand.model, demand.server),
            demand,
            self.model.servers,
            |s, i| (s == n && i == e) || x.contains(s, i),
        );
        demand.weight * (self.latency[d] - after)
    }

    /// Caches e on n and updates F; returns the gain.
    pub fn insert(&mut self, n: ServerId, e: ExpertId) -> f64 {
        if !self.placement.insert(n, e) {
            return 0.0;
        }
        let mut gain = 0.0;
        for d in self.model.demands_of(e) {
            let demand = &self.model.demands[d];
            let after = self.model.routing_latency(demand, &self.placement);
            gain += demand.weight * (self.latency[d] - after);
            self.latency[d] = after;
        }
        self.value += gain;
        gain
    }
}

/// n_u: the given association, or the rule under eq. (4).
pub fn associated_server(instance: &Instance, u: UserId) -> ServerId {
    let user = &instance.users[u.index()];
    if let Some(n) = user.associated_server {
        return n;
    }
    let one_bit = |l: &super::model::Link| l.latency_s + l.rate_bps.map_or(0.0, |r| 1.0 / r);
    let mut best = (f64::INFINITY, 0usize);
    for n in 0..instance.servers.len() {
        let t = one_bit(&user.uplink[n]) + one_bit(&user.downlink[n]);
        if t < best.0 {
            best = (t, n);
        }
    }
    ServerId(best.1 as u32)
}

fn route_costs(instance: &Instance) -> Vec<RouteCosts> {
    let servers = instance.servers.len();
    let mut out = Vec::with_capacity(instance.models.len() * servers);
    for model in &instance.models {
        let per_expert = model.expert_flops * model.experts_per_layer as f64;
        let edge_compute = |n: usize| per_expert / instance.servers[n].compute_flops;
        let d = model.hidden_bytes;
        for nu in 0..servers {
            let link = |a: usize, b: usize| {
                instance.backhaul.edge_to_edge[a][b].map_or(0.0, |l| l.transfer_time(d))
            };
            out.push(RouteCosts {
                associated_compute: edge_compute(nu),
                edge_visit: (0..servers)
                    .map(|n| {
                        if n == nu {
                            0.0
                        } else {
                            link(nu, n) + edge_compute(n)
                        }
                    })
                    .collect(),
                edge_return: (0..servers)
                    .map(|n| if n == nu { 0.0 } else { link(n, nu) })
                    .collect(),
                cloud_visit: instance.backhaul.edge_to_cloud[nu].transfer_time(d)
                    + per_expert / instance.cloud.compute_flops,
                cloud_return: instance.backhaul.cloud_to_edge[nu].transfer_time(d),
            });
        }
    }
    out
}

/// The latency-optimal route (see the module doc). The experts that must visit other edge
/// servers form an uncapacitated facility-location problem (visit cost per server, return
/// cost per expert); it is solved exactly by a DP over subsets of those experts: O(3^k + 2^k N)
/// for k such experts (k <= K_m <= 16).
fn route(
    costs: &RouteCosts,
    d: &RoutingDemand,
    servers: usize,
    holds: impl Fn(ServerId, ExpertId) -> bool,
) -> Route {
    let mut at_associated = Vec::new();
    let mut at_cloud = Vec::new();
    let mut remote: Vec<(ExpertId, u32)> = Vec::new();
    for &e in &d.missing {
        if holds(d.server, e) {
            at_associated.push(e);
            continue;
        }
        let mask = holder_mask(d, e, servers, &holds);
        if mask == 0 {
            at_cloud.push(e);
        } else {
            remote.push((e, mask));
        }
    }
    let latency = fixed_latency(costs, !at_associated.is_empty(), at_cloud.len());
    let (edge_latency, at_edge) = serve_remote(costs, &remote);
    Route {
        at_associated,
        at_edge,
        at_cloud,
        latency: latency + edge_latency,
    }
}

/// The servers other than n_u that cache expert e, as a bit mask.
fn holder_mask(
    d: &RoutingDemand,
    e: ExpertId,
    servers: usize,
    holds: &impl Fn(ServerId, ExpertId) -> bool,
) -> u32 {
    (0..servers)
        .filter(|&n| n != d.server.index() && holds(ServerId(n as u32), e))
        .fold(0, |mask, n| mask | 1 << n)
}

/// The latency of the associated server's compute (if it serves any expert, eq. (9)) and of
/// the cloud (if it serves `cloud` experts, eq. (10)).
fn fixed_latency(costs: &RouteCosts, associated: bool, cloud: usize) -> f64 {
    let mut latency = 0.0;
    if associated {
        latency += costs.associated_compute;
    }
    if cloud > 0 {
        latency += costs.cloud_visit + cloud as f64 * costs.cloud_return;
    }
    latency
}

/// Experts a token sends to other edge servers, handled by the stack-only DP of
/// [`route_latency`]; more fall back to [`serve_remote`].
const STACK_REMOTE: usize = 6;

/// The latency of [`route`] without building the route or allocating: the same case split,
/// and for up to [`STACK_REMOTE`] remote experts the same subset DP on stack arrays.
fn route_latency(
    costs: &RouteCosts,
    d: &RoutingDemand,
    servers: usize,
    holds: impl Fn(ServerId, ExpertId) -> bool,
) -> f64 {
    let mut associated = false;
    let mut cloud = 0usize;
    let mut masks = [0u32; super::validate::MAX_TOP_K as usize];
    let mut k = 0usize;
    for &e in &d.missing {
        if holds(d.server, e) {
            associated = true;
            continue;
        }
        let mask = holder_mask(d, e, servers, &holds);
        if mask == 0 {
            cloud += 1;
        } else {
            masks[k] = mask;
            k += 1;
        }
    }
    let latency = fixed_latency(costs, associated, cloud);
    latency
        + match k {
            0 => 0.0,
            1 => bits(masks[0])
                .map(|n| costs.at_server(n, 1))
                .fold(f64::INFINITY, f64::min),
            k if k <= STACK_REMOTE => {
                let full = (1usize << k) - 1;
                let mut group = [f64::INFINITY; 1 << STACK_REMOTE];
                for (g, slot) in group.iter_mut().enumerate().take(full + 1).skip(1) {
                    let common = bits(g as u32).fold(u32::MAX, |acc, i| acc & masks[i]);
                    let size = g.count_ones() as usize;
                    for n in bits(common) {
                        *slot = slot.min(costs.at_server(n, size));
                    }
                }
                let mut best = [f64::INFINITY; 1 << STACK_REMOTE];
                best[0] = 0.0;
                for s in 1..=full {
                    for g in groups_with_lowest(s) {
                        best[s] = best[s].min(group[g] + best[s ^ g]);
                    }
                }
                best[full]
            }
            _ => {
                let remote: Vec<(ExpertId, u32)> =
                    masks[..k].iter().map(|&m| (ExpertId(0), m)).collect();
                serve_remote(costs, &remote).0
            }
        }
}

/// Minimum-latency assignment of the remote experts (each with the mask of servers holding it).
fn serve_remote(
    costs: &RouteCosts,
    remote: &[(ExpertId, u32)],
) -> (f64, Vec<(ExpertId, ServerId)>) {
    match remote {
        [] => (0.0, Vec::new()),
        [(e, mask)] => {
            let (cost, n) = bits(*mask).map(|n| (costs.at_server(n, 1), n)).fold(
                (f64::INFINITY, 0),
                |best, c| if c.0 < best.0 { c } else { best },
            );
            (cost, vec![(*e, ServerId(n as u32))])
        }
        _ => {
            let k = remote.len();
            let full = (1usize << k) - 1;
            // group[g]: cheapest single server holding every expert of subset g.
            let mut group = vec![(f64::INFINITY, 0usize); full + 1];
            for (g, slot) in group.iter_mut().enumerate().skip(1) {
                let common = bits(g as u32).fold(u32::MAX, |acc, i| acc & remote[i].1);
                let size = g.count_ones() as usize;
                for n in bits(common) {
                    let c = costs.at_server(n, size);
                    if c < slot.0 {
                        *slot = (c, n);
                    }
                }
            }
            // best[s]: cheapest service of subset s; choice[s]: the group holding its lowest expert.
            let mut best = vec![f64::INFINITY; full + 1];
            let mut choice = vec![0usize; full + 1];
            best[0] = 0.0;
            for s in 1..=full {
                for g in groups_with_lowest(s) {
                    let c = group[g].0 + best[s ^ g];
                    if c < best[s] {
                        best[s] = c;
                        choice[s] = g;
                    }
                }
            }
            let mut assignment = Vec::with_capacity(k);
            let mut s = full;
            while s != 0 {
                let g = choice[s];
                let n = ServerId(group[g].1 as u32);
                assignment.extend(bits(g as u32).map(|i| (remote[i].0, n)));
                s ^= g;
            }
            assignment.sort_unstable();
            (best[full], assignment)
        }
    }
}

/// The subsets of the non-empty set `s` that hold its lowest element, largest first: the
/// groups that can serve that element in a partition of `s`. Both subset DPs split `s` this
/// way, so each partition is counted once.
fn groups_with_lowest(s: usize) -> impl Iterator<Item = usize> {
    let low = s & s.wrapping_neg();
    let rest = s ^ low;
    let mut next = Some(rest);
    std::iter::from_fn(move || {
        let sub = next?;
        next = (sub != 0).then(|| (sub - 1) & rest);
        Some(sub | low)
    })
}

fn bits(mask: u32) -> impl Iterator<Item = usize> {
    (0..32).filter(move |i| mask & (1 << i) != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fixed LCG: `next(m)` is a pseudo-random number below m (the tests need no RNG crate).
    fn lcg(seed: u64) -> impl FnMut(u64) -> u64 {
        let mut state = seed;
        move |m| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % m
        }
    }

    /// Brute force: every assignment of each remote expert to any server holding it.
    fn brute(costs: &RouteCosts, remote: &[(ExpertId, u32)]) -> f64 {
        let options: Vec<Vec<usize>> = remote.iter().map(|(_, m)| bits(*m).collect()).collect();
        let mut best = f64::INFINITY;
        let mut idx = vec![0usize; remote.len()];
        loop {
            let mut used = std::collections::BTreeMap::new();
            for (i, o) in idx.iter().enumerate() {
                *used.entry(options[i][*o]).or_insert(0usize) += 1;
            }
            let c: f64 = used
                .iter()
                .map(|(&n, &cnt)| costs.edge_visit[n] + cnt as f64 * costs.edge_return[n])
                .sum();
            best = best.min(c);
            let mut j = 0;
            loop {
                if j == idx.len() {
                    return best;
                }
                idx[j] += 1;
                if idx[j] < options[j].len() {
                    break;
                }
                idx[j] = 0;
                j += 1;
            }
        }
    }

    #[test]
    fn latency_fast_path_equals_the_route_latency() {
        // Random demands of up to 8 missing experts (beyond the stack DP's 6) over up to 6
        // servers with random holdings: the allocation-free latency equals route()'s.
        let mut next = lcg(777);
        for _ in 0..2000 {
            let servers = 1 + next(6) as usize;
            let costs = RouteCosts {
                associated_compute: next(10) as f64,
                edge_visit: (0..servers).map(|_| next(100) as f64 / 7.0).collect(),
                edge_return: (0..servers).map(|_| next(100) as f64 / 7.0).collect(),
                cloud_visit: next(100) as f64,
                cloud_return: next(100) as f64 / 3.0,
            };
            let k = 1 + next(8) as u32;
            let d = RoutingDemand {
                server: ServerId(next(servers as u64) as u32),
                model: ModelId(0),
                missing: (0..k).map(ExpertId).collect(),
                weight: 1.0,
            };
            let held: Vec<Vec<bool>> = (0..servers)
                .map(|_| (0..k).map(|_| next(3) == 0).collect())
                .collect();
            let holds = |n: ServerId, e: ExpertId| held[n.index()][e.index()];
            let slow = route(&costs, &d, servers, holds).latency;
            let fast = route_latency(&costs, &d, servers, holds);
            assert!(
                (fast - slow).abs() <= 1e-9 * slow.abs().max(1.0),
                "{fast} vs {slow}"
            );
        }
    }

    #[test]
    fn subset_dp_matches_brute_force_on_pseudo_random_cases() {
        let mut next = lcg(12345);
        for _ in 0..500 {
            let servers = 2 + next(5) as usize;
            let costs = RouteCosts {
                associated_compute: 0.0,
                edge_visit: (0..servers).map(|_| next(100) as f64 / 10.0).collect(),
                edge_return: (0..servers).map(|_| next(100) as f64 / 10.0).collect(),
                cloud_visit: 0.0,
                cloud_return: 0.0,
            };
            let k = 1 + next(4) as usize;
            let remote: Vec<(ExpertId, u32)> = (0..k)
                .map(|i| {
                    let mask = (1 + next((1 << servers) - 1)) as u32;
                    (ExpertId(i as u32), mask)
                })
                .collect();
            let (fast, assignment) = serve_remote(&costs, &remote);
            let slow = brute(&costs, &remote);
            assert!((fast - slow).abs() < 1e-9, "dp {fast} brute {slow}");
            // The returned assignment uses holders only and costs what it claims.
            let mut used = std::collections::BTreeMap::new();
            for (e, n) in &assignment {
                assert!(remote[e.index()].1 & (1 << n.0) != 0);
                *used.entry(n.index()).or_insert(0usize) += 1;
            }
            let claimed: f64 = used
                .iter()
                .map(|(&n, &c)| costs.edge_visit[n] + c as f64 * costs.edge_return[n])
                .sum();
            assert!((claimed - fast).abs() < 1e-9);
        }
    }
}
