//! The SlimCaching evaluator on a hand-worked example that covers the four routing cases of
//! Fig. 5 of paper 000 (Section III-C, eqs. (5)-(17)): a token whose experts are (a) all local
//! on the user, (b) on the associated edge server n_u, (c) on other edge servers, where the
//! choice of beta (which holder serves which expert, eq. (7)) matters both ways: one far server
//! holding both experts beats two servers, and for the other user two servers beat one; and
//! (d) on no edge server, so at the cloud (eq. (10)). Every expected latency is computed by hand
//! in the comments, independently of the code, and compared with `LatencyModel::evaluate`,
//! `LatencyModel::route` and the per-user breakdown. The association rule under eq. (4) is
//! checked on users with no given `associated_server`.

mod common;

use common::{assert_close, lat, rate};
use formulations::slimcaching::evaluate::associated_server;
use formulations::slimcaching::{
    validate::validate, ActivationSet, Backhaul, Cloud, EdgeServer, ExpertId, ExpertRef,
    IncrementalObjective, Instance, LatencyModel, LayerActivation, LayerId, Link, ModelId,
    ModelRequest, MoeModel, Placement, Route, RoutingDemand, ServerId, User, UserId,
};

const TOL: f64 = 1e-12;

fn set(experts: &[u32], p: f64) -> ActivationSet {
    ActivationSet {
        experts: experts.to_vec(),
        p,
    }
}

fn local(expert: u32) -> ExpertRef {
    ExpertRef {
        model: ModelId(0),
        layer: LayerId(0),
        expert,
    }
}

/// The example. One model, Top-2, one MoE layer of 6 experts e0..e5 (catalogue ids 0..5),
/// b = 10 bytes, D = 1000 bytes = 8000 bits, mu = 1e6 FLOPs, so mu * E = 6e6.
///
/// Compute times (eq. (6) and its edge/cloud analogues, C / E per expert => T = mu E / C):
/// * user u0: C = 6e7   -> T_u0^CP = 6e6 / 6e7   = 0.1 s
/// * user u1: C = 1.2e8 -> T_u1^CP = 6e6 / 1.2e8 = 0.05 s
/// * S0: 6e8 -> 0.01 s; S1: 6e8 -> 0.01 s; S2: 1.2e9 -> 0.005 s; cloud: 3e9 -> 0.002 s.
///
/// Backhaul (latency-only links, seconds; `edge_to_edge[a][b]` is a -> b):
/// * S0 -> S1 0.01, S1 -> S0 0.01; S0 -> S2 0.035, S2 -> S0 0.025; S1 <-> S2 0.05 both ways.
/// * S0 -> cloud 0.1, cloud -> S0 0.1; S1 -> cloud 0.12, cloud -> S1 0.08; S2 0.1 / 0.1.
///
/// Users:
/// * u0: associated with S0 (given), holds e0 and e1; uplink to S0 at 8e5 bit/s
///   (T^UL = 8000 / 8e5 = 0.01 s), downlink at 1.6e6 bit/s (T^DL = 8000 / 1.6e6 = 0.005 s).
/// * u1: no association given (rule under eq. (4), see `association_rule_*`: S1); holds
///   nothing; uplink to S1 at 4e5 (T^UL = 0.02 s), downlink at 2e6 (T^DL = 0.004 s).
fn instance() -> Instance {
    let model = MoeModel {
        name: "top2".into(),
        top_k: 2,
        layers: 1,
        experts_per_layer: 6,
        expert_bytes: 10,
        hidden_bytes: 1000,
        expert_flops: 1e6,
    };
    let server = |storage_bytes, compute_flops| EdgeServer {
        storage_bytes,
        compute_flops,
    };
    let activations = |sets: Vec<ActivationSet>| {
        vec![LayerActivation {
            model: ModelId(0),
            layer: LayerId(0),
            sets,
        }]
    };
    let requests = vec![ModelRequest {
        model: ModelId(0),
        p: 1.0,
    }];
    let u0 = User {
        compute_flops: 6e7,
        associated_server: Some(ServerId(0)),
        uplink: vec![rate(8e5), rate(1e5), rate(1e5)],
        downlink: vec![rate(1.6e6), rate(1e5), rate(1e5)],
        local_experts: vec![local(0), local(1)],
        requests: requests.clone(),
        activations: activations(vec![
            set(&[0, 1], 0.1), // (a) both local
            set(&[0, 2], 0.2), // (b) e2 on n_u = S0
            set(&[2, 3], 0.1), // (b)+(c) e2 on S0, e3 on S1 or S2
            set(&[3, 4], 0.3), // (c) beta choice: one far server wins
            set(&[1, 5], 0.2), // (d) e5 at the cloud
            set(&[4, 5], 0.1), // (c)+(d) e4 on S2, e5 at the cloud
        ]),
    };
    // 1/R_UL + 1/R_DL: S0 1e-6 + 4e-6 = 5e-6; S1 2.5e-6 + 5e-7 = 3e-6; S2 5e-6 + 1e-7 =
    // 5.1e-6. S0 has the best uplink, S2 the best downlink, S1 the best sum: n_u1 = S1.
    let u1 = User {
        compute_flops: 1.2e8,
        associated_server: None,
        uplink: vec![rate(1e6), rate(4e5), rate(2e5)],
        downlink: vec![rate(2.5e5), rate(2e6), rate(1e7)],
        local_experts: vec![],
        requests,
        activations: activations(vec![
            set(&[2, 4], 0.5), // (c) beta choice: two servers win
            set(&[3, 5], 0.5), // (b)+(d) e3 on n_u = S1 (also on S2), e5 at the cloud
        ]),
    };
    let e2e = |a: usize, b: usize| -> Option<Link> {
        let t = [[0.0, 0.01, 0.035], [0.01, 0.0, 0.05], [0.025, 0.05, 0.0]];
        (a != b).then(|| lat(t[a][b]))
    };
    Instance {
        name: "fig5".into(),
        servers: vec![server(20, 6e8), server(10, 6e8), server(30, 1.2e9)],
        cloud: Cloud { compute_flops: 3e9 },
        backhaul: Backhaul {
            symmetric: false,
            edge_to_edge: (0..3)
                .map(|a| (0..3).map(|b| e2e(a, b)).collect())
                .collect(),
            edge_to_cloud: vec![lat(0.1), lat(0.12), lat(0.1)],
            cloud_to_edge: vec![lat(0.1), lat(0.08), lat(0.1)],
        },
        models: vec![model],
        users: vec![u0, u1],
    }
}

