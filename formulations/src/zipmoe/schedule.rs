//! The one evaluator of ZipMoE layer schedules: a simulator of the I/O thread, the L
//! decompression threads and the GPU stream (Sec. 3.3, App. A) that returns the makespan and
//! the Gantt chart.
//!
//! ## Priority mode ([`Simulator::run`], [`Simulator::summary`]): App. A's execution
//! A [`Priority`] is an ordered list of blocks, each an ordered list of tasks (indices into
//! [`Instance::tasks`]); a plain priority order is a list of one-task blocks. "The compute
//! workers and the I/O thread fetch the first available operations in a work-conserving
//! manner, following the priority order of the constructed blocks" (App. A):
//!
//! * **I/O thread.** Its operation list is, block by block, first the E-chunk reads of the
//!   block's tasks (task order, shards 1..K), then their SM-chunk reads (task order): "within
//!   each block, E-chunks are loaded before SM-chunks, and the I/O order among the same type of
//!   chunks follows the scheduling order of their corresponding tasks in the block" (Sec. 3.3).
//!   Reads have no predecessors, so the thread runs the list back to back from time 0.
//! * **Decompression threads.** Operations are ranked by (block, position in block, shard);
//!   `decompress k` is released when `read-e k` completes (at 0 when the E-chunks are cached).
//!   Work-conserving list scheduling (Graham): at the decision time t = max(now, earliest free
//!   thread, and when nothing is waiting, the earliest release), the highest-ranked released
//!   operation starts on a free thread; a thread never idles while a released operation waits.
//!   Among free threads the one freed most recently takes it (ties: lowest index), so the
//!   charge below is the smallest the free threads allow.
//! * **Recovery** of a tensor happens (in zero time, see [`super::model`]) when its SM-chunk is
//!   read (if it is read) and its K decompressions are done; an expert is ready when all its N
//!   tensors are recovered, a full expert at 0.
//! * **GPU stream.** Expert executions, ranked full experts first (instance order), then by the
//!   first appearance of the expert's tasks in the priority; work-conserving on one machine.
//!   On one machine any work-conserving order has the same makespan (the machine is idle
//!   exactly when all released work is done), which is the least makespan for those ready
//!   times (1|r_j|C_max); the rank only shapes the chart.
//!
//! The makespan is the completion time of the last expert execution (Sec. 3.3).
//!
//! The **charge** Delta (Def. B.1) is the sum over decompressions of the idle time on their
//! thread between its previous operation's end (0 for its first) and their start.
//!
//! ## Sequence mode ([`Simulator::sequence`]): semi-active schedules
//! Given an explicit I/O order and an explicit decompression order, reads run back to back and
//! each decompression, in the given order, starts at max(release, earliest free thread time) on
//! the earliest-free thread (serial schedule generation); the GPU is work-conserving as above.
//! Every feasible schedule is dominated by the sequence-mode schedule of its own I/O order and
//! decompression start order (see `algorithms::exhaustive` in the moe-opt crate), so this mode
//! reaches an optimum; it also re-evaluates the MILP's schedules.
//!
//! [`check`] verifies any timed Gantt chart against the DAGs and resource capacities, without
//! the simulator: tests use it as an independent judge.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use serde::{Deserialize, Serialize};

use super::model::{Instance, Task};
use crate::error::Error;

/// Relative tolerance of [`check`].
pub const CHECK_TOLERANCE: f64 = 1e-9;

/// A priority order: blocks of task indices (into [`Instance::tasks`]), highest priority first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Priority {
    /// The blocks B_1..B_M, each an ordered list of task indices.
    pub blocks: Vec<Vec<usize>>,
}

impl Priority {
    /// One block per task, in the given order (a plain priority order).
    pub fn singletons(order: &[usize]) -> Self {
        Priority {
            blocks: order.iter().map(|&t| vec![t]).collect(),
        }
    }

    /// The tasks in priority order.
    pub fn order(&self) -> Vec<usize> {
        self.blocks.iter().flatten().copied().collect()
    }
}

