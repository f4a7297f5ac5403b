//! The 0-1 knapsack of Alg. 2 (a DP over capacity units) and of Alg. 3 (max-plus convolution
//! of size classes): a kernel over values, sizes and a capacity that knows nothing of P1
//! (the module doc of [`super`]: Knapsack details).

use std::collections::BTreeMap;

use formulations::Error;
use num_integer::gcd;

/// Most cells of the Alg. 2 DP table, items x (capacity units + 1); the table stores one bit
/// per cell (25 MB at the limit) and the DP does one update per cell.
pub const DP_CELL_LIMIT: u64 = 200_000_000;

/// Most cells of the Alg. 3 choice tables, size classes x (capacity units + 1); 4 bytes per
/// cell (200 MB at the limit).
pub const MAXCONV_CELL_LIMIT: u64 = 50_000_000;

/// A knapsack reduced to its useful items and integral capacity units.
pub(super) struct Reduced {
    /// Items with positive value and size 0: always taken.
    free: Vec<usize>,
    /// Items with positive value and 0 < size <= capacity, ascending.
    items: Vec<usize>,
    /// Their sizes divided by `unit`.
    weights: Vec<u64>,
    /// gcd of the items' sizes.
    unit: u64,
    /// floor(capacity / unit), capped at the sum of `weights`.
    capacity: u64,
    /// Every item fits at once (then no DP is needed).
    all_fit: bool,
}

pub(super) fn reduce(values: &[f64], sizes: &[u64], capacity: u64) -> Reduced {
    assert_eq!(
        values.len(),
        sizes.len(),
        "knapsack: one size per value is required"
    );
    let mut free = Vec::new();
    let mut items = Vec::new();
    for (i, (&v, &b)) in values.iter().zip(sizes).enumerate() {
        if v > 0.0 && b <= capacity {
            if b == 0 {
                free.push(i);
            } else {
                items.push(i);
            }
        }
    }
    let unit = items.iter().fold(0, |g, &i| gcd(g, sizes[i])).max(1);
    let weights: Vec<u64> = items.iter().map(|&i| sizes[i] / unit).collect();
    let total: u128 = weights.iter().map(|&w| u128::from(w)).sum();
    let units = capacity / unit;
    let all_fit = total <= u128::from(units);
    Reduced {
        free,
        items,
        weights,
        unit,
        // When not everything fits, units < total, so the cap only matters when all fit.
        capacity: if all_fit { total as u64 } else { units },
        all_fit,
    }
}

/// (sum of the chosen values, chosen ascending); the sum runs in index order so that both
/// knapsack solvers report identical values for identical sets.
pub(super) fn finish(values: &[f64], mut chosen: Vec<usize>) -> (f64, Vec<usize>) {
    chosen.sort_unstable();
    let value = chosen.iter().fold(0.0, |acc, &i| acc + values[i]);
    (value, chosen)
}

/// Both exact knapsacks: the reduced items all at once when they fit, else those `choose`
/// takes of them; with the free items, valued.
pub(super) fn knapsack(
    values: &[f64],
    sizes: &[u64],
    capacity: u64,
    choose: impl FnOnce(&Reduced) -> Result<Vec<usize>, Error>,
) -> Result<(f64, Vec<usize>), Error> {
    let r = reduce(values, sizes, capacity);
    let mut chosen = r.free.clone();
    if r.all_fit {
        chosen.extend(&r.items);
    } else {
        chosen.extend(choose(&r)?);
    }
    Ok(finish(values, chosen))
}

/// Refuses `what`, a table of `rows` x (capacity + 1) cells, above `limit` cells.
pub(super) fn check_cells(r: &Reduced, what: &str, rows: usize, limit: u64) -> Result<(), Error> {
    let cells = rows as u128 * (u128::from(r.capacity) + 1);
    if cells <= u128::from(limit) {
        return Ok(());
    }
    Err(Error::TooLarge(format!(
        "the knapsack of {} experts has {} capacity units (sizes and capacity divided by their \
         gcd {} bytes), so {what} needs {cells} cells, above the limit {limit}; round expert \
         sizes and storage capacities to a coarser unit (e.g. whole MB) in the instance",
        r.items.len(),
        r.capacity,
        r.unit
    )))
}