/// X: S0 = {e2}, S1 = {e3}, S2 = {e2, e3, e4}; e5 is on no server. Storage 10 / 10 / 30 bytes
/// of 20 / 10 / 30: feasible.
fn placement() -> Placement {
    let mut x = Placement::empty(3, 6);
    for (n, e) in [(0, 2), (1, 3), (2, 2), (2, 3), (2, 4)] {
        x.insert(ServerId(n), ExpertId(e));
    }
    x
}

fn demand(server: u32, missing: &[u32]) -> RoutingDemand {
    RoutingDemand {
        server: ServerId(server),
        model: ModelId(0),
        missing: missing.iter().map(|&e| ExpertId(e)).collect(),
        weight: 1.0,
    }
}

/// Eq. (5)'s routing of the demand for `missing` from `server` under [`placement`].
fn route_on_placement(server: u32, missing: &[u32]) -> Route {
    let x = placement();
    LatencyModel::new(&instance()).route(&demand(server, missing), |n, e| x.contains(n, e))
}

fn ids(v: &[u32]) -> Vec<ExpertId> {
    v.iter().map(|&e| ExpertId(e)).collect()
}

// Per-(model, n_u) costs by hand, seconds:
//   n_u = S0: T^CP_E(S0) = 0.01; visit S1 = T_{S0,S1} + T^CP_E(S1) = 0.01 + 0.01 = 0.02,
//             return S1 = 0.01; visit S2 = 0.035 + 0.005 = 0.04, return S2 = 0.025;
//             cloud visit = T_{S0,C} + T^CP_C = 0.1 + 0.002 = 0.102, cloud return = 0.1.
//   n_u = S1: T^CP_E(S1) = 0.01; visit S0 = 0.01 + 0.01 = 0.02, return S0 = 0.01;
//             visit S2 = 0.05 + 0.005 = 0.055, return S2 = 0.05;
//             cloud visit = 0.12 + 0.002 = 0.122, cloud return = 0.08.
//
// User u0 (T^UL = 0.01, T^DL = 0.005, T^CP_u = 0.1), per set S: T^token by (7)-(12), T^max by
// (15)-(16) = T^UL + T_{S0,C} + T^CP_C + |R| (T^DL + T_{C,S0}) = 0.112 + |R| 0.105 when R != {}:
//   (a) {e0,e1} p 0.1: R = {}          T = T^CP_u = 0.1                     T^max = 0.1
//   (b) {e0,e2} p 0.2: R = {e2} at S0  T = 0.01 + 0.005 + 0.01 = 0.025      T^max = 0.217
//   (c) {e2,e3} p 0.1: e2 at S0; e3 on S1 (0.02 + 0.01 = 0.03) or S2 (0.04 + 0.025 = 0.065)
//                      -> S1. T = 0.01 + 2*0.005 + 0.01 + 0.03 = 0.06      T^max = 0.322
//   (d) {e3,e4} p 0.3: e3 on S1, S2; e4 on S2 only. Split e3->S1, e4->S2:
//                      (0.02 + 0.01) + (0.04 + 0.025) = 0.095; both on S2: 0.04 + 2*0.025 =
//                      0.09 -> both on S2, though S1 is e3's nearest holder.
//                      T = 0.01 + 0.01 + 0.09 = 0.11                        T^max = 0.322
//   (e) {e1,e5} p 0.2: R = {e5} cloud: 0.102 + 0.1 = 0.202
//                      T = 0.01 + 0.005 + 0.202 = 0.217                     T^max = 0.217
//   (f) {e4,e5} p 0.1: e4 -> S2 (0.065), e5 -> cloud (0.202)
//                      T = 0.01 + 0.01 + 0.065 + 0.202 = 0.287              T^max = 0.322
//   T-bar_u0 = 0.01 + 0.005 + 0.006 + 0.033 + 0.0434 + 0.0287 = 0.1261
//   T^max_u0 = 0.01 + 0.0434 + 0.0322 + 0.0966 + 0.0434 + 0.0322 = 0.2578
//   reduction_u0 = 0.1317 (= 0.2*0.192 + 0.1*0.262 + 0.3*0.212 + 0.1*0.035)
//
// User u1 (n_u = S1, T^UL = 0.02, T^DL = 0.004), T^max = 0.02 + 0.122 + 2 (0.004 + 0.08) = 0.31:
//   (g) {e2,e4} p 0.5: nothing on S1. e2 on S0, S2; e4 on S2 only. Split e2->S0, e4->S2:
//                      (0.02 + 0.01) + (0.055 + 0.05) = 0.135; both on S2: 0.055 + 2*0.05 =
//                      0.155 -> split over two servers.
//                      T = 0.02 + 2*0.004 + 0.135 = 0.163                   T^max = 0.31
//   (h) {e3,e5} p 0.5: e3 on n_u = S1 (served there, though S2 holds it too): 0.01;
//                      e5 cloud: 0.122 + 0.08 = 0.202
//                      T = 0.02 + 0.008 + 0.01 + 0.202 = 0.24               T^max = 0.31
//   T-bar_u1 = 0.5*0.163 + 0.5*0.24 = 0.2015; T^max_u1 = 0.31; reduction_u1 = 0.1085
//
// F (17) = (0.1317 + 0.1085) / 2 = 0.1201; average latency (0.1261 + 0.2015) / 2 = 0.1638;
// maximal (0.2578 + 0.31) / 2 = 0.2839 (and 0.2839 - 0.1638 = 0.1201).

