//! ZipMoE's premises on a layer's scheduling instance (paper 003; see [`crate::tier`]).
//!
//! The model (Sec. 3, App. A-B) holds on every valid instance: one I/O thread, L decompression
//! threads and one GPU stream, chunk costs u, (rho / K) u and c, N tensors per expert,
//! negligible recovery, and L < K inside it (the proof of Thm. B.7 treats "Case I: K >= L" and
//! "Case II: K < L"). moe-opt's reading: experts whose full tensors are cached belong to the
//! layer and add GPU work only (the strict reading, Q without full experts, would exclude every
//! device preset). So no model premise can fail here.
//!
//! Regime premises (Sec. 2 and 5; both claims scale with every time, so the time premises are
//! ratios; the bands are moe-opt's readings): `threads` 3-12 (decompression beats the SSD from
//! 3 threads; devices have 6-12 cores), `compression-ratio` 0.32-0.48 (ZSTD's and LZ4HC's 68 %
//! and 74 % of a BF16 tensor whose exponent is half of it: rho = 2 s - 1), `decompress-vs-read`
//! K c / u in [2, 3] (3 threads beat reading the payload, 2 do not), `tensors-per-expert` 2 or
//! 3 (the evaluated models' experts) and `selected-experts` (decoding batches of at most 16
//! tokens: 1-64 experts of 1-16 tokens each).

use formulations::zipmoe::Instance;

use crate::tier::{Level, Premise};

/// `x` in `[lo, hi]` within a relative 1e-9 (a ratio computed at a band's end).
pub(crate) fn within(what: &str, x: f64, lo: f64, hi: f64) -> Result<(), String> {
    let t = 1e-9 * hi.abs().max(lo.abs());
    crate::tier::within(what, x, lo - t, hi + t)
        .map_err(|_| format!("{what} {x}, outside {lo}..={hi}"))
}

