//! Miss-ratio curves in one pass: the loads of LRU and of Belady's MIN at every capacity
//! K..=U of a trace, from one walk over it instead of one replay per capacity.
//!
//! Both are stack algorithms (Mattson, Gecsei, Slutz and Traiger, 1970): at every step the
//! cache of capacity C holds the top C ids of one priority stack, whatever C, so a requested
//! id is a hit at capacity C exactly when its depth in the stack before the step is at most
//! C. One pass records each request's depth; the loads at C are the requests deeper than C
//! (first requests are infinitely deep). The stacks follow the step semantics of
//! [`super::policy::Policy::access`] (the K ids of a step requested together, none of them
//! evictable by the step), which keeps the inclusion property:
//!
//! * LRU ([`super::policy::Lru`]): the recency stack; a step moves its ids to the top. Their
//!   order among themselves only decides depths 1..=K, hits at every capacity C >= K.
//! * Belady ([`super::belady::Belady`]): at capacity C the step keeps its ids R and, of the
//!   other C old residents, the C - |R| with the nearest next request (Belady's eviction key,
//!   ties to the highest id). Walking C upward, the one resident that capacity C + 1 keeps
//!   beyond capacity C is the nearest-next-use id among the old stack's top C + 1 not in R
//!   and not yet placed: R goes on top, then a pool of at most |R| candidates takes the old
//!   stack's ids one by one and gives back its nearest-next-use id to each position. Below
//!   the deepest id of R the pool is empty and the stack unchanged, so a step costs the depth
//!   of its deepest id times |R|.
//!
//! Per-layer caches keep one stack per layer; a pool keeps one over all layers (ids
//! `layer * E + expert`, token-major steps as in [`super::policies::replay_trace`]), and each
//! request's depth is counted in its own layer's histogram, so the curves of every layer and
//! of the whole trace come from the same pass. The tests check every capacity against
//! per-capacity replays.
//!
//! The streams come from a [`Streams`]: the JSON model's tokens, or a binary trace's id
//! column as it lies in the file (mapped, never built into tokens), through the same pass.

use formulations::cache::model::{Requests, Streams};
use formulations::Error;
use serde::Serialize;

use super::belady::{next_requests, NEVER};
use super::policies::{ratio, PolicySpec, Scope};

const NONE: u32 = u32::MAX;

/// How deep the requests of one layer were found: `at[d - 1]` requests at depth d, `cold`
/// requests of an id never requested before.
#[derive(Debug, Clone, Default)]
struct Depths {
    at: Vec<u64>,
    cold: u64,
    requests: u64,
}

impl Depths {
    fn record(&mut self, depth: Option<usize>) {
        self.requests += 1;
        match depth {
            Some(d) => {
                if self.at.len() < d {
                    self.at.resize(d, 0);
                }
                self.at[d - 1] += 1;
            }
            None => self.cold += 1,
        }
    }

    /// Loads at each capacity of `capacities`: the requests deeper than it.
    fn loads(&self, capacities: &[usize]) -> Vec<u64> {
        // deeper[c] = requests at depth > c.
        let mut deeper = vec![self.cold; self.at.len() + 1];
        for c in (0..self.at.len()).rev() {
            deeper[c] = deeper[c + 1] + self.at[c];
        }
        (capacities.iter())
            .map(|&c| deeper.get(c).copied().unwrap_or(self.cold))
            .collect()
    }
}

/// A stack of ids with each id's position, rewritten from the top at every step.
#[derive(Debug, Clone)]
struct Stack {
    ids: Vec<u32>,
    /// Index in `ids` of each id, [`NONE`] before its first request.
    at: Vec<u32>,
    /// Marks the current step's ids.
    in_step: Vec<bool>,
}

impl Stack {
    fn new(universe: usize) -> Self {
        Stack {
            ids: Vec::new(),
            at: vec![NONE; universe],
            in_step: vec![false; universe],
        }
    }

    /// 1-based depth of `id` before the step, `None` for a first request.
    fn depth(&self, id: u32) -> Option<usize> {
        let at = self.at[id as usize];
        (at != NONE).then_some(at as usize + 1)
    }

    /// Re-indexes positions `from..to` (clamped to the stack) after they were rewritten.
    fn reindex(&mut self, from: usize, to: usize) {
        let to = to.min(self.ids.len());
        for (i, &id) in self.ids[from..to].iter().enumerate() {
            self.at[id as usize] = (from + i) as u32;
        }
    }
}

/// A stack policy's pass: per step, the depth of each requested id before the step, then
/// the stack after it.
trait StackPolicy {
    /// Step `t` of the stream requests `ids`; their depths go to `depths`, in order.
    fn step(&mut self, t: usize, ids: &[u32], depths: &mut Vec<Option<usize>>);
}

