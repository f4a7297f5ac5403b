//! ZipMoE's parametric families (see [`crate::parametric`]).
//!
//! ## `lemmab3-shards`: Def. B.2's critical path against the optimum
//!
//! Lemma B.3 (4) claims OPT >= max{I, C/L, P, Z}, with Z = max_j z_j and Def. B.2 (3)
//! z_j = rho u [tau_j in {M, S}] + max{K c / min{K, L}, u [tau_j in {M, E}]} + p_j. For an
//! SM-expert, (3) charges all K E-chunk reads (rho u) before all its decompressions, but each
//! decompression waits for its own E-chunk only, so reads and decompressions overlap: with one
//! thread and K shards the overlap saves almost half of z_j.
//!
//! **Construction** (X = K, an integer, 2 <= K <= 256). One selected expert, SM-cached (its
//! SM-chunk in memory, its K E-chunks on the SSD), N = 1 tensor, one token, L = 1
//! decompression thread. The device's figures are the Orin presets' (rho = 0.36, u the read of a
//! Qwen1.5-MoE SM-chunk, 2048 x 1408 bytes at 3.5 GB/s: 0.824 ms; `generate::orin_device`),
//! and the per-chunk times are equal: c = p = rho u / K =: t, the E-chunk read of Sec. 3.3
//! (t = 74 us at K = 4, against the presets' 86 us GPU time of one token).
//!
//! **Lemma B.3's terms.** One task j (state S): I = v_j = rho u = K t; C / L = K c = K t;
//! P = p = t; z_j = rho u + max{K c / min{K, 1}, 0} + p = K t + K t + t = (2K + 1) t (S reads
//! no SM-chunk). So LB = Z = (2K + 1) t.
//!
//! **Optimum.** Lower bound: the I/O thread reads one chunk at a time, so no E-chunk read ends
//! before t; every decompression follows its own E-chunk's read, so none starts before t; the
//! one thread then needs K c = K t for the K of them, and the expert's execution p = t follows
//! the recovery, which follows every decompression: OPT >= t + K t + t = (K + 2) t. (This is
//! the repaired chunk-level critical path z'_n of formulations::zipmoe::bounds, whose
//! D_n = max_i (i t + (K - i + 1) t) = (K + 1) t, so Lemma B.3 repaired is tight here.)
//! Schedule: read E-chunk k in [(k - 1) t, k t], decompress it in [k t, (k + 1) t] (the thread
//! is free then: shard k - 1's decompression ends at k t), execute in [(K + 1) t, (K + 2) t]:
//! OPT = (K + 2) t. The check's reference is the exhaustive search of `algorithms::exhaustive`,
//! a proved optimum: one task has a single (I/O order, decompression order) pair (its shards go
//! in order), so the search is instant for every K.
//!
//! **Measure.** ratio = LB / OPT = (2K + 1) / (K + 2), increasing in K (its derivative is
//! 3 / (K + 2)^2), above the claimed 1 for every K >= 2 (K = 1 gives 3/3: z_j is exact) and
//! tending to 2. No instance of this shape does better: with a = rho u and b = K c the ratio
//! is (a + b + p) / (max(a/K + b, a + b/K) + p) < 2, since max(a/K + b, a + b/K) >= (a + b) / 2,
//! and it tends to 2 only as a / b -> 1, K -> infinity and p / a -> 0, which this family does
//! (a = b = K t, p = t).
//!
//! **Premises.** Every valid instance is inside the model (`premises`): the tier is `model`.
//! It is not `regime`: L = 1 (`threads` 3-12), N = 1 (`tensors-per-expert` 2-3), K c / u =
//! rho = 0.36 (`decompress-vs-read` [2, 3]: equal per-chunk read and decompression times make
//! decompression faster than Sec. 2.3 measures); L < K is the paper's Case I of Thm. B.7.

use formulations::zipmoe::validate::MAX_SHARDS;
use formulations::zipmoe::{CompressionState, Instance, SelectedExpert};
use formulations::{Error, ProblemKind};

use super::generate::orin_device;
use crate::generate::Made;
use crate::parametric::{integer_param, ParametricFamily};

/// ZipMoE's families, in claim order.
pub fn families() -> Vec<ParametricFamily> {
    vec![LEMMAB3_SHARDS]
}

/// The family of the module doc.
pub const LEMMAB3_SHARDS: ParametricFamily = ParametricFamily {
    name: "lemmab3-shards",
    claim: "zipmoe/lemmab3-lower-bound",
    about: "one SM-cached expert, 1 tensor of K = X exponent shards, L = 1 thread, E-chunk \
            read = decompression = GPU time t: Z = (2X + 1) t, OPT = (X + 2) t",
    param: "X: the exponent shards K per tensor, an integer from 2 to 256",
    measure: "ratio",
    closed_form: "(2X + 1)/(X + 2) -> 2",
    limit: 2.0,
    claimed: 1.0,
    params: &[2.0, 3.0, 4.0, 6.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0],
    expected: |x| (2.0 * x + 1.0) / (x + 2.0),
    build: lemmab3_shards,
};

/// Least X: at K = 1, z_j = t + c + p is OPT itself.
const LEAST_X: u64 = 2;

/// The instance at X (module doc).
fn lemmab3_shards(x: f64) -> Result<Made, Error> {
    let k = integer_param(LEMMAB3_SHARDS.name, x, LEAST_X, u64::from(MAX_SHARDS))? as u32;
    let device = orin_device(1, 2048.0 * 1408.0);
    // t = rho u / K, computed as `Instance::e_read_s` computes the E-chunk read.
    let t = device.compression_ratio * device.sm_read_s / f64::from(k);
    let instance = Instance {
        problem: ProblemKind::Zipmoe,
        name: format!("family-lemmab3-shards-{k}"),
        tensors_per_expert: 1,
        shards: k,
        compression_ratio: device.compression_ratio,
        sm_read_s: device.sm_read_s,
        decompress_s: t,
        threads: 1,
        experts: vec![SelectedExpert {
            id: 0,
            tokens: 1,
            gpu_s: t,
            state: CompressionState::SmCached,
        }],
    };
    Ok(Made::new(
        &instance,
        format!("1 SM-cached expert, N = 1, K = {k}, L = 1, t = {t:.6e} s"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::Certificate;
    use crate::parametric::checked_as_proved;
    use crate::tier::Tier;

    #[test]
    fn lemmab3_shards_breaks_the_bound_as_proved() {
        for (x, check, classified) in
            checked_as_proved(&LEMMAB3_SHARDS, &[Box::new(crate::zipmoe::claims::table())])
        {
            assert_eq!(check.certificate, Some(Certificate::Optimum), "X = {x}");
            assert_eq!(
                check.solver_status.as_deref(),
                Some("exhaustive"),
                "X = {x}"
            );
            assert_eq!(classified.tier, Tier::Model, "X = {x}");
        }
    }

    #[test]
    fn lemmab3_shards_closed_form_by_hand() {
        // X = 5: Z = 11 t, OPT = 7 t: 11/7.
        assert_eq!((LEMMAB3_SHARDS.expected)(5.0), 1.5714285714285714);
    }

    #[test]
    fn lemmab3_shards_refuses_x_outside_its_domain() {
        for x in [1.0, 2.5, 257.0, f64::NAN, f64::INFINITY] {
            assert!(LEMMAB3_SHARDS.make(x).is_err(), "X = {x}");
        }
        assert!(LEMMAB3_SHARDS.make(256.0).is_ok());
    }
}
