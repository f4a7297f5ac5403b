use super::knapsack::*;
use super::*;
use crate::slimcaching::generate::{generate, GeneratorConfig, Preset};
use formulations::slimcaching::validate::validate;
use formulations::slimcaching::{
    ActivationSet, Backhaul, Cloud, EdgeServer, Instance, LayerActivation, Link, ModelRequest,
    MoeModel, User,
};
use formulations::slimcaching::{LayerId, ModelId};
use rand::seq::SliceRandom;
use rand::Rng;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;

// ---------- instance builders ----------

fn compile(inst: &Instance) -> LatencyModel {
    validate(inst).expect("test instance is valid");
    LatencyModel::new(inst)
}

/// Normalised random weights (each in [0.1, 1)), summing to 1.
fn distribution(rng: &mut ChaCha8Rng, len: usize) -> Vec<f64> {
    let w: Vec<f64> = (0..len).map(|_| rng.random_range(0.1..1.0)).collect();
    let total: f64 = w.iter().sum();
    w.iter().map(|x| x / total).collect()
}

/// A random valid instance: 1-3 servers, 1-3 models (Top-K with K <= max_k), 1-2 layers,
/// 2-5 experts per layer, 2-4 users, capacities of a few experts.
fn random_instance(rng: &mut ChaCha8Rng, max_k: u32) -> Instance {
    random_instance_in(rng, max_k, false)
}

/// As [`random_instance`]; with `edge_beats_cloud`, edge servers compute fast and edge
/// links are short, so every remote round trip (at most 2 (2 ms + 3.2 ms) + 5 ms) beats the
/// cloud's (at least 20 ms): the regime in which Top-1 makes F submodular.
fn random_instance_in(rng: &mut ChaCha8Rng, max_k: u32, edge_beats_cloud: bool) -> Instance {
    let (max_link_latency, server_flops) = if edge_beats_cloud {
        (0.002, 1e10..3e10)
    } else {
        (0.005, 1e9..1e10)
    };
    let servers = rng.random_range(1..=3usize);
    let mut models = Vec::new();
    for i in 0..rng.random_range(1..=3) {
        let experts = rng.random_range(2..=5u32);
        models.push(MoeModel {
            name: format!("m{i}"),
            top_k: rng.random_range(1..=max_k.min(experts)),
            layers: rng.random_range(1..=2),
            experts_per_layer: experts,
            expert_bytes: 10 * rng.random_range(1..=4u64),
            hidden_bytes: 1000 * rng.random_range(1..=4u64),
            expert_flops: rng.random_range(1e6..1e7),
        });
    }
    let mut edge_to_edge = vec![vec![None; servers]; servers];
    for (i, row) in edge_to_edge.iter_mut().enumerate() {
        for (j, slot) in row.iter_mut().enumerate() {
            if i != j {
                *slot = Some(Link {
                    latency_s: rng.random_range(0.0..max_link_latency),
                    rate_bps: Some(rng.random_range(1e7..2e7)),
                });
            }
        }
    }
    let cloud_link = Link {
        latency_s: 0.01,
        rate_bps: None,
    };
    let mut users = Vec::new();
    for _ in 0..rng.random_range(2..=4) {
        let uplink = (0..servers)
            .map(|_| Link {
                latency_s: 0.0,
                rate_bps: Some(rng.random_range(1e6..1e8)),
            })
            .collect();
        let downlink = (0..servers)
            .map(|_| Link {
                latency_s: 0.0,
                rate_bps: Some(rng.random_range(1e6..1e8)),
            })
            .collect();
        let mut requested: Vec<usize> =
            (0..models.len()).filter(|_| rng.random_bool(0.7)).collect();
        if requested.is_empty() {
            requested.push(rng.random_range(0..models.len()));
        }
        let p = distribution(rng, requested.len());
        let requests = requested
            .iter()
            .zip(&p)
            .map(|(&m, &p)| ModelRequest {
                model: ModelId(m as u32),
                p,
            })
            .collect();
        let mut activations = Vec::new();
        let mut local_experts = Vec::new();
        for &m in &requested {
            let model = &models[m];
            for l in 0..model.layers {
                let mut sets: Vec<Vec<u32>> = Vec::new();
                for _ in 0..rng.random_range(1..=4) {
                    let mut all: Vec<u32> = (0..model.experts_per_layer).collect();
                    all.shuffle(rng);
                    let mut set = all[..model.top_k as usize].to_vec();
                    set.sort_unstable();
                    if !sets.contains(&set) {
                        sets.push(set);
                    }
                }
                let p = distribution(rng, sets.len());
                activations.push(LayerActivation {
                    model: ModelId(m as u32),
                    layer: LayerId(l),
                    sets: sets
                        .into_iter()
                        .zip(p)
                        .map(|(experts, p)| ActivationSet { experts, p })
                        .collect(),
                });
                for i in 0..model.experts_per_layer {
                    if rng.random_bool(0.15) {
                        local_experts.push(formulations::slimcaching::ExpertRef {
                            model: ModelId(m as u32),
                            layer: LayerId(l),
                            expert: i,
                        });
                    }
                }
            }
        }
        users.push(User {
            compute_flops: rng.random_range(1e8..1e9),
            associated_server: rng
                .random_bool(0.5)
                .then(|| ServerId(rng.random_range(0..servers) as u32)),
            uplink,
            downlink,
            local_experts,
            requests,
            activations,
        });
    }
    Instance {
        name: "random".into(),
        servers: (0..servers)
            .map(|_| EdgeServer {
                storage_bytes: rng.random_range(10..=120),
                compute_flops: rng.random_range(server_flops.clone()),
            })
            .collect(),
        cloud: Cloud {
            compute_flops: rng.random_range(1e10..5e10),
        },
        backhaul: Backhaul {
            symmetric: false,
            edge_to_edge,
            edge_to_cloud: vec![cloud_link; servers],
            cloud_to_edge: vec![cloud_link; servers],
        },
        models,
        users,
    }
}

