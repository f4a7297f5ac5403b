//! Tests of Prism's placement pipeline, and the small instances other modules' tests build on.

use super::*;
use formulations::prism::validate::validate;
use formulations::prism::{Gpu, MoeModel, Server};
use formulations::ProblemKind;

/// An instance with 1-byte experts (every layer), K = 1, `gpus[n]` = GPU memories of
/// server n, `freq[n][l]` its rows, GPUs loading at 8 bit/s (1 s per expert).
pub(crate) fn instance(gpus: &[&[u64]], freq: Vec<Vec<Vec<f64>>>) -> Instance {
    let layers = freq[0].len();
    let experts = freq[0][0].len();
    let inst = Instance {
        problem: ProblemKind::Prism,
        name: "hand".into(),
        model: MoeModel {
            name: "m".into(),
            layers: layers as u32,
            experts_per_layer: experts as u32,
            top_k: 1,
            expert_bytes: vec![1; layers],
            hidden_bytes: 1,
        },
        servers: gpus
            .iter()
            .zip(freq)
            .map(|(mem, f)| Server {
                name: String::new(),
                gpus: mem
                    .iter()
                    .map(|&m| Gpu {
                        memory_bytes: m,
                        compute_base_s: 0.0,
                        compute_per_token_s: 0.0,
                        io_bps: Some(8.0),
                    })
                    .collect(),
                frequencies: f,
            })
            .collect(),
        network: None,
        workload: None,
    };
    validate(&inst).expect("hand-made instances are valid");
    inst
}

pub(crate) fn r(layer: u32, expert: u32) -> ExpertRef {
    ExpertRef { layer, expert }
}

/// Two servers, L = 2, E = 4, 1-byte experts. Server 0 (one 4-byte GPU): layer 0 =
/// [1, 0, 0, 0] (entropy 0), layer 1 uniform (2 bits). Server 1 (two 2-byte GPUs): both
/// layers [0.5, 0.5, 0, 0] (1 bit each). (Also the hand example of `claims`' Thm. 1 tests.)
pub(crate) fn two_servers() -> Instance {
    let uniform = vec![0.25; 4];
    let half = vec![0.5, 0.5, 0.0, 0.0];
    instance(
        &[&[4], &[2, 2]],
        vec![
            vec![vec![1.0, 0.0, 0.0, 0.0], uniform],
            vec![half.clone(), half],
        ],
    )
}

#[test]
fn entropy_in_bits() {
    assert_eq!(entropy_bits(&[0.25; 4]), 2.0);
    assert_eq!(entropy_bits(&[1.0, 0.0]), 0.0);
    assert_eq!(entropy_bits(&[0.0, 0.0]), 0.0);
    // Rows summing to K = 2 are normalised first: [1, 1] is 1 bit.
    assert_eq!(entropy_bits(&[1.0, 1.0]), 1.0);
}

#[test]
fn alg1_by_hand() {
    // Step 1: server 0 shares 0/2 and 2/2 of 4 slots -> [0, 4]; server 1 shares 1/2, 1/2
    // of 4 -> [2, 2]. Totals [2, 6]. Step 2, layer 0 (2 < 4), servers by memory (4, 4:
    // index order): n = 0, l' = 1 (6 > 4), N_{0,1} = 4 > 0 -> s0 [1, 3], totals [3, 5];
    // n = 1, l' = 1 (5 > 4) -> s1 [3, 1], totals [4, 4]: break. Layer 1 has 4: done.
    let a = alg1_counts(&two_servers()).unwrap();
    assert_eq!(a.entropy, vec![vec![0.0, 2.0], vec![1.0, 1.0]]);
    assert_eq!(a.initial, vec![vec![0, 4], vec![2, 2]]);
    assert_eq!(a.counts, vec![vec![1, 3], vec![3, 1]]);
    assert_eq!(a.moves, 2);
}

