//! A closed-form lower bound on the optimum of (2), for comparisons at sizes where the MILP
//! stops at its time limit.
//!
//! ## The local-capacity bound
//!
//! Drop coverage and the split of a server's memory over its GPUs' experts, keeping only how
//! many bytes server n can hold locally. Every set S of experts that the GPUs of server n
//! hold (each GPU g a subset of total bytes at most mem_{n,g}) has sum_{e in S} m_e <= C_n,
//! with C_n = sum_g d floor(mem_{n,g} / d) and d the greatest common divisor of the expert
//! sizes (a GPU's bytes are a multiple of d and at most mem_{n,g}). Server n's term of (2) is
//! F_n - sum_{e in S} f_n(e), F_n = sum_{l, e} f_n^l(e), and sum_{e in S} f_n(e) is at most
//! the fractional knapsack K_n = max {sum_e f_n(e) x_e : sum_e m_e x_e <= C_n, 0 <= x_e <= 1}
//! (S is one integral point of it). Hence every feasible placement costs at least
//!
//!   LB = sum_n (F_n - K_n),
//!
//! and so does the optimum. K_n is attained by taking experts by decreasing density
//! f_n(e) / m_e, the last one fractionally (Dantzig 1957). With one expert size m (every
//! preset and import) C_n / m = sum_g floor(mem_{n,g} / m) is the server's slot count and K_n
//! the sum of its largest C_n / m frequencies. The MILP's own bound is tighter where coverage
//! binds.
//!
//! ## When the bound is the optimum
//!
//! With one expert size, let every server hold its C_n / m most frequent experts (ties: the
//! lower index), filling its GPUs in order, floor(mem_{n,g} / m) each. The placement fits
//! every GPU and costs exactly LB; when these sets cover every expert it is feasible, so OPT
//! = LB and the placement is optimal ([`local_capacity_placement`]). This happens where
//! memory leaves coverage slack, e.g. on Sec. IV-C's large GPU ladders, where each server
//! holds most of the model.

use num_integer::gcd;

use super::model::{Instance, Placement};

/// LB = sum_n (F_n - K_n) of the module doc: no feasible placement has a smaller cost (2).
pub fn local_capacity_bound(instance: &Instance) -> f64 {
    let sizes = &instance.model.expert_bytes;
    let d = sizes.iter().fold(0u64, |a, &b| gcd(a, b)).max(1);
    let e = instance.experts_per_layer();
    instance
        .servers
        .iter()
        .map(|server| {
            let capacity: u64 = server
                .gpus
                .iter()
                .map(|g| g.memory_bytes / d * d)
                .fold(0u64, u64::saturating_add);
            // (f, m) of every expert, densest first (ties: the lower index, for repeatability).
            let mut items: Vec<(f64, u64)> = server
                .frequencies
                .iter()
                .enumerate()
                .flat_map(|(l, row)| row.iter().map(move |&f| (f, sizes[l])))
                .collect();
            debug_assert_eq!(items.len(), instance.layers() * e);
            items.sort_by(|a, b| (b.0 / b.1.max(1) as f64).total_cmp(&(a.0 / a.1.max(1) as f64)));
            let total: f64 = items.iter().map(|x| x.0).sum();
            let mut left = capacity;
            let mut local = 0.0;
            for (f, m) in items {
                if left == 0 {
                    break;
                }
                if m <= left {
                    local += f;
                    left -= m;
                } else {
                    local += f * left as f64 / m as f64;
                    left = 0;
                }
            }
            (total - local).max(0.0)
        })
        .sum()
}

