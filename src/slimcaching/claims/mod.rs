//! The SlimCaching claims (paper 000) as hypotheses checked instance by instance: each claim
//! has an id, its place in the paper, a deterministic instance family and a check that derives
//! its [`Outcome`] from measurements only (the evaluator's F, exhaustive set-function checks,
//! exhaustive search or a HiGHS solve with a proved status). Nothing here assumes a claim holds.
//!
//! This module holds the claim table and what every check shares (tolerance, margins, premises);
//! the rest is in layers: `families` (the instance families), `set_functions` (F and its
//! restrictions over (server, expert) pairs), `witnesses` (failure evidence as JSON),
//! `properties` (Props. 1, 2 and 4), `references` (optima and the ratio claims against them:
//! Prop. 3, Remark 2, Alg. 3 = Alg. 2) and `curvature` (Prop. 5, Thm. 1 and Prop. 6).
//!
//! ## Set functions
//!
//! Every set function is F (17) or a restriction of it, evaluated by the one evaluator
//! ([`LatencyModel::route`], the latency-optimal route of a routing demand): over a ground set
//! of (server, expert) pairs on top of a fixed base placement,
//!
//! f(S) = sum_{d kept} W_d (G_d(base) - G_d(base + S)),
//!
//! which is F(S) for an empty base and all demands, F~_n(S) = F(X_{<n} + S) - F(X_{<n}) of
//! (20)-(21) for base X_{<n} and the ground set V_n of server n, and the two parts of Prop. 4 when
//! the demands are split by the K_m of their model: F~^mod (K_m = 1) and F~^super (K_m > 1).
//! Since F~_n = F~^mod + F~^super exactly (every demand belongs to one model), no further
//! reading is needed for the split. Ground sets contain only experts some routing demand needs
//! (the other experts change no route, so their gains are identically 0 and they can violate no
//! inequality); Prop. 1/2's full V = all N x E pairs is used whenever N x E <= 20. Inequalities
//! are checked exhaustively over 2^|ground| sets (|ground| <= 20, a proof for the instance);
//! above that by 20,000 seeded random chains, and a check that finds no violation that way is
//! reported inconclusive, never passed. All inequalities use verification's default
//! [`Tolerance`]: a >= b - (1e-12 + 1e-9 max(|a|, |b|)), decided as the sign of the slack
//! (a - b) + 1e-12 + 1e-9 max(|a|, |b|) ([`Tolerance::slack`]). Property checks visit every
//! inequality ([`worst_slack`]) and report the worst one, not the first violation found.
//!
//! ## Optima
//!
//! OPT of P1 comes from [`algorithms::exhaustive`] (at most 22 relevant pairs; reference kind
//! optimum, status `exhaustive`) or else from the MILP of P1 (optimum only with status
//! `optimal`; stopped by its time limit, its best bound is an upper bound on OPT and its
//! incumbent, re-evaluated, a lower one). The optimum X_n^* of P2_n comes from enumerating every
//! subset of server n's relevant experts within Q_n (at most 20 such experts) or else from
//! [`SlimCachingMilp::build`] with `Scope::Fixed(X_{<n})` on earlier servers, `Scope::Free` on
//! n and `Scope::Fixed(empty)` on later ones. A ratio claim `ALG >= b OPT` passes when ALG >= b
//! UB for a proved upper bound UB (certificate `bound`, or `optimum` when UB is a proved
//! optimum) and fails when ALG < b LB for a feasible solution's value LB.
//!
//! ## Bounds (the paper's sizes)
//!
//! On an instance whose P1 MILP has more than [`PAPER_SIZED_VARIABLES`] variables (the paper's
//! presets; the small-scale families stay far below), the ratio checks first try a one-pass
//! upper bound (module `bounds`; reference status `relaxation_bound`, lower bound the
//! algorithm's own value); when it does not certify a pass, P1's Lagrangian bound
//! (`formulations::slimcaching::lagrangian`, proved in its module doc; status
//! `lagrangian_bound`, within the time limit of a solve), used when it decides the claim; the
//! MILP only when neither does. The one-pass bounds rest on the evaluator's routing latency G_d being a sum of non-negative costs: the associated
//! server's compute once if it serves an expert, per other server visited its visit once and a
//! return per expert, the cloud's visit once and a return per expert.
//!
//! * P1: F(X) <= sum_d W_d (G_d(empty) - L_d) for every X, with L_d = min(T^CP_E(n_u),
//!   min_{n' != n_u} (visit_{n'} + |R_d| return_{n'}), G_d(empty)). Proof: a route that uses
//!   several places pays each one's once-cost and per expert at least the cheapest return among
//!   them, so serving all of R_d at one place is at least as fast; the routing rule only
//!   removes routes; capacities are dropped. On the paper preset (seed 0) this is 0.189839 s
//!   against the MILP's best bound of 0.189863 s after 60 s: the MILP's LP relaxation is no
//!   tighter than dropping capacities.
//! * P2_n: with h_d(T) = G_d(X_{<n}) - G_d(X_{<n} + T on n) for T a subset of R_d (tabulated
//!   over its 2^|R_d| <= 16 subsets), F~_n(S) = sum_d W_d h_d(S cap R_d). Credits u_{d,e} =
//!   h_d(e | R_d - e) + delta_d, delta_d = max_T (h_d(T) - sum_{e in T} h_d(e | R_d - e))^+
//!   (0 when h_d is supermodular, Prop. 4), give sum_{e in T} u_{d,e} >= h_d(T) for every T, so
//!   F~_n(S) <= sum_{e in S} U_e with U_e = sum_d W_d u_{d,e}; the fractional knapsack over
//!   (U_e, b_e) within Q_n bounds the right side. This is the modular upper bound of Prop. 5's
//!   proof (top marginals), so wherever Prop. 5 holds by its own argument, Alg. 3 reaches
//!   (1 - kappa_n) of it up to the fractional item.
//!
//! ## The claims (ids `slimcaching/...`)
//!
//! 1. `prop1-submodular`, Prop. 1 (Sec. IV-B, App. A): every model Top-1 => F monotone
//!    non-decreasing and submodular (Definition 1) on V. Exhaustive checks of both; fail with
//!    the worst violation of whichever is violated; above 20 pairs (the paper's sizes)
//!    decided demand by demand, exactly (module `properties`). Instances with a K_m > 1 model
//!    are not applicable (premise). Family `tiny-top1`.
//! 2. `prop2-monotone`, Prop. 2, first part: K_m > 1 => F monotone. Reading: "K_m > 1 for any
//!    m" is read like Prop. 1's "K_m = 1 for any m", i.e. for every model (mixed libraries are
//!    Prop. 4's subject); other instances are not applicable. Family `tiny-top2`.
//! 3. `prop2-neither`, Prop. 2, second part (App. B): with K_m > 1, F is neither submodular nor
//!    supermodular. Reading: App. B proves it by exhibiting one configuration of each kind, so
//!    it is an existence statement about the problem class, not about every instance (a
//!    one-server instance is in fact supermodular: a demand's -G_d is T_{n,C} + T^CP_C times
//!    [all of R cached] (supermodular), minus T^CP_E times [some of R cached] (a negated
//!    coverage term, supermodular) plus modular terms, so only N >= 2 can show both).
//!    Per instance: pass when both a submodularity and a supermodularity violation are found
//!    (both witnesses are recorded even on a pass: they are the evidence), inconclusive when
//!    only one or none is (the note says which). An existential claim: `witnessed` when some
//!    instance passes, `not witnessed` otherwise (never `violated`). Family `tiny-top2`.
//! 4. `prop3-greedy-ratio`, Prop. 3: every model Top-1 => F(Alg. 1) >= (1 - 1/e) F(X*).
//!    Alg. 1 is [`algorithms::greedy`] (density greedy as written). Family `tiny-top1`.
//! 5. `prop4-structure`, Prop. 4: along Alg. 3's successive run (X_{<n} = Alg. 3's placement on
//!    servers before n, later servers empty), F~^mod_n is modular (both sub- and supermodular)
//!    and non-decreasing and F~^super_n is supermodular and non-decreasing, as set functions on
//!    server n's experts. Any violation fails the instance; the witness is the worst one (lowest
//!    margin) and names the server, the part and the property, the note lists every violated
//!    (server, part, property). Family `tiny-mixed`.
//! 6. `prop5-subproblem-ratio`, Prop. 5 (App. C), eq. (24): for every server n of Alg. 3's run,
//!    F~_n(X_n^alg3) >= (1 - kappa_n) F~_n(X_n^*), kappa_n the supermodular curvature
//!    (Definition 4) of F~^super_n on server n's experts
//!    ([`verification::supermodular_curvature`], which skips elements with
//!    F~^super(z | V - z) <= 0). Readings: when F~^super_n vanishes (it has no term, i.e. no
//!    K_m > 1 demand needs one of server n's experts, or every one of its 2^|V_n| values is 0,
//!    as happens on a last server whose Top-K > 1 experts are all better served elsewhere),
//!    kappa_n is taken as 0: the supermodular part is absent and (24) is Remark 2's
//!    exactness. When kappa_n is otherwise undefined the server is inconclusive. If F~^super_n
//!    is not monotone supermodular, Definition 4's premise fails: kappa_n is still computed
//!    and used, and the note says so (checked exhaustively where |V_n| <= 20; at the paper's
//!    sizes it is not checked).
//!    Per instance: fail when any server fails; value, reference, ratio and bound are those of
//!    the worst server (a failing one first, then the lowest margin, then the lowest ratio).
//!    Family `tiny-mixed`.
//! 7. `thm1-ratio`, Thm. 1 (App. D): F(X_alg3) >= (1 - kappa_max)/2 F(X*), kappa_max = max_n
//!    kappa_n along Alg. 3's run as in 6; for N = 1 the theorem's sharper (1 - kappa_1) is the
//!    bound. An undefined kappa_n makes the instance inconclusive. Family `tiny-mixed`.
//! 8. `remark2-half`, Remark 2: every model Top-1 => Alg. 2 and Alg. 3 reach >= 1/2 F(X*). Both
//!    are checked; value and ratio are the worse algorithm's; a failure names the algorithm.
//!    Family `tiny-top1`.
//! 9. `prop6-single-server`, Prop. 6 (App. E (1)): symmetric links and negligible computation,
//!    N = 1 => kappa_1 ~ 1/2. moe-opt's reading of "approximately": |kappa_1 - 1/2| <= 0.05.
//!    The premises are checked on the instance: links symmetric (every edge-edge and edge-cloud
//!    transfer time equals its reverse for every model's D_m, relative 1e-9) and computation
//!    negligible (every T^CP_E and T^CP_C at most 1e-3 of the shortest one-way cloud link
//!    time); otherwise inconclusive, with kappa still reported. Value = kappa_1, no reference.
//!    Family `prop6-single`.
//! 10. `prop6-multi-server`, Prop. 6 (App. E (2)): same premises, N >= 2 => kappa_max in
//!     (1/2, 1) along Alg. 3's run, the maximum over the servers whose F~^super_n does not
//!     vanish (a vanishing one has no curvature; an undefined kappa_n elsewhere makes the
//!     instance inconclusive). The interval is open. kappa_max = 1 by structure is decided
//!     exactly, a fail: some server's element z has F~^super(z | empty) = 0 because adding z
//!     alone makes no route faster (the routing rule already serves z on the user's server, or
//!     an earlier server already serves it, from a twin of z's server or more cheaply than z's
//!     server by more than the tolerance: `PlacementFunction::unchanged_by`) while
//!     F~^super(z | V - z) > 0; the witness names the server and z. Otherwise kappa_max within
//!     1e-9 of an end point, on either side, is a boundary case (floating point cannot place the
//!     exact curvature: at 1/2 the negligible compute moves it by about 1e-21; never a fail),
//!     below 1/2 - 1e-9 or above 1 + 1e-9 a fail; the note says which end point (1/2: no
//!     redirection gain anywhere; 1: some expert is worthless alone on its server but not next
//!     to the others). Value = kappa_max.
//!     Family `prop6-multi`.
//! 11. `alg3-equals-alg2`, Sec. V-B4 ("without sacrificing optimality"): Alg. 3 reaches the
//!     same P3_n optimum as Alg. 2. Along Alg. 2's run, each server's knapsack (item values
//!     F((n, e) | X_{<n})) is solved by both [`algorithms::knapsack_dp`] and
//!     [`algorithms::knapsack_maxconv`] on the same values, and the optima must agree (relative
//!     1e-9). Value = the largest relative difference. Family `small`.
//! 12. `prop3-repaired`, moe-opt's repair of Prop. 3 (kind `repaired`):
//!     every model Top-1 => the successive modified greedy
//!     ([`crate::slimcaching::algorithms::successive_greedy`]) reaches F >= alpha F(X*) for N = 1 and
//!     alpha / (1 + alpha) F(X*) (about 0.240) for N >= 2, alpha = (1 - 1/e)/2 (about 0.316).
//!     Premise: F monotone submodular (Prop. 1, which holds on every instance inside the model;
//!     this claim's verdict is conditional on it). Proof. (a) One knapsack, f monotone
//!     submodular with f(empty) = 0, every element of size <= B (others fit nowhere). Let the
//!     density greedy pick g_1, g_2, ... and let l be the first step at which the densest
//!     remaining element x does not fit; up to l the picks are the densest of all remaining
//!     elements. For i <= l, each o in O \ G_i has f(o | G_i) / c(o) <= rho_{i+1}, the density
//!     of the next pick (or x), so f(O) - f(G_i) <= f(O + G_i) - f(G_i) <= rho_{i+1} c(O) <=
//!     rho_{i+1} B, i.e. f(G_{i+1}) - f(G_i) >= (c_{i+1} / B)(f(O) - f(G_i)). As the cost of
//!     G_l and x exceeds B, f(O) - f(G_l + x) <= prod (1 - c_i / B) f(O) <= f(O) / e, and
//!     f(G_l) + f(x) >= f(G_l + x) >= (1 - 1/e) f(O) by submodularity; the greedy ends at a
//!     superset of G_l and the best
//!     single element is at least f(x), so the better candidate has >= alpha f(O). If no such l
//!     exists, the greedy takes every element and f(G) >= f(O). (b) N knapsacks on the disjoint
//!     V_n, solved in turn: S_n is alpha-approximate for g_n(X) = f(S_{<n} + X) - f(S_{<n}),
//!     monotone submodular, and O_n is feasible for it, so f(O) <= f(S + O) <= f(S) + sum_n
//!     f(O_n | S) <= f(S) + sum_n f(O_n | S_{<n}) <= f(S) + sum_n g_n(S_n) / alpha = f(S) (1 +
//!     1/alpha). The literature's sharper analyses of the modified greedy (and Sviridenko's
//!     partial enumeration, 1 - 1/e per knapsack at O(|V_n|^5) cost) are not needed for this
//!     bound. Family `tiny-top1`, as Prop. 3.
//! 13. `prop6-single-repaired` and `prop6-multi-repaired`, moe-opt's repair of Prop. 6 (kind
//!     `repaired`), under its premises (symmetric links: T_{n,C} = T_{C,n} = c; computation
//!     T^CP_E, T^CP_C small). App. E's gain formulas hold for tokens that miss r >= 2
//!     experts; a token missing one expert (r = 1) behaves otherwise. (1) N = 1: for such a
//!     demand d (edge routing rule: an expert cached at n_u is served there) adding z at n_u
//!     to the empty set gains a_d = c - T^CP_E and adding it last gains b_d = 2c + T^CP_C (for r
//!     = 1 both are 2c + T^CP_C - T^CP_E). F~^super(z | .) is a sum of such terms, so z's ratio
//!     is a mediant, between min_d a_d / b_d and 1, and kappa_1 = 1 - min_z ratio lies in [0,
//!     1/2 + delta] with delta = max (T^CP_C / 2 + T^CP_E) / (2c + T^CP_C), 0 without
//!     computation (`curvature`'s `prop6_delta`, taken over every demand's model and
//!     server). kappa_1 = 1/2 needs an expert needed only by tokens that miss >= 2 experts;
//!     kappa_1 = 0 when every token misses one. So Thm. 1 (N = 1) still gives 1 - kappa_1 >=
//!     1/2 - delta, the paper's 1/2 up to delta. (2) N >= 2: monotone F~_n (Prop. 2) gives
//!     F~^super(z | empty) >= 0, hence kappa_n <= 1, and a supermodular F~^super_n (Prop. 4)
//!     gives kappa_n >= 0; App. E's claim that the ratio of a remote user's demand stays above
//!     0 fails when an earlier server already serves z as cheaply but caching all of R on n
//!     saves a trip (a = 0: kappa_n = 1, the exact end points of claim 10), and own users' and
//!     r = 1 demands pull kappa_n to 1/2 or below (the violations of claim 10). The interval
//!     the proof supports is the closed [0, 1], with no constant factor from Thm. 1; App. E's
//!     last step also inverts: kappa in (1/2, 1) gives (1 - kappa)/2 in (0, 1/4), not >= 1/4.
//!     Both are closed inequalities (no boundary case). Families as claims 9 and 10.
//!
//! ## Margins
//!
//! Every check also reports [`Check::margin`], the claim's signed slack on the instance, which
//! the worst-case search of `moe-opt verify` drives down. Every claim here is an inequality
//! (or a minimum of inequalities) judged with a tolerance: with raw slack r (the amount by
//! which it holds; negative when it is violated) and allowance t = 1e-12 + 1e-9 max of the two
//! sides, the outcome is a fail exactly when r + t < 0 ([`crate::claims::decide`]; only Prop.
//! 6's open interval, a strict inequality, has boundary cases). The margin is the signed
//! distance of r
//! from the band [-t, t], over a scale: (r + t) / scale below it (a fail), (r - t) / scale
//! above it. Inside the band the inequality holds with equality within the tolerance and has
//! no margin. So a margin is < 0 exactly on a fail (decided from the very number the margin is
//! computed from; the quotient is kept strictly negative), and inconclusive instances
//! (premise fails, no proved optimum, kappa undefined, ground set too large for an exhaustive
//! check) have none.
//!
//! Why equalities are left out: in these claims they are equalities by structure, whatever the
//! instance's numbers. Two pairs serving different demands give f(x | A) = f(x | B); a copy of
//! an expert next to the user's own copy gains 0; F~^mod is modular, so all its sub- and
//! supermodular inequalities are equalities; Alg. 3 meets the bound 1 - kappa_n = 1 exactly on
//! a server without K_m > 1 terms. Counting them would pin the margin at t / scale on almost
//! every instance, and the search, unable to change that, would only inflate max |f| (it
//! did: a 23 s cloud link on a one-server Prop. 1 instance). Left out, the margin is how close
//! the tightest inequality that can move is to failing.
//!
//! * Ratio claims (`prop3-greedy-ratio`, `prop5-subproblem-ratio`, `thm1-ratio`,
//!   `remark2-half`): value v, proved optimum r, bound b, raw slack v - b r, scale |r|: the
//!   margin is ratio - bound moved towards 0 by t / r (at most about 1e-9 + 1e-12 / r). Only
//!   with a proved optimum and a defined ratio (|r| > 1e-12); a fail against an optimum of 0
//!   keeps (r + t) / 1e-12 (the algorithm loses value where nothing can be gained). Prop. 5:
//!   the smallest margin over the servers (the worst server reported is the one with it);
//!   Remark 2: the worse algorithm's.
//! * Property claims (`prop1-submodular`, `prop2-monotone`, `prop4-structure`): for each
//!   property of each set function f, the smallest margin over the inequalities of the
//!   exhaustive check (monotone: f(x | S); submodular: f(x | S) - f(x | S + y);
//!   supermodular: f(x | S + y) - f(x | S); the local chains) that are not equalities
//!   ([`verification::Slack::strict`]), with scale = max(max |f| over the lattice, 1e-12) so
//!   that margins are comparable across instances; the claim's margin is the minimum over its
//!   properties (Prop. 1: monotone, submodular; Prop. 2: monotone; Prop. 4: every server, both
//!   parts, each part's properties). The failure witnesses are the worst inequalities.
//! * `prop2-neither` (existence): `None` always. The claim is that some instance of the class
//!   shows both violations; no single instance can fail it, so there is nothing to drive down.
//! * `prop6-single-server`: 0.05 - |kappa_1 - 1/2| (pass iff >= 0; no band: the reading's
//!   tolerance 0.05 is the band).
//! * `prop6-multi-server`: min(kappa_max - 1/2, 1 - kappa_max) + 1e-9 (the open interval with
//!   the end-point tolerance [`PROP6_END_POINT`]; a fail iff < 0, a boundary case in [0, 2e-9]);
//!   at kappa_max = 1 by structure, min(kappa_max - 1/2, 1 - kappa_max, 0) - 1e-9 (the end
//!   point decided exactly: a fail).
//! * `alg3-equals-alg2` (an equality: the band is the claim): per server, the unused fraction
//!   of the allowance, (t - |dp - mc|) / t with t = 1e-12 + 1e-9 max(|dp|, |mc|): 1 when the
//!   two optima are equal, 0 at the tolerance, negative beyond (about
//!   1 - relative difference / 1e-9); the minimum over the servers.
//!
//! ## Families
//!
//! All families are the generator's presets (Section VI-A's wireless model, compute and cloud
//! latency, synthetic libraries) with a few knobs changed; each is a pure function of the seed.
//! Instances where F is not submodular because of the evaluator's routing rule (a remote edge
//! round trip slower than the cloud's, see [`algorithms`]) are not filtered out.
//!
//! * `tiny-top1`: tiny preset, every model Top-1, N = 1-3, N x E <= 16.
//! * `tiny-top2`: tiny preset, every model Top-2, N = 1-3, N x E <= 16.
//! * `tiny-mixed`: tiny preset (one Top-1 and one Top-2 model), N = 1-3, N x E <= 16.
//! * `prop6-single` / `prop6-multi`: tiny preset, every model Top-2, every compute capability
//!   (user, edge, cloud) 1e30 FLOP/s, N = 1 / N = 2-3; links as generated (symmetric edge-edge
//!   rates, 0.01 s each way to the cloud).
//! * `small`: the small preset unchanged.
//!
//! At the paper's scale (`verify --scale paper`), families of the paper preset (Sec. VI-A's
//! network, compute and 18-model library, [`crate::slimcaching::generate`]), the figure point
//! chosen by seed % k and the random draw by seed / k:
//!
//! * `paper-top1`: the paper's three Top-1 models only (ST-b-8/16/32, 672 experts, 6.3 GB),
//!   (N, U, Q) in [`PAPER_TOP1_POINTS`]: N = 4, U = 20 at Fig. 6(a)'s 1.25 and 2.5 GB, and at
//!   1.25 GB Fig. 8(a)'s N = 2 and 10 and Fig. 8(b)'s U = 50 (at the paper's 5 GB the four
//!   servers would hold every Top-1 expert). Props. 1 and 3, Remark 2, the repaired Prop. 3.
//! * `paper`: the whole library, (N, U, Q) in [`PAPER_POINTS`]: Sec. VI-A's (4, 20, 5 GB),
//!   Fig. 6(a)'s 2.5 GB, Fig. 8(a)'s N = 2 and 10, Fig. 8(b)'s U = 50. Prop. 5, Thm. 1, Prop.
//!   6 (N >= 2) and Alg. 3 = Alg. 2.
//! * `paper-single`: the whole library on one server, (U, Q) in [`PAPER_SINGLE_POINTS`]
//!   (Fig. 1's 1.5 GB, U = 10, 20, 50). Prop. 6 (N = 1): the paper's links are symmetric
//!   and its compute (microseconds per expert) negligible next to the 10 ms cloud link.
//!
//! Props. 1 and 4 are decided there demand by demand, exactly (module `properties`: a sum of
//! monotone, submodular or supermodular terms is so, and a term's violation is a witness only
//! once re-evaluated on the whole F). Prop. 2 runs on `paper` too and is not applicable on
//! every instance: the paper's library always has Top-1 models.
//!
//! ## Vacuous instances
//!
//! A ratio claim whose target b x OPT is 0 on an instance (Thm. 1's (1 - kappa_max)/2 with
//! kappa_max = 1, Prop. 5's 1 - kappa_n on a server with kappa_n = 1, an optimum of 0) asks
//! only that the algorithm lose nothing: met, it is [`Outcome::Vacuous`], counted apart from
//! the evidence (`references::judge`); Prop. 5 is vacuous on an instance when every server
//! is. Missed, it is still a fail.
//!
//! [`Outcome::Vacuous`]: crate::claims::Outcome::Vacuous
//!
//! [`Check::margin`]: crate::claims::Check::margin
//! [`Outcome`]: crate::claims::Outcome
//! [`SlimCachingMilp::build`]: formulations::slimcaching::SlimCachingMilp::build
//! [`algorithms`]: super::algorithms
//! [`algorithms::exhaustive`]: super::algorithms::exhaustive
//! [`algorithms::greedy`]: super::algorithms::greedy
//! [`algorithms::knapsack_dp`]: super::algorithms::knapsack_dp
//! [`algorithms::knapsack_maxconv`]: super::algorithms::knapsack_maxconv
//! [`worst_slack`]: verification::worst_slack

