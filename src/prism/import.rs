//! A Prism instance from a real activation-count file (`moe-activation-counts/v1`, see
//! ../shared/data/README.md): real per-server frequencies f_n^l(e) and the testbed's servers.
//!
//! ## Format
//!
//! Gzip-compressed JSON `{format, model, top_k, experts_per_layer, prompts, layers, counts}`
//! with `counts[prompt][layer][expert]` = tokens of that prompt routed to that expert at that
//! layer; a prompt is one ShareGPT conversation prompt of about 19-20 tokens, and each of its
//! rows sums to tokens x top_k. Other fields are ignored.
//!
//! ## Layers
//!
//! Layers whose counts are zero for every prompt are not MoE layers (DeepSeek-V2-Lite layer 0 is
//! dense) and are dropped; the model's layers are the remaining ones in file order.
//!
//! ## Servers are clusters of prompts
//!
//! Section IV-A gives each server its own task (dataset); the file has no task labels, so tasks
//! are recovered by clustering. Each prompt p becomes its per-token frequency vector
//! x_p = (c_p^l(e) / t_p) over all kept layers l and experts e (length L E; each layer block
//! sums to K), with t_p = (row sum) / K its token count. k-means with k = N (the configured
//! servers), squared Euclidean distance: k-means++ seeding (Arthur and Vassilvitskii 2007: the
//! first centre uniform, each next one drawn with probability proportional to the squared
//! distance to the nearest chosen centre) from `ChaCha8Rng::seed_from_u64(seed)`, then Lloyd
//! iterations (assign to the nearest centre, lowest index on ties; recompute the means) until
//! no assignment changes or `kmeans_max_iterations`. An emptied cluster takes the prompt
//! farthest from its centre. Clusters are numbered by their smallest prompt index and cluster n
//! becomes server n.
//!
//! Server n's f_n^l(e) = (sum over its prompts of c_p^l(e)) / (sum of t_p): the expected
//! activations per token of its traffic (each row sums to K exactly, entries at most 1 when no
//! prompt counts an expert more often than it has tokens, which is checked).
//!
//! ## Hardware
//!
//! From [`ImportConfig`], by default the testbed of Section IV-A (3 servers with 1, 1, 2 GPUs
//! of 40 GiB, a usable fraction 30% as for DeepSeek-V2-Lite, 500 Mbit/s links) and the time
//! model of the `testbed-deepseek` preset ([`super::generate`]). Expert sizes: bf16, 2 bytes a
//! parameter of the model's routed expert (the table of `crate::slimcaching::import`, exact
//! bytes, not rounded), or `expert_shape` for other models. The workload's tokens per request
//! is the mean prompt length, rounded.

use std::path::Path;

use formulations::prism::{validate::validate, Gpu, Instance, MoeModel, Network, Server, Workload};
use formulations::{Error, ProblemKind};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::generate::{ComputeConfig, NetworkConfig, GIB};
use crate::counts::Header;
use crate::slimcaching::import::known_model;

/// Bytes of one routed expert and of one token's hidden state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpertShape {
    /// m_e.
    pub expert_bytes: u64,
    /// Hidden state bytes.
    pub hidden_bytes: u64,
}

/// Everything the file does not say.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportConfig {
    /// GPUs of each server (N = its length).
    pub gpus: Vec<u32>,
    /// Physical memory of every GPU, bytes.
    pub gpu_memory_bytes: u64,
    /// Fraction of it usable for experts.
    pub usable_fraction: f64,
    /// Time model of every GPU (its `slowdown` is ignored: the testbed GPUs are identical).
    pub compute: ComputeConfig,
    /// Links between every pair of servers (omitted: no network).
    #[serde(default)]
    pub network: Option<NetworkConfig>,
    /// Poisson arrival rate at every server, per second (omitted together with
    /// `requests_per_server`: no workload).
    #[serde(default)]
    pub arrival_rate_per_s: Option<f64>,
    /// Requests simulated at each server.
    #[serde(default)]
    pub requests_per_server: u32,
    /// Seed of k-means++.
    pub seed: u64,
    /// Most Lloyd iterations.
    pub kmeans_max_iterations: u32,
    /// Overrides the known-model table (required for other models).
    #[serde(default)]
    pub expert_shape: Option<ExpertShape>,
}

impl Default for ImportConfig {
    /// The testbed (Section IV-A) with DeepSeek-V2-Lite's 30% memory cap.
    fn default() -> Self {
        ImportConfig {
            gpus: vec![1, 1, 2],
            gpu_memory_bytes: 40 * GIB,
            usable_fraction: 0.3,
            compute: ComputeConfig {
                base_s: 3.2e-5,
                per_token_s: 1.15e-7,
                slowdown: super::generate::Between::exactly(1.0),
            },
            network: Some(NetworkConfig {
                latency_s: 1e-3,
                bandwidth_bps: 500e6,
            }),
            arrival_rate_per_s: Some(0.1),
            requests_per_server: 200,
            seed: 0,
            kmeans_max_iterations: 100,
            expert_shape: None,
        }
    }
}