/// An instance from JSON models and users, with `storage.len()` servers of 1e8 FLOP/s,
/// 0.001 s symmetric edge links, 0.01 s edge-cloud latency and a 2e8 FLOP/s cloud. Users
/// get uplinks and downlinks for every server.
fn json_instance(storage: &[u64], models: serde_json::Value, users: serde_json::Value) -> Instance {
    let n = storage.len();
    let edge: Vec<Vec<serde_json::Value>> = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| {
                    if i == j {
                        serde_json::Value::Null
                    } else {
                        json!({ "latency_s": 0.001 })
                    }
                })
                .collect()
        })
        .collect();
    let links: Vec<serde_json::Value> = (0..n).map(|_| json!({ "rate_bps": 1e7 })).collect();
    let mut users = users;
    for u in users.as_array_mut().expect("users array") {
        u["uplink"] = json!(links);
        u["downlink"] = json!(links);
        u["compute_flops"] = json!(1e9);
    }
    let inst = json!({
        "name": "hand",
        "servers": storage.iter().map(|&q| json!({ "storage_bytes": q, "compute_flops": 1e8 }))
            .collect::<Vec<_>>(),
        "cloud": { "compute_flops": 2e8 },
        "backhaul": {
            "symmetric": true,
            "edge_to_edge": edge,
            "edge_to_cloud": (0..n).map(|_| json!({ "latency_s": 0.01 })).collect::<Vec<_>>(),
            "cloud_to_edge": (0..n).map(|_| json!({ "latency_s": 0.01 })).collect::<Vec<_>>(),
        },
        "models": models,
        "users": users,
    });
    serde_json::from_value(inst).expect("test instance JSON")
}

fn top1_model(name: &str, layers: u32, experts: u32, bytes: u64) -> serde_json::Value {
    json!({ "name": name, "top_k": 1, "layers": layers, "experts_per_layer": experts,
            "expert_bytes": bytes, "hidden_bytes": 1000, "expert_flops": 1e6 })
}

/// The knapsack example: one server of 100 bytes, model A (experts of 100 bytes; expert 0
/// requested with weight 10/16.5, expert 1 never) and model B (experts of 50 bytes with
/// weights 5.5/16.5 and 1/16.5). With E_m = 2 and 1e6 FLOP per expert, every cached expert
/// saves Delta = G(empty) - G(at n_u) = (0.01 + 2e6/2e8 + 0.01) - 2e6/1e8 = 0.01 s per
/// unit of weight.
fn knapsack_example() -> Instance {
    json_instance(
        &[100],
        json!([top1_model("A", 1, 2, 100), top1_model("B", 1, 2, 50)]),
        json!([{
            "associated_server": 0,
            "requests": [ { "model": 0, "p": 10.0 / 16.5 }, { "model": 1, "p": 6.5 / 16.5 } ],
            "activations": [
                { "model": 0, "layer": 0, "sets": [ { "experts": [0], "p": 1.0 } ] },
                { "model": 1, "layer": 0, "sets": [ { "experts": [0], "p": 5.5 / 6.5 },
                                                    { "experts": [1], "p": 1.0 / 6.5 } ] } ]
        }]),
    )
}

fn cached(x: &Placement, n: usize) -> Vec<u32> {
    x.experts_on(sid(n)).map(|e| e.0).collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 + 1e-9 * a.abs().max(b.abs())
}

/// Room left on each server.
fn room_left(model: &LatencyModel, x: &Placement) -> Vec<u64> {
    (0..model.servers())
        .map(|n| model.capacity(sid(n)) - model.used_bytes(x, sid(n)))
        .collect()
}

