//! docs/verdicts.md is rendered ([`moe_opt::verdicts::page`]) from the `verify` runs committed
//! under docs/verdicts/ (`SCALE/PAPER/claims.csv` and `run.json`: every paper with the claims'
//! own families and at the papers' scale, seed 0 and the scale's defaults). This test renders
//! the page again and fails when it differs from the file, when a committed run no longer
//! matches the claim tables (a claim added, removed or reworded: its place, bound or family), or
//! when a run was made with other settings than the page's commands.
//!
//! `MOE_OPT_UPDATE_DOCS=1 ./dev cargo test --test verdicts` rewrites the page from the
//! committed runs; `MOE_OPT_UPDATE_VERDICTS=1 ./dev cargo test --test verdicts -- --nocapture`
//! first reruns them all into docs/verdicts/ (`--jobs` from `MOE_OPT_JOBS`, default 2; it
//! prints each run's wall time).

use std::path::{Path, PathBuf};
use std::time::Instant;

use moe_opt::claims::{ClaimInfo, Scale};
use moe_opt::problems;
use moe_opt::verdicts::{command, page, read_claims, Run};
use moe_opt::verify::RunSettings;

mod common;
use common::{moe_opt, ok, scratch, PAPERS};

const SCALES: [Scale; 2] = [Scale::Small, Scale::Paper];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Where a run is committed: docs/verdicts/SCALE/PAPER (the paper's three-digit prefix).
fn folder(paper: &str, scale: Scale) -> PathBuf {
    let prefix = paper.split('_').next().unwrap();
    root()
        .join("docs/verdicts")
        .join(scale.as_str())
        .join(prefix)
}

/// How the page and the runs are made (the page's header).
const HOW: &str = "Made by `MOE_OPT_UPDATE_VERDICTS=1 ./dev cargo test --test verdicts -- \
    --nocapture`, which runs the command under each table (`--jobs 2`) into docs/verdicts/ \
    and renders this page from the runs' claims.csv; `tests/verdicts.rs` fails when the page \
    differs from the committed runs or a run from the registry.";

/// Reruns every paper at both scales into docs/verdicts/ (`MOE_OPT_UPDATE_VERDICTS`).
fn rerun() {
    let jobs = std::env::var("MOE_OPT_JOBS").unwrap_or_else(|_| "2".into());
    let out = scratch("verdicts");
    for scale in SCALES {
        for paper in PAPERS {
            let dir = out.join(format!("{}-{paper}", scale.as_str()));
            let began = Instant::now();
            ok(moe_opt()
                .args(command(paper, scale).split(' ').skip(1))
                .args(["--jobs", &jobs, "--out"])
                .arg(&dir));
            eprintln!(
                "{}: {:.0} s",
                command(paper, scale),
                began.elapsed().as_secs_f64()
            );
            let to = folder(paper, scale);
            std::fs::create_dir_all(&to).unwrap();
            for file in ["claims.csv", "run.json"] {
                std::fs::copy(dir.join(file), to.join(file)).unwrap();
            }
        }
    }
}

/// The claims of `paper` in the claim tables, in run order.
fn registered(paper: &str) -> Vec<(ClaimInfo, Result<&'static str, &'static str>, String)> {
    let registry = problems::builtin();
    registry
        .claim_groups()
        .iter()
        .flat_map(|g| {
            let infos = g.infos();
            (0..infos.len())
                .map(|c| {
                    (
                        infos[c],
                        g.family(c, Scale::Paper),
                        infos[c].family.to_string(),
                    )
                })
                .collect::<Vec<_>>()
        })
        .filter(|(i, _, _)| i.paper == paper)
        .collect()
}

#[test]
fn the_verdict_page_is_the_committed_runs() {
    if std::env::var_os("MOE_OPT_UPDATE_VERDICTS").is_some() {
        rerun();
    }
    let mut runs = Vec::new();
    for scale in SCALES {
        for paper in PAPERS {
            let dir = folder(paper, scale);
            let rows = read_claims(&dir.join("claims.csv")).unwrap();
            let settings: RunSettings =
                serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap())
                    .unwrap();
            // The run the page's command makes: seed 0 and the scale's defaults.
            let instances = match scale {
                Scale::Small => 200,
                Scale::Paper => 20,
            };
            assert_eq!(
                (settings.scale, settings.seed, settings.instances),
                (scale, 0, instances),
                "{}",
                dir.display()
            );
            // Every claim of the paper, as the claim tables state it today.
            let claims = registered(paper);
            let ids: Vec<&str> = claims.iter().map(|c| c.0.id).collect();
            let run_ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
            assert_eq!(
                run_ids,
                ids,
                "{}: the run's claims are not the claim tables': rerun (module doc)",
                dir.display()
            );
            assert_eq!(settings.claims, ids, "{}", dir.display());
            for (row, (info, paper_family, small_family)) in rows.iter().zip(&claims) {
                let family = match scale {
                    Scale::Small => small_family.as_str(),
                    Scale::Paper => paper_family.unwrap_or_else(|why| why),
                };
                assert_eq!(
                    (row.place.as_str(), row.bound.as_str(), row.family.as_str()),
                    (info.place, info.bound, family),
                    "{}: {} reworded since the run: rerun (module doc)",
                    dir.display(),
                    info.id
                );
                assert_eq!(row.kind, Some(info.kind), "{}", info.id);
            }
            runs.push(Run {
                paper: paper.to_string(),
                scale,
                rows,
            });
        }
    }
    let rendered = page(&runs, HOW);
    let path = root().join("docs/verdicts.md");
    let update = ["MOE_OPT_UPDATE_DOCS", "MOE_OPT_UPDATE_VERDICTS"]
        .iter()
        .any(|v| std::env::var_os(v).is_some());
    if update {
        std::fs::write(&path, &rendered).unwrap();
        return;
    }
    assert!(
        std::fs::read_to_string(&path).unwrap_or_default() == rendered,
        "docs/verdicts.md differs from the committed runs: MOE_OPT_UPDATE_DOCS=1 (module doc)"
    );
}
