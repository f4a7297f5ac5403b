//! Exact makespan MILP of one ZipMoE layer: a continuous-time disjunctive model, exact for
//! real (non-integer) durations, for small instances only ([`MAX_IO_OPS`],
//! [`MAX_DECOMPRESSIONS`], [`MAX_EXPERTS`]).
//!
//! Time is scaled so that the horizon H (the makespan of the FIFO priority, an upper bound on
//! the optimum) is [`HORIZON_UNITS`]; every start lies in [0, H] and the big-M is H plus the
//! longest duration. Variables and rows:
//!
//! * `a_i`: start of read i on the I/O thread; for each pair a binary `y_i_j` with the two
//!   disjunctive rows (i before j, or j before i). The K E-chunk reads of one tensor are
//!   interchangeable, so they are read in shard order (plain rows, no binary).
//! * `s_o`: start of decompression o, after its E-chunk read (`s_o >= a_E + rho u / K`); the K
//!   decompressions of one tensor start in shard order. When L is smaller than the number of
//!   decompressions: a start-order binary `x_o_q` per pair (o before q; fixed within a tensor),
//!   `s_q >= s_o` when o is before q, and an overlap binary `ov_o_q` with
//!   `s_q >= s_o + c - M (1 - before(o, q)) - M ov_o_q` and `sum_o ov_o_q <= L - 1`.
//!   Rows `dtransitive_p_q_r` (1 <= before(p,q) + before(q,r) + before(r,p) <= 2) forbid
//!   3-cycles, so the binaries define a linear order (without them, equal starts could be
//!   ordered cyclically and each see fewer than the others running).
//!   Exactness: the largest number of decompressions running at once is reached at some start
//!   s_q; every other one running then started no later and, by the order rows, is before q
//!   (ties: take q last in the order), so its ov is forced to 1 and at most L run at once. Sets
//!   of intervals with at most L overlapping can always be assigned to L threads (interval
//!   graphs are perfect: a colouring by start time uses max-clique colours). Conversely any L
//!   thread schedule satisfies the rows with the start order and ov = "still running".
//! * `g_n`: start of expert n's execution, after every read-sm end and decompression end of its
//!   tensors (recovery takes no time, see [`super::model`]); GPU disjunctions `z_n_m`.
//! * `cmax >= g_n + p_n`; minimise cmax. Valid cuts: cmax >= I (total reads), cmax >= C / L,
//!   cmax >= sum of p_n (Lemma B.3's first three terms, which hold for any schedule).
//!
//! Symmetry: within a tensor, reads and decompressions in shard order lose nothing (relabel the
//! shards by read order; then if shard j is decompressed before shard i < j, swapping their
//! decompression slots keeps both after their reads and the tensor's completion unchanged).
//!
//! The solution is decoded to an I/O order and a decompression order (by start) and
//! re-evaluated by the one evaluator ([`Simulator::sequence`]), whose makespan is at most the
//! MILP's (up to HiGHS's tolerances).

use super::model::Instance;
use super::schedule::{DecompOp, IoOp, Priority, Schedule, Simulator};
use crate::error::Error;
use crate::milp::{Milp, MilpSolution, Sense, SolveOptions, VarId};

/// Most reads the MILP accepts.
pub const MAX_IO_OPS: usize = 16;
/// Most decompressions the MILP accepts.
pub const MAX_DECOMPRESSIONS: usize = 16;
/// Most selected experts the MILP accepts.
pub const MAX_EXPERTS: usize = 8;
/// The horizon H in the model's time units.
pub const HORIZON_UNITS: f64 = 1000.0;

/// The model of one instance and the map from its variables back to a schedule.
#[derive(Debug, Clone)]
pub struct ZipMoeMilp {
    /// The model.
    pub milp: Milp,
    /// Model time units per second.
    pub scale: f64,
    /// H, seconds.
    pub horizon_s: f64,
    io: Vec<(IoOp, VarId)>,
    decomp: Vec<(DecompOp, VarId)>,
}

/// An exact solve: the solver's outcome in seconds and the re-evaluated schedule.
#[derive(Debug, Clone)]
pub struct ExactSolution {
    /// Status, objective, bound and gap with objective and bound converted to seconds.
    pub solution: MilpSolution,
    /// The incumbent's schedule by the evaluator, if there is an incumbent.
    pub schedule: Option<Schedule>,
}

/// `before(p, q)` as constant + coefficient * variable.
#[derive(Clone, Copy)]
struct Before {
    constant: f64,
    var: Option<(VarId, f64)>,
}