/// No expert missing from server n fits its remaining room.
fn assert_maximal(model: &LatencyModel, x: &Placement, what: &str) {
    assert!(model.is_feasible(x), "{what}: infeasible");
    for (n, room) in room_left(model, x).into_iter().enumerate() {
        for e in 0..model.experts() {
            if !x.contains(sid(n), eid(e)) {
                assert!(
                    model.expert_bytes(eid(e)) > room,
                    "{what}: expert {e} still fits on server {n}"
                );
            }
        }
    }
}

// ---------- Alg. 1 and the lazy greedy ----------

#[test]
fn knapsack_example_hand_computed_results() {
    let model = compile(&knapsack_example());
    let delta = 0.01;
    // Densities: A0 (10/16.5) Delta / 100, B0 (5.5/16.5) Delta / 50 (highest),
    // B1 (1/16.5) Delta / 50, A1 0. Greedy takes B0, then only B1 fits: F = 6.5/16.5 Delta.
    // Evaluations: 4 pairs fit at step 1, only B1 (id 3) at step 2, none at step 3.
    let (g, picks) = greedy_trace(&model);
    assert_eq!(picks, vec![(0, 2), (0, 3)]);
    assert_eq!(g.evaluations, 5);
    assert!(close(model.objective(&g.placement), 6.5 / 16.5 * delta));
    // The knapsack of values (10, 0, 5.5, 1)/16.5 Delta, sizes (100, 100, 50, 50), Q = 100
    // takes A0 alone: 10/16.5 Delta.
    for s in [successive_dp(&model), successive_maxconv(&model)] {
        let s = s.expect("small instance");
        assert_eq!(cached(&s.placement, 0), vec![0]);
        assert_eq!(s.subproblem_values.len(), 1);
        assert!(close(s.subproblem_values[0], 10.0 / 16.5 * delta));
        assert_eq!(s.evaluations, 4);
    }
    // Exhaustive: relevant pairs are experts 0, 2, 3; the best feasible set is {A0}.
    let (x, f) = exhaustive(&model).expect("3 relevant pairs");
    assert_eq!(cached(&x, 0), vec![0]);
    assert!(close(f, 10.0 / 16.5 * delta));
    // LFU: A0 is the most requested and fills the server.
    assert_eq!(cached(&lfu(&model), 0), vec![0]);
    // U-shaped: layer A.0 (weight 10/16.5) needs 200 bytes and is skipped; B.0 (100 bytes).
    assert_eq!(cached(&u_shaped(&model), 0), vec![2, 3]);
}

#[test]
fn successive_greedy_keeps_the_best_single_expert_when_it_beats_the_greedy() {
    // The knapsack example: the density greedy on server 0 reaches 6.5/16.5 Delta (B0, B1,
    // as Alg. 1); the best single expert, A0, gains 10/16.5 Delta: it is kept, the
    // optimum here. Evaluations: the greedy's 4 + 1 gains, then the 4 singles.
    let model = compile(&knapsack_example());
    let delta = 0.01;
    let s = successive_greedy(&model);
    assert_eq!(cached(&s.placement, 0), vec![0]);
    assert_eq!(s.subproblem_values.len(), 1);
    assert!(close(s.subproblem_values[0], 10.0 / 16.5 * delta));
    assert!(close(model.objective(&s.placement), 10.0 / 16.5 * delta));
    assert_eq!(s.evaluations, 9);
    // The repaired ratio's bound (claims, claim 12): alpha = (1 - 1/e)/2 = 0.31606 for
    // one server, alpha / (1 + alpha) = 0.24016 for more.
    use crate::slimcaching::claims::prop3_repaired_bound;
    assert!((prop3_repaired_bound(1) - 0.316_060).abs() < 1e-6);
    assert!((prop3_repaired_bound(3) - 0.240_156).abs() < 1e-6);
}

#[test]
fn greedy_breaks_ties_towards_the_lowest_server_then_expert() {
    // Two symmetric servers of one expert each; each server's user asks for experts 0 and 1
    // of one layer with p = 1/2, so all four pairs have the same first gain. The lowest,
    // (0, 0), wins. Then, with G(local) = 0.02, G(remote) = 0.001 + 0.02 + 0.001 = 0.022 and
    // G(cloud) = 0.03 (weights 1/4): gain (1, 0) = (0.022 - 0.02)/4 and
    // gain (1, 1) = (0.03 - 0.02)/4 + (0.03 - 0.022)/4, so (1, 1) follows.
    let user = |n: u32| {
        json!({
            "associated_server": n,
            "requests": [ { "model": 0, "p": 1.0 } ],
            "activations": [ { "model": 0, "layer": 0,
                "sets": [ { "experts": [0], "p": 0.5 }, { "experts": [1], "p": 0.5 } ] } ]
        })
    };
    let inst = json_instance(
        &[10, 10],
        json!([top1_model("A", 1, 2, 10)]),
        json!([user(0), user(1)]),
    );
    let model = compile(&inst);
    assert_eq!(greedy_trace(&model).1, vec![(0, 0), (1, 1)]);
    assert_eq!(lazy_greedy_trace(&model).1, vec![(0, 0), (1, 1)]);
}