/// An operation of the DAGs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Operation {
    /// Read one E-chunk (I/O thread, rho u / K).
    ReadE,
    /// Read the SM-chunk (I/O thread, u).
    ReadSm,
    /// Decompress one E-chunk (a decompression thread, c).
    Decompress,
    /// Run the expert on its tokens (GPU stream, p_n).
    Execute,
}

/// An operation on the I/O thread, for [`Simulator::sequence`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum IoOp {
    /// E-chunk `shard` of task `task` (index into [`Instance::tasks`]).
    E {
        /// Task index.
        task: usize,
        /// Shard in 0..K.
        shard: u32,
    },
    /// The SM-chunk of task `task`.
    Sm {
        /// Task index.
        task: usize,
    },
}

/// A decompression, for [`Simulator::sequence`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DecompOp {
    /// Task index.
    pub task: usize,
    /// Shard in 0..K.
    pub shard: u32,
}

/// One bar of the Gantt chart; flat, so it serialises as a CSV row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GanttRow {
    /// `io`, `decompress-<l>` (l in 0..L) or `gpu`.
    pub resource: String,
    /// What runs.
    pub operation: Operation,
    /// The expert's `id`.
    pub expert: u32,
    /// Tensor index (absent for `execute`).
    pub tensor: Option<u32>,
    /// Shard index (E-chunk reads and decompressions).
    pub shard: Option<u32>,
    /// Start, seconds from the gate's decision.
    pub start_s: f64,
    /// End, seconds.
    pub end_s: f64,
}

/// A simulated schedule.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Schedule {
    /// Completion of the last expert execution, seconds.
    pub makespan_s: f64,
    /// Completion of the last read, seconds.
    pub io_end_s: f64,
    /// Completion of the last decompression, seconds.
    pub decompress_end_s: f64,
    /// Delta of Def. B.1: idle time on decompression threads before decompressions, seconds.
    pub charge_s: f64,
    /// The Gantt chart: reads, decompressions, executions (in that order, each by start).
    pub rows: Vec<GanttRow>,
}

/// The quantities the cache-affinity scheduler needs from a (possibly partial) priority.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Makespan over the experts whose tasks are listed (and the full experts), seconds.
    pub makespan_s: f64,
    /// F_I/O: completion of the I/O thread, seconds.
    pub io_end_s: f64,
    /// Completion time of each decompression thread (0 if unused), seconds.
    pub thread_ends_s: Vec<f64>,
    /// Delta of Def. B.1, seconds.
    pub charge_s: f64,
}

/// Precomputed facts of one instance, shared by every evaluation.
#[derive(Debug, Clone)]
pub struct Simulator<'a> {
    instance: &'a Instance,
    tasks: Vec<Task>,
    reads_e: Vec<bool>,
    reads_sm: Vec<bool>,
    shards: usize,
    e_read: f64,
}

/// Result of list scheduling: per operation its start, machine and the idle gap before it.
struct Placed {
    start: Vec<f64>,
    machine: Vec<usize>,
    /// The operations by start time (ties: index), the chart's order.
    started: Vec<usize>,
    gap_sum: f64,
    ends: Vec<f64>,
}

