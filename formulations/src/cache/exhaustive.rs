//! Exact offline optimum of tiny instances by dynamic programming over every cache state: a
//! second oracle, independent of Belady's argument and of the MILP.
//!
//! States are the subsets R of the E experts with |R| <= C (bitmasks). Step t moves from R to
//! any R' with |R'| <= C that contains some allowed chosen set A_t ⊆ R', at cost |R' \ R|
//! (no assumption such as "load only on demand": every successor state is tried). The work is
//! T x states², so it is refused beyond [`EXHAUSTIVE_MAX_EXPERTS`] or [`EXHAUSTIVE_MAX_WORK`].

use super::offline::{CacheInstance, Schedule, ScheduleStep};
use crate::error::Error;

/// Most experts E the search accepts.
pub const EXHAUSTIVE_MAX_EXPERTS: usize = 12;
/// Most transitions (T x states²) the search accepts.
pub const EXHAUSTIVE_MAX_WORK: u64 = 100_000_000;

/// Cache states: subsets of E experts with at most C of them.
fn states(instance: &CacheInstance) -> Vec<u32> {
    (0u32..1 << instance.experts())
        .filter(|m| m.count_ones() as usize <= instance.capacity)
        .collect()
}

/// The number of transitions the search would examine (T x states²), or `None` beyond
/// [`EXHAUSTIVE_MAX_EXPERTS`].
pub fn exhaustive_work(instance: &CacheInstance) -> Option<u64> {
    if instance.experts() > EXHAUSTIVE_MAX_EXPERTS {
        return None;
    }
    let n = states(instance).len() as u64;
    Some(instance.steps() as u64 * n * n)
}

/// Whether the search accepts the instance.
pub fn fits_exhaustive(instance: &CacheInstance) -> bool {
    exhaustive_work(instance).is_some_and(|w| w <= EXHAUSTIVE_MAX_WORK)
}

/// Every allowed chosen set of step t, as (bitmask, experts in rank order).
fn chosen_sets(instance: &CacheInstance, t: usize, flexible: bool) -> Vec<(u32, Vec<u32>)> {
    let allowed = instance.allowed(t, flexible);
    let free = instance.top_k() - allowed.forced.len();
    let mut out = Vec::new();
    for pick in itertools::Itertools::combinations(allowed.optional.iter().copied(), free) {
        let mut chosen = allowed.forced.clone();
        chosen.extend(pick);
        if allowed.admits(&chosen) {
            let mask = chosen.iter().fold(0u32, |m, &e| m | 1 << e);
            out.push((mask, chosen));
        }
    }
    out
}

/// The minimum number of loads and an optimal schedule (fixed routing when `flexible` is
/// false). [`Error::TooLarge`] beyond the limits of the module doc.
pub fn exhaustive(instance: &CacheInstance, flexible: bool) -> Result<(u64, Schedule), Error> {
    if !fits_exhaustive(instance) {
        return Err(Error::TooLarge(format!(
            "exhaustive search: E = {}, C = {}, T = {} is beyond E <= {EXHAUSTIVE_MAX_EXPERTS} \
             and T x states^2 <= {EXHAUSTIVE_MAX_WORK}",
            instance.experts(),
            instance.capacity,
            instance.steps()
        )));
    }
    const INF: u32 = u32::MAX;
    let states = states(instance);
    let size = 1usize << instance.experts();
    let mut dist = vec![INF; size];
    dist[0] = 0;
    // parent[t][R'] = (previous state, index of the chosen set); INF when unreachable.
    let mut parents: Vec<Vec<(u32, u32)>> = Vec::with_capacity(instance.steps());
    let mut sets_per_step = Vec::with_capacity(instance.steps());
    for t in 0..instance.steps() {
        let sets = chosen_sets(instance, t, flexible);
        let mut choice = vec![INF; size];
        for (i, (mask, _)) in sets.iter().enumerate() {
            for &r in &states {
                if r & mask == *mask && choice[r as usize] == INF {
                    choice[r as usize] = i as u32;
                }
            }
        }
        let mut next = vec![INF; size];
        let mut parent = vec![(INF, INF); size];
        for &to in &states {
            if choice[to as usize] == INF {
                continue;
            }
            for &from in &states {
                let d = dist[from as usize];
                if d == INF {
                    continue;
                }
                let cost = d + (to & !from).count_ones();
                if cost < next[to as usize] {
                    next[to as usize] = cost;
                    parent[to as usize] = (from, choice[to as usize]);
                }
            }
        }
        dist = next;
        parents.push(parent);
        sets_per_step.push(sets);
    }
    let (best, &loads) = dist
        .iter()
        .enumerate()
        .min_by_key(|&(_, &d)| d)
        .expect("at least one state");
    if loads == INF {
        return Err(Error::Solver(
            "exhaustive search: no feasible schedule (an allowed set larger than C?)".into(),
        ));
    }
    let mut steps = Vec::with_capacity(instance.steps());
    let mut state = best as u32;
    for t in (0..instance.steps()).rev() {
        let (from, set) = parents[t][state as usize];
        steps.push(ScheduleStep {
            chosen: sets_per_step[t][set as usize].1.clone(),
            resident: (0..instance.experts() as u32)
                .filter(|e| state >> e & 1 == 1)
                .collect(),
        });
        state = from;
    }
    steps.reverse();
    Ok((u64::from(loads), Schedule { steps }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::offline::tests::{instance, top1_trace};
    use crate::cache::offline::{evaluate, Freedom};

    #[test]
    fn cyclic_requests_match_the_hand_count() {
        // E = 3, K = 1, C = 2, requests 0 1 2 0 1 2. By hand: 3 compulsory loads, and after
        // step 2 one of 0, 1 is out although both come back: at least 4. MIN reaches 4: at
        // step 2 evict 1 (0 is needed sooner), hit 0, at step 4 load 1 evicting 0 (never needed
        // again), hit 2.
        let i = instance(top1_trace(3, &[0, 1, 2, 0, 1, 2]), 2, Freedom::fixed(1));
        let (loads, schedule) = exhaustive(&i, false).unwrap();
        assert_eq!(loads, 4);
        assert_eq!(evaluate(&i, &schedule, false).unwrap().loads, 4);
    }

    #[test]
    fn flexible_routing_can_avoid_loads() {
        // Same stream; each token ranks its top expert first, then the others by id. With
        // J = 0, M = 2 token "2" may run {2, 0}, token "1" {1, 0}, token "0" {0, 1}: every
        // token may run expert 0, so one load suffices (and at least one is needed).
        let mut i = instance(top1_trace(3, &[0, 1, 2, 0, 1, 2]), 2, Freedom::fixed(1));
        i.freedom = Freedom {
            top_j: 0,
            max_rank: Some(2),
            min_mass: None,
        };
        let (loads, schedule) = exhaustive(&i, true).unwrap();
        assert_eq!(loads, 1);
        let ev = evaluate(&i, &schedule, true).unwrap();
        assert_eq!((ev.loads, ev.rerouted_steps), (1, 4));
        // With J = 1 (= K) the freedom is the fixed routing again.
        i.freedom.top_j = 1;
        assert_eq!(exhaustive(&i, true).unwrap().0, 4);
    }

    #[test]
    fn too_large_is_refused() {
        let i = instance(top1_trace(13, &[0, 1, 2]), 6, Freedom::fixed(1));
        assert!(matches!(exhaustive(&i, false), Err(Error::TooLarge(_))));
    }
}
