//! CPU-assisted computing loading scheduling (paper 004, Sec. V-A, Alg. 2): which missed
//! experts go over PCIe and which run on the CPU.
//!
//! Alg. 2 walks the missed experts sorted by decreasing score with two pointers: while l <= r,
//! if T_load <= T_CPU the expert at l is loaded (high scores are loaded, Fig. 6: they are
//! reused), else the expert at r runs on the CPU. With per-expert costs the same walk adds each
//! expert's own cost. The rule compares the times *before* the step, so it loads the first
//! expert even when C_CPU < C_load and one expert is missed (T = C_load, while the optimum of
//! (4) is C_CPU). [`Alg2Rule::EarliestFinish`] is the variant that compares the times *after*
//! the step (T_load + C_load <= T_CPU + C_CPU); for uniform costs it is optimal (unit jobs on
//! two machines of different speeds, each placed where it finishes first), which the tests
//! check against the closed form of (4).

use formulations::smoe::{objective4, Costs, Split};
use serde::{Deserialize, Serialize};

/// Alg. 2's comparison (module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Alg2Rule {
    /// `T_load <= T_CPU` before the step (Alg. 2 as printed).
    #[default]
    Paper,
    /// `T_load + C_load(l) <= T_CPU + C_CPU(r)`.
    EarliestFinish,
}

/// Alg. 2 on the missed experts `by_score` (decreasing score).
///
/// # Complexity
/// n missed experts. Time: O(n) (each step moves one pointer), plus objective (4) on the split.
/// Memory: O(n).
///
/// # Examples
/// ```
/// use formulations::smoe::Costs;
/// use moe_opt::smoe::split::{alg2, Alg2Rule};
///
/// // C_load = 3, C_CPU = 1, experts 10..=13 by score: 0 <= 0 loads 10 (T_load = 3); then
/// // T_load > T_CPU sends 13, 12 and 11 to the CPU (T_CPU = 1, 2, 3): T = max(3, 3) = 3.
/// let costs = Costs::Uniform { load_s: 3.0, cpu_s: 1.0, gpu_s: 0.0 };
/// let split = alg2(&[10, 11, 12, 13], &costs, Alg2Rule::Paper);
/// assert_eq!((split.load, split.cpu), (vec![10], vec![13, 12, 11]));
/// assert_eq!(split.objective_s, 3.0);
/// ```
pub fn alg2(by_score: &[u32], costs: &Costs, rule: Alg2Rule) -> Split {
    let (mut t_load, mut t_cpu) = (0.0, 0.0);
    let mut load = Vec::new();
    let mut cpu = Vec::new();
    let (mut l, mut r) = (0usize, by_score.len());
    // r is one past the paper's pointer so that it never goes below 0.
    while l < r {
        let (el, er) = (by_score[l], by_score[r - 1]);
        let to_load = match rule {
            Alg2Rule::Paper => t_load <= t_cpu,
            Alg2Rule::EarliestFinish => t_load + costs.load(el) <= t_cpu + costs.cpu(er),
        };
        if to_load {
            t_load += costs.load(el);
            load.push(el);
            l += 1;
        } else {
            t_cpu += costs.cpu(er);
            cpu.push(er);
            r -= 1;
        }
    }
    objective4(costs, load, cpu)
}

#[cfg(test)]
mod tests {
    use super::*;
    use formulations::smoe::split_optimum_uniform;

    fn uniform(load_s: f64, cpu_s: f64) -> Costs {
        Costs::Uniform {
            load_s,
            cpu_s,
            gpu_s: 0.0,
        }
    }

    #[test]
    fn alg2_traced_by_hand() {
        // C_load = 3, C_CPU = 1, experts 10, 11, 12, 13 by score. Step 1: 0 <= 0, load 10
        // (T_load 3). Then 3 > 0: CPU 13 (1), 3 > 1: CPU 12 (2), 3 > 2: CPU 11 (3). Loads {10},
        // CPU {13, 12, 11}, T = max(3, 3) = 3 = the closed-form optimum for n = 4.
        let s = alg2(&[10, 11, 12, 13], &uniform(3.0, 1.0), Alg2Rule::Paper);
        assert_eq!(
            (s.load.clone(), s.cpu.clone()),
            (vec![10], vec![13, 12, 11])
        );
        assert_eq!(s.objective_s, 3.0);
        assert_eq!(split_optimum_uniform(4, 3.0, 1.0).1, 3.0);
        // One missed expert, C_CPU < C_load: Alg. 2 loads it (3) though the CPU takes 1.
        assert_eq!(
            alg2(&[7], &uniform(3.0, 1.0), Alg2Rule::Paper).objective_s,
            3.0
        );
        // C_load = 1, C_CPU = 10, two experts: load, then 1 > 0 sends the second to the CPU:
        // 10, while loading both takes 2.
        assert_eq!(
            alg2(&[0, 1], &uniform(1.0, 10.0), Alg2Rule::Paper).objective_s,
            10.0
        );
        assert_eq!(split_optimum_uniform(2, 1.0, 10.0).1, 2.0);
    }

    #[test]
    fn earliest_finish_is_optimal_for_uniform_costs() {
        for n in 0..15 {
            let ids: Vec<u32> = (0..n).collect();
            for (a, b) in [(3.0, 1.0), (1.0, 10.0), (2.0, 2.0), (0.7, 1.3), (5.0, 0.5)] {
                let got = alg2(&ids, &uniform(a, b), Alg2Rule::EarliestFinish).objective_s;
                // Brute force over the number of loads (independent of the closed form).
                let best = (0..=n as usize)
                    .map(|m| (m as f64 * a).max((n as usize - m) as f64 * b))
                    .fold(f64::INFINITY, f64::min);
                assert!(
                    (got - best).abs() < 1e-12,
                    "n {n} a {a} b {b}: {got} vs {best}"
                );
            }
        }
    }
}