impl ZipMoeMilp {
    /// Builds the model; [`Error::TooLarge`] beyond the size limits.
    pub fn build(instance: &Instance) -> Result<Self, Error> {
        let sim = Simulator::new(instance);
        let tasks = sim.tasks().to_vec();
        let k = instance.shards as usize;
        let mut io = Vec::new();
        let mut decomp = Vec::new();
        for t in 0..tasks.len() {
            if sim.reads_e(t) {
                for s in 0..k {
                    io.push(IoOp::E {
                        task: t,
                        shard: s as u32,
                    });
                }
            }
            if sim.reads_sm(t) {
                io.push(IoOp::Sm { task: t });
            }
            for s in 0..k {
                decomp.push(DecompOp {
                    task: t,
                    shard: s as u32,
                });
            }
        }
        if io.len() > MAX_IO_OPS
            || decomp.len() > MAX_DECOMPRESSIONS
            || instance.experts.len() > MAX_EXPERTS
        {
            return Err(Error::TooLarge(format!(
                "zipmoe MILP: {} reads, {} decompressions, {} experts; limits {MAX_IO_OPS}, \
                 {MAX_DECOMPRESSIONS}, {MAX_EXPERTS}",
                io.len(),
                decomp.len(),
                instance.experts.len()
            )));
        }
        let order: Vec<usize> = (0..tasks.len()).collect();
        let horizon_s = sim.run(&Priority::singletons(&order))?.makespan_s;
        let scale = if horizon_s > 0.0 {
            HORIZON_UNITS / horizon_s
        } else {
            1.0
        };
        let h = horizon_s * scale;
        let e_dur = instance.e_read_s() * scale;
        let u = instance.sm_read_s * scale;
        let c = instance.decompress_s * scale;
        let dur = |op: &IoOp| match op {
            IoOp::E { .. } => e_dur,
            IoOp::Sm { .. } => u,
        };
        let longest = instance
            .experts
            .iter()
            .map(|e| e.gpu_s * scale)
            .fold(u.max(c).max(e_dur), f64::max);
        let big = h + longest;
        let mut m = Milp::new(
            format!(
                "ZipMoE layer makespan: {} reads, {} decompressions, {} experts, L = {}; \
                 time unit {:.6e} s",
                io.len(),
                decomp.len(),
                instance.experts.len(),
                instance.threads,
                1.0 / scale
            ),
            Sense::Minimize,
        );
        let name_io = |op: &IoOp| match op {
            IoOp::E { task, shard } => format!("t{task}_e{shard}"),
            IoOp::Sm { task } => format!("t{task}_sm"),
        };
        let a: Vec<VarId> = io
            .iter()
            .map(|op| m.continuous(format!("a_{}", name_io(op)), 0.0, h))
            .collect();
        for i in 0..io.len() {
            for j in i + 1..io.len() {
                let (di, dj) = (dur(&io[i]), dur(&io[j]));
                match (io[i], io[j]) {
                    (IoOp::E { task: ti, .. }, IoOp::E { task: tj, .. }) if ti == tj => {
                        m.row(
                            format!("io_shard_{}_{}", name_io(&io[i]), name_io(&io[j])),
                            vec![(a[j], 1.0), (a[i], -1.0)],
                            di,
                            f64::INFINITY,
                        );
                    }
                    _ => {
                        let y = m.binary(format!("y_{}_{}", name_io(&io[i]), name_io(&io[j])));
                        m.row(
                            format!("io_ij_{}_{}", name_io(&io[i]), name_io(&io[j])),
                            vec![(a[j], 1.0), (a[i], -1.0), (y, -big)],
                            di - big,
                            f64::INFINITY,
                        );
                        m.row(
                            format!("io_ji_{}_{}", name_io(&io[i]), name_io(&io[j])),
                            vec![(a[i], 1.0), (a[j], -1.0), (y, big)],
                            dj,
                            f64::INFINITY,
                        );
                    }
                }
            }
        }
        let e_read_var = |task: usize, shard: u32| {
            io.iter()
                .position(|op| *op == IoOp::E { task, shard })
                .map(|p| a[p])
        };
        let s: Vec<VarId> = decomp
            .iter()
            .map(|o| m.continuous(format!("s_t{}_d{}", o.task, o.shard), 0.0, h))
            .collect();
        for (o, op) in decomp.iter().enumerate() {
            if let Some(r) = e_read_var(op.task, op.shard) {
                m.row(
                    format!("release_t{}_d{}", op.task, op.shard),
                    vec![(s[o], 1.0), (r, -1.0)],
                    e_dur,
                    f64::INFINITY,
                );
            }
            if op.shard > 0 {
                m.row(
                    format!("dshard_t{}_d{}", op.task, op.shard),
                    vec![(s[o], 1.0), (s[o - 1], -1.0)],
                    0.0,
                    f64::INFINITY,
                );
            }
        }
        let nd = decomp.len();
        if (instance.threads as usize) < nd {
            let mut before = vec![
                vec![
                    Before {
                        constant: 0.0,
                        var: None
                    };
                    nd
                ];
                nd
            ];
            for p in 0..nd {
                for q in p + 1..nd {
                    if decomp[p].task == decomp[q].task {
                        before[p][q].constant = 1.0;
                    } else {
                        let x = m.binary(format!("x_{p}_{q}"));
                        before[p][q].var = Some((x, 1.0));
                        before[q][p] = Before {
                            constant: 1.0,
                            var: Some((x, -1.0)),
                        };
                    }
                }
            }
            // The start order is a linear order: no 3-cycle in the tournament.
            for p in 0..nd {
                for q in p + 1..nd {
                    for r in q + 1..nd {
                        let mut terms = Vec::new();
                        let mut constant = 0.0;
                        for (x, y) in [(p, q), (q, r), (r, p)] {
                            let b = before[x][y];
                            constant += b.constant;
                            terms.extend(b.var);
                        }
                        if !terms.is_empty() {
                            m.row(
                                format!("dtransitive_{p}_{q}_{r}"),
                                terms,
                                1.0 - constant,
                                2.0 - constant,
                            );
                        }
                    }
                }
            }
            for q in 0..nd {
                let mut count = Vec::new();
                for p in 0..nd {
                    let b = before[p][q];
                    if p == q || (b.constant == 0.0 && b.var.is_none()) {
                        continue;
                    }
                    // s_q - s_p + M (1 - before) >= 0 and >= c - M ov.
                    let mut order = vec![(s[q], 1.0), (s[p], -1.0)];
                    if let Some((x, coef)) = b.var {
                        order.push((x, -big * coef));
                    }
                    let slack = big * (1.0 - b.constant);
                    m.row(
                        format!("dorder_{p}_{q}"),
                        order.clone(),
                        -slack,
                        f64::INFINITY,
                    );
                    let ov = m.binary(format!("ov_{p}_{q}"));
                    order.push((ov, big));
                    m.row(format!("doverlap_{p}_{q}"), order, c - slack, f64::INFINITY);
                    count.push((ov, 1.0));
                }
                if !count.is_empty() {
                    m.row(
                        format!("threads_{q}"),
                        count,
                        f64::NEG_INFINITY,
                        f64::from(instance.threads) - 1.0,
                    );
                }
            }
        }
        let g: Vec<VarId> = (0..instance.experts.len())
            .map(|n| m.continuous(format!("g_{n}"), 0.0, h))
            .collect();
        for (t, task) in tasks.iter().enumerate() {
            let n = task.expert;
            if let Some(p) = io.iter().position(|op| *op == IoOp::Sm { task: t }) {
                m.row(
                    format!("ready_t{t}_sm"),
                    vec![(g[n], 1.0), (a[p], -1.0)],
                    u,
                    f64::INFINITY,
                );
            }
            for (o, op) in decomp.iter().enumerate().filter(|(_, op)| op.task == t) {
                m.row(
                    format!("ready_t{t}_d{}", op.shard),
                    vec![(g[n], 1.0), (s[o], -1.0)],
                    c,
                    f64::INFINITY,
                );
            }
        }
        let p: Vec<f64> = instance.experts.iter().map(|e| e.gpu_s * scale).collect();
        for i in 0..g.len() {
            for j in i + 1..g.len() {
                let z = m.binary(format!("z_{i}_{j}"));
                m.row(
                    format!("gpu_ij_{i}_{j}"),
                    vec![(g[j], 1.0), (g[i], -1.0), (z, -big)],
                    p[i] - big,
                    f64::INFINITY,
                );
                m.row(
                    format!("gpu_ji_{i}_{j}"),
                    vec![(g[i], 1.0), (g[j], -1.0), (z, big)],
                    p[j],
                    f64::INFINITY,
                );
            }
        }
        let cmax = m.continuous("cmax", 0.0, h);
        m.add_objective(cmax, 1.0);
        for (n, &gn) in g.iter().enumerate() {
            m.row(
                format!("cmax_{n}"),
                vec![(cmax, 1.0), (gn, -1.0)],
                p[n],
                f64::INFINITY,
            );
        }
        let total_io: f64 = io.iter().map(dur).sum();
        let per_thread = nd as f64 * c / f64::from(instance.threads);
        let total_gpu: f64 = p.iter().sum();
        m.row(
            "cut_lemma_b3",
            vec![(cmax, 1.0)],
            total_io.max(per_thread).max(total_gpu),
            f64::INFINITY,
        );
        let io_vars = io.into_iter().zip(a).collect();
        let decomp_vars = decomp.into_iter().zip(s).collect();
        Ok(ZipMoeMilp {
            milp: m,
            scale,
            horizon_s,
            io: io_vars,
            decomp: decomp_vars,
        })
    }