#[test]
fn alg1_fails_when_memory_cannot_cover() {
    // One 3-byte server, L = 2, E = 2: 3 slots < L E = 4. Step 1: [1, 1] (share 1/2 each,
    // floor 1.5); layer 0 has 1 < 2 and the argmax total is 1 <= E: nothing to borrow.
    let inst = instance(&[&[3]], vec![vec![vec![0.5, 0.5], vec![0.5, 0.5]]]);
    let e = alg1_counts(&inst).unwrap_err();
    assert!(
        matches!(
            e,
            AlgorithmError::Coverage {
                layer: 0,
                total: 1,
                capacity: 2,
                needed: 4,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn alg2_by_hand() {
    // Counts s0 [1, 3], s1 [3, 1] (alg1_by_hand). Lines 1-3: s0 layer 0 = top-1 of
    // [1,0,0,0] = {0}, layer 1 = top-3 of uniform = {0, 1, 2}; s1 layer 0 = {0, 1, 2}
    // (ties to lower index), layer 1 = {0}.
    // Layer 0: holders e0 x2, e1, e2, e3 x0 -> U = {3}. Duplicates: s0 1 (e0), s1 1 (e0);
    // ascending, ties by index: s0 first; e = 3, e_rep = e0 (its only duplicate) -> s0
    // layer 0 = {3}. Layer 1: e0 x2, e3 x0 -> U = {3}; s0 first again, e_rep = e0 (the only
    // duplicate; f = 0.25 like e1, e2 but those are sole holders) -> s0 layer 1 = {3, 1, 2}.
    let inst = two_servers();
    let a = alg2_assign(&inst, &[vec![1, 3], vec![3, 1]], RepairOrder::default());
    assert_eq!(
        a.sets,
        vec![vec![vec![3], vec![3, 1, 2]], vec![vec![0, 1, 2], vec![0]]]
    );
    assert_eq!(
        a.repairs,
        vec![
            Repair {
                server: 0,
                layer: 0,
                added: 3,
                removed: 0
            },
            Repair {
                server: 0,
                layer: 1,
                added: 3,
                removed: 0
            },
        ]
    );
    // U_0 = 0 (e3 has f 0) + 0.75 = 0.75; U_1 = 1 + 0.5 = 1.5.
    assert_eq!(a.utility(&inst, 0), 0.75);
    assert_eq!(a.utility(&inst, 1), 1.5);
}

#[test]
fn pipeline_by_hand() {
    // Sets of alg2_by_hand. Server 1's items (all sole holders), f descending then
    // (layer, expert): l0e0 (.5), l0e1 (.5), l1e0 (.5), l0e2 (0). GPUs of 2 bytes:
    // l0e0 -> g0 (load .5); l0e1 -> g1 (.5); l1e0 -> g0 (tie, lower index; full);
    // l0e2 -> g1. Proxy (2): s0 misses l0e0 (1) and l1e0 (0.25); s1 misses l1e1 (0.5):
    // 1.75.
    let inst = two_servers();
    let out = prism(&inst, PrismOptions::default()).unwrap();
    assert!(out.gpus.dropped.is_empty());
    let mut p = out.gpus.placement.clone();
    p.normalize();
    assert_eq!(
        p.gpus[1],
        vec![vec![r(0, 0), r(1, 0)], vec![r(0, 1), r(0, 2)]]
    );
    assert_eq!(p.gpus[0], vec![vec![r(0, 3), r(1, 1), r(1, 2), r(1, 3)]]);
    assert_eq!(proxy_cost(&inst, &p), 1.75);
}

#[test]
fn gpu_assignment_drops_what_fits_no_gpu() {
    // One server with two 3-byte GPUs and 2-byte experts: M_n / m = 6 / 2 = 3 slots for
    // the single layer, but each GPU holds one expert. The third (least frequent, 0.2) is
    // dropped.
    let mut inst = instance(&[&[2, 2]], vec![vec![vec![0.5, 0.3, 0.2]]]);
    inst.model.expert_bytes = vec![2];
    inst.servers[0].gpus[0].memory_bytes = 3;
    inst.servers[0].gpus[1].memory_bytes = 3;
    let out = prism(&inst, PrismOptions::default()).unwrap();
    assert_eq!(out.allocation.counts, vec![vec![3]]);
    assert_eq!(out.gpus.dropped, vec![(ServerId(0), r(0, 2))]);
}

/// Three servers, one 1-byte GPU each, L = 1, E = 2; servers 0 and 2 use expert 0, server
/// 1 expert 1; from window 1 on, server 2 uses expert 1 only.
fn drifting() -> (Instance, Vec<Vec<Vec<Vec<f64>>>>) {
    let a = vec![vec![1.0, 0.0]];
    let b = vec![vec![0.0, 1.0]];
    let inst = instance(&[&[1], &[1], &[1]], vec![a.clone(), b.clone(), a]);
    let windows = drift_windows(&inst, 4, 1, 2, 1, 1.0);
    (inst, windows)
}

fn planner(i: &Instance) -> Result<Placement, String> {
    prism(i, PrismOptions::default())
        .map(|o| o.gpus.placement)
        .map_err(|e| e.to_string())
}

#[test]
fn migration_by_hand() {
    // Initial plan: s0 {0}, s1 {1}, s2 {0}. Scale: 30 tokens x 1 s = 30 s per unit of (2).
    // T_mig of s2 {0} -> {1}: one removal + one load of 1 byte at 8 bit/s = 2 s.
    // Since last change: window 1 start sees window 0 only (s2 [1, 0]): same plan, no
    // migration. Window 2 sees windows 0-1 (s2 [.5, .5], top-1 ties to e0): same plan.
    // Window 3 sees 0-2 (s2 [1/3, 2/3]): candidate s2 {1}; C(P) = 30 x 2/3 = 20, C(P') =
    // 30 x 1/3 = 10, 10 + 2 < 20: migrate. Served (2): 0, 1, 1, 0.
    let (inst, windows) = drifting();
    let mut config = MigrationConfig {
        tokens_per_window: 30.0,
        remote_invocation_s: 1.0,
        stats: MigrationStats::SinceLastChange,
        charge_removals: true,
    };
    let run = migrate(&inst, &windows, &config, &planner).unwrap();
    let served: Vec<f64> = run.windows.iter().map(|w| w.served_proxy_cost).collect();
    assert_eq!(served, vec![0.0, 1.0, 1.0, 0.0]);
    assert_eq!(run.migrations, 1);
    let w3 = &run.windows[3];
    assert!(w3.migrated);
    assert!((w3.current_cost_s.unwrap() - 20.0).abs() < 1e-9);
    assert!((w3.candidate_cost_s.unwrap() - 10.0).abs() < 1e-9);
    assert_eq!(w3.migration_s, Some(2.0));
    assert_eq!((w3.changed_entries, w3.transferred_bytes), (2, 1));
    // Last window only: window 2 sees window 1 (s2 [0, 1]): C(P) = 30, C(P') = 0, migrate
    // at window 2. Served: 0, 1, 0, 0.
    config.stats = MigrationStats::LastWindow;
    let run = migrate(&inst, &windows, &config, &planner).unwrap();
    let served: Vec<f64> = run.windows.iter().map(|w| w.served_proxy_cost).collect();
    assert_eq!(served, vec![0.0, 1.0, 0.0, 0.0]);
    assert!(run.windows[2].migrated);
    // One token per window: C(P) = 2/3 < 1/3 + 2 at window 3: never migrates.
    config.stats = MigrationStats::SinceLastChange;
    config.tokens_per_window = 1.0;
    let run = migrate(&inst, &windows, &config, &planner).unwrap();
    assert_eq!(run.migrations, 0);
    // Loads only: T_mig = 1 s.
    let (t, changed, bytes) = migration_cost(
        &inst,
        &planner(&inst).unwrap(),
        &planner(&with_frequencies(&inst, &windows[3])).unwrap(),
        false,
    )
    .unwrap();
    assert_eq!((t, changed, bytes), (1.0, 2, 1));
}

#[test]
fn migration_cost_names_a_missing_speed() {
    let (mut inst, windows) = drifting();
    inst.servers[2].gpus[0].io_bps = None;
    let from = planner(&inst).unwrap();
    let to = planner(&with_frequencies(&inst, &windows[3])).unwrap();
    let e = migration_cost(&inst, &from, &to, true)
        .unwrap_err()
        .to_string();
    assert!(e.contains("servers[2].gpus[0].io_bps"), "{e}");
}
