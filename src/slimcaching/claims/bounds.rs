//! Proved upper bounds on OPT of P1 and of P2_n that cost one pass over the routing demands,
//! for the ratio claims at the paper's sizes, where the MILP stops at its time limit with its
//! root bound (see the parent module's doc, "Bounds"). Each is valid for every instance: it
//! rests only on the evaluator's routing latency being a sum of non-negative costs
//! ([`LatencyModel::route`]) and on F being a weighted sum over the demands.

use formulations::slimcaching::{LatencyModel, Placement, RoutingDemand};

use super::set_functions::sid;

/// The least routing latency any placement can give demand `d`: each lacking expert is served
/// at the associated server (its compute once), on one other server n' (its visit once and a
/// return per expert) or by the cloud (its visit once and a return per expert). A route that
/// mixes places pays each place's once-cost and no less per expert than the cheapest place it
/// uses, so one place alone is at least as fast; the routing rule (an expert cached at n_u is
/// served there, the cloud only for experts no edge server holds) only removes routes.
fn least_latency(model: &LatencyModel, d: &RoutingDemand) -> f64 {
    let c = model.costs(d.model, d.server);
    let r = d.missing.len() as f64;
    let own = d.server.index();
    let remote = (0..model.servers())
        .filter(|&n| n != own)
        .map(|n| c.edge_visit[n] + r * c.edge_return[n])
        .fold(f64::INFINITY, f64::min);
    c.associated_compute.min(remote).min(model.cloud_latency(d))
}

/// An upper bound on F(X) for every placement X, feasible or not: sum_d W_d (G_d(empty) - the
/// least latency of d), i.e. every token routed as fast as any cache could make it.
pub(super) fn p1_relaxation_bound(model: &LatencyModel) -> f64 {
    model
        .demands()
        .iter()
        .filter(|d| !d.missing.is_empty())
        .map(|d| d.weight * (model.cloud_latency(d) - least_latency(model, d)))
        .sum()
}

/// An upper bound on max F~_n(S) over the sets S of server n's experts within Q_n, given
/// `base` = X_{<n} (server n and later servers empty in it).
///
/// F~_n(S) = sum_d W_d h_d(S cap R_d), h_d(T) = G_d(base) - G_d(base + T on n), tabulated over
/// the 2^|R_d| subsets T (|R_d| <= K_m). Each demand gets per-expert credits u_e = h_d(e | R_d -
/// e) (the marginal at the top, which bounds h_d from above by a modular function when h_d is
/// supermodular, Prop. 4) raised by delta_d = max_T (h_d(T) - sum_{e in T} u_e)^+, so that
/// sum_{e in T} u_e >= h_d(T) for every T whether h_d is supermodular or not. Then F~_n(S) <=
/// sum_{e in S} U_e with U_e = sum_d W_d u_{d,e}, and the fractional knapsack (the LP
/// relaxation: densest U_e / b_e first, the first item that does not fit taken in part) bounds
/// max over S within Q_n of sum_{e in S} U_e from above.
pub(super) fn p2_modular_bound(model: &LatencyModel, base: &Placement, n: usize) -> f64 {
    let mut credit = vec![0.0f64; model.experts()];
    for d in model.demands() {
        let r = &d.missing;
        let k = r.len();
        let latency: Vec<f64> = (0..1usize << k)
            .map(|mask| {
                model
                    .route(d, |s, e| {
                        base.contains(s, e)
                            || (s == sid(n)
                                && r.iter()
                                    .enumerate()
                                    .any(|(b, &x)| mask >> b & 1 == 1 && x == e))
                    })
                    .latency
            })
            .collect();
        let h = |mask: usize| latency[0] - latency[mask];
        let full = (1usize << k) - 1;
        let top: Vec<f64> = (0..k).map(|b| h(full) - h(full ^ 1 << b)).collect();
        let delta = (1..=full)
            .map(|mask| {
                let sum: f64 = (0..k).filter(|b| mask >> b & 1 == 1).map(|b| top[b]).sum();
                h(mask) - sum
            })
            .fold(0.0, f64::max);
        for (b, &e) in r.iter().enumerate() {
            credit[e.index()] += d.weight * (top[b] + delta);
        }
    }
    let q = model.capacity(sid(n));
    let mut items: Vec<(f64, u64)> = credit
        .iter()
        .enumerate()
        .map(|(e, &u)| (u, model.expert_bytes(super::set_functions::eid(e))))
        .filter(|&(u, b)| u > 0.0 && b <= q)
        .collect();
    items.sort_by(|a, b| (b.0 / b.1 as f64).total_cmp(&(a.0 / a.1 as f64)));
    let (mut room, mut total) = (q, 0.0);
    for (u, b) in items {
        if b <= room {
            room -= b;
            total += u;
        } else {
            total += u * room as f64 / b as f64;
            break;
        }
    }
    total
}
