//! Quality proxies of a routing, since no language model runs here (issue 5, Sec. 3): how far
//! the chosen experts are from the original top-K.
//!
//! * share of the original top-K kept: `|chosen ∩ r[:K]| / K`, over all steps (a pruned expert
//!   counts as not kept);
//! * router mass kept: per step `sum of p(chosen) / sum of p(r[:K])` with p the original router
//!   probabilities (softmax of the unmodified logits, or the trace's weights), averaged over
//!   steps (mean of ratios, so every token and layer weighs the same);
//! * mean rank of the chosen experts in the original ranking, 1-based (the original top-K
//!   gives (K + 1) / 2), over all chosen experts.

use serde::Serialize;

use super::router::Row;

/// The proxies of one replay.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Quality {
    /// Steps (token x layer) measured.
    pub steps: u64,
    /// Mean experts chosen per step (K except for pruning).
    pub chosen_per_step: f64,
    /// Share of the original top-K kept, in [0, 1].
    pub share_topk_kept: f64,
    /// Mean router mass kept, in [0, 1]; None without router probabilities.
    pub mass_kept: Option<f64>,
    /// Mean 1-based original rank of the chosen experts; None when ranks are unknown.
    pub mean_rank: Option<f64>,
}

/// Sums the proxies step by step (allocation-free).
#[derive(Debug, Clone)]
pub struct QualityAccumulator {
    top_k: usize,
    with_mass: bool,
    with_rank: bool,
    steps: u64,
    chosen: u64,
    kept: u64,
    mass: f64,
    rank_sum: u64,
}

impl QualityAccumulator {
    /// An empty accumulator for top-K routings; `with_mass` when router probabilities are
    /// known, `with_rank` when ranks are.
    pub fn new(top_k: usize, with_mass: bool, with_rank: bool) -> Self {
        QualityAccumulator {
            top_k,
            with_mass,
            with_rank,
            steps: 0,
            chosen: 0,
            kept: 0,
            mass: 0.0,
            rank_sum: 0,
        }
    }

    /// Adds one step: the experts chosen for `row`.
    pub fn add(&mut self, row: &Row, chosen: &[u32]) {
        self.steps += 1;
        self.chosen += chosen.len() as u64;
        let k = self.top_k;
        for &e in chosen {
            let rank = row.rank_of[e as usize] as usize;
            if rank < k {
                self.kept += 1;
            }
            self.rank_sum += rank as u64 + 1;
        }
        if self.with_mass {
            let top = row.top_mass;
            let kept: f64 = chosen.iter().map(|&e| row.probs[e as usize] as f64).sum();
            self.mass += if top > 0.0 { kept / top } else { 1.0 };
        }
    }

    /// The means.
    pub fn finish(&self) -> Quality {
        let steps = self.steps.max(1) as f64;
        Quality {
            steps: self.steps,
            chosen_per_step: self.chosen as f64 / steps,
            share_topk_kept: self.kept as f64 / (steps * self.top_k as f64),
            mass_kept: self.with_mass.then(|| self.mass / steps),
            mean_rank: (self.with_rank && self.chosen > 0)
                .then(|| self.rank_sum as f64 / self.chosen as f64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxies_of_two_hand_steps() {
        // E = 4, K = 2, probabilities by id [0.1, 0.4, 0.3, 0.2], r = [1, 2, 3, 0], so
        // rank_of = [3, 0, 1, 2]; top-2 mass 0.7.
        // Step 1 chooses [1, 3]: kept 1, mass 0.6 / 0.7, ranks 1 + 3.
        // Step 2 chooses [1] (pruned): kept 1, mass 0.4 / 0.7, rank 1.
        // Share kept 2 / (2 * 2) = 0.5; mass (6/7 + 4/7) / 2 = 5/7; mean rank 5 / 3.
        let probs = [0.1f32, 0.4, 0.3, 0.2];
        let row = Row {
            top_k: 2,
            order: &[1, 2, 3, 0],
            rank_of: &[3, 0, 1, 2],
            probs: &probs,
            logits: None,
            range: 0.0,
            top_mass: 0.4f32 as f64 + 0.3f32 as f64,
        };
        let mut q = QualityAccumulator::new(2, true, true);
        q.add(&row, &[1, 3]);
        q.add(&row, &[1]);
        let q = q.finish();
        assert_eq!(q.steps, 2);
        assert!((q.chosen_per_step - 1.5).abs() < 1e-12);
        assert!((q.share_topk_kept - 0.5).abs() < 1e-12);
        assert!((q.mass_kept.unwrap() - 5.0 / 7.0).abs() < 1e-6);
        assert!((q.mean_rank.unwrap() - 5.0 / 3.0).abs() < 1e-12);
    }
}