    /// The I/O and decompression orders (by start time, ties by model order) of a solution.
    pub fn decode(&self, values: &[f64]) -> (Vec<IoOp>, Vec<DecompOp>) {
        let mut io: Vec<(f64, usize, IoOp)> = self
            .io
            .iter()
            .enumerate()
            .map(|(i, (op, v))| (values[v.0], i, *op))
            .collect();
        io.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
        let mut d: Vec<(f64, usize, DecompOp)> = self
            .decomp
            .iter()
            .enumerate()
            .map(|(i, (op, v))| (values[v.0], i, *op))
            .collect();
        d.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
        (
            io.into_iter().map(|x| x.2).collect(),
            d.into_iter().map(|x| x.2).collect(),
        )
    }

    /// Solves and re-evaluates the incumbent with the evaluator.
    pub fn solve(
        &self,
        instance: &Instance,
        options: &SolveOptions,
    ) -> Result<ExactSolution, Error> {
        let mut solution = self.milp.solve(options, None)?;
        let schedule = match solution.values.as_deref() {
            Some(v) => {
                let (io, decomp) = self.decode(v);
                Some(Simulator::new(instance).sequence(&io, &decomp)?)
            }
            None => None,
        };
        solution.objective = solution.objective.map(|o| o / self.scale);
        solution.best_bound = solution.best_bound.map(|b| b / self.scale);
        Ok(ExactSolution { solution, schedule })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::milp::MilpStatus;
    use crate::zipmoe::model::CompressionState;
    use crate::zipmoe::schedule::check;

    fn instance(experts: &[(CompressionState, f64)], threads: u32) -> Instance {
        crate::zipmoe::model::test_layer(experts, threads)
    }

    fn optimum(i: &Instance) -> (f64, Schedule) {
        let m = ZipMoeMilp::build(i).unwrap();
        let s = m.solve(i, &SolveOptions::default()).unwrap();
        assert_eq!(s.solution.status, MilpStatus::Optimal);
        let schedule = s.schedule.unwrap();
        let objective = s.solution.objective.unwrap();
        assert!(
            (schedule.makespan_s - objective).abs() < 1e-6 * objective,
            "{} vs {objective}: {:?}",
            schedule.makespan_s,
            schedule.rows
        );
        assert!((check(i, &schedule.rows).unwrap() - schedule.makespan_s).abs() < 1e-12);
        (objective, schedule)
    }

    #[test]
    fn two_experts_by_hand() {
        // Missed A (p 1) and SM-cached B (p 2), K = 2, L = 1, e-chunk .5, c = 1, u = 2. All four
        // decompressions share one thread and start no earlier than .5, so the last ends no
        // earlier than 4.5; if it is A's, A runs until >= 5.5, if B's, B until >= 6.5. The order
        // [B, A] reaches 5.5 (schedule.rs tests), so OPT = 5.5.
        let i = instance(
            &[
                (CompressionState::Missed, 1.0),
                (CompressionState::SmCached, 2.0),
            ],
            1,
        );
        assert!((optimum(&i).0 - 5.5).abs() < 1e-6);
    }

    #[test]
    fn overlapped_reads_beat_definition_b2s_critical_path() {
        // One SM-cached tensor, K = 2, L = 1, rho u = 1, c = 1, p = .5: reads end at .5 and 1,
        // decompressions [.5, 1.5] and [1.5, 2.5], execution [2.5, 3]: OPT = 3 (the first
        // decompression cannot start before .5, then two c's and p), while z_j (3) = 3.5.
        let i = instance(&[(CompressionState::SmCached, 0.5)], 1);
        assert!((optimum(&i).0 - 3.0).abs() < 1e-6);
        assert_eq!(crate::zipmoe::bounds::lower_bound(&i).critical_path_s, 3.5);
    }

    #[test]
    fn threads_are_shared_exactly() {
        // Three compressed experts (p = 1 each), K = 2, L = 2: 6 decompressions of 1 s on two
        // threads need 3 s; the first expert can be ready at 1 (both its shards in parallel),
        // the second at 2, the third at 3: GPU [1, 2], [2, 3], [3, 4] -> OPT = 4 = C/L + p.
        let i = instance(&[(CompressionState::Compressed, 1.0); 3], 2);
        assert!((optimum(&i).0 - 4.0).abs() < 1e-6);
    }

    #[test]
    fn size_limit_is_an_error() {
        let i = instance(&[(CompressionState::Missed, 1.0); 9], 2);
        assert!(matches!(ZipMoeMilp::build(&i), Err(Error::TooLarge(_))));
    }
}