/// Records the depths of a step's ids and marks them; returns the deepest depth and whether
/// an id is requested for the first time.
fn look_up(stack: &mut Stack, ids: &[u32], depths: &mut Vec<Option<usize>>) -> (usize, bool) {
    depths.clear();
    let (mut deepest, mut cold) = (0, false);
    for &id in ids {
        let d = stack.depth(id);
        depths.push(d);
        match d {
            Some(d) => deepest = deepest.max(d),
            None => cold = true,
        }
        stack.in_step[id as usize] = true;
    }
    (deepest, cold)
}

/// LRU's recency stack.
struct LruStack(Stack);

impl StackPolicy for LruStack {
    fn step(&mut self, _t: usize, ids: &[u32], depths: &mut Vec<Option<usize>>) {
        let s = &mut self.0;
        let (deepest, cold) = look_up(s, ids, depths);
        // The step's ids on top, the last listed the most recent (LRU appends them in listed
        // order), then the old top `deepest` without them; a first request shifts the rest.
        let mut top: Vec<u32> = ids.iter().rev().copied().collect();
        top.extend(s.ids[..deepest].iter().filter(|&&x| !s.in_step[x as usize]));
        let changed = if cold { usize::MAX } else { top.len() };
        s.ids.splice(..deepest, top);
        s.reindex(0, changed);
        for &id in ids {
            s.in_step[id as usize] = false;
        }
    }
}

/// Belady's priority stack: the next request of every id known in advance.
struct BeladyStack {
    stack: Stack,
    /// For every position of the stream, the step of that id's next request.
    next: Vec<u32>,
    offsets: Vec<usize>,
    /// Step of each id's next request after the current step ([`NEVER`] if none).
    upcoming: Vec<u32>,
    /// Old residents not yet placed at the step being rewritten.
    pool: Vec<u32>,
}

impl BeladyStack {
    fn new(requests: &Requests) -> Self {
        BeladyStack {
            stack: Stack::new(requests.universe),
            next: next_requests(requests),
            offsets: requests.offsets.clone(),
            upcoming: vec![NEVER; requests.universe],
            pool: Vec::new(),
        }
    }

    /// Belady's eviction key ([`super::belady`]): next request high, complemented id low; the
    /// largest is evicted first, so the pool gives back its smallest.
    fn key(&self, id: u32) -> u64 {
        (u64::from(self.upcoming[id as usize]) << 32) | u64::from(!id)
    }

    /// Adds the old resident at position `j` to the pool unless the step requests it.
    fn offer(&mut self, j: usize) {
        let x = self.stack.ids[j];
        if !self.stack.in_step[x as usize] {
            self.pool.push(x);
        }
    }

    /// Takes the pool's nearest-next-use id out.
    fn pop_nearest(&mut self) -> u32 {
        let (i, _) = (self.pool.iter().enumerate())
            .min_by_key(|&(_, &id)| self.key(id))
            .expect("the pool holds an id for every position left");
        self.pool.swap_remove(i)
    }
}

impl StackPolicy for BeladyStack {
    fn step(&mut self, t: usize, ids: &[u32], depths: &mut Vec<Option<usize>>) {
        let (deepest, cold) = look_up(&mut self.stack, ids, depths);
        let r = ids.len();
        let old_len = self.stack.ids.len();
        let new_len = old_len + depths.iter().filter(|d| d.is_none()).count();
        // Capacity r keeps exactly the step's ids; every capacity above keeps one old id
        // more. Without a first request the pool is empty from the deepest id on.
        let end = if cold { new_len } else { deepest };
        self.pool.clear();
        for j in 0..r.min(old_len) {
            self.offer(j);
        }
        self.stack.ids.resize(new_len, NONE);
        self.stack.ids[..r].copy_from_slice(ids);
        for j in r..end {
            if j < old_len {
                self.offer(j);
            }
            self.stack.ids[j] = self.pop_nearest();
        }
        debug_assert!(self.pool.is_empty(), "every old id placed");
        self.stack.reindex(0, end);
        let start = self.offsets[t];
        for (i, &id) in ids.iter().enumerate() {
            self.stack.in_step[id as usize] = false;
            self.upcoming[id as usize] = self.next[start + i];
        }
    }
}

/// The policies with one-pass curves: the stack algorithms.
pub const POLICIES: [PolicySpec; 2] = [PolicySpec::Lru, PolicySpec::Belady];