mod bounds;
mod curvature;
mod families;
mod properties;
mod references;
mod set_functions;
mod witnesses;

use crate::slimcaching::algorithms::Successive;
use formulations::slimcaching::validate::validate;
use formulations::slimcaching::{Instance, LatencyModel};
use verification::{Slack, Tolerance};

use crate::claims::{Check, Claim, ClaimInfo, ClaimKind, PaperScale, Quantifier};
use curvature::{
    check_prop5, check_prop6_multi, check_prop6_multi_repaired, check_prop6_single,
    check_prop6_single_repaired, check_thm1,
};
use properties::{check_prop1, check_prop2_monotone, check_prop2_neither, check_prop4};
pub use references::prop3_repaired_bound;
use references::{check_alg3_equals_alg2, check_prop3, check_prop3_repaired, check_remark2};

pub use crate::claims::CheckOptions;
pub use families::{
    family_paper, family_paper_single, family_paper_top1, family_prop6_multi, family_prop6_single,
    family_small, family_tiny_mixed, family_tiny_top1, family_tiny_top2, PAPER_POINTS,
    PAPER_SINGLE_POINTS, PAPER_TOP1_POINTS,
};

/// The paper's file in ../shared/papers/.
pub const PAPER: &str = "000_e52eafead23a117e.txt";