/// Exact 0/1 knapsack by the DP of Algorithm 2: maximise `sum values[i]` subject
/// to `sum sizes[i] <= capacity`. Returns the optimum and the chosen items (ascending).
///
/// Items with value <= 0 are never chosen. Sizes are scaled by their gcd (exact); the table
/// (one bit per cell) must stay within [`DP_CELL_LIMIT`], else [`Error::TooLarge`].
///
/// # Panics
/// If `values` and `sizes` differ in length.
///
/// # Complexity
/// I items of positive value that fit, C = floor(capacity / g) capacity units (g the gcd of their
/// sizes; capped at their total). Time: O(I C) cell updates. Memory: O(I C / 64) words of bits for
/// the traceback and O(C) values.
///
/// # Examples
/// ```
/// use moe_opt::slimcaching::algorithms::knapsack_dp;
///
/// // Capacity 50: items 1 and 2 (sizes 20 + 30, values 10 + 12) beat every other pair; the
/// // negative item 3 is never taken.
/// let (optimum, chosen) = knapsack_dp(&[6.0, 10.0, 12.0, -1.0], &[10, 20, 30, 10], 50)?;
/// assert_eq!((optimum, chosen), (22.0, vec![1, 2]));
/// # Ok::<(), formulations::Error>(())
/// ```
pub fn knapsack_dp(
    values: &[f64],
    sizes: &[u64],
    capacity: u64,
) -> Result<(f64, Vec<usize>), Error> {
    knapsack(values, sizes, capacity, |r| dp_choice(values, r))
}

/// Alg. 2's table over the reduced items and its traceback: the items it chooses.
pub(super) fn dp_choice(values: &[f64], r: &Reduced) -> Result<Vec<usize>, Error> {
    let mut chosen = Vec::new();
    check_cells(r, "the DP table of Alg. 2", r.items.len(), DP_CELL_LIMIT)?;
    let cap = r.capacity as usize;
    let words = cap / 64 + 1;
    // keep[i][q]: dp[i][q] != dp[i-1][q] in Alg. 2's notation (item i improved capacity q).
    let mut keep = vec![0u64; r.items.len() * words];
    // dp[q]: best value of the items so far within capacity q (rolling row of Alg. 2's table).
    let mut dp = vec![0.0f64; cap + 1];
    for (i, (&item, &w)) in r.items.iter().zip(&r.weights).enumerate() {
        let (w, v) = (w as usize, values[item]);
        let row = &mut keep[i * words..(i + 1) * words];
        for q in (w..=cap).rev() {
            let candidate = dp[q - w] + v;
            if candidate > dp[q] {
                dp[q] = candidate;
                row[q / 64] |= 1 << (q % 64);
            }
        }
    }
    // Traceback (Alg. 2 lines 17-25).
    let mut q = cap;
    for i in (0..r.items.len()).rev() {
        if keep[i * words + q / 64] >> (q % 64) & 1 == 1 {
            chosen.push(r.items[i]);
            q -= r.weights[i] as usize;
        }
    }
    Ok(chosen)
}

/// Exact 0/1 knapsack by Algorithm 3: size classes combined by concave (max, +) convolution
/// (Definition 3). Same contract and result value as [`knapsack_dp`] (tied optima may choose
/// different items); its tables must stay within [`MAXCONV_CELL_LIMIT`], else
/// [`Error::TooLarge`].
///
/// # Panics
/// If `values` and `sizes` differ in length.
///
/// # Complexity
/// I items of positive value that fit, T distinct sizes among them, C capacity units (as
/// [`knapsack_dp`]). Time: O(I log I) to sort the classes and O(T C log C) for the convolutions,
/// which dominate when T is small against I. Memory: O(T C) choice-table cells.
///
/// # Examples
/// ```
/// use moe_opt::slimcaching::algorithms::knapsack_maxconv;
///
/// // The example of `knapsack_dp`: two size-10 items form one class, so T = 3.
/// let (optimum, chosen) = knapsack_maxconv(&[6.0, 10.0, 12.0, -1.0], &[10, 20, 30, 10], 50)?;
/// assert_eq!((optimum, chosen), (22.0, vec![1, 2]));
/// # Ok::<(), formulations::Error>(())
/// ```
pub fn knapsack_maxconv(
    values: &[f64],
    sizes: &[u64],
    capacity: u64,
) -> Result<(f64, Vec<usize>), Error> {
    knapsack(values, sizes, capacity, |r| maxconv_choice(values, r))
}

