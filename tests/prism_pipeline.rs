//! Prism end to end: generate, write and load the instance file, solve the MILP of (2),
//! re-evaluate the decoded placement, compute eq. (1) and simulate it.

use formulations::milp::{MilpStatus, SolveOptions};
use formulations::prism::evaluate::{evaluate, latency, RemoteChoice, Request};
use formulations::prism::{load, milp, simulate, ServerId};
use moe_opt::prism::generate::{try_generate, GeneratorConfig, Preset};

#[test]
fn generate_load_solve_evaluate_simulate() {
    let inst = try_generate(&GeneratorConfig::preset(Preset::Small), 5).unwrap();
    let dir = std::env::temp_dir().join(format!("moe-opt-prism-it-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("small.json");
    std::fs::write(&path, serde_json::to_string_pretty(&inst).unwrap()).unwrap();
    let loaded = load(&path).unwrap();
    assert_eq!(loaded, inst);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.trim_start().starts_with("{\n  \"problem\": \"prism\""));

    let exact = milp::solve(&inst, &SolveOptions::default(), None).unwrap();
    assert_eq!(exact.solution.status, MilpStatus::Optimal);
    let placement = exact.placement.unwrap();
    let ev = evaluate(&inst, &placement).unwrap();
    assert!(ev.feasible);
    assert!((ev.proxy_cost - exact.solution.objective.unwrap()).abs() < 1e-7);
    // The placement round-trips through JSON.
    let back: formulations::prism::Placement =
        serde_json::from_str(&serde_json::to_string(&placement).unwrap()).unwrap();
    assert_eq!(back, placement);

    // Eq. (1) on one request touching expert 0 of every layer: each layer costs at least the
    // fastest GPU's compute time, so the total is positive.
    let request = Request {
        server: ServerId(0),
        tokens: 20,
        experts: vec![vec![0]; inst.layers()],
    };
    let lat = latency(&inst, &placement, &[request], RemoteChoice::Fastest).unwrap();
    assert!(lat.total_latency_s > 0.0);

    let sim = simulate(&inst, &placement, 1, RemoteChoice::Fastest).unwrap();
    // 3 servers x 200 requests x 4 layers x K = 2 invocations.
    assert_eq!(sim.requests, 600);
    assert_eq!(sim.invocations, 600 * 4 * 2);
    assert!(sim.mean_latency_s > 0.0);
    // Successive sampling only approximates the marginals f for K = 2, so the simulated local
    // ratio is near, not equal to, the expected one of (2).
    let gap = (sim.local_compute_ratio - ev.overall_local_compute_ratio).abs();
    assert!(
        gap < 0.1,
        "{} vs {}",
        sim.local_compute_ratio,
        ev.overall_local_compute_ratio
    );
    let _ = std::fs::remove_dir_all(&dir);
}
