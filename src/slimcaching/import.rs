//! A SlimCaching instance from a real activation-count file (`moe-activation-counts/v1`, see
//! ../shared/data/README.md): one MoE model, real per-user activation distributions p_{u,S}, and
//! the network of the paper preset (Section VI-A, eqs. (3)-(4); see [`super::network`]).
//!
//! ## Format
//!
//! Gzip-compressed JSON `{format, model, top_k, experts_per_layer, prompts, layers, source,
//! counts}` with `counts[prompt][layer][expert]` = tokens of that prompt routed to that expert at
//! that MoE layer. Other fields (e.g. `counts_doc`) are ignored.
//!
//! ## Users
//!
//! The prompts are shuffled with `ChaCha8Rng::seed_from_u64(seed)` and split into U contiguous,
//! near-equal groups (the first P mod U groups get one prompt more); user u's traffic is its
//! group's prompts ([`prompt_groups`]). Every user requests the one model with p_{u,m} = 1.
//!
//! ## From counts to K-sets
//!
//! The file has per-prompt counts, not token-level sets, so the sets are reconstructed: for each
//! prompt and layer, repeatedly take the K experts with the largest remaining counts (ties by
//! lower index) as one token's set and decrement them by 1 ([`decompose_row`]).
//!
//! Claim: a row c with sum(c) = t K and max(c) <= t decomposes into exactly t K-sets of distinct
//! experts this way, and into none otherwise. Proof: the invariant is sum = t' K and max <= t'
//! with t' the tokens left. It implies at least K positive entries (K - 1 entries hold at most
//! (K - 1) t' < t' K), so the K largest are distinct positive experts. At most K entries equal t'
//! (K + 1 of them would exceed t' K), and they are all among the K largest, so after the step
//! every entry is <= t' - 1 while the sum drops by K: the invariant holds for t' - 1. At t' = 0
//! the row is zero. Conversely t sets of K distinct experts give sum t K and use each expert at
//! most t times. A row that breaks the condition (sum not a multiple of K, or one expert counted
//! more often than there are tokens) is rejected with an error naming `counts[p][l]`; all rows of
//! the three shipped files satisfy it. The reconstruction is exact for the per-expert marginals
//! (each expert appears in exactly c_i sets) and a canonical choice for the co-activations,
//! which the counts do not determine.
//!
//! Per user and layer, p_{u,S} = (sets S over the group's prompts) / (all sets of the group).
//!
//! ## Layers
//!
//! Layers whose counts are zero for every prompt are not MoE layers of the trace (DeepSeek-V2-Lite
//! layer 0 is dense) and are dropped; the model's MoE layers are the remaining file layers in
//! order. A zero row of one prompt in a kept layer contributes no set; a user whose whole group
//! has no token in a kept layer is an error.
//!
//! ## Model shapes
//!
//! From the models' public configuration files, bf16 (2 bytes a parameter), bytes rounded to the
//! nearest 1 MiB like the paper preset; D_m = hidden size x 2 bytes; FLOPs = 2 x parameters:
//! * Qwen1.5-MoE-A2.7B: hidden_size 2048, moe_intermediate_size 1408, SwiGLU (3 matrices):
//!   8,650,752 parameters = 16.5 MiB -> 17 MiB; 60 routed experts, Top-4 (the 4 shared experts
//!   are not counted in the file and are treated as part of the model on the user);
//! * DeepSeek-V2-Lite: hidden_size 2048, moe_intermediate_size 1408 (same expert shape), 64 routed
//!   experts, Top-6 (the 2 shared experts likewise);
//! * switch-large-128: d_model 1024, d_ff 4096, wi + wo: 8,388,608 parameters = 16 MiB; 128
//!   experts, Top-1 (the file's 12 layers are one stack's every-other-layer MoE FFNs).
//!
//! Unknown models need [`ImportConfig::expert_shape`], which also overrides the table.
//!
//! Local experts: each user's `local_experts_per_user` most frequently activated experts, as in
//! the generator. Errors name the file and the field (`format`, `counts[12]`, `counts[12][3]`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use formulations::slimcaching::validate::validate;
use formulations::slimcaching::{
    Instance, LayerActivation, LayerId, ModelId, ModelRequest, MoeModel, User,
};
use formulations::Error;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