#[test]
fn the_example_is_valid_and_u1_is_associated_with_s1() {
    let inst = instance();
    validate(&inst).expect("hand-built instance is valid");
    assert_eq!(associated_server(&inst, UserId(0)), ServerId(0));
    assert_eq!(associated_server(&inst, UserId(1)), ServerId(1));
}

#[test]
fn evaluate_gives_the_hand_computed_objective_and_latencies() {
    let model = LatencyModel::new(&instance());
    let ev = model.evaluate(&placement());
    assert_close(ev.objective, 0.1201, TOL, "F(X)");
    assert_close(ev.avg_latency_s, 0.1638, TOL, "average latency");
    assert_close(ev.max_latency_s, 0.2839, TOL, "maximal latency");
    assert_close(model.objective(&placement()), 0.1201, TOL, "objective()");
    assert_eq!(ev.storage_used, vec![10, 10, 30]);
    assert!(ev.feasible);
    assert!(model.is_feasible(&placement()));
}

#[test]
fn per_user_breakdown_matches_the_hand_computation() {
    let model = LatencyModel::new(&instance());
    let ev = model.evaluate(&placement());
    assert_eq!(ev.users.len(), 2);
    let (u0, u1) = (&ev.users[0], &ev.users[1]);
    assert_eq!((u0.user, u0.associated_server), (UserId(0), ServerId(0)));
    assert_close(u0.avg_latency_s, 0.1261, TOL, "T-bar u0");
    assert_close(u0.max_latency_s, 0.2578, TOL, "T^max u0");
    assert_close(u0.reduction_s, 0.1317, TOL, "reduction u0");
    assert_eq!((u1.user, u1.associated_server), (UserId(1), ServerId(1)));
    assert_close(u1.avg_latency_s, 0.2015, TOL, "T-bar u1");
    assert_close(u1.max_latency_s, 0.31, TOL, "T^max u1");
    assert_close(u1.reduction_s, 0.1085, TOL, "reduction u1");
}

