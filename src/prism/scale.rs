//! How large a Prism instance does HiGHS prove optimal within a time limit?
//!
//! [`milp_scale`] generates one instance per configuration (growing), solves the MILP of (2)
//! with the given limit and stops after the first size not proved optimal. [`gpu_ladder`] is
//! the ladder of Section IV-C's scaling experiment (4 to 256 GPUs) on DeepSeek-V2-Lite's shape
//! (26 x 64, Top-6), servers of 2 GPUs each, every GPU holding 744 / 1664 of the experts as in
//! the `testbed-deepseek` preset. The bench `benches/prism.rs` runs it when `PRISM_MILP_SCALE`
//! is set.

use formulations::milp::{MilpStatus, SolveOptions};
use formulations::prism::milp::PrismMilp;
use formulations::Error;
use serde::Serialize;

use super::generate::{try_generate, Between, GeneratorConfig, MemoryConfig, Preset, ServerShape};

/// One solved size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScaleRow {
    /// Instance name.
    pub name: String,
    /// N.
    pub servers: usize,
    /// sum_n G_n.
    pub gpus: usize,
    /// L.
    pub layers: u32,
    /// E.
    pub experts_per_layer: u32,
    /// Binary variables of the MILP.
    pub binaries: usize,
    /// Rows of the MILP.
    pub rows: usize,
    /// How the solve ended.
    pub status: MilpStatus,
    /// Incumbent objective (expected remote invocations).
    pub objective: Option<f64>,
    /// Gap at the end.
    pub gap: Option<f64>,
    /// Wall-clock seconds of the solve.
    pub solve_time_s: f64,
}

/// The `testbed-deepseek` configuration with `gpus` GPUs in servers of 2 and each GPU holding
/// 744 / 1664 of the experts (the preset's ratio).
pub fn deepseek_with_gpus(gpus: u32) -> GeneratorConfig {
    let mut c = GeneratorConfig::preset(Preset::TestbedDeepseek);
    c.name = format!("deepseek-{gpus}gpu");
    c.servers = ServerShape::Fixed {
        gpus: vec![2; (gpus / 2).max(1) as usize],
    };
    c.memory = MemoryConfig::ModelFraction(Between::exactly(744.0 / 1664.0));
    c
}

/// 4, 8, ..., 256 GPUs ([`deepseek_with_gpus`]).
pub fn gpu_ladder() -> Vec<GeneratorConfig> {
    (2..=8).map(|p| deepseek_with_gpus(1 << p)).collect()
}

/// Solves each configuration's instance for `seed` in order and stops after the first that is
/// not proved optimal within `time_limit_s`.
pub fn milp_scale(
    configs: &[GeneratorConfig],
    seed: u64,
    time_limit_s: f64,
) -> Result<Vec<ScaleRow>, Error> {
    let mut rows = Vec::new();
    for c in configs {
        let inst = try_generate(c, seed)?;
        let model = PrismMilp::build(&inst);
        let options = SolveOptions {
            time_limit_s: Some(time_limit_s),
            ..SolveOptions::default()
        };
        let exact = model.solve(&inst, &options, None)?;
        let s = exact.solution;
        let proved = s.status == MilpStatus::Optimal;
        rows.push(ScaleRow {
            name: inst.name.clone(),
            servers: inst.servers.len(),
            gpus: inst.gpu_count(),
            layers: inst.model.layers,
            experts_per_layer: inst.model.experts_per_layer,
            binaries: model.milp.num_integers(),
            rows: model.milp.num_rows(),
            status: s.status,
            objective: s.objective,
            gap: s.gap,
            solve_time_s: s.solve_time_s,
        });
        if !proved {
            break;
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ladder_doubles_gpus_and_keeps_the_memory_ratio() {
        let ladder = gpu_ladder();
        assert_eq!(ladder.len(), 7);
        let inst = try_generate(&ladder[0], 0).unwrap();
        // 4 GPUs, 2 servers; round(744 / 1664 x 1664) = 744 experts a GPU.
        assert_eq!((inst.gpu_count(), inst.servers.len()), (4, 2));
        let per_gpu = inst.servers[0].gpus[0].memory_bytes / inst.model.expert_bytes[0];
        assert_eq!(per_gpu, 744);
    }

    #[test]
    fn scale_reports_a_proved_tiny_instance() {
        let rows = milp_scale(&[GeneratorConfig::preset(Preset::Tiny)], 0, 60.0).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].status, MilpStatus::Optimal);
        assert!(rows[0].binaries > 0);
    }
}