/// Tolerance of every inequality (verification's default: 1e-12 absolute, 1e-9 relative).
pub const TOLERANCE: Tolerance = Tolerance {
    abs: 1e-12,
    rel: 1e-9,
};

/// Largest ground set checked exhaustively (2^20 sets).
pub const EXHAUSTIVE_SET_LIMIT: usize = verification::setfn::EXHAUSTIVE_LIMIT;

/// Random chains sampled when a ground set is larger than [`EXHAUSTIVE_SET_LIMIT`].
pub const SAMPLED_CHAINS: u64 = 20_000;

/// There the ratio checks try the one-pass bounds of module `bounds` and the Lagrangian bound
/// before the MILP (the families at the small scale stay far below: at most a few thousand
/// variables).
pub use formulations::slimcaching::milp::PAPER_SIZED_VARIABLES;

/// The solver status of a reference that is one of the one-pass bounds of module `bounds`.
pub const RELAXATION_STATUS: &str = "relaxation_bound";

/// The solver status of a reference that is the Lagrangian bound of P1
/// (`formulations::slimcaching::lagrangian`).
pub const LAGRANGIAN_STATUS: &str = "lagrangian_bound";

/// Most relevant experts of one server for which P2_n is solved by enumeration; above, the
/// MILP is used.
pub const P2_ENUMERATION_LIMIT: usize = 20;