#[test]
fn empty_placement_gives_zero_reduction_and_the_maximal_latency() {
    // With X empty every lacking expert goes to the cloud, so T^token = T^max per set (16):
    // F = 0 and the average latency is the maximal one, 0.2839.
    let model = LatencyModel::new(&instance());
    let ev = model.evaluate(&model.empty_placement());
    assert_close(ev.objective, 0.0, TOL, "F(empty)");
    assert_close(ev.avg_latency_s, 0.2839, TOL, "average latency");
    assert_close(ev.max_latency_s, 0.2839, TOL, "maximal latency");
    assert_eq!(ev.storage_used, vec![0, 0, 0]);
    assert!(ev.feasible);
}

#[test]
fn demands_are_the_lacking_sets_weighted_by_p_over_u() {
    // Weight p_{u,m} p_{u,S} / U with U = 2; set (a) is local and makes no demand.
    let model = LatencyModel::new(&instance());
    let mut got: Vec<(u32, Vec<ExpertId>, f64)> = model
        .demands()
        .iter()
        .map(|d| (d.server.0, d.missing.clone(), d.weight))
        .collect();
    got.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
    let expected = [
        (0, ids(&[2]), 0.1),
        (0, ids(&[2, 3]), 0.05),
        (0, ids(&[3, 4]), 0.15),
        (0, ids(&[4, 5]), 0.05),
        (0, ids(&[5]), 0.1),
        (1, ids(&[2, 4]), 0.25),
        (1, ids(&[3, 5]), 0.25),
    ];
    assert_eq!(got.len(), expected.len(), "{got:?}");
    for (g, e) in got.iter().zip(&expected) {
        assert_eq!((g.0, &g.1), (e.0, &e.1));
        assert_close(g.2, e.2, TOL, "demand weight");
    }
    assert!(model.demands().iter().all(|d| d.model == ModelId(0)));
}

#[test]
fn route_case_b_expert_on_the_associated_server() {
    // G = T^CP_E(S0) = 0.01.
    let r = route_on_placement(0, &[2]);
    assert_eq!(r.at_associated, ids(&[2]));
    assert!(r.at_edge.is_empty() && r.at_cloud.is_empty());
    assert_close(r.latency, 0.01, TOL, "G");
}

#[test]
fn route_associated_plus_nearest_other_server() {
    // e2 at S0 (0.01), e3 via S1 (0.02 + 0.01) rather than S2 (0.04 + 0.025): G = 0.04.
    let r = route_on_placement(0, &[2, 3]);
    assert_eq!(r.at_associated, ids(&[2]));
    assert_eq!(r.at_edge, vec![(ExpertId(3), ServerId(1))]);
    assert!(r.at_cloud.is_empty());
    assert_close(r.latency, 0.04, TOL, "G");
}

#[test]
fn route_case_c_one_far_server_for_both_beats_two_servers() {
    // From S0: split 0.095 vs both on S2 0.09 (see the table above).
    let r = route_on_placement(0, &[3, 4]);
    assert!(r.at_associated.is_empty() && r.at_cloud.is_empty());
    assert_eq!(
        r.at_edge,
        vec![(ExpertId(3), ServerId(2)), (ExpertId(4), ServerId(2))]
    );
    assert_close(r.latency, 0.09, TOL, "G");
}

