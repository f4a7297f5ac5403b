//! Validation of a trace. Every rule names the field it checks.
//!
//! `problem` must be `cache-trace`; E in 1..=[`MAX_EXPERTS`], K in 1..=E, layers in
//! 1..=[`MAX_LAYERS`], at least one token. Every token has one routing per layer, with exactly K distinct experts below
//! E; tokens of a sequence come in increasing `token` order. Weights, where given, are K finite
//! probabilities; logits, where given, are E finite numbers whose top K (ties allowed) are the
//! selected experts, in rank order when the trace is `ranked`.

use std::collections::HashMap;

use super::model::Trace;
use crate::error::ValidationError;
use crate::error::{fail, Check};
use crate::problem::ProblemKind;

/// Most experts per layer.
pub const MAX_EXPERTS: usize = 1 << 16;
/// Most MoE layers (public MoE models have at most about 60); the token-log importer refuses a
/// `layer` at or above it before allocating a token's layers.
pub const MAX_LAYERS: usize = 1024;

/// Checks every rule of the module doc.
pub fn validate(trace: &Trace) -> Check {
    if trace.problem != ProblemKind::CacheTrace {
        return fail(
            "problem",
            format!("must be \"cache-trace\", got \"{}\"", trace.problem.name()),
        );
    }
    if !(1..=MAX_EXPERTS).contains(&trace.experts) {
        return fail(
            "experts",
            format!("must be in 1..={MAX_EXPERTS}, got {}", trace.experts),
        );
    }
    if !(1..=trace.experts).contains(&trace.top_k) {
        return fail(
            "top_k",
            format!(
                "must be in 1..={} (experts), got {}",
                trace.experts, trace.top_k
            ),
        );
    }
    if trace.layers == 0 {
        return fail("layers", "must be at least 1");
    }
    crate::error::at_most(
        "layers",
        "layers",
        trace.layers as u64,
        MAX_LAYERS as u64,
        "formulations::cache::validate::MAX_LAYERS",
    )?;
    if trace.tokens.is_empty() {
        return fail("tokens", "must not be empty");
    }
    let shape = Shape {
        experts: trace.experts,
        top_k: trace.top_k,
        ranked: trace.ranked,
    };
    let mut seen = vec![false; trace.experts];
    let mut last: HashMap<u32, u32> = HashMap::new();
    for (t, token) in trace.tokens.iter().enumerate() {
        if let Some(&prev) = last.get(&token.seq) {
            if token.token <= prev {
                return fail(
                    format!("tokens[{t}].token"),
                    format!(
                        "sequence {} must be in increasing token order: {} follows {prev}",
                        token.seq, token.token
                    ),
                );
            }
        }
        last.insert(token.seq, token.token);
        if token.layers.len() != trace.layers {
            return fail(
                format!("tokens[{t}].layers"),
                format!(
                    "must have {} routings (layers), got {}",
                    trace.layers,
                    token.layers.len()
                ),
            );
        }
        for (l, routing) in token.layers.iter().enumerate() {
            let scores = Scores {
                weights: routing.weights.as_deref(),
                logits: routing.logits.as_deref(),
            };
            routing_rules(&shape, &routing.experts, scores, &mut seen).map_err(|e| e.at(t, l))?;
        }
    }
    Ok(())
}

/// What the rules of one routing need to know of its trace.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// E.
    pub experts: usize,
    /// K.
    pub top_k: usize,
    /// Whether the trace is `ranked`.
    pub ranked: bool,
}

/// A routing's weights and logits, where given.
#[derive(Debug, Clone, Copy, Default)]
pub struct Scores<'a> {
    /// The selected experts' weights.
    pub weights: Option<&'a [f32]>,
    /// The logits over all E experts.
    pub logits: Option<&'a [f32]>,
}

impl ValidationError {
    /// Puts a routing's failure at token `t`, layer `l`.
    pub fn at(self, t: usize, l: usize) -> ValidationError {
        ValidationError::new(
            format!("tokens[{t}].layers[{l}].{}", self.field),
            self.reason,
        )
    }
}

/// The rules of one routing (`experts`, with its `scores`) of a trace of `shape`. `seen` is
/// scratch space of E flags, all false, and left so: one buffer serves every routing.
pub fn routing_rules(shape: &Shape, experts: &[u32], scores: Scores, seen: &mut [bool]) -> Check {
    let check = selected_rules(shape, experts, scores, seen);
    for &x in experts {
        if let Some(s) = seen.get_mut(x as usize) {
            *s = false;
        }
    }
    check
}