/// Refuses a policy without a one-pass curve, saying why.
pub fn check_policy(policy: PolicySpec) -> Result<(), String> {
    if POLICIES.contains(&policy) {
        Ok(())
    } else {
        Err(format!(
            "{policy} is not a stack algorithm (its cache at one capacity need not hold its \
             cache at a smaller one), so one pass cannot give its curve: mrc takes lru and \
             belady; run `replay --capacity C` for {policy}"
        ))
    }
}

/// One policy's miss-ratio curve.
#[derive(Debug, Clone, Serialize)]
pub struct Curve {
    /// The policy.
    pub policy: PolicySpec,
    /// Loads (misses) of all caches at each capacity of [`Mrc::capacities`].
    pub loads: Vec<u64>,
    /// loads / requests at each capacity (paper 002 eq. (4)).
    pub miss_rate: Vec<f64>,
    /// The same loads counted per layer (a request counts in its own layer, with a pool too).
    pub layers: Vec<LayerCurve>,
}

/// One layer's part of a curve.
#[derive(Debug, Clone, Serialize)]
pub struct LayerCurve {
    /// Layer index.
    pub layer: usize,
    /// Expert requests of the layer.
    pub requests: u64,
    /// Its loads at each capacity.
    pub loads: Vec<u64>,
}

/// Curves of several policies over the same capacities.
#[derive(Debug, Clone, Serialize)]
pub struct Mrc {
    /// Per-layer caches or one pool.
    pub scope: Scope,
    /// C = K..=E per layer, or K..=L E for a pool.
    pub capacities: Vec<usize>,
    /// Expert requests of the trace.
    pub requests: u64,
    /// One curve per policy, in the order asked.
    pub curves: Vec<Curve>,
}

/// Walks `requests` with `policy`'s stack, counting each request's depth in the histogram
/// of the layer `layer_of` gives its step.
fn pass(
    requests: &Requests,
    policy: PolicySpec,
    layer_of: &dyn Fn(usize) -> usize,
    out: &mut [Depths],
) {
    let mut stack: Box<dyn StackPolicy> = match policy {
        PolicySpec::Belady => Box::new(BeladyStack::new(requests)),
        _ => Box::new(LruStack(Stack::new(requests.universe))),
    };
    let mut depths = Vec::new();
    for (t, ids) in requests.steps().enumerate() {
        stack.step(t, ids, &mut depths);
        for &d in &depths {
            out[layer_of(t)].record(d);
        }
    }
}

/// The depth histograms of each layer under `policy`.
fn depths(trace: &impl Streams, policy: PolicySpec, scope: Scope) -> Vec<Depths> {
    let (_, _, layers) = trace.shape();
    let mut out = vec![Depths::default(); layers];
    match scope {
        Scope::PerLayer => {
            for layer in 0..layers {
                pass(&trace.layer_requests(layer), policy, &|_| layer, &mut out);
            }
        }
        // One step per (token, layer), token-major.
        Scope::Pool => pass(&trace.pooled_requests(), policy, &|t| t % layers, &mut out),
    }
    out
}