/// Work-conserving list scheduling on `machines` identical machines; priority = index order.
/// `by_release` lists the operations by non-decreasing release (the order among equal
/// releases does not matter: a step takes in every operation released by its time).
fn list_schedule(
    release: &[f64],
    duration: impl Fn(usize) -> f64,
    machines: usize,
    by_release: &[usize],
) -> Placed {
    let n = release.len();
    let m = machines.min(n).max(1);
    let mut free = vec![0.0f64; m];
    let mut ready = BinaryHeap::with_capacity(n);
    let mut start = vec![0.0; n];
    let mut machine = vec![0; n];
    let mut started = Vec::with_capacity(n);
    let mut gap_sum = 0.0;
    let mut now = 0.0f64;
    let mut next = 0;
    for _ in 0..n {
        let earliest_free = free.iter().copied().fold(f64::INFINITY, f64::min);
        let mut t = now.max(earliest_free);
        if ready.is_empty() {
            t = t.max(release[by_release[next]]);
        }
        while next < n && release[by_release[next]] <= t {
            ready.push(Reverse(by_release[next]));
            next += 1;
        }
        let Reverse(o) = ready.pop().expect("an operation is released by t");
        // The free machine freed most recently (lowest index on ties).
        let mut best = usize::MAX;
        for (k, &f) in free.iter().enumerate() {
            if f <= t && (best == usize::MAX || f > free[best]) {
                best = k;
            }
        }
        gap_sum += t - free[best];
        start[o] = t;
        machine[o] = best;
        started.push(o);
        free[best] = t + duration(o);
        now = t;
    }
    // Steps are taken at non-decreasing times, and the steps at one time take released
    // operations by increasing index (all are taken in at the first of them), so `started`
    // is sorted by (start, index).
    let mut ends = free;
    ends.resize(machines, 0.0);
    Placed {
        start,
        machine,
        started,
        gap_sum,
        ends,
    }
}

/// Indices sorted by (key, index).
fn sorted_by(keys: &[f64]) -> Vec<usize> {
    let mut v: Vec<usize> = (0..keys.len()).collect();
    v.sort_by(|&a, &b| keys[a].total_cmp(&keys[b]));
    v
}

impl<'a> Simulator<'a> {
    /// Prepares the evaluation of schedules of a (valid) instance.
    pub fn new(instance: &'a Instance) -> Self {
        let tasks = instance.tasks();
        let reads_e = tasks
            .iter()
            .map(|&t| instance.state_of(t).reads_e())
            .collect();
        let reads_sm = tasks
            .iter()
            .map(|&t| instance.state_of(t).reads_sm())
            .collect();
        Simulator {
            instance,
            tasks,
            reads_e,
            reads_sm,
            shards: instance.shards as usize,
            e_read: instance.e_read_s(),
        }
    }

