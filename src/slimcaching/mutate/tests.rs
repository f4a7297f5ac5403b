use super::*;
use crate::slimcaching::generate::{generate, GeneratorConfig, Preset};
use formulations::slimcaching::{ExpertRef, LayerId, ModelId};
use rand::SeedableRng;
use verification::search::shrink;

/// Generated starting points: tiny seeds 0-4 and small seeds 0-2.
fn starts() -> Vec<Instance> {
    let tiny = GeneratorConfig::preset(Preset::Tiny);
    let small = GeneratorConfig::preset(Preset::Small);
    (0..5)
        .map(|s| generate(&tiny, s))
        .chain((0..3).map(|s| generate(&small, s)))
        .collect()
}

/// Every distribution's deviation from summing to 1, largest.
fn worst_sum_error(instance: &Instance) -> f64 {
    let mut worst: f64 = 0.0;
    for u in &instance.users {
        let s: f64 = u.requests.iter().map(|r| r.p).sum();
        worst = worst.max((s - 1.0).abs());
        for a in &u.activations {
            let s: f64 = a.sets.iter().map(|x| x.p).sum();
            worst = worst.max((s - 1.0).abs());
        }
    }
    worst
}

/// Whether some element of `a` differs from the one at its place in `b` by `differ`.
fn any_pair<T>(a: &[T], b: &[T], differ: impl Fn(&T, &T) -> bool) -> bool {
    a.iter().zip(b).any(|(x, y)| differ(x, y))
}

/// The kinds of numbers that differ between two instances of the same structure.
fn changed_kinds(a: &Instance, b: &Instance) -> Vec<&'static str> {
    let kinds = [
        (
            "storage",
            any_pair(&a.servers, &b.servers, |x, y| {
                x.storage_bytes != y.storage_bytes
            }),
        ),
        (
            "expert_bytes",
            any_pair(&a.models, &b.models, |x, y| {
                x.expert_bytes != y.expert_bytes
            }),
        ),
        (
            "model_cost",
            any_pair(&a.models, &b.models, |x, y| {
                x.hidden_bytes != y.hidden_bytes || x.expert_flops != y.expert_flops
            }),
        ),
        (
            "activation",
            any_pair(&a.users, &b.users, |x, y| {
                any_pair(&x.activations, &y.activations, |p, q| p.sets != q.sets)
            }),
        ),
        (
            "request",
            any_pair(&a.users, &b.users, |x, y| x.requests != y.requests),
        ),
        (
            "link",
            a.backhaul != b.backhaul
                || any_pair(&a.users, &b.users, |x, y| {
                    x.uplink != y.uplink || x.downlink != y.downlink
                }),
        ),
        (
            "compute",
            a.cloud != b.cloud
                || any_pair(&a.servers, &b.servers, |x, y| {
                    x.compute_flops != y.compute_flops
                })
                || any_pair(&a.users, &b.users, |x, y| {
                    x.compute_flops != y.compute_flops
                }),
        ),
    ];
    kinds
        .into_iter()
        .filter(|(_, changed)| *changed)
        .map(|(kind, _)| kind)
        .collect()
}

#[test]
fn perturbed_instances_stay_valid_with_exact_distributions() {
    for (k, start) in starts().into_iter().enumerate() {
        let mut rng = ChaCha8Rng::seed_from_u64(k as u64);
        let structure_before = size(&start).structure;
        let mut current = start;
        for step in 0..2000 {
            let next = perturb(&current, &mut rng);
            if let Err(e) = validate(&next) {
                panic!("start {k}, step {step}: {e:?}");
            }
            let err = worst_sum_error(&next);
            assert!(err <= 1e-12, "start {k}, step {step}: sum error {err}");
            assert_eq!(size(&next).structure, structure_before);
            let kinds = changed_kinds(&current, &next);
            assert!(kinds.len() <= 1, "start {k}, step {step}: {kinds:?}");
            if next.backhaul.symmetric {
                let b = &next.backhaul;
                for i in 0..b.edge_to_edge.len() {
                    assert_eq!(b.edge_to_cloud[i], b.cloud_to_edge[i]);
                    for j in 0..b.edge_to_edge.len() {
                        assert_eq!(b.edge_to_edge[i][j], b.edge_to_edge[j][i]);
                    }
                }
            }
            current = next;
        }
    }
}

