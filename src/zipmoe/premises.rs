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
    use crate::tier::{classify, Tier};
    use crate::zipmoe::generate::{generate, GeneratorConfig, Preset};

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
}