#[test]
fn route_case_c_two_servers_beat_one_far_server_for_both() {
    // From S1: split 0.135 vs both on S2 0.155.
    let r = route_on_placement(1, &[2, 4]);
    assert!(r.at_associated.is_empty() && r.at_cloud.is_empty());
    assert_eq!(
        r.at_edge,
        vec![(ExpertId(2), ServerId(0)), (ExpertId(4), ServerId(2))]
    );
    assert_close(r.latency, 0.135, TOL, "G");
}

#[test]
fn route_case_d_cloud_only() {
    // From S0: 0.102 + 0.1 = 0.202, equal to G(R, empty) = cloud_latency.
    let r = route_on_placement(0, &[5]);
    let (model, d) = (LatencyModel::new(&instance()), demand(0, &[5]));
    assert_eq!(r.at_cloud, ids(&[5]));
    assert!(r.at_associated.is_empty() && r.at_edge.is_empty());
    assert_close(r.latency, 0.202, TOL, "G");
    assert_close(model.cloud_latency(&d), 0.202, TOL, "G(empty)");
}

#[test]
fn route_associated_server_is_used_even_if_held_elsewhere_and_cloud_for_the_rest() {
    // u1's {e3, e5} from S1: e3 on S1 (and S2) -> S1, 0.01; e5 -> cloud 0.122 + 0.08: G = 0.212.
    // Two experts from the cloud from S1: 0.122 + 2*0.08 = 0.282 = G(empty).
    let r = route_on_placement(1, &[3, 5]);
    let (model, d) = (LatencyModel::new(&instance()), demand(1, &[3, 5]));
    assert_eq!(r.at_associated, ids(&[3]));
    assert!(r.at_edge.is_empty());
    assert_eq!(r.at_cloud, ids(&[5]));
    assert_close(r.latency, 0.212, TOL, "G");
    assert_close(model.cloud_latency(&d), 0.282, TOL, "G(empty)");
}

#[test]
fn route_edge_plus_cloud() {
    // u0's {e4, e5} from S0: e4 -> S2 (0.04 + 0.025), e5 -> cloud (0.202): G = 0.267.
    let r = route_on_placement(0, &[4, 5]);
    assert!(r.at_associated.is_empty());
    assert_eq!(r.at_edge, vec![(ExpertId(4), ServerId(2))]);
    assert_eq!(r.at_cloud, ids(&[5]));
    assert_close(r.latency, 0.267, TOL, "G");
}

#[test]
fn overfull_server_is_reported_infeasible_but_still_evaluated() {
    // Add e4 to S1 (capacity 10 bytes): S1 uses 20 > 10. Routing changes for three demands
    // (weights p / U):
    // * u1's {e2, e4}: e4 now on n_u = S1 (0.01), e2 from S0 (0.02 + 0.01) -> G = 0.04 instead
    //   of 0.135: gain 0.095 * 0.25 = 0.02375;
    // * u0's {e3, e4}: both on S1, 0.02 + 2*0.01 = 0.04 instead of 0.09: 0.05 * 0.15 = 0.0075;
    // * u0's {e4, e5}: e4 via S1 (0.03) instead of S2 (0.065): 0.035 * 0.05 = 0.00175.
    // F = 0.1201 + 0.02375 + 0.0075 + 0.00175 = 0.1531.
    let model = LatencyModel::new(&instance());
    let mut x = placement();
    x.insert(ServerId(1), ExpertId(4));
    let ev = model.evaluate(&x);
    assert_eq!(ev.storage_used, vec![10, 20, 30]);
    assert!(!ev.feasible);
    assert!(!model.is_feasible(&x));
    assert_close(ev.objective, 0.1531, TOL, "F");
}

#[test]
fn incremental_objective_reaches_the_same_f() {
    // Inserting the pairs of X one by one: the gains add up to F(X) = 0.1201, and gain()
    // predicts each insert's gain.
    let model = LatencyModel::new(&instance());
    let mut inc = IncrementalObjective::new(&model, model.empty_placement());
    let mut total = 0.0;
    for (n, e) in [(0, 2), (1, 3), (2, 2), (2, 3), (2, 4)] {
        let (n, e) = (ServerId(n), ExpertId(e));
        let predicted = inc.gain(n, e);
        let gain = inc.insert(n, e);
        assert_close(gain, predicted, TOL, "gain");
        total += gain;
    }
    assert_eq!(inc.placement(), &placement());
    assert_close(total, 0.1201, TOL, "sum of gains");
    assert_close(inc.value(), 0.1201, TOL, "value");
}