#[test]
fn greedy_picks_the_best_fitting_density_at_every_step() {
    // Oracle: densities from full evaluations F(S + p) - F(S), independent of the
    // incremental evaluator; candidate counts give the expected number of evaluations.
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    for case in 0..30 {
        let model = compile(&random_instance(&mut rng, 3));
        let (out, picks) = greedy_trace(&model);
        let mut x = model.empty_placement();
        let mut expected_evaluations = 0u64;
        for (step, &(n, e)) in picks.iter().chain([&(usize::MAX, 0)]).enumerate() {
            let room = room_left(&model, &x);
            let base = model.objective(&x);
            let mut best = f64::NEG_INFINITY;
            let mut picked = None;
            for (n2, &r) in room.iter().enumerate() {
                for e2 in 0..model.experts() {
                    let b = model.expert_bytes(eid(e2));
                    if x.contains(sid(n2), eid(e2)) || b > r {
                        continue;
                    }
                    expected_evaluations += 1;
                    let mut y = x.clone();
                    y.insert(sid(n2), eid(e2));
                    let ratio = (model.objective(&y) - base) / b as f64;
                    best = best.max(ratio);
                    if (n2, e2) == (n, e) {
                        picked = Some(ratio);
                    }
                }
            }
            if n == usize::MAX {
                assert_eq!(
                    best,
                    f64::NEG_INFINITY,
                    "case {case}: stopped while a pair fits"
                );
                break;
            }
            let picked = picked.expect("the pick fits and is new");
            assert!(
                picked >= best - 1e-12,
                "case {case} step {step}: picked density {picked} < best {best}"
            );
            x.insert(sid(n), eid(e));
        }
        assert_eq!(out.placement, x);
        assert!(model.is_feasible(&x));
        assert_eq!(out.evaluations, expected_evaluations, "case {case}");
    }
}

/// Algorithm 1 as a plain scan (the implementation before incremental gains): every
/// fitting pair's gain recomputed at every step, the argmax by strict `>` in server-major
/// order.
fn plain_greedy_trace(model: &LatencyModel) -> (Outcome, Vec<(usize, usize)>) {
    let experts = model.experts();
    let mut inc = IncrementalObjective::new(model, model.empty_placement());
    let mut remaining = capacities(model);
    let mut evaluations = 0u64;
    let mut picks = Vec::new();
    loop {
        let mut best: Option<(f64, usize, usize)> = None;
        for (n, &room) in remaining.iter().enumerate() {
            for e in 0..experts {
                let bytes = model.expert_bytes(eid(e));
                if bytes > room || inc.placement().contains(sid(n), eid(e)) {
                    continue;
                }
                let ratio = density(inc.gain(sid(n), eid(e)), bytes);
                evaluations += 1;
                if best.is_none_or(|(r, _, _)| ratio > r) {
                    best = Some((ratio, n, e));
                }
            }
        }
        let Some((_, n, e)) = best else { break };
        inc.insert(sid(n), eid(e));
        remaining[n] -= model.expert_bytes(eid(e));
        picks.push((n, e));
    }
    let outcome = Outcome {
        placement: inc.into_placement(),
        evaluations,
    };
    (outcome, picks)
}

#[test]
fn greedy_picks_equal_the_plain_scan_on_preset_and_random_instances() {
    // Bit-identical cached gains and the scan's tie rule give the same picks in the same
    // order, and the same count of consulted gains, on every tiny and small preset seed
    // below 2000 and on random instances with Top-3 models and slow remote servers.
    let mut rng = ChaCha8Rng::seed_from_u64(15);
    let presets = [Preset::Tiny, Preset::Small].into_iter().flat_map(|p| {
        (0..2000).map(move |seed| {
            (
                format!("{} seed {seed}", p.name()),
                generate(&GeneratorConfig::preset(p), seed),
            )
        })
    });
    let random = (0..40).map(|case| (format!("random {case}"), random_instance(&mut rng, 3)));
    let (mut instances, mut co_activated) = (0, 0);
    for (what, inst) in presets.chain(random) {
        instances += 1;
        let model = compile(&inst);
        let (out, picks) = greedy_trace(&model);
        let (reference, reference_picks) = plain_greedy_trace(&model);
        assert!(!reference_picks.is_empty(), "{what}: nothing fits");
        assert_eq!(picks, reference_picks, "{what}");
        assert_eq!(out, reference, "{what}");
        if model.demands().iter().any(|d| d.missing.len() > 1) {
            co_activated += 1;
        }
    }
    // Top-K > 1 demands (a pick re-evaluates other experts' gains) are well represented.
    assert!(
        2 * co_activated >= instances,
        "only {co_activated} of {instances} instances have Top-K > 1 demands"
    );
}