/// Alg. 3's size classes and (max, +) convolutions over the reduced items, and their
/// traceback: the items it chooses.
pub(super) fn maxconv_choice(values: &[f64], r: &Reduced) -> Result<Vec<usize>, Error> {
    let mut chosen = Vec::new();
    // Size classes E_1..E_T (Alg. 3 line 3), by ascending size; members as positions in
    // r.items, best value first (then lower index), so a class's top j items are a prefix.
    let mut by_size: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for (k, &w) in r.weights.iter().enumerate() {
        by_size.entry(w).or_default().push(k);
    }
    let classes: Vec<(usize, Vec<usize>)> = by_size
        .into_iter()
        .map(|(w, mut members)| {
            members.sort_by(|&a, &b| {
                values[r.items[b]]
                    .total_cmp(&values[r.items[a]])
                    .then(a.cmp(&b))
            });
            (w as usize, members)
        })
        .collect();
    check_cells(
        r,
        "the choice tables of Alg. 3",
        classes.len(),
        MAXCONV_CELL_LIMIT,
    )?;
    let cap = r.capacity as usize;
    // best[q]: best value of the classes so far within capacity q (non-decreasing in q).
    let mut best = vec![0.0f64; cap + 1];
    // taken[t][q]: how many of class t's top items the optimum within q takes.
    let mut taken: Vec<Vec<u32>> = Vec::with_capacity(classes.len());
    for (w, members) in &classes {
        let w = *w;
        let count = members.len().min(cap / w);
        // s^(t)_j: the best value of j items of the class, concave in j (lines 4-6).
        let mut prefix = Vec::with_capacity(count + 1);
        prefix.push(0.0);
        for &k in &members[..count] {
            let last = *prefix.last().expect("prefix starts with 0");
            prefix.push(last + values[r.items[k]]);
        }
        let mut next = vec![0.0f64; cap + 1];
        let mut take = vec![0u32; cap + 1];
        for residue in 0..w.min(cap + 1) {
            // y^(residue) of Definition 3.
            let y: Vec<f64> = (residue..=cap).step_by(w).map(|q| best[q]).collect();
            let (out, arg) = concave_maxplus(&y, &prefix);
            for (t, q) in (residue..=cap).step_by(w).enumerate() {
                next[q] = out[t];
                take[q] = arg[t] as u32;
            }
        }
        best = next;
        taken.push(take);
    }
    let mut q = cap;
    for (t, (w, members)) in classes.iter().enumerate().rev() {
        let j = taken[t][q] as usize;
        chosen.extend(members[..j].iter().map(|&k| r.items[k]));
        q -= j * w;
    }
    Ok(chosen)
}

/// out[t] = max over j in 0..=min(t, z.len() - 1) of y[t - j] + z[j], and the largest
/// maximising t - j as arg[t] = j. `z` must be concave (non-increasing increments) with
/// z[0] = 0. Then the largest maximising s = t - j is non-decreasing in t (the matrix
/// y[s] + z[t - s] is Monge), so divide and conquer over t with a shrinking s-range finds every
/// row's argmax in O(len log len).
pub(super) fn concave_maxplus(y: &[f64], z: &[f64]) -> (Vec<f64>, Vec<usize>) {
    let mut out = vec![0.0; y.len()];
    let mut arg = vec![0; y.len()];
    if !y.is_empty() && !z.is_empty() {
        monotone_rows(y, z, (0, y.len()), (0, y.len() - 1), &mut out, &mut arg);
    }
    (out, arg)
}

/// Rows t in [rows.0, rows.1), argmax s searched in [cols.0, cols.1] (inclusive).
pub(super) fn monotone_rows(
    y: &[f64],
    z: &[f64],
    rows: (usize, usize),
    cols: (usize, usize),
    out: &mut [f64],
    arg: &mut [usize],
) {
    if rows.0 >= rows.1 {
        return;
    }
    let t = rows.0 + (rows.1 - rows.0) / 2;
    // Feasible s: t - (z.len() - 1) <= s <= t. The range is non-empty: cols.0 is the argmax of
    // a row above t (so <= t) and cols.1 that of a row below (so >= that row - len + 1).
    let lo = cols.0.max(t.saturating_sub(z.len() - 1));
    let hi = cols.1.min(t);
    let mut best_s = lo;
    let mut best = y[lo] + z[t - lo];
    for s in lo + 1..=hi {
        let c = y[s] + z[t - s];
        if c >= best {
            best = c;
            best_s = s;
        }
    }
    out[t] = best;
    arg[t] = t - best_s;
    monotone_rows(y, z, (rows.0, t), (cols.0, best_s), out, arg);
    monotone_rows(y, z, (t + 1, rows.1), (best_s, cols.1), out, arg);
}