/// Users with no given association on 3 servers; 1/R is written as a sum of exact inverses.
fn association_instance(users: Vec<(Vec<Link>, Vec<Link>)>) -> Instance {
    let mut inst = instance();
    let template = inst.users[1].clone();
    inst.users = users
        .into_iter()
        .map(|(uplink, downlink)| User {
            associated_server: None,
            uplink,
            downlink,
            ..template.clone()
        })
        .collect();
    inst
}

#[test]
fn association_rule_picks_the_least_one_bit_round_trip() {
    let inst = association_instance(vec![
        // 1/UL + 1/DL: S0 1e-6 + 4e-6 = 5e-6, S1 2.5e-6 + 5e-7 = 3e-6, S2 5e-6 + 1e-7 = 5.1e-6
        // -> S1, though S0 has the fastest uplink and S2 the fastest downlink.
        (
            vec![rate(1e6), rate(4e5), rate(2e5)],
            vec![rate(2.5e5), rate(2e6), rate(1e7)],
        ),
        // S0 2e-6 + 2e-6 = 4e-6, S1 1e-5 + 1e-7 = 1.01e-5, S2 2.5e-7 + 2.5e-7 = 5e-7 -> S2.
        (
            vec![rate(5e5), rate(1e5), rate(4e6)],
            vec![rate(5e5), rate(1e7), rate(4e6)],
        ),
        // Fixed latencies count too: S0 has the best rates (1e-7 + 1e-7 = 2e-7) but 1e-6 s
        // of uplink latency (total 1.2e-6); S1: 5e-7 + 5e-7 = 1e-6; S2: 1e-6 + 1e-6 = 2e-6
        // -> S1.
        (
            vec![
                Link {
                    latency_s: 1e-6,
                    rate_bps: Some(1e7),
                },
                rate(2e6),
                rate(1e6),
            ],
            vec![rate(1e7), rate(2e6), rate(1e6)],
        ),
        // Latency-only links: S0 0.003 + 0.002 = 0.005, S1 0.001 + 0.001 = 0.002,
        // S2 0.0005 + 0.002 = 0.0025 -> S1.
        (
            vec![lat(0.003), lat(0.001), lat(0.0005)],
            vec![lat(0.002), lat(0.001), lat(0.002)],
        ),
        // A tie between S1 and S2 (both 2e-6; S0 4e-6): the lowest index, S1.
        (
            vec![rate(5e5), rate(1e6), rate(1e6)],
            vec![rate(5e5), rate(1e6), rate(1e6)],
        ),
    ]);
    validate(&inst).expect("valid");
    let expected = [1, 2, 1, 1, 1];
    let model = LatencyModel::new(&inst);
    let ev = model.evaluate(&placement());
    for (u, &n) in expected.iter().enumerate() {
        assert_eq!(
            associated_server(&inst, UserId(u as u32)),
            ServerId(n),
            "user {u}"
        );
        assert_eq!(ev.users[u].associated_server, ServerId(n), "user {u}");
    }
}

#[test]
fn association_given_explicitly_overrides_the_rule() {
    // u1's links favour S1, but an explicit S2 wins; then u1's tokens use the S2 uplink and
    // downlink (8000 / 2e5 = 0.04 s up, 8000 / 1e7 = 0.0008 s down) and the routing from S2.
    // T^max from S2 per set: 0.04 + (0.1 + 0.002) + 2 (0.0008 + 0.1) = 0.3436.
    // {e2, e4}: both on S2 = n_u: G = T^CP_E(S2) = 0.005 -> T = 0.04 + 0.0016 + 0.005 = 0.0466.
    // {e3, e5}: e3 on S2 (0.005), e5 cloud (0.102 + 0.1 = 0.202) -> T = 0.0416 + 0.207 = 0.2486.
    // T-bar_u1 = (0.0466 + 0.2486) / 2 = 0.1476.
    let mut inst = instance();
    inst.users[1].associated_server = Some(ServerId(2));
    assert_eq!(associated_server(&inst, UserId(1)), ServerId(2));
    let ev = LatencyModel::new(&inst).evaluate(&placement());
    let u1 = &ev.users[1];
    assert_eq!(u1.associated_server, ServerId(2));
    assert_close(u1.max_latency_s, 0.3436, TOL, "T^max u1");
    assert_close(u1.avg_latency_s, 0.1476, TOL, "T-bar u1");
}