#[test]
fn lazy_greedy_reproduces_greedy_on_top1_instances_with_fewer_evaluations() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut strictly_fewer = 0;
    for case in 0..60 {
        let inst = random_instance_in(&mut rng, 1, true);
        assert!(inst.models.iter().all(|m| m.top_k == 1));
        let model = compile(&inst);
        // The submodular regime (module doc): every remote round trip beats the cloud.
        for d in model.demands() {
            let c = model.costs(d.model, d.server);
            for n in (0..model.servers()).filter(|&n| n != d.server.index()) {
                assert!(c.edge_visit[n] + c.edge_return[n] <= model.cloud_latency(d));
            }
        }
        let (plain, plain_picks) = greedy_trace(&model);
        let (lazy, lazy_picks) = lazy_greedy_trace(&model);
        assert_eq!(lazy_picks, plain_picks, "case {case}");
        assert_eq!(lazy.placement, plain.placement, "case {case}");
        assert!(lazy.evaluations <= plain.evaluations, "case {case}");
        if lazy.evaluations < plain.evaluations {
            strictly_fewer += 1;
        }
    }
    assert!(
        strictly_fewer > 0,
        "the lazy greedy never saved an evaluation"
    );
}

// ---------- knapsack solvers ----------

/// Brute force over all subsets.
fn knapsack_brute(values: &[f64], sizes: &[u64], capacity: u64) -> f64 {
    let mut best = 0.0f64;
    for mask in 0u32..1 << values.len() {
        let (mut v, mut b) = (0.0, 0u64);
        for i in 0..values.len() {
            if mask >> i & 1 == 1 {
                v += values[i];
                b += sizes[i];
            }
        }
        if b <= capacity {
            best = best.max(v);
        }
    }
    best
}

/// The returned set is feasible, has no non-positive item and sums to the returned value.
fn assert_consistent(values: &[f64], sizes: &[u64], capacity: u64, out: &(f64, Vec<usize>)) {
    let (v, chosen) = out;
    assert!(
        chosen.windows(2).all(|w| w[0] < w[1]),
        "ascending, distinct"
    );
    let bytes: u128 = chosen.iter().map(|&i| u128::from(sizes[i])).sum();
    assert!(bytes <= u128::from(capacity));
    assert!(chosen.iter().all(|&i| values[i] > 0.0));
    let sum: f64 = chosen.iter().map(|&i| values[i]).sum();
    assert!(close(sum, *v), "sum {sum} vs value {v}");
}

#[test]
fn knapsack_dp_matches_brute_force() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for case in 0..400 {
        let n = rng.random_range(0..=12);
        let integral = case % 2 == 0;
        let values: Vec<f64> = (0..n)
            .map(|_| {
                if integral {
                    rng.random_range(-2..=6) as f64
                } else {
                    rng.random_range(-0.5..1.0)
                }
            })
            .collect();
        let sizes: Vec<u64> = (0..n).map(|_| rng.random_range(0..=20)).collect();
        let capacity = rng.random_range(0..=60);
        for out in [
            knapsack_dp(&values, &sizes, capacity),
            knapsack_maxconv(&values, &sizes, capacity),
        ] {
            let out = out.expect("small knapsack");
            assert_consistent(&values, &sizes, capacity, &out);
            let brute = knapsack_brute(&values, &sizes, capacity);
            assert!(
                close(out.0, brute),
                "case {case}: {} vs brute {brute}",
                out.0
            );
        }
    }
}

#[test]
fn knapsack_maxconv_matches_dp_on_few_size_classes() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let palette = [3u64, 4, 6, 9, 10, 25];
    for case in 0..300 {
        let classes: Vec<u64> = (0..rng.random_range(1..=4))
            .map(|_| palette[rng.random_range(0..palette.len())] * 7)
            .collect();
        let n = rng.random_range(1..=40);
        let integral = case % 2 == 0;
        let values: Vec<f64> = (0..n)
            .map(|_| {
                if integral {
                    rng.random_range(0..=5) as f64
                } else {
                    rng.random_range(0.0..1.0)
                }
            })
            .collect();
        let sizes: Vec<u64> = (0..n)
            .map(|_| classes[rng.random_range(0..classes.len())])
            .collect();
        let capacity = rng.random_range(0..=1200);
        let dp = knapsack_dp(&values, &sizes, capacity).expect("small");
        let mc = knapsack_maxconv(&values, &sizes, capacity).expect("small");
        assert_consistent(&values, &sizes, capacity, &dp);
        assert_consistent(&values, &sizes, capacity, &mc);
        assert!(
            close(dp.0, mc.0),
            "case {case}: dp {} maxconv {}",
            dp.0,
            mc.0
        );
    }
}