pub use super::architectures::ExpertShape;
use super::demand::{most_frequent_experts, sets_from_counts};
use super::network::{build_network, check_compute, check_wireless, ComputeConfig, WirelessConfig};
use crate::counts::Header;

/// A model whose shape moe-opt knows (from its public configuration, see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownModel {
    /// Prefix of the file's `model` field (case-insensitive).
    pub name_prefix: &'static str,
    /// K, as the file must state it.
    pub top_k: u32,
    /// Routed experts per MoE layer, as the file must state it.
    pub experts_per_layer: u32,
    /// Hidden size (elements).
    pub hidden_size: u64,
    /// Parameters of one routed expert.
    pub expert_params: u64,
}

impl KnownModel {
    /// bf16 bytes rounded to 1 MiB, D_m = 2 x hidden, 2 x parameters FLOPs.
    pub fn shape(&self) -> ExpertShape {
        ExpertShape::bf16(self.expert_params, self.hidden_size)
    }
}

/// The models of ../shared/data/activation-counts/.
pub const KNOWN_MODELS: [KnownModel; 3] = [
    KnownModel {
        name_prefix: "Qwen1.5-MoE-A2.7B",
        top_k: 4,
        experts_per_layer: 60,
        hidden_size: 2048,
        expert_params: 3 * 2048 * 1408,
    },
    KnownModel {
        name_prefix: "DeepSeek-V2-Lite",
        top_k: 6,
        experts_per_layer: 64,
        hidden_size: 2048,
        expert_params: 3 * 2048 * 1408,
    },
    KnownModel {
        name_prefix: "switch-large-128",
        top_k: 1,
        experts_per_layer: 128,
        hidden_size: 1024,
        expert_params: 2 * 1024 * 4096,
    },
];

/// The known model a file's `model` field names, if any.
pub fn known_model(name: &str) -> Option<&'static KnownModel> {
    let lower = name.to_lowercase();
    KNOWN_MODELS
        .iter()
        .find(|k| lower.starts_with(&k.name_prefix.to_lowercase()))
}

/// Everything the file does not say: network size, storage, rho, seed, links and compute.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportConfig {
    /// Number of edge servers N.
    pub servers: u32,
    /// Number of users U (groups of prompts).
    pub users: u32,
    /// Storage Q of every server, bytes.
    pub storage_bytes: u64,
    /// rho: experts each user holds locally.
    pub local_experts_per_user: u32,
    /// Seed of the prompt grouping and the node positions.
    pub seed: u64,
    /// Positions, powers, bandwidths, path loss, cloud latency (eqs. (3)-(4)).
    pub wireless: WirelessConfig,
    /// Computing capabilities.
    pub compute: ComputeConfig,
    /// Shape of the model's experts; required for models not in [`KNOWN_MODELS`], and overrides
    /// the table (and its check of top_k and experts_per_layer) for known ones.
    #[serde(default)]
    pub expert_shape: Option<ExpertShape>,
}

impl Default for ImportConfig {
    /// The paper preset's network: N = 4, U = 20, Q = 5 GB, rho = 200, seed 0.
    fn default() -> Self {
        ImportConfig {
            servers: 4,
            users: 20,
            storage_bytes: 5_000_000_000,
            local_experts_per_user: 200,
            seed: 0,
            wireless: WirelessConfig::paper(),
            compute: ComputeConfig::paper(),
            expert_shape: None,
        }
    }
}

/// K-sets (sorted expert indices) with their multiplicities.
pub type SetCounts = Vec<(Vec<u32>, u64)>;