/// moe-opt's reading of Prop. 6's "kappa_1 approximately 1/2": |kappa_1 - 1/2| <= this.
pub const PROP6_SINGLE_TOLERANCE: f64 = 0.05;

/// Prop. 6 (N >= 2) claims kappa_max in the open interval (1/2, 1): within this of an end point
/// (either side) is a boundary case.
pub const PROP6_END_POINT: f64 = 1e-9;

/// Computation counts as negligible (Prop. 6) when every T^CP is at most this fraction of the
/// shortest one-way edge-cloud link time.
pub const NEGLIGIBLE_COMPUTE: f64 = 1e-3;

/// One registered SlimCaching claim.
pub type SlimClaim = Claim<Instance>;

/// The paper's sentence of `slimcaching/prop3-greedy-ratio`, which its repaired claim corrects.
const PROP3_QUOTE: &str =
    "Algorithm 1 returns a expert caching set $S$ that satisfies $F_1(S) \\geq (1 \
    - 1/e) F_1(\\mathbf{X}^*)$ .";

/// The paper's sentence of `slimcaching/prop6-single-server`, which its repaired claim corrects.
const PROP6_SINGLE_QUOTE: &str =
    "We consider a setting where communication links among edge servers and \
    between each edge server and the cloud are symmetric. We also assume that \
    communication latency dominates the E2E inference latency, rendering \
    computing latency negligible. [...] In the single-edge-server scenario, the \
    curvature satisfies $(\\kappa_g)_1 \\approx \\frac{1}{2}$ , and the proposed \
    algorithm achieves a $\\frac{1}{2}$ -approximation ratio.";