#[test]
fn perturbation_uses_every_move() {
    let start = generate(&GeneratorConfig::preset(Preset::Small), 1);
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let mut seen = std::collections::BTreeMap::new();
    let mut changed = 0;
    for _ in 0..2000 {
        // Always from the start, so each step is one move away from it.
        let next = perturb(&start, &mut rng);
        let kinds = changed_kinds(&start, &next);
        changed += usize::from(!kinds.is_empty());
        for k in kinds {
            *seen.entry(k).or_insert(0) += 1;
        }
    }
    let expected = [
        "activation",
        "compute",
        "expert_bytes",
        "link",
        "model_cost",
        "request",
        "storage",
    ];
    assert_eq!(seen.keys().copied().collect::<Vec<_>>(), expected);
    // 7 kinds drawn uniformly: each gets about 2000 / 7 = 286 draws; b_m of 1-3 bytes often
    // rounds back to the same integer, so expert sizes change less often (152 here).
    for (k, n) in &seen {
        assert!(*n > 100, "{k}: {n}");
    }
    // Only integer moves on tiny values can round back to the same value.
    assert!(changed > 1700, "{changed} of 2000 changed the instance");
}

#[test]
fn perturbation_is_deterministic_given_the_rng() {
    let start = generate(&GeneratorConfig::preset(Preset::Tiny), 3);
    let walk = |seed: u64| {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut current = start.clone();
        let mut trace = Vec::new();
        for _ in 0..200 {
            current = perturb(&current, &mut rng);
            trace.push(current.clone());
        }
        trace
    };
    assert_eq!(walk(5), walk(5));
    assert_ne!(walk(5), walk(6));
}

#[test]
fn local_search_drives_a_score_down_through_valid_neighbours() {
    // Score: server 0's storage relative to the library's bytes; 300 steps halve it easily.
    let start = generate(&GeneratorConfig::preset(Preset::Tiny), 2);
    let score = |i: &Instance| {
        validate(i).expect("neighbours are valid");
        let library: u64 = i
            .models
            .iter()
            .map(|m| u64::from(m.layers * m.experts_per_layer) * m.expert_bytes)
            .sum();
        Some(i.servers[0].storage_bytes as f64 / library as f64)
    };
    let initial = score(&start).expect("scored");
    let out = verification::search::local_search(
        start,
        perturb,
        score,
        verification::search::SearchOptions {
            iterations: 300,
            seed: 11,
        },
    )
    .expect("the start has a score");
    assert!(out.score < initial / 2.0, "{} vs {initial}", out.score);
    assert!(out.improvements > 0);
}