#[test]
fn knapsack_handles_huge_sizes_without_overflow() {
    // Three items of 2^63 - 1 bytes, capacity 2^64 - 1: exactly two fit; the best two are
    // items 0 and 2.
    let sizes = [u64::MAX / 2; 3];
    let values = [3.0, 1.0, 2.0];
    for out in [
        knapsack_dp(&values, &sizes, u64::MAX),
        knapsack_maxconv(&values, &sizes, u64::MAX),
    ] {
        assert_eq!(out.expect("3 capacity units"), (5.0, vec![0, 2]));
    }
    // All items fit: no table at all, whatever the capacity.
    let out = knapsack_dp(&[1.0, 2.0], &[1_000_000_007, 1_000_000_009], u64::MAX);
    assert_eq!(out.expect("all fit"), (3.0, vec![0, 1]));
}

#[test]
fn knapsack_refuses_tables_above_the_limit() {
    // Coprime sizes (gcd 1) that do not fit together: 1.5e9 capacity units.
    let sizes = [1_000_000_007, 1_000_000_009];
    for out in [
        knapsack_dp(&[1.0, 1.0], &sizes, 1_500_000_000),
        knapsack_maxconv(&[1.0, 1.0], &sizes, 1_500_000_000),
    ] {
        match out {
            Err(Error::TooLarge(msg)) => assert!(msg.contains("round expert sizes"), "{msg}"),
            other => panic!("expected TooLarge, got {other:?}"),
        }
    }
}

/// The plain (max, +) convolution, O(len x z.len()).
fn maxplus_slow(y: &[f64], z: &[f64]) -> Vec<f64> {
    (0..y.len())
        .map(|t| {
            (0..z.len().min(t + 1))
                .map(|j| y[t - j] + z[j])
                .fold(f64::NEG_INFINITY, f64::max)
        })
        .collect()
}

#[test]
fn concave_maxplus_matches_the_plain_convolution() {
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    for case in 0..2000 {
        let integral = case % 2 == 0;
        let draw = |rng: &mut ChaCha8Rng| {
            if integral {
                rng.random_range(0..=4) as f64
            } else {
                rng.random_range(0.0..1.0)
            }
        };
        let len = rng.random_range(1..=40);
        let y: Vec<f64> = (0..len).map(|_| draw(&mut rng)).collect();
        let mut gains: Vec<f64> = (0..rng.random_range(0..=15))
            .map(|_| draw(&mut rng))
            .collect();
        gains.sort_by(|a, b| b.total_cmp(a));
        let mut z = vec![0.0];
        for g in gains {
            z.push(z[z.len() - 1] + g);
        }
        let (fast, arg) = concave_maxplus(&y, &z);
        let slow = maxplus_slow(&y, &z);
        for t in 0..len {
            assert!(close(fast[t], slow[t]), "case {case} t {t}");
            assert!(arg[t] < z.len() && arg[t] <= t);
            assert_eq!(fast[t], y[t - arg[t]] + z[arg[t]]);
        }
    }
}

// ---------- Algs. 2 and 3 ----------

/// The textbook O(items x bytes) knapsack DP over raw bytes (no gcd, no pruning).
fn knapsack_textbook(values: &[f64], sizes: &[u64], capacity: u64) -> f64 {
    let cap = capacity as usize;
    let mut dp = vec![0.0f64; cap + 1];
    for (&v, &b) in values.iter().zip(sizes) {
        let b = b as usize;
        for q in (b..=cap).rev() {
            dp[q] = dp[q].max(dp[q - b] + v);
        }
    }
    dp[cap]
}

#[test]
fn successive_algorithms_solve_each_p3_exactly() {
    // Oracle: item values F(X_{<n} + (n, e)) - F(X_{<n}) from full evaluations, solved by
    // the textbook DP, with X_{<n} the algorithm's own choices on the earlier servers.
    let mut rng = ChaCha8Rng::seed_from_u64(21);
    for case in 0..40 {
        let model = compile(&random_instance(&mut rng, 3));
        let sizes: Vec<u64> = (0..model.experts())
            .map(|e| model.expert_bytes(eid(e)))
            .collect();
        for out in [successive_dp(&model), successive_maxconv(&model)] {
            let out = out.expect("small instance");
            assert!(model.is_feasible(&out.placement));
            assert_eq!(out.subproblem_values.len(), model.servers());
            assert_eq!(out.evaluations, (model.servers() * model.experts()) as u64);
            let mut fixed = model.empty_placement();
            for n in 0..model.servers() {
                let base = model.objective(&fixed);
                let values: Vec<f64> = (0..model.experts())
                    .map(|e| {
                        let mut y = fixed.clone();
                        y.insert(sid(n), eid(e));
                        model.objective(&y) - base
                    })
                    .collect();
                let optimum = knapsack_textbook(&values, &sizes, model.capacity(sid(n)));
                assert!(
                    close(out.subproblem_values[n], optimum),
                    "case {case} server {n}: {} vs {optimum}",
                    out.subproblem_values[n]
                );
                let chosen: f64 = out
                    .placement
                    .experts_on(sid(n))
                    .map(|e| values[e.index()])
                    .sum();
                assert!(close(chosen, optimum), "case {case} server {n}");
                for e in out.placement.experts_on(sid(n)) {
                    fixed.insert(sid(n), e);
                }
            }
            assert_eq!(fixed, out.placement);
        }
    }
}