    /// The instance.
    pub fn instance(&self) -> &'a Instance {
        self.instance
    }

    /// The reconstruction tasks Q ([`Instance::tasks`]).
    pub fn tasks(&self) -> &[Task] {
        &self.tasks
    }

    /// Whether task `t` reads its SM-chunk (type I).
    pub fn reads_sm(&self, t: usize) -> bool {
        self.reads_sm[t]
    }

    /// Whether task `t` reads its E-chunks.
    pub fn reads_e(&self, t: usize) -> bool {
        self.reads_e[t]
    }

    /// Checks that a priority lists every task exactly once.
    pub fn check_priority(&self, priority: &Priority) -> Result<(), Error> {
        let mut seen = vec![false; self.tasks.len()];
        for &t in priority.blocks.iter().flatten() {
            if t >= seen.len() || std::mem::replace(&mut seen[t], true) {
                return Err(Error::Solver(format!(
                    "priority lists task {t} twice or out of range ({} tasks)",
                    seen.len()
                )));
            }
        }
        if let Some(t) = seen.iter().position(|s| !s) {
            return Err(Error::Solver(format!("priority misses task {t}")));
        }
        Ok(())
    }

    /// Simulates a complete priority and returns the schedule with its Gantt chart.
    pub fn run(&self, priority: &Priority) -> Result<Schedule, Error> {
        self.check_priority(priority)?;
        let mut rows = Vec::new();
        let s = self.simulate(&priority.blocks, Some(&mut rows));
        Ok(self.finish(s, rows))
    }

    /// Simulates a possibly partial priority (tasks not listed do not exist), without a chart.
    /// Task indices must be distinct and in range.
    pub fn summary(&self, blocks: &[Vec<usize>]) -> Summary {
        self.simulate(blocks, None)
    }

    fn finish(&self, s: Summary, rows: Vec<GanttRow>) -> Schedule {
        let decompress_end_s = s.thread_ends_s.iter().copied().fold(0.0, f64::max);
        Schedule {
            makespan_s: s.makespan_s,
            io_end_s: s.io_end_s,
            decompress_end_s,
            charge_s: s.charge_s,
            rows,
        }
    }

    fn io_row(&self, t: usize, op: Operation, shard: Option<u32>, end: f64, d: f64) -> GanttRow {
        let task = self.tasks[t];
        GanttRow {
            resource: "io".into(),
            operation: op,
            expert: self.instance.experts[task.expert].id,
            tensor: Some(task.tensor),
            shard,
            start_s: end - d,
            end_s: end,
        }
    }

    fn simulate(&self, blocks: &[Vec<usize>], mut rows: Option<&mut Vec<GanttRow>>) -> Summary {
        let k = self.shards;
        let u = self.instance.sm_read_s;
        let mut e_done = vec![0.0; self.tasks.len() * k];
        let mut sm_done = vec![0.0; self.tasks.len()];
        let mut t = 0.0;
        for block in blocks {
            for &task in block.iter().filter(|&&x| self.reads_e[x]) {
                for s in 0..k {
                    t += self.e_read;
                    e_done[task * k + s] = t;
                    if let Some(r) = rows.as_deref_mut() {
                        let row =
                            self.io_row(task, Operation::ReadE, Some(s as u32), t, self.e_read);
                        r.push(row);
                    }
                }
            }
            for &task in block.iter().filter(|&&x| self.reads_sm[x]) {
                t += u;
                sm_done[task] = t;
                if let Some(r) = rows.as_deref_mut() {
                    r.push(self.io_row(task, Operation::ReadSm, None, t, u));
                }
            }
        }
        let io_end = t;
        let n_ops = blocks.iter().map(Vec::len).sum::<usize>() * k;
        let mut ops = Vec::with_capacity(n_ops);
        for &task in blocks.iter().flatten() {
            for s in 0..k {
                ops.push(DecompOp {
                    task,
                    shard: s as u32,
                });
            }
        }
        let release: Vec<f64> = ops.iter().map(|o| self.release(o, &e_done)).collect();
        // By release without sorting: the cached E-chunks' operations (at 0), then the others
        // in priority order, which is the I/O thread's order of their reads (block by block,
        // task order within a block), so their completions do not decrease.
        let mut by_release = Vec::with_capacity(n_ops);
        by_release.extend((0..n_ops).filter(|&o| !self.reads_e[ops[o].task]));
        by_release.extend((0..n_ops).filter(|&o| self.reads_e[ops[o].task]));
        let c = self.instance.decompress_s;
        let placed = list_schedule(&release, |_| c, self.instance.threads as usize, &by_release);
        let order: Vec<usize> = blocks.iter().flatten().copied().collect();
        self.complete(&order, &ops, &placed, &sm_done, io_end, rows)
    }

    fn release(&self, o: &DecompOp, e_done: &[f64]) -> f64 {
        if self.reads_e[o.task] {
            e_done[o.task * self.shards + o.shard as usize]
        } else {
            0.0
        }
    }

    /// Recovery, GPU and the chart's decompression and execution rows.
    fn complete(
        &self,
        order: &[usize],
        ops: &[DecompOp],
        placed: &Placed,
        sm_done: &[f64],
        io_end: f64,
        rows: Option<&mut Vec<GanttRow>>,
    ) -> Summary {
        let c = self.instance.decompress_s;
        let experts = &self.instance.experts;
        let mut recovered = vec![0.0f64; self.tasks.len()];
        for &t in order {
            if self.reads_sm[t] {
                recovered[t] = sm_done[t];
            }
        }
        for (o, op) in ops.iter().enumerate() {
            recovered[op.task] = recovered[op.task].max(placed.start[o] + c);
        }
        // Experts: full ones first, then by first appearance of their tasks.
        let mut rank: Vec<usize> = (0..experts.len())
            .filter(|&n| !experts[n].state.decompresses())
            .collect();
        let mut listed = vec![false; experts.len()];
        let mut ready = vec![0.0f64; experts.len()];
        for &t in order {
            let n = self.tasks[t].expert;
            ready[n] = ready[n].max(recovered[t]);
            if !std::mem::replace(&mut listed[n], true) {
                rank.push(n);
            }
        }
        let gpu_release: Vec<f64> = rank.iter().map(|&n| ready[n]).collect();
        let gpu_duration: Vec<f64> = rank.iter().map(|&n| experts[n].gpu_s).collect();
        let gpu = list_schedule(
            &gpu_release,
            |i| gpu_duration[i],
            1,
            &sorted_by(&gpu_release),
        );
        let makespan = gpu
            .start
            .iter()
            .zip(&gpu_duration)
            .map(|(s, d)| s + d)
            .fold(0.0, f64::max);
        if let Some(r) = rows {
            let names: Vec<String> = (0..self.instance.threads)
                .map(|l| format!("decompress-{l}"))
                .collect();
            r.reserve(ops.len() + rank.len());
            for &o in &placed.started {
                let op = ops[o];
                let task = self.tasks[op.task];
                r.push(GanttRow {
                    resource: names[placed.machine[o]].clone(),
                    operation: Operation::Decompress,
                    expert: experts[task.expert].id,
                    tensor: Some(task.tensor),
                    shard: Some(op.shard),
                    start_s: placed.start[o],
                    end_s: placed.start[o] + c,
                });
            }
            for &i in &gpu.started {
                let n = rank[i];
                r.push(GanttRow {
                    resource: "gpu".into(),
                    operation: Operation::Execute,
                    expert: experts[n].id,
                    tensor: None,
                    shard: None,
                    start_s: gpu.start[i],
                    end_s: gpu.start[i] + gpu_duration[i],
                });
            }
        }
        Summary {
            makespan_s: makespan,
            io_end_s: io_end,
            thread_ends_s: placed.ends.clone(),
            charge_s: placed.gap_sum,
        }
    }

    /// Sequence mode: reads back to back in `io` order, decompressions by serial schedule
    /// generation in `decomp` order, GPU work-conserving. Both lists must hold every operation
    /// of every task exactly once.
    pub fn sequence(&self, io: &[IoOp], decomp: &[DecompOp]) -> Result<Schedule, Error> {
        let k = self.shards;
        let n = self.tasks.len();
        let bad = |what: &str| Err(Error::Solver(format!("sequence: {what}")));
        let mut e_done = vec![f64::NAN; n * k];
        let mut sm_done = vec![f64::NAN; n];
        let mut rows = Vec::new();
        let mut t = 0.0;
        for op in io {
            match *op {
                IoOp::E { task, shard } => {
                    if task >= n || shard as usize >= k || !self.reads_e[task] {
                        return bad("an E-chunk read that does not exist");
                    }
                    let slot = &mut e_done[task * k + shard as usize];
                    if !slot.is_nan() {
                        return bad("an E-chunk is read twice");
                    }
                    t += self.e_read;
                    *slot = t;
                    rows.push(self.io_row(task, Operation::ReadE, Some(shard), t, self.e_read));
                }
                IoOp::Sm { task } => {
                    if task >= n || !self.reads_sm[task] {
                        return bad("an SM-chunk read that does not exist");
                    }
                    if !sm_done[task].is_nan() {
                        return bad("an SM-chunk is read twice");
                    }
                    t += self.instance.sm_read_s;
                    sm_done[task] = t;
                    rows.push(self.io_row(
                        task,
                        Operation::ReadSm,
                        None,
                        t,
                        self.instance.sm_read_s,
                    ));
                }
            }
        }
        let expected_io: usize = (0..n)
            .map(|t| usize::from(self.reads_sm[t]) + if self.reads_e[t] { k } else { 0 })
            .sum();
        if io.len() != expected_io {
            return bad("the I/O order misses reads");
        }
        if decomp.len() != n * k {
            return bad("the decompression order misses operations");
        }
        let mut seen = vec![false; n * k];
        let m = (self.instance.threads as usize).min(decomp.len()).max(1);
        let mut free = vec![0.0f64; m];
        let mut start = vec![0.0; decomp.len()];
        let mut machine = vec![0; decomp.len()];
        let mut gap_sum = 0.0;
        for (o, op) in decomp.iter().enumerate() {
            if op.task >= n || op.shard as usize >= k {
                return bad("a decompression that does not exist");
            }
            if std::mem::replace(&mut seen[op.task * k + op.shard as usize], true) {
                return bad("a decompression is listed twice");
            }
            let (best, &f) = free
                .iter()
                .enumerate()
                .min_by(|a, b| a.1.total_cmp(b.1))
                .expect("at least one thread");
            let s = f.max(self.release(op, &e_done));
            gap_sum += s - f;
            start[o] = s;
            machine[o] = best;
            free[best] = s + self.instance.decompress_s;
        }
        let mut ends = free;
        ends.resize(self.instance.threads as usize, 0.0);
        let placed = Placed {
            started: sorted_by(&start),
            start,
            machine,
            gap_sum,
            ends,
        };
        let mut order = Vec::with_capacity(n);
        let mut listed = vec![false; n];
        for op in decomp {
            if !std::mem::replace(&mut listed[op.task], true) {
                order.push(op.task);
            }
        }
        let s = self.complete(&order, decomp, &placed, &sm_done, t, Some(&mut rows));
        Ok(self.finish(s, rows))
    }
}

