//! What the users of a SlimCaching instance ask for, in the pieces the generator and the
//! importer share: sparse set distributions p_{u,S} from set counts, and the local experts
//! rho_u (Section III-B: "predetermined based on user preferences").

use std::collections::BTreeMap;

use formulations::slimcaching::{
    ActivationSet, ExpertRef, LayerActivation, LayerId, ModelRequest, MoeModel,
};

/// The sparse distribution from set counts: keeps the `max_sets` most frequent (ties by the
/// set), p = count / kept total; sorted by decreasing count, then set.
pub(crate) fn sets_from_counts(
    counts: BTreeMap<Vec<u32>, u64>,
    max_sets: Option<usize>,
) -> Vec<ActivationSet> {
    let mut sets: Vec<(Vec<u32>, u64)> = counts.into_iter().filter(|(_, c)| *c > 0).collect();
    sets.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    if let Some(k) = max_sets {
        sets.truncate(k);
    }
    let total: u64 = sets.iter().map(|s| s.1).sum();
    sets.into_iter()
        .map(|(experts, c)| ActivationSet {
            experts,
            p: c as f64 / total as f64,
        })
        .collect()
}

/// The user's `rho` most frequently activated experts of its requested models (frequency
/// sum_m p_{u,m} sum_{S containing i} p_{u,S}, ties by expert), sorted by expert.
pub(crate) fn most_frequent_experts(
    models: &[MoeModel],
    requests: &[ModelRequest],
    activations: &[LayerActivation],
    rho: usize,
) -> Vec<ExpertRef> {
    let mut freq: BTreeMap<ExpertRef, f64> = BTreeMap::new();
    for r in requests.iter().filter(|r| r.p > 0.0) {
        let model = &models[r.model.index()];
        for l in 0..model.layers {
            for expert in 0..model.experts_per_layer {
                freq.insert(
                    ExpertRef {
                        model: r.model,
                        layer: LayerId(l),
                        expert,
                    },
                    0.0,
                );
            }
        }
    }
    for act in activations {
        let p_model = requests
            .iter()
            .find(|r| r.model == act.model)
            .map_or(0.0, |r| r.p);
        for set in &act.sets {
            for &expert in &set.experts {
                let key = ExpertRef {
                    model: act.model,
                    layer: act.layer,
                    expert,
                };
                if let Some(f) = freq.get_mut(&key) {
                    *f += p_model * set.p;
                }
            }
        }
    }
    let mut ranked: Vec<(ExpertRef, f64)> = freq.into_iter().collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    ranked.truncate(rho);
    let mut local: Vec<ExpertRef> = ranked.into_iter().map(|(r, _)| r).collect();
    local.sort();
    local
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_counts_become_probabilities() {
        let counts: BTreeMap<Vec<u32>, u64> = [
            (vec![0, 1], 5),
            (vec![1, 2], 3),
            (vec![0, 2], 3),
            (vec![2, 3], 1),
        ]
        .into_iter()
        .collect();
        let all = sets_from_counts(counts.clone(), None);
        assert_eq!(all[0].experts, vec![0, 1]);
        assert_eq!(all[0].p, 5.0 / 12.0);
        assert_eq!(all[3].p, 1.0 / 12.0);
        // Keep 2: {0,1} (5) and, of the two 3s, {0,2} (lexicographically first); p over 8.
        let kept = sets_from_counts(counts, Some(2));
        assert_eq!(kept.len(), 2);
        assert_eq!(kept[1].experts, vec![0, 2]);
        assert_eq!(kept[1].p, 3.0 / 8.0);
    }
}