/// The paper's sentence of `slimcaching/prop6-multi-server`, which its repaired claim corrects.
const PROP6_MULTI_QUOTE: &str =
    "We consider a setting where communication links among edge servers and \
    between each edge server and the cloud are symmetric. We also assume that \
    communication latency dominates the E2E inference latency, rendering \
    computing latency negligible. [...] In the general multi-edge-server \
    scenario, the curvature lies in the interval $\\kappa_g^{\\max} \\in \
    (\\frac{1}{2}, 1)$ , and the proposed algorithm guarantees a $\\frac{1}{4}$ \
    -approximation ratio.";

/// Every SlimCaching claim, in the paper's order.
pub fn table() -> Vec<SlimClaim> {
    const TINY_TOP1: &str = "tiny-top1: tiny preset (Sec. VI-A wireless model and compute, \
        synthetic library) with every model Top-1, N = 1-3 servers, N x E <= 16";
    const TINY_TOP2: &str = "tiny-top2: tiny preset with every model Top-2, N = 1-3 servers, \
        N x E <= 16";
    const TINY_MIXED: &str = "tiny-mixed: tiny preset (one Top-1 and one Top-2 model), N = 1-3 \
        servers, N x E <= 16";
    const PAPER_TOP1: &str = "paper-top1: the paper preset (Sec. VI-A) with its three Top-1 \
        models (ST-b-8/16/32, 672 experts); seed % 5 picks (N, U, Q) from (4, 20, 1.25 GB), (4, \
        20, 2.5 GB), (2, 20, 1.25 GB), (10, 20, 1.25 GB), (4, 50, 1.25 GB) (Fig. 6(a)'s \
        storages, Fig. 8's sweeps of N and U), seed / 5 the random draw";
    const PAPER_TOP1_TERMWISE: &str = "paper-top1 (as prop3-greedy-ratio), decided demand by \
        demand: F is the sum of its demands' terms, each on the N pairs of its one expert, and \
        each expert's terms are checked over every subset of its N pairs (a sum of monotone \
        submodular functions is one)";
    const PAPER_FULL: &str = "paper: the paper preset (Sec. VI-A: 18 models, 3,872 experts, \
        Top-1/2/4); seed % 5 picks (N, U, Q) from (4, 20, 5 GB), (4, 20, 2.5 GB), (2, 20, 5 \
        GB), (10, 20, 5 GB), (4, 50, 5 GB) (Sec. VI-A, Fig. 6(a), Fig. 8(a), Fig. 8(b)), seed / \
        5 the random draw";
    const PAPER_SINGLE: &str = "paper-single: the paper preset on N = 1 edge server; seed % 4 \
        picks (U, Q) from (20, 5 GB), (20, 1.5 GB) (Fig. 1's storage), (10, 5 GB), (50, 5 GB), \
        seed / 4 the random draw (the paper's links are symmetric and its compute negligible \
        next to the 10 ms cloud link, Prop. 6's premises)";
    const PAPER_PROP2: &str = "paper (as thm1-ratio): Prop. 2 is read for K_m > 1 on every \
        model, and every library the paper evaluates mixes its Top-1 ST-b models with the Top-2 \
        and Top-4 ones (Sec. VI-A): each instance is outside the premise (not applicable)";
    const PAPER_PROP4: &str = "paper (as thm1-ratio), decided demand by demand: per server, \
        F~^mod and F~^super are sums of their demands' terms, each on the at most K_m experts it \
        needs, and the terms on the same experts are checked together over every subset of \
        them (sums keep monotone, modular and supermodular functions so)";
    vec![
        SlimClaim {
            info: ClaimInfo {
                id: "slimcaching/prop1-submodular",
                paper: PAPER,
                place: "Prop. 1 (Sec. IV-B), proof in App. A",
                statement: "When K_m = 1 for every model, F(X) of (17) is monotone \
                    non-decreasing and submodular on V = {v_i^n}: P1 is monotone submodular \
                    maximisation under N knapsack constraints",
                measured: "f(x|A) >= 0 and f(x|A) >= f(x|B) for all A subset B, x outside B, \
                    over 2^V (V = all N x E pairs), exhaustively",
                bound: "no violation (tolerance 1e-12 + 1e-9 relative)",
                family: TINY_TOP1,
                quote: "For Top- $K$ strategy, when $K_m = 1$ for any $m \\in \\mathcal{M}$ , \
                    $\\mathcal{P}1$ is a monotone non-decreasing submodular maximization problem \
                    with $N$ knapsack constraints.",
                ..ClaimInfo::DEFAULTS
            },
            family: family_tiny_top1,
            paper: PaperScale::Family(PAPER_TOP1_TERMWISE, family_paper_top1),
            check: check_prop1,
        },
        SlimClaim {
            info: ClaimInfo {
                id: "slimcaching/prop2-monotone",
                paper: PAPER,
                place: "Prop. 2 (Sec. IV-B), first part",
                statement: "When K_m > 1 (read: for every model), F(X) is monotone \
                    non-decreasing",
                measured: "f(x|A) >= 0 for all A and x outside A, over 2^V, exhaustively",
                bound: "no violation (tolerance 1e-12 + 1e-9 relative)",
                family: TINY_TOP2,
                quote:
                    "When $K_m > 1$ for any $m \\in \\mathcal{M}$ , $\\mathcal{P}1$ is a monotone \
                    non-decreasing non-submodular non-supermodular maximization problem with $N$ \
                    knapsack constraints.",
                ..ClaimInfo::DEFAULTS
            },
            family: family_tiny_top2,
            paper: PaperScale::Family(PAPER_PROP2, family_paper),
            check: check_prop2_monotone,
        },
        SlimClaim {
            info: ClaimInfo {
                id: "slimcaching/prop2-neither",
                paper: PAPER,
                place: "Prop. 2 (Sec. IV-B), second part, proof in App. B",
                statement: "When K_m > 1, F(X) is neither submodular nor supermodular",
                measured: "an exhaustive search over 2^V for a violation of submodularity and \
                    one of supermodularity; an instance passes when both exist (the claim is \
                    an existence statement about the problem class)",
                bound: "both witnesses on some instance",
                family: TINY_TOP2,
                quote:
                    "When $K_m > 1$ for any $m \\in \\mathcal{M}$ , $\\mathcal{P}1$ is a monotone \
                    non-decreasing non-submodular non-supermodular maximization problem with $N$ \
                    knapsack constraints. [...] To show that $F(\\mathbf{X})$ is neither \
                    submodular nor supermodular, we first present the key marginal behaviors \
                    under $K_m = 2$ and subsequently generalize them to any $K_m > 1$ .",
                quantifier: Quantifier::Existential,
                ..ClaimInfo::DEFAULTS
            },
            family: family_tiny_top2,
            paper: PaperScale::Family(PAPER_PROP2, family_paper),
            check: check_prop2_neither,
        },
        SlimClaim {
            info: ClaimInfo {
                id: "slimcaching/prop3-greedy-ratio",
                paper: PAPER,
                place: "Prop. 3 (Sec. V-A), Alg. 1",
                statement: "When K_m = 1 for every model, Alg. 1 returns S with \
                    F_1(S) >= (1 - 1/e) F_1(X*)",
                measured: "F(Alg. 1) / F(X*), X* by exhaustive search (or the MILP of P1; at the \
                    paper's sizes first a one-pass upper bound)",
                bound: "ratio >= 1 - 1/e = 0.632",
                family: TINY_TOP1,
                quote: PROP3_QUOTE,
                ..ClaimInfo::DEFAULTS
            },
            family: family_tiny_top1,
            paper: PaperScale::Family(PAPER_TOP1, family_paper_top1),
            check: check_prop3,
        },
        SlimClaim {
            info: ClaimInfo {
                id: "slimcaching/prop3-repaired",
                paper: PAPER,
                place: "Prop. 3 (Sec. V-A), repaired by moe-opt",
                statement: "When K_m = 1 for every model (F monotone submodular, Prop. 1), the \
                    successive modified greedy (per server, the better of the density greedy and \
                    the best single expert) returns S with F(S) >= alpha F(X*) for N = 1 and \
                    alpha/(1 + alpha) F(X*) for N >= 2, alpha = (1 - 1/e)/2",
                measured:
                    "F(successive greedy) / F(X*), X* by exhaustive search (or the MILP of P1; \
                    at the paper's sizes first a one-pass upper bound)",
                bound: "ratio >= (1 - 1/e)/2 = 0.316 (N = 1), >= 0.240 (N >= 2)",
                family: TINY_TOP1,
                quote: PROP3_QUOTE,
                kind: ClaimKind::Repaired,
                repairs: Some("slimcaching/prop3-greedy-ratio"),
                ..ClaimInfo::DEFAULTS
            },
            family: family_tiny_top1,
            paper: PaperScale::Family(PAPER_TOP1, family_paper_top1),
            check: check_prop3_repaired,
        },
        SlimClaim {
            info: ClaimInfo {
                id: "slimcaching/prop4-structure",
                paper: PAPER,
                place: "Prop. 4 (Sec. V-B2)",
                statement: "P2_n maximises the sum of a non-decreasing modular function (the \
                    K_m = 1 terms) and a non-decreasing supermodular function (the K_m > 1 \
                    terms) under a knapsack constraint",
                measured: "along Alg. 3's successive run, per server n: F~^mod_n non-decreasing, \
                    sub- and supermodular; F~^super_n non-decreasing and supermodular; \
                    exhaustively over server n's experts",
                bound: "no violation on any server (tolerance 1e-12 + 1e-9 relative)",
                family: TINY_MIXED,
                quote:
                    "$\\mathcal{P}2_n$ is maximizing the sum of a non-decreasing modular function \
                    and a non-decreasing supermodular function subject to a knapsack constraint. \
                    The modular function corresponds to the term including $m$ with $K_m = 1$ \
                    and the supermodular function corresponds to the term including $m$ with \
                    $K_m > 1$ .",
                ..ClaimInfo::DEFAULTS
            },
            family: family_tiny_mixed,
            paper: PaperScale::Family(PAPER_PROP4, family_paper),
            check: check_prop4,
        },
        SlimClaim {
            info: ClaimInfo {
                id: "slimcaching/prop5-subproblem-ratio",
                paper: PAPER,
                place: "Prop. 5 (Sec. V-B6), eq. (24), proof in App. C",
                statement: "Alg. 3's solution of P3_n satisfies \
                    F~_n(X_n) >= (1 - kappa_n) F~_n(X_n^*), X_n^* optimal for P2_n and kappa_n \
                    the supermodular curvature (Definition 4) of F~^super_n",
                measured: "per server of Alg. 3's run: F~_n(X_n^alg3) / F~_n(X_n^*), X_n^* by \
                    enumeration (or the MILP of P2_n; at the paper's sizes first a one-pass upper \
                    bound); kappa_n computed on the instance",
                bound: "ratio >= 1 - kappa_n on every server",
                family: TINY_MIXED,
                quote: "Let $\\ddot{\\mathbf{X}}_n \\subseteq V$ denote the optimal solution of \
                    $\\mathcal{P}_{3n}$ obtained by Algorithm 3. We have the following \
                    approximation ratio, $$\\tilde{F}_n(\\ddot{\\mathbf{X}}_n) \\geq (1 - \
                    (\\kappa_g)_n) \\tilde{F}_n(\\ddot{\\mathbf{X}}_n^*), \\quad (24)$$",
                ..ClaimInfo::DEFAULTS
            },
            family: family_tiny_mixed,
            paper: PaperScale::Family(PAPER_FULL, family_paper),
            check: check_prop5,
        },
        SlimClaim {
            info: ClaimInfo {
                id: "slimcaching/thm1-ratio",
                paper: PAPER,
                place: "Thm. 1 (Sec. V-B6), proof in App. D",
                statement: "F(X_alg) >= (1 - kappa_max)/2 F(X*), kappa_max = max_n kappa_n; \
                    for N = 1, F(X_alg) >= (1 - kappa_1) F(X*)",
                measured: "F(Alg. 3) / F(X*), X* by exhaustive search (or the MILP of P1; at the \
                    paper's sizes first a one-pass upper bound); \
                    kappa_n along Alg. 3's run",
                bound: "ratio >= (1 - kappa_max)/2 (N >= 2), >= 1 - kappa_1 (N = 1)",
                family: TINY_MIXED,
                quote: "We have $F(\\ddot{\\mathbf{X}}) \\geq \\frac{1 - \\kappa_g^{\\max}}{2} \
                    F(\\ddot{\\mathbf{X}}^*)$ , where $\\kappa_g^{\\max} = \\max_{n \\in \
                    \\mathcal{N}} (\\kappa_g)_n$ . Specifically, when $N = 1$ , the obtained \
                    solutions by the proposed algorithm can provide $(1 - (\\kappa_g)_1)$ \
                    -approximation guarantee.",
                ..ClaimInfo::DEFAULTS
            },
            family: family_tiny_mixed,
            paper: PaperScale::Family(PAPER_FULL, family_paper),
            check: check_thm1,
        },
        SlimClaim {
            info: ClaimInfo {
                id: "slimcaching/remark2-half",
                paper: PAPER,
                place: "Remark 2 (Sec. V-C)",
                statement: "When K_m = 1 for every model, Alg. 2 and Alg. 3 give a \
                    1/2-approximation of P1",
                measured: "min(F(Alg. 2), F(Alg. 3)) / F(X*), X* by exhaustive search (or the \
                    MILP of P1; at the paper's sizes first a one-pass upper bound)",
                bound: "ratio >= 1/2 for both algorithms",
                family: TINY_TOP1,
                quote: "While Algorithm 2 and 3 are designed for $K \\geq 1$ , they can also be \
                    applied to the special case $K_m = 1$ for any $m \\in \\mathcal{M}$ . If we \
                    use Algorithm 2 or 3 to successively solve $\\mathcal{P}^2_n$ , the obtained \
                    solutions can provide 1/2-approximation guarantee.",
                ..ClaimInfo::DEFAULTS
            },
            family: family_tiny_top1,
            paper: PaperScale::Family(PAPER_TOP1, family_paper_top1),
            check: check_remark2,
        },
        SlimClaim {
            info: ClaimInfo {
                id: "slimcaching/prop6-single-server",
                paper: PAPER,
                place: "Prop. 6 (Sec. V-C), App. E (1)",
                statement: "With symmetric links and negligible computation, for N = 1 the \
                    curvature is (kappa_g)_1 ~ 1/2 (so Alg. 3 is a 1/2-approximation)",
                measured: "kappa_1 of F~^super_1 (Definition 4)",
                bound: "|kappa_1 - 1/2| <= 0.05 (moe-opt's reading of 'approximately')",
                family: "prop6-single: tiny preset with every model Top-2, N = 1, every compute \
                    capability 1e30 FLOP/s (negligible computation), symmetric links as \
                    generated (0.01 s each way to the cloud)",
                quote: PROP6_SINGLE_QUOTE,
                ..ClaimInfo::DEFAULTS
            },
            family: family_prop6_single,
            paper: PaperScale::Family(PAPER_SINGLE, family_paper_single),
            check: check_prop6_single,
        },
        SlimClaim {
            info: ClaimInfo {
                id: "slimcaching/prop6-single-repaired",
                paper: PAPER,
                place: "Prop. 6 (Sec. V-C), App. E (1), repaired by moe-opt",
                statement: "With symmetric links and negligible computation, for N = 1: 0 <= \
                    kappa_1 <= 1/2 + delta, delta = max_m (T^CP_C/2 + T^CP_E)/(2 T_C + \
                    T^CP_C) (0 without computation), so Alg. 3 is still a 1/2-approximation \
                    up to delta; kappa_1 is 1/2 only when no token misses a single expert",
                measured: "kappa_1 of F~^super_1 (Definition 4) and delta from the instance",
                bound: "0 <= kappa_1 <= 1/2 + delta",
                family: "prop6-single (as prop6-single-server)",
                quote: PROP6_SINGLE_QUOTE,
                kind: ClaimKind::Repaired,
                repairs: Some("slimcaching/prop6-single-server"),
                ..ClaimInfo::DEFAULTS
            },
            family: family_prop6_single,
            paper: PaperScale::Family(PAPER_SINGLE, family_paper_single),
            check: check_prop6_single_repaired,
        },
        SlimClaim {
            info: ClaimInfo {
                id: "slimcaching/prop6-multi-server",
                paper: PAPER,
                place: "Prop. 6 (Sec. V-C), App. E (2)",
                statement: "With symmetric links and negligible computation, for N >= 2 the \
                    curvature lies in kappa_max in (1/2, 1) (so Alg. 3 is a \
                    1/4-approximation)",
                measured: "kappa_max = max_n kappa_n along Alg. 3's successive run",
                bound: "1/2 < kappa_max < 1",
                family: "prop6-multi: tiny preset with every model Top-2, N = 2-3, every \
                    compute capability 1e30 FLOP/s, symmetric links as generated",
                quote: PROP6_MULTI_QUOTE,
                ..ClaimInfo::DEFAULTS
            },
            family: family_prop6_multi,
            paper: PaperScale::Family(PAPER_FULL, family_paper),
            check: check_prop6_multi,
        },
        SlimClaim {
            info: ClaimInfo {
                id: "slimcaching/prop6-multi-repaired",
                paper: PAPER,
                place: "Prop. 6 (Sec. V-C), App. E (2), repaired by moe-opt",
                statement: "With symmetric links and negligible computation, for N >= 2 the \
                    curvature lies in the closed kappa_max in [0, 1], both ends attained, so \
                    Thm. 1 gives (1 - kappa_max)/2 in [0, 1/2]: no constant factor",
                measured: "kappa_max = max_n kappa_n along Alg. 3's successive run",
                bound: "0 <= kappa_max <= 1",
                family: "prop6-multi (as prop6-multi-server)",
                quote: PROP6_MULTI_QUOTE,
                kind: ClaimKind::Repaired,
                repairs: Some("slimcaching/prop6-multi-server"),
                ..ClaimInfo::DEFAULTS
            },
            family: family_prop6_multi,
            paper: PaperScale::Family(PAPER_FULL, family_paper),
            check: check_prop6_multi_repaired,
        },
        SlimClaim {
            info: ClaimInfo {
                id: "slimcaching/alg3-equals-alg2",
                paper: PAPER,
                place: "Alg. 3 and Definition 3 (Sec. V-B4)",
                statement: "Alg. 3 solves P3_n to the same optimum as Alg. 2's DP ('without \
                    sacrificing optimality')",
                measured: "along Alg. 2's run, per server: the optima of the DP and of the \
                    (max, +) convolution on the same item values; the largest relative \
                    difference",
                bound: "equal optima (relative difference <= 1e-9)",
                family: "small: the small preset (N = 2-3, U = 4-6, 3 synthetic models)",
                quote:
                    "To improve efficiency without sacrificing optimality, Algorithm 3 leverages \
                    the observation that experts can naturally be grouped by their data sizes \
                    into a small number of categories. [...] allowing their partial solutions to \
                    be combined without loss of optimality.",
                ..ClaimInfo::DEFAULTS
            },
            family: family_small,
            paper: PaperScale::Family(PAPER_FULL, family_paper),
            check: check_alg3_equals_alg2,
        },
    ]
}