/// User u's prompts: a seeded shuffle of 0..prompts split into `users` contiguous near-equal
/// groups (the first `prompts mod users` get one more), each sorted.
pub fn prompt_groups(prompts: usize, users: usize, seed: u64) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..prompts).collect();
    order.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
    let users = users.max(1);
    let (base, extra) = (prompts / users, prompts % users);
    let mut start = 0;
    (0..users)
        .map(|g| {
            let len = base + usize::from(g < extra);
            let mut group = order[start..start + len].to_vec();
            start += len;
            group.sort_unstable();
            group
        })
        .collect()
}

/// Decomposes one row of counts into K-sets (largest remaining counts, ties by lower index),
/// as (sorted set, multiplicity) in set order. Errors say why the row has no decomposition.
pub fn decompose_row(row: &[u64], top_k: u32) -> Result<SetCounts, String> {
    let k = top_k as usize;
    if k == 0 || k > row.len() {
        return Err(format!("top_k {top_k} is not in 1..={}", row.len()));
    }
    let sum: u128 = row.iter().map(|&c| u128::from(c)).sum();
    if !sum.is_multiple_of(k as u128) {
        return Err(format!(
            "counts sum to {sum}, not a multiple of top_k {top_k}"
        ));
    }
    let tokens = sum / k as u128;
    if let Some((i, &c)) = row
        .iter()
        .enumerate()
        .find(|(_, &c)| u128::from(c) > tokens)
    {
        return Err(format!(
            "expert {i} has {c} activations but the row has only {tokens} tokens (sum / top_k)"
        ));
    }
    let mut left = row.to_vec();
    let mut out: BTreeMap<Vec<u32>, u64> = BTreeMap::new();
    loop {
        let mut order: Vec<usize> = (0..left.len()).collect();
        order.sort_by(|&a, &b| left[b].cmp(&left[a]).then(a.cmp(&b)));
        let weakest = left[order[k - 1]];
        if weakest == 0 {
            // By the invariant the row is now all zero.
            break;
        }
        // The same K experts stay on top while the weakest still beats the best outsider
        // strictly: that many steps at once give exactly the one-by-one result.
        let steps = match order.get(k) {
            Some(&o) => (weakest - left[o]).max(1),
            None => weakest,
        };
        let mut set: Vec<u32> = order[..k].iter().map(|&i| i as u32).collect();
        set.sort_unstable();
        for &i in &order[..k] {
            left[i] -= steps;
        }
        *out.entry(set).or_insert(0) += steps;
    }
    Ok(out.into_iter().collect())
}