/// Three servers (storage 1000, 2345, 300), three models (model 1 requested by nobody;
/// model 2 only with p = 0 by user 1, which lacks its activations), two users (user 0
/// associated with server 2).
fn handmade() -> Instance {
    let link = |r: f64| serde_json::json!({ "rate_bps": r });
    let json = serde_json::json!({
        "name": "handmade",
        "servers": [
            { "storage_bytes": 1000, "compute_flops": 8.258e13 },
            { "storage_bytes": 2345, "compute_flops": 8.258e13 },
            { "storage_bytes": 300, "compute_flops": 1.2345e13 }
        ],
        "cloud": { "compute_flops": 3.12e14 },
        "backhaul": {
            "symmetric": true,
            "edge_to_edge": [
                [null, link(1.0e8), link(2.0e8)],
                [link(1.0e8), null, link(3.33333e8)],
                [link(2.0e8), link(3.33333e8), null]
            ],
            "edge_to_cloud": [{ "latency_s": 0.01 }, { "latency_s": 0.01 },
                              { "latency_s": 0.0123 }],
            "cloud_to_edge": [{ "latency_s": 0.01 }, { "latency_s": 0.01 },
                              { "latency_s": 0.0123 }]
        },
        "models": [
            { "name": "a", "top_k": 1, "layers": 2, "experts_per_layer": 3,
              "expert_bytes": 50, "hidden_bytes": 1536, "expert_flops": 9.4e6 },
            { "name": "b", "top_k": 1, "layers": 1, "experts_per_layer": 2,
              "expert_bytes": 40, "hidden_bytes": 1536, "expert_flops": 9.4e6 },
            { "name": "c", "top_k": 2, "layers": 1, "experts_per_layer": 3,
              "expert_bytes": 30, "hidden_bytes": 1024, "expert_flops": 1e7 }
        ],
        "users": [
            { "compute_flops": 5e13, "associated_server": 2,
              "uplink": [link(1.6e7), link(1.7e7), link(1.8e7)],
              "downlink": [link(9e7), link(9.1e7), link(9.2e7)],
              "local_experts": [ { "model": 0, "layer": 1, "expert": 2 },
                                 { "model": 2, "layer": 0, "expert": 2 } ],
              "requests": [ { "model": 0, "p": 0.6 }, { "model": 2, "p": 0.4 } ],
              "activations": [
                { "model": 0, "layer": 0, "sets": [ { "experts": [0], "p": 0.7 },
                                                     { "experts": [2], "p": 0.3 } ] },
                { "model": 0, "layer": 1, "sets": [ { "experts": [1], "p": 1.0 } ] },
                { "model": 2, "layer": 0, "sets": [ { "experts": [0, 2], "p": 0.5 },
                                                     { "experts": [1, 2], "p": 0.5 } ] }
              ] },
            { "compute_flops": 5e13, "associated_server": 1,
              "uplink": [link(1.6e7), link(1.7e7), link(1.8e7)],
              "downlink": [link(9e7), link(9.1e7), link(9.2e7)],
              "requests": [ { "model": 0, "p": 1.0 }, { "model": 2, "p": 0.0 } ],
              "activations": [
                { "model": 0, "layer": 0, "sets": [ { "experts": [1], "p": 1.0 } ] },
                { "model": 0, "layer": 1, "sets": [ { "experts": [0], "p": 0.25 },
                                                     { "experts": [2], "p": 0.75 } ] }
              ] }
        ]
    });
    let instance: Instance = serde_json::from_value(json).expect("handmade instance");
    validate(&instance).expect("handmade instance is valid");
    instance
}

#[test]
fn perturbation_never_gives_mass_to_a_model_without_activations() {
    // User 1 requests model 2 with p = 0 and has no distributions for it.
    let start = handmade();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut current = start;
    let mut moved = false;
    for _ in 0..3000 {
        current = perturb(&current, &mut rng);
        assert!(validate(&current).is_ok());
        assert_eq!(current.users[1].requests[1].p, 0.0);
        moved |= current.users[0].requests[0].p != 0.6;
    }
    assert!(moved, "user 0's requests were never perturbed");
}

#[test]
fn candidates_are_valid_and_strictly_smaller() {
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let mut instances = starts();
    instances.push(handmade());
    // Perturbed ones too (zero probabilities, odd sizes).
    let perturbed: Vec<Instance> = instances
        .iter()
        .map(|i| (0..300).fold(i.clone(), |c, _| perturb(&c, &mut rng)))
        .collect();
    instances.extend(perturbed);
    for (k, instance) in instances.iter().enumerate() {
        let before = size(instance);
        let raw = raw_candidates(instance);
        assert!(!raw.is_empty());
        for (c, candidate) in raw.iter().enumerate() {
            if let Err(e) = validate(candidate) {
                panic!("instance {k}, candidate {c}: {e:?}");
            }
            let after = size(candidate);
            assert!(
                after < before,
                "instance {k}, candidate {c}: {after:?} >= {before:?}"
            );
        }
        // The safety filter removes nothing; the order is by size.
        let sorted = shrink_candidates(instance);
        assert_eq!(sorted.len(), raw.len());
        assert!(sorted.windows(2).all(|w| size(&w[0]) <= size(&w[1])));
    }
}

#[test]
fn small_instances_get_every_candidate_and_large_ones_a_capped_list() {
    for instance in starts() {
        assert!(raw_candidates(&instance).len() < max_candidates(&instance));
    }
    let mut config = GeneratorConfig::preset(Preset::Paper);
    config.activations.tokens_per_layer = 64;
    let paper = generate(&config, 0);
    let cap = max_candidates(&paper);
    assert!((16..200).contains(&cap), "cap {cap}");
    let candidates = shrink_candidates(&paper);
    assert_eq!(candidates.len(), cap);
    let before = size(&paper);
    for c in &candidates {
        assert!(validate(c).is_ok());
        assert!(size(c) < before);
    }
    // The list starts with the structural drops: servers first in move order.
    assert_eq!(
        raw_candidates(&paper)[0].servers.len(),
        paper.servers.len() - 1
    );
}