/// The miss-ratio curves of `policies` (each one of [`POLICIES`]) on `trace`, at every
/// capacity from K to the universe of one cache.
pub fn mrc(trace: &impl Streams, policies: &[PolicySpec], scope: Scope) -> Result<Mrc, Error> {
    for &p in policies {
        check_policy(p).map_err(|reason| Error::Invalid {
            path: "<mrc>".into(),
            field: "policy".into(),
            reason,
        })?;
    }
    let (experts, top_k, layers) = trace.shape();
    let universe = match scope {
        Scope::PerLayer => experts,
        Scope::Pool => experts * layers,
    };
    let capacities: Vec<usize> = (top_k..=universe).collect();
    let mut requests = 0;
    let curves = policies
        .iter()
        .map(|&policy| {
            let layers: Vec<LayerCurve> = depths(trace, policy, scope)
                .iter()
                .enumerate()
                .map(|(layer, d)| LayerCurve {
                    layer,
                    requests: d.requests,
                    loads: d.loads(&capacities),
                })
                .collect();
            requests = layers.iter().map(|l| l.requests).sum();
            let loads: Vec<u64> = (0..capacities.len())
                .map(|i| layers.iter().map(|l| l.loads[i]).sum())
                .collect();
            let miss_rate = loads.iter().map(|&x| ratio(x, requests)).collect();
            Curve {
                policy,
                loads,
                miss_rate,
                layers,
            }
        })
        .collect();
    Ok(Mrc {
        scope,
        capacities,
        requests,
        curves,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::belady::Belady;
    use crate::cache::policy::tests::stream;
    use crate::cache::policy::{replay, Lru};
    use proptest::prelude::*;

    /// Loads at every capacity K..=U from one pass over `requests`.
    fn one_pass(requests: &Requests, policy: PolicySpec, k: usize) -> Vec<u64> {
        let mut out = vec![Depths::default()];
        pass(requests, policy, &|_| 0, &mut out);
        out[0].loads(&(k..=requests.universe).collect::<Vec<_>>())
    }

    /// Loads at every capacity K..=U from one replay per capacity.
    fn per_capacity(requests: &Requests, policy: PolicySpec, k: usize) -> Vec<u64> {
        (k..=requests.universe)
            .map(|c| match policy {
                PolicySpec::Belady => replay(Belady::new(c, requests), requests).loads,
                _ => replay(Lru::new(c, requests.universe), requests).loads,
            })
            .collect()
    }

    #[test]
    fn textbook_sequence_gives_the_hand_counted_curves() {
        // K = 1, universe 8: 7 0 1 2 0 3 0 4 2 3 0 3 2. LRU stacks by hand: 7 0 1 2 cold ->
        // [2 1 0 7]; 0 at depth 3 -> [0 2 1 7]; 3 cold -> [3 0 2 1 7]; 0 at 2; 4 cold -> [4 0
        // 3 2 1 7]; 2 at 4 -> [2 4 0 3 ..]; 3 at 4 -> [3 2 4 0 ..]; 0 at 4 -> [0 3 2 4 ..]; 3
        // at 2; 2 at 3. Six first requests, depths 3 2 4 4 4 2 3: loads 13 at C = 1, 6 + 5 at
        // C = 2, 6 + 3 at C = 3 (belady.rs's hand count of LRU), 6 from C = 4 on.
        let seq = [7u32, 0, 1, 2, 0, 3, 0, 4, 2, 3, 0, 3, 2];
        let steps: Vec<&[u32]> = seq.iter().map(std::slice::from_ref).collect();
        let r = stream(&steps, 8);
        assert_eq!(
            one_pass(&r, PolicySpec::Lru, 1),
            vec![13, 11, 9, 6, 6, 6, 6, 6]
        );
        // MIN at C = 2: 7 0 | 1 (7 never again: evict 7) | 2 (0 next at 4, 1 never: evict 1)
        // | 0 hit | 3 (0@6, 2@8: evict 2) | 0 hit | 4 (0@10, 3@9: evict 0) | 2 (3@9, 4 never:
        // evict 4) | 3 hit | 0 (2@12, 3@11: evict 2) | 3 hit | 2: 9 loads. C = 3: 7 (belady.rs).
        // C = 4: 7 0 1 2 fill it; 3 evicts 1 (7 and 1 never again, the lower id goes), 4
        // evicts 7 (never again); 0, 2 and 3 stay: 6 loads, the first requests only.
        assert_eq!(
            one_pass(&r, PolicySpec::Belady, 1),
            vec![13, 9, 7, 6, 6, 6, 6, 6]
        );
    }

    #[test]
    fn a_step_is_requested_together() {
        // K = 2, universe 4: {0,1} {2,3} {0,2}. C = 2: the first two steps load both, the
        // third finds 2 and loads 0 (5). C = 3, LRU: 2 fills the cache, 3 evicts 0 (the first
        // listed id of step 0 counts as least recent), step 2 loads 0 again (5). Belady: 3
        // evicts 1 (never again) rather than 0 (next at step 2): step 2 hits both (4). C = 4:
        // the four first requests.
        let r = stream(&[&[0, 1], &[2, 3], &[0, 2]], 4);
        assert_eq!(one_pass(&r, PolicySpec::Lru, 2), vec![5, 5, 4]);
        assert_eq!(one_pass(&r, PolicySpec::Belady, 2), vec![5, 4, 4]);
    }

    /// A stream of `steps` steps of `k` distinct ids below `universe`, in random order.
    fn streams() -> impl Strategy<Value = (Requests, usize)> {
        (1usize..=10, 1usize..=4).prop_flat_map(|(universe, k)| {
            let k = k.min(universe);
            let step = Just((0..universe as u32).collect::<Vec<u32>>())
                .prop_shuffle()
                .prop_map(move |ids| ids[..k].to_vec());
            prop::collection::vec(step, 0..40).prop_map(move |steps| {
                let refs: Vec<&[u32]> = steps.iter().map(Vec::as_slice).collect();
                (stream(&refs, universe), k)
            })
        })
    }

    proptest! {
        #[test]
        fn one_pass_equals_a_replay_per_capacity((requests, k) in streams()) {
            for policy in POLICIES {
                prop_assert_eq!(
                    one_pass(&requests, policy, k),
                    per_capacity(&requests, policy, k),
                    "{}", policy
                );
            }
        }
    }
}
