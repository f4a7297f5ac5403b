//! The first, straightforward implementation of Alg. 1 (before the incremental evaluator of
//! [`super::cache_affinity`]), kept verbatim as the tests' oracle but for line 12's rule and the
//! closing of a block, which both take from `Candidates::next` and `CacheAffinity::close` (the
//! oracle checks the evaluator, not the rule): it simulates the whole prefix with
//! [`Simulator::summary`] for every candidate and every insertion position (O(n^2) full
//! simulations). Test-only. Its outputs and the evaluator's charts on the test families were also
//! recorded as digests before either was rewritten (see the tests).

use std::collections::VecDeque;

use formulations::zipmoe::{Instance, Simulator, TaskType};

use super::{BlockTrace, CacheAffinity, Candidates};

/// Lines 4-5.
fn sorted_by_p(sim: &Simulator, kind: TaskType) -> VecDeque<usize> {
    let instance = sim.instance();
    let tasks = sim.tasks();
    let mut v: Vec<usize> = (0..tasks.len())
        .filter(|&t| instance.state_of(tasks[t]).task_type() == Some(kind))
        .collect();
    v.sort_by(|&a, &b| {
        let (ea, eb) = (tasks[a].expert, tasks[b].expert);
        instance.experts[eb]
            .gpu_s
            .total_cmp(&instance.experts[ea].gpu_s)
            .then(ea.cmp(&eb))
            .then(tasks[a].tensor.cmp(&tasks[b].tensor))
    });
    v.into()
}

/// Def. A.1 on the simulated prefix.
fn compute_dominant(sim: &Simulator, blocks: &[Vec<usize>]) -> bool {
    let s = sim.summary(blocks);
    let instance = sim.instance();
    let mut ends = s.thread_ends_s;
    ends.sort_by(f64::total_cmp);
    let e = instance.e_read_s();
    let tol = 1e-9 * (s.io_end_s + instance.decompress_s);
    (1..=instance.threads.min(instance.shards) as usize)
        .all(|l| ends[l - 1] - s.io_end_s >= l as f64 * e - tol)
}

/// Alg. 1 (App. A): the cache-affinity blocks.
pub fn cache_affinity(instance: &Instance, candidates: Candidates) -> CacheAffinity {
    let sim = Simulator::new(instance);
    let tasks = sim.tasks();
    let p = |t: usize| instance.experts[tasks[t].expert].gpu_s;
    let kind = |t: usize| instance.state_of(tasks[t]).task_type();
    let mut sigma_1 = sorted_by_p(&sim, TaskType::I);
    let mut sigma_2 = sorted_by_p(&sim, TaskType::II);
    let mut out = CacheAffinity::empty();
    while let Some(base) = sigma_1.pop_front() {
        let mut block = vec![base];
        let mut fallback_insertions = 0;
        let mut dominant;
        loop {
            out.priority.blocks.push(block.clone());
            dominant = compute_dominant(&sim, &out.priority.blocks);
            let before = sim.summary(&out.priority.blocks).charge_s;
            out.priority.blocks.pop();
            if dominant {
                break;
            }
            let Some(j) = candidates.next(&mut sigma_2, &mut sigma_1) else {
                break;
            };
            let tol = 1e-9 * (before + instance.sm_read_s + instance.decompress_s);
            let mut position = None;
            for pos in 0..=block.len() {
                let mut trial = block.clone();
                trial.insert(pos, j);
                out.priority.blocks.push(trial);
                let charge = sim.summary(&out.priority.blocks).charge_s;
                out.priority.blocks.pop();
                if charge <= before + tol {
                    position = Some(pos);
                    break;
                }
            }
            let pos = position.unwrap_or_else(|| {
                fallback_insertions += 1;
                let ty = if block.iter().any(|&t| kind(t) == Some(TaskType::II)) {
                    TaskType::II
                } else {
                    TaskType::I
                };
                let of_type: Vec<usize> = (0..block.len())
                    .filter(|&i| kind(block[i]) == Some(ty))
                    .collect();
                match of_type.iter().rev().find(|&&i| p(block[i]) >= p(j)) {
                    Some(&i) => i + 1,
                    None => of_type[0],
                }
            });
            block.insert(pos, j);
        }
        out.close(BlockTrace {
            tasks: block,
            base,
            fallback_insertions,
            compute_dominant: dominant,
        });
    }
    if !sigma_2.is_empty() {
        let rest: Vec<usize> = sigma_2.into_iter().collect();
        let prefix = [out.priority.blocks.clone(), vec![rest.clone()]].concat();
        let dominant = compute_dominant(&sim, &prefix);
        out.close(BlockTrace {
            base: rest[0],
            tasks: rest,
            fallback_insertions: 0,
            compute_dominant: dominant,
        });
    }
    out
}