#[test]
fn candidates_are_deterministic() {
    for instance in starts().iter().take(3).chain([&handmade()]) {
        assert_eq!(shrink_candidates(instance), shrink_candidates(instance));
        assert_eq!(
            shrink_candidates(instance),
            shrink_candidates(&instance.clone())
        );
    }
}

fn requests_model_0(i: &Instance) -> bool {
    i.users.len() >= 2
        && i.users.iter().any(|u| {
            u.requests
                .iter()
                .any(|r| r.model == ModelId(0) && r.p > 0.0)
        })
}

#[test]
fn shrinking_reaches_a_minimal_instance() {
    let mut shrunk = 0;
    for start in starts().into_iter().chain([handmade()]) {
        if !requests_model_0(&start) {
            continue;
        }
        shrunk += 1;
        let out = shrink(start.clone(), shrink_candidates, requests_model_0, 10_000);
        let r = &out.instance;
        assert!(out.steps > 0 && out.steps < 10_000);
        assert!(validate(r).is_ok());
        assert!(requests_model_0(r));
        assert!(size(r) < size(&start));
        // Minimal: no candidate still satisfies the predicate.
        assert!(shrink_candidates(r).iter().all(|c| !requests_model_0(c)));
        // What that means here.
        assert_eq!(r.servers.len(), 1, "{}", r.name);
        assert_eq!(r.users.len(), 2);
        assert_eq!(size(r).non_round, 0);
        for m in &r.models {
            assert_eq!(m.layers, 1);
        }
        for u in &r.users {
            assert_eq!(u.requests.len(), 1);
            assert_eq!(u.requests[0].p, 1.0);
            assert!(u.local_experts.is_empty());
            for a in &u.activations {
                assert_eq!(a.sets.len(), 1);
            }
        }
    }
    assert!(shrunk >= 5, "only {shrunk} starts satisfy the predicate");
}

#[test]
fn dropping_a_server_reindexes_links_and_associations() {
    let i = handmade();
    // Drop server 1: user 0 (server 2) -> 1, user 1 (server 1) -> None.
    let c = drop_server(&i, 1).expect("3 servers");
    assert!(validate(&c).is_ok());
    assert_eq!(c.servers.len(), 2);
    assert_eq!(c.servers[1].storage_bytes, 300);
    assert_eq!(c.users[0].associated_server, Some(ServerId(1)));
    assert_eq!(c.users[1].associated_server, None);
    assert_eq!(c.backhaul.edge_to_edge[0][1], i.backhaul.edge_to_edge[0][2]);
    assert_eq!(c.backhaul.edge_to_cloud[1].latency_s, 0.0123);
    assert_eq!(c.users[0].uplink[1], i.users[0].uplink[2]);
    assert_eq!(c.users[1].downlink[1], i.users[1].downlink[2]);
    // Down to one server, then no more.
    let one = drop_server(&c, 0).expect("2 servers");
    assert_eq!(one.backhaul.edge_to_edge, vec![vec![None]]);
    assert!(drop_server(&one, 0).is_none());
}