#[test]
fn maxconv_agrees_with_dp_per_server() {
    let mut rng = ChaCha8Rng::seed_from_u64(31);
    let mut same = 0;
    for case in 0..60 {
        let model = compile(&random_instance(&mut rng, 3));
        let dp = successive_dp(&model).expect("small");
        let mc = successive_maxconv(&model).expect("small");
        // Server 0 sees the same (empty) X_{<0} in both.
        assert!(
            close(dp.subproblem_values[0], mc.subproblem_values[0]),
            "case {case}"
        );
        if dp.placement == mc.placement {
            same += 1;
            for (a, b) in dp.subproblem_values.iter().zip(&mc.subproblem_values) {
                assert!(close(*a, *b), "case {case}");
            }
        }
    }
    assert!(same > 0);
}

// ---------- exhaustive ----------

#[test]
fn exhaustive_matches_enumeration_of_all_pairs() {
    // Independent brute force over every (server, expert) pair (no relevance pruning).
    let mut rng = ChaCha8Rng::seed_from_u64(41);
    let mut checked = 0;
    while checked < 15 {
        let model = compile(&random_instance(&mut rng, 3));
        let (servers, experts) = (model.servers(), model.experts());
        if servers * experts > 14 {
            continue;
        }
        checked += 1;
        let mut best = f64::NEG_INFINITY;
        for mask in 0u32..1 << (servers * experts) {
            let mut x = model.empty_placement();
            for k in 0..servers * experts {
                if mask >> k & 1 == 1 {
                    x.insert(sid(k / experts), eid(k % experts));
                }
            }
            if model.is_feasible(&x) {
                best = best.max(model.objective(&x));
            }
        }
        let (x, f) = exhaustive(&model).expect("small");
        assert!(model.is_feasible(&x));
        assert_eq!(f, model.objective(&x));
        assert!(close(f, best), "exhaustive {f} vs brute {best}");
    }
}

#[test]
fn one_server_top1_successive_dp_is_optimal() {
    // With one server and Top-1 models F is modular (each demand's gain is
    // w (G_cloud - G_local) whatever else is cached), so the knapsack of Alg. 2 is P1
    // itself (Remark 2) and must reach the exhaustive optimum.
    let mut rng = ChaCha8Rng::seed_from_u64(51);
    let mut checked = 0;
    while checked < 20 {
        let mut inst = random_instance(&mut rng, 1);
        inst.servers.truncate(1);
        inst.backhaul.edge_to_edge = vec![vec![None]];
        inst.backhaul.edge_to_cloud.truncate(1);
        inst.backhaul.cloud_to_edge.truncate(1);
        for u in &mut inst.users {
            u.uplink.truncate(1);
            u.downlink.truncate(1);
            u.associated_server = None;
        }
        let model = compile(&inst);
        let Ok((_, best)) = exhaustive(&model) else {
            continue;
        };
        checked += 1;
        let s = successive_dp(&model).expect("small");
        assert!(close(model.objective(&s.placement), best));
        assert!(close(s.subproblem_values[0], best));
    }
}

#[test]
fn exhaustive_refuses_above_the_limit() {
    // 3 servers x 8 requested experts = 24 relevant pairs > 22.
    let sets: Vec<serde_json::Value> = (0..8)
        .map(|i| json!({ "experts": [i], "p": 0.125 }))
        .collect();
    let inst = json_instance(
        &[10, 10, 10],
        json!([top1_model("A", 1, 8, 10)]),
        json!([{ "associated_server": 0, "requests": [ { "model": 0, "p": 1.0 } ],
                 "activations": [ { "model": 0, "layer": 0, "sets": sets } ] }]),
    );
    match exhaustive(&compile(&inst)) {
        Err(Error::TooLarge(msg)) => assert!(msg.contains("24") && msg.contains("22"), "{msg}"),
        other => panic!("expected TooLarge, got {other:?}"),
    }
}

// ---------- baselines ----------

