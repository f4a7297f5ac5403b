//! Failure evidence as re-checkable JSON: pairs and placements by (server, model, layer,
//! expert), violated inequalities with the values that show them.

use formulations::slimcaching::{ExpertCatalogue, ExpertId, Placement, ServerId};
use serde_json::{json, Value};
use verification::{SetFunction, Slack, Witness};

use super::set_functions::{sid, PlacementFunction};
use super::slack_margin;

fn pair_json(cat: &ExpertCatalogue, (n, e): (ServerId, ExpertId)) -> Value {
    let r = cat.expert_ref(e);
    json!({ "server": n.0, "model": r.model.0, "layer": r.layer.0, "expert": r.expert,
            "id": e.0 })
}

fn pairs_json(cat: &ExpertCatalogue, f: &PlacementFunction, members: &[usize]) -> Value {
    Value::Array(
        members
            .iter()
            .map(|&i| pair_json(cat, f.ground[i]))
            .collect(),
    )
}

/// A placement as a list of its (server, model, layer, expert, id) pairs.
pub(super) fn placement_json(cat: &ExpertCatalogue, x: &Placement) -> Value {
    Value::Array(
        (0..x.servers())
            .flat_map(|n| x.experts_on(sid(n)).map(move |e| (sid(n), e)))
            .map(|p| pair_json(cat, p))
            .collect(),
    )
}

/// A violated inequality as re-checkable JSON: the sets, the element, both gains and the four
/// values f(A), f(A + x), f(B), f(B + x).
pub(super) fn witness_json(f: &PlacementFunction, property: &str, w: &Witness) -> Value {
    let cat = f.model.catalogue();
    let value_of = |members: &[usize], extra: Option<usize>| {
        let mut flags = f.flags(members);
        if let Some(x) = extra {
            flags[x] = true;
        }
        f.value(&flags)
    };
    json!({
        "property": property,
        "smaller": pairs_json(cat, f, &w.smaller),
        "larger": pairs_json(cat, f, &w.larger),
        "element": pair_json(cat, f.ground[w.element]),
        "gain_smaller": w.gain_smaller,
        "gain_larger": w.gain_larger,
        "f_smaller": value_of(&w.smaller, None),
        "f_smaller_plus_element": value_of(&w.smaller, Some(w.element)),
        "f_larger": value_of(&w.larger, None),
        "f_larger_plus_element": value_of(&w.larger, Some(w.element)),
        "base_placement": placement_json(cat, &f.base),
    })
}

/// The worst inequality of a property as re-checkable JSON ([`witness_json`]) with its slack,
/// the scale, the margin and how many inequalities fail.
pub(super) fn slack_json(f: &PlacementFunction, property: &str, s: &Slack) -> Value {
    let mut w = witness_json(f, property, &s.witness);
    w["slack"] = json!(s.slack);
    w["scale"] = json!(s.scale);
    w["margin"] = json!(slack_margin(s));
    w["violated_inequalities"] = json!(s.violated);
    w["inequalities"] = json!(s.checked);
    w
}