/// The placement of the module doc's last section, when the servers' most frequent experts
/// cover every expert (one expert size only): feasible, of cost LB, hence optimal. `None`
/// otherwise.
pub fn local_capacity_placement(instance: &Instance) -> Option<Placement> {
    let sizes = &instance.model.expert_bytes;
    let m = *sizes.first()?;
    if m == 0 || sizes.iter().any(|&x| x != m) {
        return None;
    }
    let mut placement = Placement::empty_for(instance);
    let mut covered = vec![false; instance.expert_count()];
    for (n, server) in instance.servers.iter().enumerate() {
        let mut order: Vec<(f64, usize)> = server
            .frequencies
            .iter()
            .flatten()
            .copied()
            .zip(0..)
            .collect();
        // Stable: equal frequencies keep the lower index first.
        order.sort_by(|a, b| b.0.total_cmp(&a.0));
        let mut next = order.into_iter();
        for (g, gpu) in server.gpus.iter().enumerate() {
            let slots = gpu.memory_bytes / m;
            for (_, i) in next
                .by_ref()
                .take(usize::try_from(slots).unwrap_or(usize::MAX))
            {
                covered[i] = true;
                // Each expert is listed once per server, so no duplicate check is needed.
                placement.gpus[n][g].push(instance.expert_ref(i));
            }
        }
    }
    covered.iter().all(|&c| c).then_some(placement)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prism::fixtures::two_servers;
    use crate::prism::model::ExpertRef;

    #[test]
    fn the_bound_by_hand_on_the_fixture() {
        // Every expert 10 bytes (d = 10). Server 0: one GPU of 30 bytes, 3 slots; its six
        // frequencies 0.5, 0.3, 0.2, 0.6, 0.4, 0.0 sum to 2.0 and the top three are 0.6 + 0.5 +
        // 0.4 = 1.5: term 0.5. Server 1: two GPUs of 20 bytes, 4 slots; frequencies 0.1, 0.1,
        // 0.8, 0.2, 0.2, 0.6 sum to 2.0, the top four 0.8 + 0.6 + 0.2 + 0.2 = 1.8: term 0.2.
        // LB = 0.7.
        let inst = two_servers();
        assert!((local_capacity_bound(&inst) - 0.7).abs() < 1e-12);
    }

    #[test]
    fn the_bound_never_exceeds_the_optimum() {
        // The fixture's optimum of (2) is 0.8 (milp::tests::the_fixture_optimum_by_hand, also
        // by brute force): 0.7 < 0.8, the gap being coverage: the two servers' top sets leave
        // l0.e1 uncovered, and covering it costs 0.1 either way (server 0 swaps l1.e1, 0.4, for
        // it, 0.3; or server 1 swaps a 0.2 for it, 0.1).
        let inst = two_servers();
        let lb = local_capacity_bound(&inst);
        let opt = crate::prism::milp::solve(&inst, &Default::default(), None)
            .unwrap()
            .solution
            .objective
            .unwrap();
        assert!((opt - 0.8).abs() < 1e-9 && lb < opt - 0.05, "{lb} vs {opt}");
    }

    #[test]
    fn the_bound_is_attained_when_the_top_sets_cover_every_expert() {
        // The fixture: server 0's top three are l1.e0 (0.6), l0.e0 (0.5), l1.e1 (0.4); server
        // 1's top four l0.e2 (0.8), l1.e2 (0.6), l1.e0 and l1.e1 (0.2 each): l0.e1 is in
        // neither, so the rule gives no placement (and indeed OPT = 0.8 > LB = 0.7).
        let mut inst = two_servers();
        assert_eq!(local_capacity_placement(&inst), None);
        // Raise server 1's f of l0.e1 to 0.3 (the bound needs no row sum): its top four become
        // l0.e2 (0.8), l1.e2 (0.6), l0.e1 (0.3), l1.e0 (0.2, the lower index of the tie with
        // l1.e1), and with server 0's top three every expert is covered. LB = server 0's
        // 2.0 - 1.5 = 0.5 + server 1's 2.2 - 1.9 = 0.3: 0.8.
        inst.servers[1].frequencies[0][1] = 0.3;
        let p = local_capacity_placement(&inst).expect("the top sets cover");
        let lb = local_capacity_bound(&inst);
        assert!((lb - 0.8).abs() < 1e-12, "{lb}");
        let e = crate::prism::evaluate::evaluate(&inst, &p).unwrap();
        assert!(e.feasible);
        assert!((e.proxy_cost - lb).abs() < 1e-12);
        // Server 1's two GPUs take two slots each, in order: l0.e2, l1.e2 | l0.e1, l1.e0.
        let r = |layer, expert| ExpertRef { layer, expert };
        assert_eq!(
            p.gpus[1],
            vec![vec![r(0, 2), r(1, 2)], vec![r(0, 1), r(1, 0)]]
        );
        // Unequal sizes: no such placement is claimed.
        inst.model.expert_bytes = vec![10, 5];
        assert_eq!(local_capacity_placement(&inst), None);
    }

    #[test]
    fn unequal_sizes_take_the_densest_first_and_one_fractionally() {
        // One server, one GPU of 25 bytes; layer 0 experts of 10 bytes (f 0.6, 0.4), layer 1
        // of 5 bytes (f 0.5, 0.5). d = gcd(10, 5) = 5, capacity 25. Densities: 0.1, 0.1 (layer
        // 1), 0.06, 0.04. Take both layer-1 experts (10 bytes, 1.0), then 0.6 (10 bytes), then
        // half of 0.4 (5 of 10 bytes): K = 1.8 of F = 2.0: LB = 0.2.
        let mut inst = two_servers();
        inst.model.experts_per_layer = 2;
        inst.model.expert_bytes = vec![10, 5];
        inst.servers.truncate(1);
        inst.servers[0].gpus.truncate(1);
        inst.servers[0].gpus[0].memory_bytes = 25;
        inst.servers[0].frequencies = vec![vec![0.6, 0.4], vec![0.5, 0.5]];
        assert!((local_capacity_bound(&inst) - 0.2).abs() < 1e-12);
    }
}