/// `--seed` overrides the k-means++ seed.
impl crate::registry::CountsConfig for ImportConfig {
    fn seed_mut(&mut self) -> Option<&mut u64> {
        Some(&mut self.seed)
    }
}

/// The result of k-means: the cluster of every point and the number of Lloyd iterations run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clustering {
    /// `assignment[p]`: the cluster of point p, numbered by smallest member.
    pub assignment: Vec<usize>,
    /// Lloyd iterations run.
    pub iterations: u32,
}

fn dist2(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

fn nearest(point: &[f64], centres: &[Vec<f64>]) -> (usize, f64) {
    centres
        .iter()
        .enumerate()
        .map(|(c, centre)| (c, dist2(point, centre)))
        .fold(
            (0, f64::INFINITY),
            |best, x| if x.1 < best.1 { x } else { best },
        )
}

/// Seeded k-means (k-means++ seeding, Lloyd iterations; module doc). Needs 1 <= k <= points.
pub fn kmeans(points: &[Vec<f64>], k: usize, seed: u64, max_iterations: u32) -> Clustering {
    assert!(
        k >= 1 && k <= points.len(),
        "k-means needs 1 <= k <= points"
    );
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut centres: Vec<Vec<f64>> = vec![points[rng.random_range(0..points.len())].clone()];
    let mut d2: Vec<f64> = points.iter().map(|p| dist2(p, &centres[0])).collect();
    while centres.len() < k {
        let total: f64 = d2.iter().sum();
        let pick = if total > 0.0 {
            let mut u = rng.random::<f64>() * total;
            let mut pick = points.len() - 1;
            for (i, &d) in d2.iter().enumerate() {
                if u < d {
                    pick = i;
                    break;
                }
                u -= d;
            }
            pick
        } else {
            // Fewer distinct points than k: any point not yet a centre.
            centres.len()
        };
        centres.push(points[pick].clone());
        for (d, p) in d2.iter_mut().zip(points) {
            *d = d.min(dist2(p, &points[pick]));
        }
    }
    let dim = points[0].len();
    let mut assignment = vec![usize::MAX; points.len()];
    let mut iterations = 0;
    while iterations < max_iterations {
        iterations += 1;
        let mut changed = false;
        for (p, point) in points.iter().enumerate() {
            let c = nearest(point, &centres).0;
            if assignment[p] != c {
                assignment[p] = c;
                changed = true;
            }
        }
        // Re-seed emptied clusters with the point farthest from its centre.
        for c in 0..k {
            if !assignment.contains(&c) {
                let far = (0..points.len())
                    .map(|p| (p, dist2(&points[p], &centres[assignment[p]])))
                    .fold((0, -1.0), |best, x| if x.1 > best.1 { x } else { best })
                    .0;
                assignment[far] = c;
                changed = true;
            }
        }
        if !changed {
            break;
        }
        let mut sums = vec![vec![0.0; dim]; k];
        let mut sizes = vec![0usize; k];
        for (p, &c) in assignment.iter().enumerate() {
            sizes[c] += 1;
            for (s, x) in sums[c].iter_mut().zip(&points[p]) {
                *s += x;
            }
        }
        for ((centre, sum), &size) in centres.iter_mut().zip(sums).zip(&sizes) {
            *centre = sum.into_iter().map(|s| s / size as f64).collect();
        }
    }
    // Number clusters by their smallest member.
    let mut order: Vec<usize> = Vec::with_capacity(k);
    for &c in &assignment {
        if !order.contains(&c) {
            order.push(c);
        }
    }
    let relabel: Vec<usize> = (0..k)
        .map(|c| order.iter().position(|&o| o == c).unwrap_or(c))
        .collect();
    Clustering {
        assignment: assignment.iter().map(|&c| relabel[c]).collect(),
        iterations,
    }
}

/// Builds an instance from the activation-count file at `path`. Errors name the file and the
/// field (`format`, `counts[12][3]`) or the import configuration's field.
pub fn from_activation_counts(
    path: &Path,
    header: &Header,
    config: &ImportConfig,
) -> Result<Instance, Error> {
    let cfg = |field: &str, reason: String| Error::Invalid {
        path: "<import config>".into(),
        field: field.into(),
        reason,
    };
    if config.gpus.is_empty() || config.gpus.contains(&0) {
        return Err(cfg(
            "gpus",
            "needs at least one server, each with >= 1 GPU".into(),
        ));
    }
    // Each server's GPUs are allocated one by one.
    use super::generate::MAX_GPUS_PER_SERVER;
    if let Some((n, &g)) =
        (config.gpus.iter().enumerate()).find(|(_, &g)| u64::from(g) > MAX_GPUS_PER_SERVER)
    {
        return Err(cfg(
            &format!("gpus[{n}]"),
            formulations::error::exceeds(
                "GPUs",
                g,
                MAX_GPUS_PER_SERVER,
                "moe_opt::prism::generate::MAX_GPUS_PER_SERVER",
            ),
        ));
    }
    if !(config.usable_fraction > 0.0 && config.usable_fraction <= 1.0) {
        return Err(cfg(
            "usable_fraction",
            format!("must lie in (0, 1], got {}", config.usable_fraction),
        ));
    }
    let f = crate::counts::read(path, header)?;
    let servers = config.gpus.len();
    if f.prompts < servers {
        return Err(Error::invalid(
            path,
            "prompts",
            format!("{} prompts cannot form {servers} clusters", f.prompts),
        ));
    }
    let (k, e) = (u64::from(f.top_k), f.experts_per_layer as usize);
    let kept: Vec<usize> = (0..f.layers)
        .filter(|&l| {
            f.counts
                .iter()
                .any(|prompt| prompt[l].iter().any(|&c| c > 0))
        })
        .collect();
    if kept.is_empty() {
        return Err(Error::invalid(path, "counts", "every count is zero"));
    }
    // Tokens of every prompt (the same in every kept layer).
    let mut tokens = Vec::with_capacity(f.prompts);
    for (p, prompt) in f.counts.iter().enumerate() {
        let mut t = None;
        for &l in &kept {
            let row = &prompt[l];
            let sum: u64 = row.iter().sum();
            let at = || format!("counts[{p}][{l}]");
            if !sum.is_multiple_of(k) || sum == 0 {
                return Err(Error::invalid(
                    path,
                    at(),
                    format!("sums to {sum}, not a positive multiple of top_k = {k}"),
                ));
            }
            let here = sum / k;
            if row.iter().any(|&c| c > here) {
                return Err(Error::invalid(
                    path,
                    at(),
                    format!("counts an expert more often than the prompt's {here} tokens"),
                ));
            }
            if *t.get_or_insert(here) != here {
                return Err(Error::invalid(
                    path,
                    at(),
                    format!("has {here} tokens, earlier layers {}", t.unwrap_or(0)),
                ));
            }
        }
        tokens.push(t.unwrap_or(0));
    }
    let points: Vec<Vec<f64>> = f
        .counts
        .iter()
        .zip(&tokens)
        .map(|(prompt, &t)| {
            kept.iter()
                .flat_map(|&l| prompt[l].iter().map(move |&c| c as f64 / t as f64))
                .collect()
        })
        .collect();
    let clustering = kmeans(&points, servers, config.seed, config.kmeans_max_iterations);
    let shape = match (config.expert_shape, known_model(&f.model)) {
        (Some(s), _) => s,
        (None, Some(m)) => {
            if m.top_k != f.top_k || m.experts_per_layer != f.experts_per_layer {
                return Err(Error::invalid(
                    path,
                    "model",
                    format!(
                        "{} is known with top_k {} and {} experts, the file says {} and {}",
                        f.model, m.top_k, m.experts_per_layer, f.top_k, f.experts_per_layer
                    ),
                ));
            }
            ExpertShape {
                expert_bytes: 2 * m.expert_params,
                hidden_bytes: 2 * m.hidden_size,
            }
        }
        (None, None) => {
            return Err(cfg(
                "expert_shape",
                crate::counts::unknown_model(
                    &f.model,
                    "`expert_shape` in the import configuration",
                ),
            ))
        }
    };
    let memory_bytes = (config.gpu_memory_bytes as f64 * config.usable_fraction).floor() as u64;
    let gpu = Gpu {
        memory_bytes,
        compute_base_s: config.compute.base_s,
        compute_per_token_s: config.compute.per_token_s,
        io_bps: None,
    };
    let server_list: Vec<Server> = (0..servers)
        .map(|n| {
            let members: Vec<usize> = (0..f.prompts)
                .filter(|&p| clustering.assignment[p] == n)
                .collect();
            let t: u64 = members.iter().map(|&p| tokens[p]).sum();
            let frequencies = kept
                .iter()
                .map(|&l| {
                    (0..e)
                        .map(|x| {
                            let c: u64 = members.iter().map(|&p| f.counts[p][l][x]).sum();
                            c as f64 / t as f64
                        })
                        .collect()
                })
                .collect();
            Server {
                name: format!("cluster{n}"),
                gpus: vec![gpu.clone(); config.gpus[n] as usize],
                frequencies,
            }
        })
        .collect();
    let network = config.network.map(|net| {
        let off = |x: f64| -> Vec<Vec<f64>> {
            (0..servers)
                .map(|i| (0..servers).map(|j| if i == j { 0.0 } else { x }).collect())
                .collect()
        };
        Network {
            latency_s: off(net.latency_s),
            bandwidth_bps: off(net.bandwidth_bps),
        }
    });
    let mean_tokens = tokens.iter().sum::<u64>() as f64 / tokens.len() as f64;
    let workload = config.arrival_rate_per_s.map(|rate| Workload {
        arrival_rate_per_s: vec![rate; servers],
        tokens_per_request: (mean_tokens.round() as u32).max(1),
        requests_per_server: config.requests_per_server,
    });
    let name = path
        .file_name()
        .map_or_else(|| "import".into(), |s| s.to_string_lossy().into_owned());
    let instance = Instance {
        problem: ProblemKind::Prism,
        name: format!("{name}-k{servers}-seed{}", config.seed),
        model: MoeModel {
            name: f.model.clone(),
            layers: kept.len() as u32,
            experts_per_layer: f.experts_per_layer,
            top_k: f.top_k,
            expert_bytes: vec![shape.expert_bytes; kept.len()],
            hidden_bytes: shape.hidden_bytes,
        },
        servers: server_list,
        network,
        workload,
    };
    validate(&instance).map_err(|e| e.in_file(path))?;
    Ok(instance)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn kmeans_separates_two_obvious_groups() {
        // Points near (0, 0) and near (10, 10): whatever the seeding, Lloyd ends with the two
        // groups; cluster 0 is the one holding point 0.
        let points = vec![
            vec![0.0, 0.1],
            vec![10.0, 10.0],
            vec![0.2, 0.0],
            vec![9.8, 10.1],
            vec![0.1, 0.2],
        ];
        for seed in 0..10 {
            let c = kmeans(&points, 2, seed, 100);
            assert_eq!(c.assignment, vec![0, 1, 0, 1, 0], "seed {seed}");
        }
    }

    /// The data file under `shared/data/activation-counts` of the nearest ancestor of the
    /// package that has one (../shared in the main checkout, ../../shared in a worktree).
    fn data(file: &str) -> Option<PathBuf> {
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
        let found = manifest
            .ancestors()
            .map(|d| d.join("shared/data/activation-counts").join(file))
            .find(|p| p.exists());
        if found.is_none() {
            eprintln!(
                "skipped: no shared/data/activation-counts/{file} above {}",
                manifest.display()
            );
        }
        found
    }

    #[test]
    fn imports_the_real_deepseek_counts() {
        let Some(path) = data("deepseek.json.gz") else {
            return;
        };
        let config = ImportConfig::default();
        let inst = from_activation_counts(&path, &Header::default(), &config).unwrap();
        // 27 file layers, layer 0 dense: 26 MoE layers x 64 experts, Top-6 (README).
        assert_eq!(
            (
                inst.model.layers,
                inst.model.experts_per_layer,
                inst.model.top_k
            ),
            (26, 64, 6)
        );
        assert_eq!(inst.model.expert_bytes[0], 17_301_504);
        assert_eq!(inst.servers.len(), 3);
        // validate() ran: every row sums to K = 6 within 1e-6. Check one by hand anyway.
        let sum: f64 = inst.servers[2].frequencies[25].iter().sum();
        assert!((sum - 6.0).abs() < 1e-9);
        // Prompts are about 19-20 tokens (README): the mean rounds into that range.
        let t = inst.workload.as_ref().unwrap().tokens_per_request;
        assert!((15..=20).contains(&t), "{t}");
        // Same seed, same instance; the clusters differ from each other.
        assert_eq!(
            inst,
            from_activation_counts(&path, &Header::default(), &config).unwrap()
        );
        assert_ne!(inst.servers[0].frequencies, inst.servers[1].frequencies);
    }

    #[test]
    fn imports_qwen_and_switch_and_names_bad_config() {
        let Some(path) = data("switch.json.gz") else {
            return;
        };
        let inst =
            from_activation_counts(&path, &Header::default(), &ImportConfig::default()).unwrap();
        assert_eq!(
            (
                inst.model.layers,
                inst.model.experts_per_layer,
                inst.model.top_k
            ),
            (12, 128, 1)
        );
        let Some(qwen) = data("qwen.json.gz") else {
            return;
        };
        let config = ImportConfig {
            gpus: vec![1, 2],
            ..ImportConfig::default()
        };
        let inst = from_activation_counts(&qwen, &Header::default(), &config).unwrap();
        assert_eq!(
            (inst.model.layers, inst.model.top_k, inst.servers.len()),
            (24, 4, 2)
        );
        let bad = ImportConfig {
            usable_fraction: 0.0,
            ..ImportConfig::default()
        };
        let e = from_activation_counts(&qwen, &Header::default(), &bad)
            .unwrap_err()
            .to_string();
        assert!(e.contains("usable_fraction"), "{e}");
    }
}