#[test]
fn dropping_models_layers_and_experts_renumbers() {
    let i = handmade();
    // Model 0 and 2 are requested with p > 0; model 1 by nobody.
    assert!(drop_model(&i, 0).is_none());
    assert!(drop_model(&i, 2).is_none());
    let c = drop_model(&i, 1).expect("model 1 is unrequested");
    assert!(validate(&c).is_ok());
    assert_eq!(c.models.len(), 2);
    assert_eq!(c.models[1].name, "c");
    assert_eq!(c.users[0].requests[1].model, ModelId(1));
    assert_eq!(c.users[0].activations[2].model, ModelId(1));
    assert_eq!(c.users[0].local_experts[1].model, ModelId(1));
    // Dropping layer 0 of model 0 shifts layer 1 down and keeps its local expert.
    let c = drop_layer(&i, 0, 0).expect("2 layers");
    assert!(validate(&c).is_ok());
    assert_eq!(c.models[0].layers, 1);
    assert_eq!(c.users[1].activations.len(), 1);
    assert_eq!(c.users[1].activations[0].layer, LayerId(0));
    assert_eq!(
        c.users[0].local_experts[0],
        ExpertRef {
            model: ModelId(0),
            layer: LayerId(0),
            expert: 2
        }
    );
    // Expert 0 of model 0: user 1's layer-1 set {0} goes (0.75 on {2} -> 1), {2} -> {1};
    // user 0's layer-0 {0} goes too. The local expert (0, 1, 2) becomes (0, 1, 1).
    let c = drop_expert(&i, 0, 0).expect("E = 3 > K = 1");
    assert!(validate(&c).is_ok());
    assert_eq!(c.models[0].experts_per_layer, 2);
    let sets = &c.users[1].activations[1].sets;
    assert_eq!(sets.len(), 1);
    assert_eq!((sets[0].experts.clone(), sets[0].p), (vec![1], 1.0));
    assert_eq!(c.users[0].local_experts[0].expert, 1);
    // Expert 1 of model 0 is user 1's only layer-0 set: no candidate.
    assert!(drop_expert(&i, 0, 1).is_none());
    // Model 1 has E = 2 > K = 1 and no sets at all.
    assert!(drop_expert(&i, 1, 0).is_some());
}

#[test]
fn dropping_requests_and_sets_renormalises() {
    let i = handmade();
    let c = drop_request(&i, 0, 1).expect("2 requests");
    assert!(validate(&c).is_ok());
    assert_eq!(c.users[0].requests.len(), 1);
    assert_eq!(c.users[0].requests[0].p, 1.0);
    assert!(c.users[0].activations.iter().all(|a| a.model == ModelId(0)));
    // User 1's only positive request cannot go (the rest has no mass).
    assert!(drop_request(&i, 1, 0).is_none());
    let c = drop_set(&i, 0, 0, 0).expect("2 sets");
    assert_eq!(c.users[0].activations[0].sets[0].p, 1.0);
    assert!(drop_set(&i, 0, 1, 0).is_none());
}

#[test]
fn rounding_keeps_two_significant_digits() {
    assert_eq!(round_integer(99), 99);
    assert_eq!(round_integer(2345), 2300);
    assert_eq!(round_integer(2350), 2400);
    assert_eq!(round_integer(996), 1000);
    assert_eq!(round_integer(5_000_000_000), 5_000_000_000);
    assert_eq!(round_integer(u64::MAX), 18_000_000_000_000_000_000);
    let mut third = vec![1.0 / 3.0; 3];
    round_distribution(&mut third);
    assert_eq!(third, vec![0.34, 0.33, 0.33]);
    // 0 stays 0; 0.004 rounds to 0 with its hundredth going to a larger remainder.
    let mut ps = vec![0.0, 0.004, 0.5, 0.496];
    round_distribution(&mut ps);
    assert_eq!(ps, vec![0.0, 0.0, 0.5, 0.5]);
    let mut round = vec![0.29, 0.71];
    round_distribution(&mut round);
    assert_eq!(round, vec![0.29, 0.71]);
}

#[test]
fn rounding_candidates_round_groups_and_keep_symmetry() {
    let i = handmade();
    let candidates = shrink_candidates(&i);
    let all = candidates
        .iter()
        .find(|c| size(c).structure == size(&i).structure && size(c).non_round == 0)
        .expect("a round-everything candidate");
    assert_eq!(all.servers[1].storage_bytes, 2300);
    assert_eq!(all.servers[2].compute_flops, 1.2e13);
    let r12 = all.backhaul.edge_to_edge[1][2].expect("link");
    assert_eq!(r12.rate_bps, Some(3.3e8));
    assert_eq!(all.backhaul.edge_to_edge[2][1], Some(r12));
    assert_eq!(all.backhaul.edge_to_cloud[2].latency_s, 0.012);
    assert_eq!(all.backhaul.cloud_to_edge[2].latency_s, 0.012);
    assert_eq!(all.models[0].hidden_bytes, 1500);
    // Rounding candidates come after every structural one.
    let first_round = candidates
        .iter()
        .position(|c| size(c).structure == size(&i).structure)
        .expect("rounding candidates");
    assert!(candidates[first_round..]
        .iter()
        .all(|c| size(c).structure == size(&i).structure));
    assert_eq!(candidates[first_round], *all);
}