/// `slack / max(scale, TOLERANCE.abs)`, kept strictly negative when `slack` is (a quotient
/// that underflowed to -0 would read as "holds").
fn normalised(slack: f64, scale: f64) -> f64 {
    let m = slack / scale.max(TOLERANCE.abs);
    if slack < 0.0 {
        m.min(-f64::MIN_POSITIVE)
    } else {
        m
    }
}

/// A property claim's margin for one property of one set function: the worst slack of the
/// inequalities that are not equalities within the tolerance ([`Slack::strict`]) over max |f|
/// on the lattice; `None` when every inequality is an equality.
fn slack_margin(s: &Slack) -> Option<f64> {
    s.strict.as_ref().map(|t| normalised(t.slack, s.scale))
}

/// The validated instance's evaluator, or a note naming the broken rule.
fn compile(instance: &Instance) -> Result<LatencyModel, String> {
    validate(instance)
        .map(|()| LatencyModel::new(instance))
        .map_err(|e| format!("invalid instance: {e}"))
}

/// The compiled model of an instance meeting the premise on Top-K ([`premise_top_k`]), or the
/// check that says why not: inconclusive for an invalid instance, not applicable outside the
/// premise.
fn compile_top_k(instance: &Instance, want_one: bool) -> Result<LatencyModel, Box<Check>> {
    let model = compile(instance).map_err(|note| Box::new(Check::inconclusive(note)))?;
    premise_top_k(instance, want_one).map_err(|note| Box::new(Check::not_applicable(note)))?;
    Ok(model)
}