fn selected_rules(shape: &Shape, experts: &[u32], scores: Scores, seen: &mut [bool]) -> Check {
    let (e, k) = (shape.experts, shape.top_k);
    if experts.len() != k {
        return fail(
            "experts",
            format!("must list top_k = {k} experts, got {}", experts.len()),
        );
    }
    for (i, &x) in experts.iter().enumerate() {
        if x as usize >= e {
            return fail(
                format!("experts[{i}]"),
                format!("must be below experts = {e}, got {x}"),
            );
        }
        if std::mem::replace(&mut seen[x as usize], true) {
            return fail(
                format!("experts[{i}]"),
                format!("expert {x} is listed twice"),
            );
        }
    }
    if let Some(w) = scores.weights {
        if w.len() != k {
            return fail(
                "weights",
                format!("must have {k} entries (one per expert), got {}", w.len()),
            );
        }
        if let Some(i) = w
            .iter()
            .position(|x| !(x.is_finite() && (0.0..=1.0).contains(x)))
        {
            return fail(
                format!("weights[{i}]"),
                format!("must be a probability, got {}", w[i]),
            );
        }
    }
    if let Some(z) = scores.logits {
        if z.len() != e {
            return fail(
                "logits",
                format!("must have {e} entries (experts), got {}", z.len()),
            );
        }
        if let Some(i) = z.iter().position(|x| !x.is_finite()) {
            return fail(
                format!("logits[{i}]"),
                format!("must be finite, got {}", z[i]),
            );
        }
        let lowest_selected = experts
            .iter()
            .map(|&x| z[x as usize])
            .fold(f32::INFINITY, f32::min);
        if let Some(x) = (0..e).find(|&x| !seen[x] && z[x] > lowest_selected) {
            return fail(
                "experts",
                format!(
                    "must be the top {k} of the logits, but unselected expert {x} scores higher"
                ),
            );
        }
        if shape.ranked {
            if let Some(i) = (1..k).find(|&i| z[experts[i] as usize] > z[experts[i - 1] as usize]) {
                return fail(
                    format!("experts[{i}]"),
                    "must follow the logits' rank order (the trace is ranked)",
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::model::{one_token_trace, Routing};

    fn trace() -> Trace {
        one_token_trace(
            4,
            2,
            vec![Routing {
                experts: vec![2, 0],
                weights: None,
                logits: Some(vec![1.0, -1.0, 3.0, 0.0]),
            }],
        )
    }

    fn field(t: &Trace) -> String {
        validate(t).unwrap_err().field
    }

    #[test]
    fn a_valid_trace_passes_and_each_rule_names_its_field() {
        validate(&trace()).unwrap();
        let mut t = trace();
        t.tokens[0].layers[0].experts = vec![2, 2];
        assert_eq!(field(&t), "tokens[0].layers[0].experts[1]");
        let mut t = trace();
        t.tokens[0].layers[0].experts = vec![0, 2];
        assert_eq!(field(&t), "tokens[0].layers[0].experts[1]");
        let mut t = trace();
        t.tokens[0].layers[0].experts = vec![2, 3];
        assert_eq!(field(&t), "tokens[0].layers[0].experts");
        let mut t = trace();
        t.tokens[0].layers[0].experts = vec![2, 7];
        assert_eq!(field(&t), "tokens[0].layers[0].experts[1]");
        let mut t = trace();
        t.top_k = 5;
        assert_eq!(field(&t), "top_k");
        let mut t = trace();
        t.tokens.push(t.tokens[0].clone());
        assert_eq!(field(&t), "tokens[1].token");
        let mut t = trace();
        t.tokens[0].layers[0].weights = Some(vec![0.5, 1.5]);
        assert_eq!(field(&t), "tokens[0].layers[0].weights[1]");
        let mut t = trace();
        t.problem = ProblemKind::Prism;
        assert_eq!(field(&t), "problem");
        // The layer count is checked before the tokens' routings are.
        let mut t = trace();
        t.layers = MAX_LAYERS + 1;
        let e = validate(&t).unwrap_err();
        assert_eq!(e.field, "layers");
        assert!(
            e.reason.contains("exceeds the limit of 1024"),
            "{}",
            e.reason
        );
    }
}
