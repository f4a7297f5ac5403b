//! Validation of a ZipMoE layer instance. Every rule names the field it checks.
//!
//! `problem` must be `zipmoe`; N, K, L at least 1 and at most [`MAX_TENSORS`], [`MAX_SHARDS`],
//! [`MAX_THREADS`]; rho in (0, 1]; u and c positive and finite; at least one expert and at
//! most [`MAX_EXPERTS`], with distinct ids, p_n finite and >= 0. The shard operations, experts
//! x tensors x shards, are at most [`MAX_SHARD_OPS`] (the limits of the factors allow 2^26).

use std::collections::HashSet;

use super::model::Instance;
use crate::error::{at_most, fail, positive, Check};
use crate::problem::ProblemKind;

/// Most tensors per expert.
pub const MAX_TENSORS: u32 = 64;
/// Most exponent shards per tensor.
pub const MAX_SHARDS: u32 = 256;
/// Most decompression threads.
pub const MAX_THREADS: u32 = 1024;
/// Most selected experts in a layer.
pub const MAX_EXPERTS: usize = 4096;
/// Most shard operations of a layer, experts x tensors x shards: the scheduler allocates an
/// E-chunk read and a decompression, each with its Gantt row, per shard of every task (a
/// method's run peaks near 400 MB at the limit; the presets have at most 600).
pub const MAX_SHARD_OPS: u64 = 1 << 16;

fn count(field: &str, x: u32, max: u32) -> Check {
    if (1..=max).contains(&x) {
        Ok(())
    } else {
        fail(field, format!("must be in 1..={max}, got {x}"))
    }
}

/// Checks every rule; the first violation is returned.
pub fn validate(instance: &Instance) -> Check {
    if instance.problem != ProblemKind::Zipmoe {
        return fail(
            "problem",
            format!("must be \"zipmoe\", got \"{}\"", instance.problem.name()),
        );
    }
    count(
        "tensors_per_expert",
        instance.tensors_per_expert,
        MAX_TENSORS,
    )?;
    count("shards", instance.shards, MAX_SHARDS)?;
    count("threads", instance.threads, MAX_THREADS)?;
    let rho = instance.compression_ratio;
    if !(rho.is_finite() && rho > 0.0 && rho <= 1.0) {
        return fail("compression_ratio", format!("must be in (0, 1], got {rho}"));
    }
    positive("sm_read_s", instance.sm_read_s)?;
    positive("decompress_s", instance.decompress_s)?;
    if instance.experts.is_empty() {
        return fail("experts", "at least one selected expert is required");
    }
    if instance.experts.len() > MAX_EXPERTS {
        return fail(
            "experts",
            format!(
                "{} experts; at most {MAX_EXPERTS} are supported",
                instance.experts.len()
            ),
        );
    }
    // Each factor is bounded above (2^12 x 2^6 x 2^8), so the product does not overflow.
    let ops = instance.experts.len() as u64
        * u64::from(instance.tensors_per_expert)
        * u64::from(instance.shards);
    at_most(
        "shards",
        "shard operations (experts x tensors_per_expert x shards)",
        ops,
        MAX_SHARD_OPS,
        "formulations::zipmoe::validate::MAX_SHARD_OPS",
    )?;
    let mut ids = HashSet::new();
    for (i, e) in instance.experts.iter().enumerate() {
        if !ids.insert(e.id) {
            return fail(
                format!("experts[{i}].id"),
                format!("expert id {} is listed twice", e.id),
            );
        }
        if !(e.gpu_s.is_finite() && e.gpu_s >= 0.0) {
            return fail(
                format!("experts[{i}].gpu_s"),
                format!("must be finite and >= 0, got {}", e.gpu_s),
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zipmoe::model::{CompressionState, SelectedExpert};

    fn valid() -> Instance {
        Instance {
            problem: ProblemKind::Zipmoe,
            name: "v".into(),
            tensors_per_expert: 1,
            shards: 2,
            compression_ratio: 0.5,
            sm_read_s: 1.0,
            decompress_s: 1.0,
            threads: 2,
            experts: vec![
                SelectedExpert {
                    id: 0,
                    tokens: 1,
                    gpu_s: 1.0,
                    state: CompressionState::Missed,
                },
                SelectedExpert {
                    id: 1,
                    tokens: 1,
                    gpu_s: 0.0,
                    state: CompressionState::Full,
                },
            ],
        }
    }

    #[test]
    fn each_rule_names_its_field() {
        assert_eq!(validate(&valid()), Ok(()));
        type Mutation = Box<dyn Fn(&mut Instance)>;
        let cases: Vec<(Mutation, &str)> = vec![
            (Box::new(|i| i.problem = ProblemKind::Prism), "problem"),
            (Box::new(|i| i.shards = 0), "shards"),
            (Box::new(|i| i.threads = 0), "threads"),
            (
                Box::new(|i| i.tensors_per_expert = 65),
                "tensors_per_expert",
            ),
            (Box::new(|i| i.compression_ratio = 1.5), "compression_ratio"),
            (Box::new(|i| i.sm_read_s = f64::NAN), "sm_read_s"),
            (Box::new(|i| i.decompress_s = 0.0), "decompress_s"),
            (Box::new(|i| i.experts.clear()), "experts"),
            (Box::new(|i| i.experts[1].id = 0), "experts[1].id"),
            (Box::new(|i| i.experts[0].gpu_s = -1.0), "experts[0].gpu_s"),
            // 5 x 64 x 256 > 2^16, each factor within its own limit.
            (Box::new(|i| *i = widest(5)), "shards"),
        ];
        for (mutate, field) in cases {
            let mut i = valid();
            mutate(&mut i);
            assert_eq!(validate(&i).unwrap_err().field, field);
        }
    }

    /// The valid instance with `experts` copies of its first expert, each of the most tensors
    /// and shards.
    fn widest(experts: u32) -> Instance {
        let mut i = valid();
        i.tensors_per_expert = MAX_TENSORS;
        i.shards = MAX_SHARDS;
        let e = i.experts[0].clone();
        i.experts = (0..experts)
            .map(|id| SelectedExpert { id, ..e.clone() })
            .collect();
        i
    }

    #[test]
    fn shard_operations_at_the_limit_pass_and_one_expert_more_fails() {
        // 4 x 64 x 256 = 2^16 exactly.
        let mut i = widest(4);
        assert_eq!(validate(&i), Ok(()));
        let e = i.experts[0].clone();
        i.experts.push(SelectedExpert { id: 4, ..e });
        let err = validate(&i).unwrap_err();
        assert_eq!(err.field, "shards");
        assert!(
            err.reason
                .starts_with("81920 shard operations (experts x tensors_per_expert x shards) exceeds the limit of 65536"),
            "{}",
            err.reason
        );
    }
}