/// The compiled model and Alg. 3's run on it, or why not (an inconclusive note).
fn alg3(instance: &Instance) -> Result<(LatencyModel, Successive), String> {
    let model = compile(instance)?;
    let run = crate::slimcaching::algorithms::successive_maxconv(&model)
        .map_err(|e| format!("Alg. 3 failed: {e}"))?;
    Ok((model, run))
}

/// The premise "every model is Top-1" (or Top-K > 1 with `want_one = false`).
fn premise_top_k(instance: &Instance, want_one: bool) -> Result<(), String> {
    let bad = instance.models.iter().find(|m| (m.top_k == 1) != want_one);
    match bad {
        Some(m) => Err(format!(
            "premise fails: model '{}' is Top-{} (the claim needs every model {})",
            m.name,
            m.top_k,
            if want_one { "Top-1" } else { "Top-K, K > 1" }
        )),
        None => Ok(()),
    }
}

fn fmt_opt(x: Option<f64>) -> String {
    x.map_or_else(|| "undefined".into(), |v| format!("{v:.6}"))
}

fn fmt_margin(m: Option<f64>) -> String {
    m.map_or_else(|| "undefined".into(), |v| format!("{v:.3e}"))
}

#[cfg(test)]
mod paper_tests;
#[cfg(test)]
mod tests;
