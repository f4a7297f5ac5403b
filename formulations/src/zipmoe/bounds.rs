//! Lemma B.3's lower bound max{I, C/L, P, Z} and Def. B.2's critical paths z_j, as the paper
//! writes them (paper 003, App. B). They are hypotheses: the claims registry compares them with
//! proved optima.
//!
//! * z_j = rho u [tau_j in {M, S}] + max{K c / min{K, L}, u [tau_j in {M, E}]} + p_j  (3),
//!   with p_j read as p_{n(j)}, the GPU time of task j's expert (its execution follows the
//!   recovery of j). Note that (3) charges all K E-chunk reads before the first decompression:
//!   when L < K and the reads overlap the decompressions, a schedule can beat z_j (e.g. one
//!   SM-cached tensor, K = 2, L = 1, rho u = 1, c = 1, p = 0.5: reads end at 0.5 and 1,
//!   decompressions run [0.5, 1.5] and [1.5, 2.5], the layer ends at 3 < z_j = 3.5).
//! * v_j = (1 + rho) u [M] + u [E] + rho u [S]; I = sum_j v_j; C = sum_j K c; P = sum of p_n;
//!   Z = max_j z_j. Lemma B.3 sums P over Q's tasks as p_{n(j)} / |{i: n(i) = n(j)}|, i.e.
//!   p_n once per non-full expert; full experts (not in Q) also occupy the GPU, so here P adds
//!   their p_n too (a larger, still valid GPU-work term; with no full expert it is the
//!   paper's P).

use serde::Serialize;

use super::model::{CompressionState, Instance};

/// The terms of Lemma B.3 (4), seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LowerBound {
    /// I: total I/O work.
    pub io_s: f64,
    /// C / L: total decompression work over the threads.
    pub compute_per_thread_s: f64,
    /// P: total GPU work.
    pub token_s: f64,
    /// Z: the longest critical path (3) over the tasks.
    pub critical_path_s: f64,
    /// max{I, C/L, P, Z}.
    pub value_s: f64,
}

/// z_j of Def. B.2 (3) for a task of the given state whose expert has GPU time `gpu_s`.
/// Full experts have no reconstruction: their "critical path" is p_n.
pub fn critical_path(instance: &Instance, state: CompressionState, gpu_s: f64) -> f64 {
    if !state.decompresses() {
        return gpu_s;
    }
    let k = f64::from(instance.shards);
    let parallel = f64::from(instance.shards.min(instance.threads));
    let rho_u = instance.compression_ratio * instance.sm_read_s;
    let e = if state.reads_e() { rho_u } else { 0.0 };
    let sm = if state.reads_sm() {
        instance.sm_read_s
    } else {
        0.0
    };
    e + (k * instance.decompress_s / parallel).max(sm) + gpu_s
}

/// Z = max_j z_j over the reconstruction tasks Q (0 when Q is empty).
pub fn longest_critical_path(instance: &Instance) -> f64 {
    instance
        .experts
        .iter()
        .filter(|e| e.state.decompresses())
        .map(|e| critical_path(instance, e.state, e.gpu_s))
        .fold(0.0, f64::max)
}

/// Lemma B.3 (4).
pub fn lower_bound(instance: &Instance) -> LowerBound {
    let n = f64::from(instance.tensors_per_expert);
    let mut io = 0.0;
    let mut compute = 0.0;
    let mut token = 0.0;
    for e in &instance.experts {
        token += e.gpu_s;
        if e.state.decompresses() {
            io += n * instance.io_work_s(e.state);
            compute += n * f64::from(instance.shards) * instance.decompress_s;
        }
    }
    let compute_per_thread = compute / f64::from(instance.threads);
    let z = longest_critical_path(instance);
    LowerBound {
        io_s: io,
        compute_per_thread_s: compute_per_thread,
        token_s: token,
        critical_path_s: z,
        value_s: io.max(compute_per_thread).max(token).max(z),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instance(experts: &[(CompressionState, f64)], threads: u32) -> Instance {
        crate::zipmoe::model::test_layer(experts, threads)
    }

    #[test]
    fn lemma_b3_terms_by_hand() {
        // u = 2, rho u = 1, K c = 2. M (p 1): z = 1 + max(2/1, 2) + 1 = 4; S (p 2): 1 + 2 + 2 = 5.
        // I = 3 + 1 = 4, C / L = 4 / 1, P = 3 (+ the full expert's 0.5 = 3.5), Z = 5.
        let i = instance(
            &[
                (CompressionState::Missed, 1.0),
                (CompressionState::SmCached, 2.0),
                (CompressionState::Full, 0.5),
            ],
            1,
        );
        let lb = lower_bound(&i);
        assert_eq!(
            (
                lb.io_s,
                lb.compute_per_thread_s,
                lb.token_s,
                lb.critical_path_s,
                lb.value_s
            ),
            (4.0, 4.0, 3.5, 5.0, 5.0)
        );
        // L = 2: K c / min(K, L) = 1, so M: 1 + max(1, 2) + 1 = 4, E: max(1, 2) + p.
        let i = instance(
            &[
                (CompressionState::ECached, 1.0),
                (CompressionState::Compressed, 1.0),
            ],
            2,
        );
        assert_eq!(critical_path(&i, CompressionState::Missed, 1.0), 4.0);
        assert_eq!(critical_path(&i, CompressionState::ECached, 1.0), 3.0);
        assert_eq!(critical_path(&i, CompressionState::Compressed, 1.0), 2.0);
        assert_eq!(critical_path(&i, CompressionState::Full, 1.0), 1.0);
    }
}