/// Every premise (module doc).
pub fn premises() -> Vec<Premise<Instance>> {
    type Holds = fn(&Instance) -> Result<(), String>;
    let regime = |name, place, quote, holds: Holds| {
        Premise::new(name, Level::Regime, place, quote, &[], holds)
    };
    vec![
        regime(
            "threads",
            "Sec. 2 (3 to 12 threads: moe-opt's band)",
            "mobile devices typically feature 6–12 CPU cores",
            |i| within("decompression threads", f64::from(i.threads), 3.0, 12.0),
        ),
        regime(
            "compression-ratio",
            "Sec. 2 (rho = 2 s - 1 for LZ4HC's and ZSTD's sizes s: moe-opt's reading)",
            "LZ4HC reduces model size to 74%, while ZSTD achieves 68%",
            |i| within("rho", i.compression_ratio, 0.32, 0.48),
        ),
        regime(
            "decompress-vs-read",
            "Sec. 2 (K c / u in [2, 3]: moe-opt's reading)",
            "multi-threaded decompression incurs lower latency than SSD I/O once",
            |i| {
                let kc_u = f64::from(i.shards) * i.decompress_s / i.sm_read_s;
                within("K c / u", kc_u, 2.0, 3.0)
            },
        ),
        regime(
            "tensors-per-expert",
            "Sec. 3.1; the evaluated models' experts have 2 or 3 matrices",
            "For an expert comprising N tensors",
            |i| {
                within(
                    "tensors per expert",
                    f64::from(i.tensors_per_expert),
                    2.0,
                    3.0,
                )
            },
        ),
        regime(
            "selected-experts",
            "Sec. 5 (batches of 1, 4 and 16 tokens; 1-64 experts: moe-opt's band)",
            "batch sizes of 1, 4, and 16",
            |i| {
                within("selected experts", i.experts.len() as f64, 1.0, 64.0)?;
                i.experts
                    .iter()
                    .try_for_each(|e| within("tokens of an expert", f64::from(e.tokens), 1.0, 16.0))
            },
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tier::boundary::{assert_boundaries, Boundary};
    use crate::tier::{classify, Tier};
    use crate::zipmoe::generate::{generate, GeneratorConfig, Preset};
    use formulations::zipmoe::SelectedExpert;

    #[test]
    fn the_device_presets_are_the_regime_and_tiny_is_the_model() {
        let q = generate(&GeneratorConfig::preset(Preset::QwenOrin), 0);
        let c = classify(&premises(), "zipmoe/thm31-ratio", &q);
        assert_eq!(c.tier, Tier::Regime, "{:?}", c.broken);
        let t = generate(&GeneratorConfig::preset(Preset::Tiny), 0);
        let c = classify(&premises(), "zipmoe/thm31-ratio", &t);
        assert_eq!(c.tier, Tier::Model, "{:?}", c.broken);
        // Just inside and just outside `threads`: 3, then 2.
        for (threads, tier) in [(3, Tier::Regime), (2, Tier::Model)] {
            let i = Instance {
                threads,
                ..q.clone()
            };
            assert_eq!(classify(&premises(), "zipmoe/thm31-ratio", &i).tier, tier);
        }
    }

    /// A row of `each_premise_just_inside_and_just_outside`: the Qwen-on-Orin preset changed to
    /// just inside and to just outside the premise's limit (every premise here is a regime
    /// band).
    type Row = Boundary<Instance>;

    /// `n` selected experts: the preset's first ones, then copies of its first expert under new
    /// ids.
    fn selected(i: &mut Instance, n: usize) {
        let first = i.experts[0].clone();
        i.experts.truncate(n);
        for id in 1000.. {
            if i.experts.len() >= n {
                break;
            }
            i.experts.push(SelectedExpert {
                id,
                ..first.clone()
            });
        }
    }

    #[test]
    fn each_premise_just_inside_and_just_outside() {
        let base = generate(&GeneratorConfig::preset(Preset::QwenOrin), 0);
        for claim in [
            "zipmoe/thm31-ratio",
            "zipmoe/lemmab3-lower-bound",
            "zipmoe/lemmab3-repaired",
        ] {
            let c = classify(&premises(), claim, &base);
            assert_eq!(c.tier, Tier::Regime, "{claim}: {:?}", c.broken);
        }
        let boundaries = [
            // Sec. 2: decompression beats the SSD from 3 threads: L = 3, then 2.
            Row::regime("threads", |i| i.threads = 3, |i| i.threads = 2),
            // Sec. 2: devices have 6-12 cores: L = 12, then 13.
            Row::regime("threads", |i| i.threads = 12, |i| i.threads = 13),
            // The band's lower end 0.32 = 2 x 0.66 - 1: Sec. 2's Shannon bound, 66 % of a BF16
            // tensor (ZSTD's 68 %, which the doc cites, gives 0.36); then 1e-6 below it (the
            // band's relative slack is 1e-9).
            Row::regime(
                "compression-ratio",
                |i| i.compression_ratio = 0.32,
                |i| i.compression_ratio = 0.32 * (1.0 - 1e-6),
            ),
            // Sec. 2's LZ4HC, 74 %: rho = 2 x 0.74 - 1 = 0.48, then 1e-6 above it.
            Row::regime(
                "compression-ratio",
                |i| i.compression_ratio = 0.48,
                |i| i.compression_ratio = 0.48 * (1.0 + 1e-6),
            ),
            // Sec. 2 (I): 2 threads do not beat reading the payload, K c / u >= 2: c = 2 u / K
            // from the preset's u and K = 4, then 1e-6 less.
            Row::regime(
                "decompress-vs-read",
                |i| i.decompress_s = 2.0 * i.sm_read_s / f64::from(i.shards),
                |i| i.decompress_s = 2.0 * (1.0 - 1e-6) * i.sm_read_s / f64::from(i.shards),
            ),
            // Sec. 2 (I): 3 threads do, K c / u <= 3: c = 3 u / K, then 1e-6 more.
            Row::regime(
                "decompress-vs-read",
                |i| i.decompress_s = 3.0 * i.sm_read_s / f64::from(i.shards),
                |i| i.decompress_s = 3.0 * (1.0 + 1e-6) * i.sm_read_s / f64::from(i.shards),
            ),
            // Sec. 3.1's N: Switch's 2 matrices, then 1.
            Row::regime(
                "tensors-per-expert",
                |i| i.tensors_per_expert = 2,
                |i| i.tensors_per_expert = 1,
            ),
            // Qwen's and DeepSeek's 3 matrices, then 4.
            Row::regime(
                "tensors-per-expert",
                |i| i.tensors_per_expert = 3,
                |i| i.tensors_per_expert = 4,
            ),
            // Sec. 5's batches of 16 tokens: DeepSeek-V2-Lite's 64 experts at most, then 65.
            Row::regime("selected-experts", |i| selected(i, 64), |i| selected(i, 65)),
            // One selected expert, then none (the validator refuses an empty layer too).
            Row::regime("selected-experts", |i| selected(i, 1), |i| selected(i, 0)),
            // Sec. 5's batch of 16: 16 tokens of one expert, then 17.
            Row::regime(
                "selected-experts",
                |i| i.experts[0].tokens = 16,
                |i| i.experts[0].tokens = 17,
            ),
            // Batch 1: 1 token of one expert, then 0.
            Row::regime(
                "selected-experts",
                |i| i.experts[0].tokens = 1,
                |i| i.experts[0].tokens = 0,
            ),
        ];
        assert_boundaries(&premises(), "zipmoe/thm31-ratio", &base, &boundaries, |i| {
            formulations::zipmoe::validate::validate(i).expect("valid inside")
        });
    }
}