/// Verifies a timed Gantt chart independently of the simulator: every operation of every
/// DAG appears exactly once with its duration, precedences hold (decompress k after read-e k;
/// execute after every tensor's read-sm and decompressions), the I/O thread and the GPU run
/// one operation at a time, each decompression thread one at a time and at most L threads
/// exist. Returns the makespan. Tolerance: [`CHECK_TOLERANCE`] times the largest end time.
pub fn check(instance: &Instance, rows: &[GanttRow]) -> Result<f64, String> {
    let horizon = rows.iter().map(|r| r.end_s).fold(0.0, f64::max);
    let tol = CHECK_TOLERANCE * horizon.max(1e-300);
    let index: HashMap<u32, usize> = instance
        .experts
        .iter()
        .enumerate()
        .map(|(i, e)| (e.id, i))
        .collect();
    type Key = (Operation, usize, Option<u32>, Option<u32>);
    let mut found: HashMap<Key, &GanttRow> = HashMap::new();
    let mut by_resource: HashMap<&str, Vec<&GanttRow>> = HashMap::new();
    for r in rows {
        let &n = index
            .get(&r.expert)
            .ok_or(format!("unknown expert {}", r.expert))?;
        if found
            .insert((r.operation, n, r.tensor, r.shard), r)
            .is_some()
        {
            return Err(format!(
                "{:?} of expert {} appears twice",
                r.operation, r.expert
            ));
        }
        let ok_resource = match r.operation {
            Operation::ReadE | Operation::ReadSm => r.resource == "io",
            Operation::Execute => r.resource == "gpu",
            Operation::Decompress => r
                .resource
                .strip_prefix("decompress-")
                .and_then(|l| l.parse::<u32>().ok())
                .is_some_and(|l| l < instance.threads),
        };
        if !ok_resource {
            return Err(format!("{:?} on resource {}", r.operation, r.resource));
        }
        by_resource.entry(r.resource.as_str()).or_default().push(r);
    }
    let k = instance.shards;
    let get = |key: Key, d: f64| -> Result<&GanttRow, String> {
        let r = found.get(&key).ok_or(format!("missing {key:?}"))?;
        if ((r.end_s - r.start_s) - d).abs() > tol || r.start_s < -tol {
            return Err(format!(
                "{key:?} lasts {} s, not {d} s",
                r.end_s - r.start_s
            ));
        }
        Ok(r)
    };
    let mut expected = 0;
    for (n, e) in instance.experts.iter().enumerate() {
        let mut ready = 0.0f64;
        if e.state.decompresses() {
            for tensor in 0..instance.tensors_per_expert {
                if e.state.reads_sm() {
                    let r = get(
                        (Operation::ReadSm, n, Some(tensor), None),
                        instance.sm_read_s,
                    )?;
                    ready = ready.max(r.end_s);
                    expected += 1;
                }
                for s in 0..k {
                    let d = get(
                        (Operation::Decompress, n, Some(tensor), Some(s)),
                        instance.decompress_s,
                    )?;
                    expected += 1;
                    if e.state.reads_e() {
                        let r = get(
                            (Operation::ReadE, n, Some(tensor), Some(s)),
                            instance.e_read_s(),
                        )?;
                        expected += 1;
                        if d.start_s < r.end_s - tol {
                            return Err(format!(
                                "expert {} tensor {tensor} shard {s}: decompression before its read",
                                e.id
                            ));
                        }
                    }
                    ready = ready.max(d.end_s);
                }
            }
        }
        let x = get((Operation::Execute, n, None, None), e.gpu_s)?;
        expected += 1;
        if x.start_s < ready - tol {
            return Err(format!("expert {} executes before it is recovered", e.id));
        }
    }
    if expected != rows.len() {
        return Err(format!("{} rows, {expected} operations", rows.len()));
    }
    for (resource, mut list) in by_resource {
        list.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
        for w in list.windows(2) {
            if w[1].start_s < w[0].end_s - tol {
                return Err(format!(
                    "{resource}: operations overlap at {} s",
                    w[1].start_s
                ));
            }
        }
    }
    Ok(rows
        .iter()
        .filter(|r| r.operation == Operation::Execute)
        .map(|r| r.end_s)
        .fold(0.0, f64::max))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zipmoe::model::{test_layer, CompressionState};

    /// K = 2, L = 1, rho = 0.5, u = 2 (E-chunk 0.5 s), c = 1, N = 1 (the device of
    /// [`test_layer`]): expert A (id 10) missed (p = 1), expert B (id 20, two tokens)
    /// SM-cached (p = 2).
    fn two() -> Instance {
        let mut i = test_layer(
            &[
                (CompressionState::Missed, 1.0),
                (CompressionState::SmCached, 2.0),
            ],
            1,
        );
        i.name = "two".into();
        (i.experts[0].id, i.experts[1].id, i.experts[1].tokens) = (10, 20, 2);
        i
    }

    #[test]
    fn fifo_order_matches_the_hand_simulation() {
        // I/O: A.e0 [0, .5], A.e1 [.5, 1], A.sm [1, 3], B.e0 [3, 3.5], B.e1 [3.5, 4].
        // Decompression (one thread): A0 [.5, 1.5], A1 [1.5, 2.5], B0 [3.5, 4.5], B1 [4.5, 5.5];
        // charge .5 + 0 + 1 + 0 = 1.5. GPU: A ready max(3, 2.5) = 3 -> [3, 4]; B ready 5.5 ->
        // [5.5, 7.5]. Makespan 7.5.
        let i = two();
        let sim = Simulator::new(&i);
        let s = sim.run(&Priority::singletons(&[0, 1])).unwrap();
        assert_eq!(s.makespan_s, 7.5);
        assert_eq!(s.io_end_s, 4.0);
        assert_eq!(s.decompress_end_s, 5.5);
        assert_eq!(s.charge_s, 1.5);
        assert_eq!(check(&i, &s.rows), Ok(7.5));
        let gpu: Vec<(u32, f64, f64)> = s
            .rows
            .iter()
            .filter(|r| r.resource == "gpu")
            .map(|r| (r.expert, r.start_s, r.end_s))
            .collect();
        assert_eq!(gpu, vec![(10, 3.0, 4.0), (20, 5.5, 7.5)]);
    }

    #[test]
    fn reverse_order_and_one_block_match_the_hand_simulation() {
        // [B, A]: I/O B.e0 .5, B.e1 1, A.e0 1.5, A.e1 2, A.sm [2, 4]; decompressions B0 [.5,
        // 1.5], B1 [1.5, 2.5], A0 [2.5, 3.5], A1 [3.5, 4.5]; B runs [2.5, 4.5], A [4.5, 5.5].
        let i = two();
        let sim = Simulator::new(&i);
        let s = sim.run(&Priority::singletons(&[1, 0])).unwrap();
        assert_eq!((s.makespan_s, s.charge_s), (5.5, 0.5));
        // One block [A, B]: E-chunks first: A.e0 .5, A.e1 1, B.e0 1.5, B.e1 2, A.sm [2, 4];
        // decompressions A0 [.5, 1.5], A1 [1.5, 2.5], B0 [2.5, 3.5], B1 [3.5, 4.5]; A ready 4
        // -> [4, 5], B ready 4.5 -> [5, 7].
        let one = Priority {
            blocks: vec![vec![0, 1]],
        };
        let s = sim.run(&one).unwrap();
        assert_eq!((s.makespan_s, s.io_end_s), (7.0, 4.0));
        assert_eq!(check(&i, &s.rows), Ok(7.0));
    }

    #[test]
    fn work_conserving_threads_take_the_highest_released_operation() {
        // Two threads, compressed experts (no reads): all 4 decompressions released at 0;
        // priority A0, A1, B0, B1 -> A0, A1 at [0, 1], B0, B1 at [1, 2]; A runs [1, 2], B [2, 4].
        let mut i = two();
        i.threads = 2;
        for e in &mut i.experts {
            e.state = CompressionState::Compressed;
        }
        let s = Simulator::new(&i)
            .run(&Priority::singletons(&[0, 1]))
            .unwrap();
        assert_eq!((s.makespan_s, s.charge_s, s.io_end_s), (4.0, 0.0, 0.0));
        assert_eq!(check(&i, &s.rows), Ok(4.0));
    }

    #[test]
    fn sequence_mode_can_idle_a_thread_for_a_later_release() {
        // Reads B.e0 .5, B.e1 1, A.e0 1.5, A.e1 2, A.sm [2, 4]. Decompressions B0, B1, A0, A1
        // by serial generation reproduce [B, A] (5.5). In the order A0, A1, B0, B1 the thread
        // idles until A.e0 arrives although B0 is released: A0 [1.5, 2.5], A1 [2.5, 3.5],
        // B0 [3.5, 4.5], B1 [4.5, 5.5]; A ready 4 -> [4, 5], B ready 5.5 -> [5.5, 7.5].
        let i = two();
        let sim = Simulator::new(&i);
        let io = [
            IoOp::E { task: 1, shard: 0 },
            IoOp::E { task: 1, shard: 1 },
            IoOp::E { task: 0, shard: 0 },
            IoOp::E { task: 0, shard: 1 },
            IoOp::Sm { task: 0 },
        ];
        let d = |task, shard| DecompOp { task, shard };
        let s = sim
            .sequence(&io, &[d(1, 0), d(1, 1), d(0, 0), d(0, 1)])
            .unwrap();
        assert_eq!(s.makespan_s, 5.5);
        let s = sim
            .sequence(&io, &[d(0, 0), d(0, 1), d(1, 0), d(1, 1)])
            .unwrap();
        assert_eq!(s.makespan_s, 7.5);
        assert_eq!(check(&i, &s.rows), Ok(7.5));
        assert!(sim.sequence(&io[..4], &[d(0, 0)]).is_err());
    }

    #[test]
    fn check_rejects_broken_charts() {
        let i = two();
        let s = Simulator::new(&i)
            .run(&Priority::singletons(&[0, 1]))
            .unwrap();
        let mut early = s.rows.clone();
        let x = early
            .iter_mut()
            .find(|r| r.operation == Operation::Execute && r.expert == 20)
            .unwrap();
        x.start_s -= 1.0;
        x.end_s -= 1.0;
        assert!(check(&i, &early)
            .unwrap_err()
            .contains("before it is recovered"));
        let mut overlap = s.rows.clone();
        let d = overlap
            .iter_mut()
            .find(|r| r.operation == Operation::Decompress && r.expert == 20)
            .unwrap();
        d.start_s = 4.0;
        d.end_s = 5.0;
        assert!(check(&i, &overlap).is_err());
        assert!(check(&i, &s.rows[1..]).is_err());
    }
}