#[test]
fn lfu_ranks_by_local_then_global_frequency() {
    // Server 0's user: experts 0..3 with p 0.1, 0.2, 0.3, 0.4; server 1's user: expert 1
    // with 0.6, expert 0 with 0.4; server 2 has no user, so it ranks by the global weight
    // (0.5, 0.8, 0.3, 0.4)/2: experts 1, 0, 3, 2. Capacities 20, 20 and 30 bytes, experts of
    // 10 bytes.
    let inst = json_instance(
        &[20, 20, 30],
        json!([top1_model("A", 1, 4, 10)]),
        json!([
            { "associated_server": 0, "requests": [ { "model": 0, "p": 1.0 } ],
              "activations": [ { "model": 0, "layer": 0, "sets": [
                  { "experts": [0], "p": 0.1 }, { "experts": [1], "p": 0.2 },
                  { "experts": [2], "p": 0.3 }, { "experts": [3], "p": 0.4 } ] } ] },
            { "associated_server": 1, "requests": [ { "model": 0, "p": 1.0 } ],
              "activations": [ { "model": 0, "layer": 0, "sets": [
                  { "experts": [1], "p": 0.6 }, { "experts": [0], "p": 0.4 } ] } ] }
        ]),
    );
    let x = lfu(&compile(&inst));
    assert_eq!(cached(&x, 0), vec![2, 3]);
    assert_eq!(cached(&x, 1), vec![0, 1]);
    assert_eq!(cached(&x, 2), vec![0, 1, 3]);
}

#[test]
fn u_shaped_caches_whole_layers_middle_first_on_ties() {
    // Model A: 4 layers of one 10-byte expert (ids 0..4), requested by server 0's user with
    // equal weight on every layer; model B: 1 layer of one expert (id 4), requested by
    // server 1's user; model C: 1 layer of two 10-byte experts (ids 5, 6), never requested.
    // Capacity 10: server 0 takes a middle layer of A, the lower of l1 and l2 (|2l - 3| = 1),
    // i.e. expert 1; server 1 takes B. C's 20-byte layer never fits.
    let layers = |n: u32| -> Vec<serde_json::Value> {
        (0..n)
            .map(|l| json!({ "model": 0, "layer": l, "sets": [ { "experts": [0], "p": 1.0 } ] }))
            .collect()
    };
    let inst = json_instance(
        &[10, 10],
        json!([
            top1_model("A", 4, 1, 10),
            top1_model("B", 1, 1, 10),
            top1_model("C", 1, 2, 10)
        ]),
        json!([
            { "associated_server": 0, "requests": [ { "model": 0, "p": 1.0 } ],
              "activations": layers(4) },
            { "associated_server": 1, "requests": [ { "model": 1, "p": 1.0 } ],
              "activations": [ { "model": 1, "layer": 0,
                                 "sets": [ { "experts": [0], "p": 1.0 } ] } ] }
        ]),
    );
    let x = u_shaped(&compile(&inst));
    assert_eq!(cached(&x, 0), vec![1]);
    assert_eq!(cached(&x, 1), vec![4]);
}

#[test]
fn baselines_are_feasible_and_fill_what_they_can() {
    let mut rng = ChaCha8Rng::seed_from_u64(61);
    for _ in 0..30 {
        let inst = random_instance(&mut rng, 3);
        let model = compile(&inst);
        assert_maximal(&model, &lfu(&model), "lfu");
        let r = random(&model, 5);
        assert_maximal(&model, &r, "random");
        assert_eq!(r, random(&model, 5), "random is deterministic per seed");
        // U-shaped: whole layers only, and no missing layer fits the room left.
        let x = u_shaped(&model);
        assert!(model.is_feasible(&x));
        let cat = model.catalogue();
        let room = room_left(&model, &x);
        for (n, &left) in room.iter().enumerate() {
            for m in 0..cat.models() {
                let m = ModelId(m as u32);
                for l in 0..cat.shape(m).0 {
                    let layer: Vec<ExpertId> = cat.layer_experts(m, LayerId(l)).collect();
                    let held = layer.iter().filter(|&&e| x.contains(sid(n), e)).count();
                    assert!(held == 0 || held == layer.len(), "partial layer");
                    let bytes: u64 = layer.iter().map(|&e| model.expert_bytes(e)).sum();
                    assert!(held > 0 || bytes > left, "a whole layer still fits");
                }
            }
        }
    }
}

#[test]
fn random_depends_on_the_seed() {
    // Server of 20 bytes, 4 experts of 10 bytes: 6 possible pairs; 20 seeds giving a single
    // placement would mean the seed is ignored.
    let inst = json_instance(
        &[20],
        json!([top1_model("A", 1, 4, 10)]),
        json!([{ "associated_server": 0, "requests": [ { "model": 0, "p": 1.0 } ],
                 "activations": [ { "model": 0, "layer": 0,
                                    "sets": [ { "experts": [0], "p": 1.0 } ] } ] }]),
    );
    let model = compile(&inst);
    let distinct: std::collections::BTreeSet<Vec<u32>> =
        (0..20).map(|s| cached(&random(&model, s), 0)).collect();
    assert!(distinct.len() > 1);
}
