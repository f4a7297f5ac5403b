//! Validation of an SMoE layer instance. Every rule names the field it checks.
//!
//! `problem` must be `smoe`; 2 <= E <= [`MAX_EXPERTS`]; 1 <= k < E; alpha in [0, 1]; at least
//! one token and at most [`MAX_TOKENS`], each with E finite non-negative scores; G distinct ids
//! below E; C_load and C_CPU positive and finite, GPU time finite and >= 0, per-expert vectors
//! of length E.

use super::model::{Costs, Instance};
use crate::error::{fail, Check};
use crate::problem::ProblemKind;

/// Most experts in a layer.
pub const MAX_EXPERTS: usize = 4096;
/// Most tokens in a batch.
pub const MAX_TOKENS: usize = 4096;

fn cost(field: &str, x: f64, zero_ok: bool) -> Check {
    if x.is_finite() && (x > 0.0 || (zero_ok && x == 0.0)) {
        Ok(())
    } else if zero_ok {
        fail(field, format!("must be finite and >= 0, got {x}"))
    } else {
        fail(field, format!("must be positive and finite, got {x}"))
    }
}

/// Checks every rule; the first violation is returned.
pub fn validate(instance: &Instance) -> Check {
    if instance.problem != ProblemKind::Smoe {
        return fail(
            "problem",
            format!("must be \"smoe\", got \"{}\"", instance.problem.name()),
        );
    }
    let e = instance.experts;
    if !(2..=MAX_EXPERTS).contains(&e) {
        return fail("experts", format!("must be in 2..={MAX_EXPERTS}, got {e}"));
    }
    if !(1..e).contains(&instance.top_k) {
        return fail(
            "top_k",
            format!(
                "must be in 1..{e} (S_(k+1) must exist), got {}",
                instance.top_k
            ),
        );
    }
    let a = instance.alpha;
    if !(a.is_finite() && (0.0..=1.0).contains(&a)) {
        return fail("alpha", format!("must be in [0, 1], got {a}"));
    }
    if instance.scores.is_empty() || instance.scores.len() > MAX_TOKENS {
        return fail(
            "scores",
            format!(
                "must hold 1..={MAX_TOKENS} tokens, got {}",
                instance.scores.len()
            ),
        );
    }
    for (t, row) in instance.scores.iter().enumerate() {
        if row.len() != e {
            return fail(
                format!("scores[{t}]"),
                format!("must have E = {e} scores, got {}", row.len()),
            );
        }
        if let Some(i) = row.iter().position(|s| !(s.is_finite() && *s >= 0.0)) {
            return fail(
                format!("scores[{t}][{i}]"),
                format!("must be finite and >= 0, got {}", row[i]),
            );
        }
    }
    let mut seen = vec![false; e];
    for (i, &g) in instance.gpu_cache.iter().enumerate() {
        let field = format!("gpu_cache[{i}]");
        if g as usize >= e {
            return fail(field, format!("expert {g} is not below E = {e}"));
        }
        if std::mem::replace(&mut seen[g as usize], true) {
            return fail(field, format!("expert {g} is listed twice"));
        }
    }
    match &instance.costs {
        Costs::Uniform {
            load_s,
            cpu_s,
            gpu_s,
        } => {
            cost("costs.load_s", *load_s, false)?;
            cost("costs.cpu_s", *cpu_s, false)?;
            cost("costs.gpu_s", *gpu_s, true)?;
        }
        Costs::PerExpert {
            load_s,
            cpu_s,
            gpu_s,
        } => {
            for (name, v, zero_ok) in [
                ("load_s", load_s, false),
                ("cpu_s", cpu_s, false),
                ("gpu_s", gpu_s, true),
            ] {
                if v.len() != e {
                    return fail(
                        format!("costs.{name}"),
                        format!("must have E = {e} entries, got {}", v.len()),
                    );
                }
                for (i, &x) in v.iter().enumerate() {
                    cost(&format!("costs.{name}[{i}]"), x, zero_ok)?;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Instance {
        Instance {
            problem: ProblemKind::Smoe,
            name: "v".into(),
            experts: 4,
            top_k: 2,
            alpha: 0.3,
            scores: vec![vec![0.4, 0.3, 0.2, 0.1]],
            gpu_cache: vec![1, 3],
            costs: Costs::Uniform {
                load_s: 3.0,
                cpu_s: 1.0,
                gpu_s: 0.1,
            },
        }
    }

    #[test]
    fn each_rule_names_its_field() {
        assert!(validate(&base()).is_ok());
        type Edit = Box<dyn Fn(&mut Instance)>;
        let cases: Vec<(Edit, &str)> = vec![
            (Box::new(|i| i.problem = ProblemKind::Zipmoe), "problem"),
            (Box::new(|i| i.top_k = 4), "top_k"),
            (Box::new(|i| i.alpha = 1.5), "alpha"),
            (
                Box::new(|i| i.scores[0].pop().map(|_| ()).unwrap()),
                "scores[0]",
            ),
            (Box::new(|i| i.scores[0][2] = -0.1), "scores[0][2]"),
            (Box::new(|i| i.gpu_cache.push(1)), "gpu_cache[2]"),
            (Box::new(|i| i.gpu_cache.push(4)), "gpu_cache[2]"),
            (
                Box::new(|i| {
                    i.costs = Costs::PerExpert {
                        load_s: vec![1.0; 4],
                        cpu_s: vec![1.0, 0.0, 1.0, 1.0],
                        gpu_s: vec![0.0; 4],
                    }
                }),
                "costs.cpu_s[1]",
            ),
        ];
        for (edit, field) in cases {
            let mut i = base();
            edit(&mut i);
            assert_eq!(validate(&i).unwrap_err().field, field);
        }
    }
}