/// Builds an instance from the activation-count file at `path`.
pub fn from_activation_counts(
    path: &Path,
    header: &Header,
    config: &ImportConfig,
) -> Result<Instance, Error> {
    let config_path = "<import config>";
    if config.servers == 0
        || config.servers as usize > formulations::slimcaching::validate::MAX_SERVERS
    {
        return Err(Error::invalid(
            Path::new(config_path),
            "servers",
            format!(
                "must be in 1..={}, got {}",
                formulations::slimcaching::validate::MAX_SERVERS,
                config.servers
            ),
        ));
    }
    if config.users == 0 {
        return Err(Error::invalid(
            Path::new(config_path),
            "users",
            "must be at least 1",
        ));
    }
    if config.storage_bytes == 0 {
        return Err(Error::invalid(
            Path::new(config_path),
            "storage_bytes",
            "must be positive",
        ));
    }
    check_wireless(&config.wireless, config_path, "wireless")?;
    check_compute(&config.compute, config_path, "compute")?;

    let file = crate::counts::read(path, header)?;
    let shape = match (config.expert_shape, known_model(&file.model)) {
        (Some(s), _) => s,
        (None, Some(k)) => {
            if k.top_k != file.top_k {
                return Err(Error::invalid(
                    path,
                    "top_k",
                    format!(
                        "{} is Top-{}, the file says {}",
                        k.name_prefix, k.top_k, file.top_k
                    ),
                ));
            }
            if k.experts_per_layer != file.experts_per_layer {
                return Err(Error::invalid(
                    path,
                    "experts_per_layer",
                    format!(
                        "{} has {} routed experts, the file says {}",
                        k.name_prefix, k.experts_per_layer, file.experts_per_layer
                    ),
                ));
            }
            k.shape()
        }
        (None, None) => {
            return Err(Error::invalid(
                path,
                "model",
                crate::counts::unknown_model(&file.model, "ImportConfig::expert_shape"),
            ))
        }
    };
    let users = config.users as usize;
    if file.prompts < users {
        return Err(Error::invalid(
            path,
            "prompts",
            format!(
                "{} prompts cannot be split among {users} users",
                file.prompts
            ),
        ));
    }
    let kept: Vec<usize> = (0..file.layers)
        .filter(|&l| file.counts.iter().any(|p| p[l].iter().any(|&c| c > 0)))
        .collect();
    if kept.is_empty() {
        return Err(Error::invalid(path, "counts", "every layer is all zero"));
    }
    // Per prompt and kept layer: the decomposition (checked for every prompt, not only the
    // ones some user gets, so a bad file fails whatever the grouping).
    let mut decomposed: Vec<Vec<SetCounts>> = Vec::with_capacity(file.prompts);
    for (p, prompt) in file.counts.iter().enumerate() {
        let mut rows = Vec::with_capacity(kept.len());
        for &l in &kept {
            rows.push(
                decompose_row(&prompt[l], file.top_k)
                    .map_err(|reason| Error::invalid(path, format!("counts[{p}][{l}]"), reason))?,
            );
        }
        decomposed.push(rows);
    }

    let model = MoeModel {
        name: file.model.clone(),
        top_k: file.top_k,
        layers: kept.len() as u32,
        experts_per_layer: file.experts_per_layer,
        expert_bytes: shape.expert_bytes,
        hidden_bytes: shape.hidden_bytes,
        expert_flops: shape.expert_flops,
    };
    let models = vec![model];
    let requests = vec![ModelRequest {
        model: ModelId(0),
        p: 1.0,
    }];
    let network = build_network(
        &config.wireless,
        &config.compute,
        config.servers as usize,
        users,
        config.storage_bytes,
        config.seed,
    );
    let groups = prompt_groups(file.prompts, users, config.seed);
    let mut out_users = Vec::with_capacity(users);
    for (u, ((group, uplink), downlink)) in groups
        .iter()
        .zip(network.uplink)
        .zip(network.downlink)
        .enumerate()
    {
        let mut activations = Vec::with_capacity(kept.len());
        for (j, &l) in kept.iter().enumerate() {
            let mut counts: BTreeMap<Vec<u32>, u64> = BTreeMap::new();
            for &p in group {
                for (set, n) in &decomposed[p][j] {
                    *counts.entry(set.clone()).or_insert(0) += n;
                }
            }
            if counts.is_empty() {
                return Err(Error::invalid(
                    path,
                    "counts",
                    format!("user {u}'s prompts {group:?} have no token at layer {l}"),
                ));
            }
            activations.push(LayerActivation {
                model: ModelId(0),
                layer: LayerId(j as u32),
                sets: sets_from_counts(counts, None),
            });
        }
        let local_experts = most_frequent_experts(
            &models,
            &requests,
            &activations,
            config.local_experts_per_user as usize,
        );
        out_users.push(User {
            compute_flops: config.compute.user_flops,
            associated_server: None,
            uplink,
            downlink,
            local_experts,
            requests: requests.clone(),
            activations,
        });
    }
    let instance = Instance {
        name: format!("{}-u{users}-seed{}", file.model, config.seed),
        servers: network.servers,
        cloud: network.cloud,
        backhaul: network.backhaul,
        models,
        users: out_users,
    };
    validate(&instance).map_err(|e| e.in_file(PathBuf::from(path)))?;
    Ok(instance)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn data_file(name: &str) -> Option<PathBuf> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/activation-counts");
        let path = dir.join(name);
        if path.exists() {
            Some(path)
        } else {
            println!(
                "skipped: {} is absent (the real data is not shipped)",
                path.display()
            );
            None
        }
    }

    /// The raw counts, read independently of the importer.
    fn raw(path: &Path) -> serde_json::Value {
        let mut text = String::new();
        flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
            .read_to_string(&mut text)
            .unwrap();
        serde_json::from_str(&text).unwrap()
    }

    fn scratch(test: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("moe-opt-import-{}-{test}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn write_gz(path: &Path, value: &serde_json::Value) {
        let file = std::fs::File::create(path).unwrap();
        let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
        gz.write_all(value.to_string().as_bytes()).unwrap();
        gz.finish().unwrap();
    }

    fn small_config(users: u32) -> ImportConfig {
        ImportConfig {
            users,
            local_experts_per_user: 2,
            expert_shape: Some(ExpertShape {
                expert_bytes: 10,
                hidden_bytes: 4096,
                expert_flops: 1e7,
            }),
            ..ImportConfig::default()
        }
    }

    /// Checks one real file against an independent recomputation from the raw counts; returns
    /// the instance (None when the data is absent).
    fn check_real(name: &str, layers: usize, skipped: &[usize]) -> Option<Instance> {
        let path = data_file(name)?;
        let config = ImportConfig::default();
        let instance = from_activation_counts(&path, &Header::default(), &config).unwrap();
        assert_eq!(validate(&instance), Ok(()));
        let v = raw(&path);
        let k = v["top_k"].as_u64().unwrap();
        let counts = v["counts"].as_array().unwrap();
        let model = &instance.models[0];
        assert_eq!(instance.models.len(), 1);
        assert_eq!(u64::from(model.top_k), k);
        assert_eq!(
            model.experts_per_layer as u64,
            v["experts_per_layer"].as_u64().unwrap()
        );
        assert_eq!(model.layers as usize, layers - skipped.len());
        assert_eq!(instance.users.len(), 20);
        assert_eq!(instance.servers.len(), 4);
        let file_layers: Vec<usize> = (0..layers).filter(|l| !skipped.contains(l)).collect();
        let groups = prompt_groups(counts.len(), 20, config.seed);
        // The groups partition the prompts into sizes differing by at most one.
        let mut all: Vec<usize> = groups.iter().flatten().copied().collect();
        all.sort();
        assert_eq!(all, (0..counts.len()).collect::<Vec<_>>());
        let sizes: Vec<usize> = groups.iter().map(Vec::len).collect();
        assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1);
        for (u, user) in instance.users.iter().enumerate() {
            assert_eq!(user.local_experts.len(), 200);
            assert_eq!(user.activations.len(), file_layers.len());
            for act in &user.activations {
                let l = file_layers[act.layer.index()];
                let e = model.experts_per_layer as usize;
                // Raw per-expert counts and the number of tokens (sets) of the group.
                let mut expert_counts = vec![0u64; e];
                let mut tokens = 0u64;
                for &p in &groups[u] {
                    let row = counts[p][l].as_array().unwrap();
                    let row: Vec<u64> = row.iter().map(|c| c.as_u64().unwrap()).collect();
                    tokens += row.iter().sum::<u64>() / k;
                    for (i, c) in row.iter().enumerate() {
                        expert_counts[i] += c;
                    }
                }
                // Integer set counts recovered from p * tokens.
                let mut from_sets = vec![0u64; e];
                let mut from_sets_p = vec![0f64; e];
                let mut total = 0u64;
                for s in &act.sets {
                    let n = (s.p * tokens as f64).round();
                    assert!((s.p * tokens as f64 - n).abs() < 1e-6);
                    total += n as u64;
                    for &i in &s.experts {
                        from_sets[i as usize] += n as u64;
                        from_sets_p[i as usize] += s.p;
                    }
                }
                assert_eq!(total, tokens, "user {u} layer {l}");
                assert_eq!(from_sets, expert_counts, "user {u} layer {l}");
                for i in 0..e {
                    let f = expert_counts[i] as f64 / tokens as f64;
                    assert!(
                        (from_sets_p[i] - f).abs() < 1e-12,
                        "user {u} layer {l} expert {i}"
                    );
                }
            }
        }
        Some(instance)
    }

    /// Every activation set of user 0's first layer holds `k` experts (the model's Top-k).
    fn first_sets_are_top(i: &Instance, k: usize) -> bool {
        i.users[0].activations[0]
            .sets
            .iter()
            .all(|s| s.experts.len() == k)
    }

    #[test]
    fn imports_qwen() {
        let Some(i) = check_real("qwen.json.gz", 24, &[]) else {
            return;
        };
        // 3 x 2048 x 1408 x 2 bytes = 16.5 MiB -> 17 MiB; hidden 2048 x 2.
        assert_eq!(i.models[0].expert_bytes, 17 << 20);
        assert_eq!(i.models[0].hidden_bytes, 4096);
        assert_eq!(i.models[0].expert_flops, 17_301_504.0);
        assert!(first_sets_are_top(&i, 4));
    }

    #[test]
    fn imports_deepseek_without_its_dense_layer() {
        let Some(i) = check_real("deepseek.json.gz", 27, &[0]) else {
            return;
        };
        assert_eq!(i.models[0].layers, 26);
        assert_eq!(i.models[0].expert_bytes, 17 << 20);
    }

    #[test]
    fn imports_switch() {
        let Some(i) = check_real("switch.json.gz", 12, &[]) else {
            return;
        };
        // 2 x 1024 x 4096 x 2 bytes = 16 MiB.
        assert_eq!(i.models[0].expert_bytes, 16 << 20);
        assert_eq!(i.models[0].hidden_bytes, 2048);
        // Top-1: every set is a single expert.
        assert!(first_sets_are_top(&i, 1));
    }

    #[test]
    fn import_is_deterministic_and_seeded() {
        let Some(path) = data_file("switch.json.gz") else {
            return;
        };
        let a =
            from_activation_counts(&path, &Header::default(), &ImportConfig::default()).unwrap();
        let b =
            from_activation_counts(&path, &Header::default(), &ImportConfig::default()).unwrap();
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            serde_json::to_string(&b).unwrap()
        );
        let c = from_activation_counts(
            &path,
            &Header::default(),
            &ImportConfig {
                seed: 1,
                ..ImportConfig::default()
            },
        )
        .unwrap();
        assert_ne!(a.users[0].activations, c.users[0].activations);
    }

    #[test]
    fn decomposition_by_hand() {
        // K = 2, counts [3, 2, 1, 0], 3 tokens:
        // [3,2,1,0] -> {0,1} -> [2,1,1,0] -> {0,1} (tie 1 vs 2: lower id) -> [1,0,1,0] -> {0,2}.
        assert_eq!(
            decompose_row(&[3, 2, 1, 0], 2).unwrap(),
            vec![(vec![0, 1], 2), (vec![0, 2], 1)]
        );
        // K = 1: each expert's count is its multiplicity, largest first.
        assert_eq!(
            decompose_row(&[1, 4, 0, 2], 1).unwrap(),
            vec![(vec![0], 1), (vec![1], 4), (vec![3], 2)]
        );
        // K = 3 with four equal counts of 3 (4 tokens): every expert is used 3 times.
        let sets = decompose_row(&[3, 3, 3, 3], 3).unwrap();
        let mut used = [0u64; 4];
        for (s, n) in &sets {
            assert_eq!(s.len(), 3);
            for &i in s {
                used[i as usize] += n;
            }
        }
        assert_eq!(used, [3, 3, 3, 3]);
        assert_eq!(sets.iter().map(|s| s.1).sum::<u64>(), 4);
        // All zero: no set.
        assert!(decompose_row(&[0, 0, 0], 2).unwrap().is_empty());
        // Not decomposable: sum not a multiple of K, or an expert above the token count.
        assert!(decompose_row(&[2, 1, 0], 2)
            .unwrap_err()
            .contains("multiple"));
        assert!(decompose_row(&[4, 1, 1], 2)
            .unwrap_err()
            .contains("expert 0"));
    }

    #[test]
    fn decomposition_matches_one_step_at_a_time() {
        // Independent reference: the one-decrement-per-step greedy of the module doc.
        fn reference(row: &[u64], k: usize) -> BTreeMap<Vec<u32>, u64> {
            let mut left = row.to_vec();
            let mut out = BTreeMap::new();
            while left.iter().any(|&c| c > 0) {
                let mut order: Vec<usize> = (0..left.len()).collect();
                order.sort_by(|&a, &b| left[b].cmp(&left[a]).then(a.cmp(&b)));
                let mut set: Vec<u32> = order[..k].iter().map(|&i| i as u32).collect();
                set.sort();
                for &i in &order[..k] {
                    left[i] -= 1;
                }
                *out.entry(set).or_insert(0) += 1;
            }
            out
        }
        let rows: [(&[u64], u32); 5] = [
            (&[5, 5, 4, 3, 2, 1], 2),
            (&[9, 7, 7, 7, 3, 3, 0, 0], 4),
            (&[6, 6, 6], 3),
            (&[10, 2, 2, 2, 2, 2], 2),
            (&[3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8], 1),
        ];
        for (row, k) in rows {
            let mut got = BTreeMap::new();
            for (s, n) in decompose_row(row, k).unwrap() {
                *got.entry(s).or_insert(0) += n;
            }
            assert_eq!(got, reference(row, k as usize), "{row:?} K={k}");
        }
    }

    fn header(counts: serde_json::Value, prompts: usize, layers: usize) -> serde_json::Value {
        serde_json::json!({
            "format": crate::counts::FORMAT,
            "model": "test-moe",
            "top_k": 2,
            "experts_per_layer": 3,
            "prompts": prompts,
            "layers": layers,
            "source": "unit test",
            "counts": counts,
        })
    }

    #[test]
    fn small_file_imports_and_drops_zero_layers() {
        let dir = scratch("good");
        let path = dir.join("good.json.gz");
        // Layer 0 all zero (dense), layer 1: prompt 0 has tokens {0,1},{0,2}; prompt 1 {1,2}.
        write_gz(
            &path,
            &header(
                serde_json::json!([[[0, 0, 0], [2, 1, 1]], [[0, 0, 0], [0, 1, 1]]]),
                2,
                2,
            ),
        );
        let i = from_activation_counts(&path, &Header::default(), &small_config(1)).unwrap();
        assert_eq!(i.models[0].layers, 1);
        let sets: Vec<(Vec<u32>, f64)> = i.users[0].activations[0]
            .sets
            .iter()
            .map(|s| (s.experts.clone(), s.p))
            .collect();
        assert_eq!(
            sets,
            vec![
                (vec![0, 1], 1.0 / 3.0),
                (vec![0, 2], 1.0 / 3.0),
                (vec![1, 2], 1.0 / 3.0)
            ]
        );
        // Expert 0, 1, 2 each appear twice: ties by index, so rho = 2 holds 0 and 1.
        let local: Vec<u32> = i.users[0].local_experts.iter().map(|r| r.expert).collect();
        assert_eq!(local, vec![0, 1]);
        std::fs::remove_dir_all(&dir).ok();
    }

    /// Writes `value`, imports it, and returns the error message.
    fn import_error(dir: &Path, name: &str, value: &serde_json::Value, users: u32) -> String {
        let path = dir.join(name);
        write_gz(&path, value);
        let e =
            from_activation_counts(&path, &Header::default(), &small_config(users)).unwrap_err();
        let text = e.to_string();
        assert!(text.contains(name), "error does not name the file: {text}");
        text
    }

    #[test]
    fn malformed_files_name_the_field() {
        let dir = scratch("bad");
        let good = serde_json::json!([[[1, 1, 0]], [[0, 1, 1]]]);
        let mut wrong_format = header(good.clone(), 2, 1);
        wrong_format["format"] = "moe-activation-counts/v2".into();
        let mut bad_k = header(good.clone(), 2, 1);
        bad_k["top_k"] = 4.into();
        let mut missing = header(good.clone(), 2, 1);
        missing.as_object_mut().unwrap().remove("counts");
        // (file, its contents, users, what the error names beside the file)
        let cases: Vec<(&str, serde_json::Value, u32, &[&str])> = vec![
            ("format.json.gz", wrong_format, 1, &[": format:"]),
            (
                "ragged1.json.gz",
                header(serde_json::json!([[[1, 1, 0]], []]), 2, 1),
                1,
                &["counts[1]:"],
            ),
            (
                "ragged2.json.gz",
                header(serde_json::json!([[[1, 1, 0]], [[1, 1]]]), 2, 1),
                1,
                &["counts[1][0]:"],
            ),
            (
                "prompts.json.gz",
                header(good.clone(), 3, 1),
                1,
                &[": counts:"],
            ),
            // Expert 0 counted 3 times in a 2-token row (sum 4, K = 2).
            (
                "undecomposable.json.gz",
                header(serde_json::json!([[[1, 1, 0]], [[3, 1, 0]]]), 2, 1),
                1,
                &["counts[1][0]:", "expert 0"],
            ),
            (
                "odd.json.gz",
                header(serde_json::json!([[[1, 1, 1]], [[1, 1, 0]]]), 2, 1),
                1,
                &["counts[0][0]:", "multiple"],
            ),
            ("topk.json.gz", bad_k, 1, &[": top_k:"]),
            (
                "users.json.gz",
                header(good.clone(), 2, 1),
                3,
                &[": prompts:"],
            ),
            ("missing.json.gz", missing, 1, &["counts"]),
        ];
        for (name, value, users, names) in &cases {
            let e = import_error(&dir, name, value, *users);
            for n in *names {
                assert!(e.contains(n), "{name}: {e}");
            }
        }

        // A user whose prompts have no token in a kept layer.
        let silent = header(serde_json::json!([[[1, 1, 0]], [[0, 0, 0]]]), 2, 1);
        let path = dir.join("silent.json.gz");
        write_gz(&path, &silent);
        let e = from_activation_counts(&path, &Header::default(), &small_config(2))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no token at layer 0"), "{e}");

        let mut unknown = header(good, 2, 1);
        unknown["model"] = "mystery-moe".into();
        let path = dir.join("unknown.json.gz");
        write_gz(&path, &unknown);
        let config = ImportConfig {
            users: 1,
            ..ImportConfig::default()
        };
        let e = from_activation_counts(&path, &Header::default(), &config)
            .unwrap_err()
            .to_string();
        assert!(e.contains(": model:") && e.contains("expert_shape"), "{e}");

        // Plain JSON is read too (every counts reader takes both): `{}` lacks the fields.
        let path = dir.join("plain.json.gz");
        std::fs::write(&path, "{}").unwrap();
        let e = from_activation_counts(&path, &Header::default(), &small_config(1)).unwrap_err();
        assert!(
            matches!(e, Error::Json { .. }) && e.to_string().contains("missing field"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }
}
