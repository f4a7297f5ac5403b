//! docs/adding-a-problem.md, followed: a toy problem (0/1 knapsack) added as one module and one
//! registry line, with no change to the command line. The command line (`cli::run_with`) then
//! solves, compares, writes the LP of and verifies claims on it.
//!
//! Expected numbers are worked by hand: items (weight, value) (1, 2), (10, 15) with capacity 10.
//! The best packing is item 1 alone (value 15); greedy by value per weight takes item 0 first
//! (ratio 2 > 1.5) and then cannot fit item 1 (value 2, ratio 2/15 = 0.1333); greedy with the
//! best single item as a fallback reaches 15. So the claim "greedy >= OPT / 2" must be found
//! violated, and "max(greedy, best item) >= OPT / 2" (a textbook theorem) must hold.

use std::path::Path;

use clap::Parser;
use formulations::milp::{Milp, Sense as MilpSense};
use formulations::{Error, ValidationError};
use moe_opt::claims::{Check, CheckOptions, Claim, ClaimInfo, Outcome, PaperScale, Quantifier};
use moe_opt::cli::{run_with, Cli};
use moe_opt::problem::{self, Problem, RunOptions, Sense, Solved};
use moe_opt::registry::{Commands, ProblemEntry, Registry};
use moe_opt::tier::{Level, Premise};
use moe_opt::verify::{ClaimGroup, Searchable};
use rand::Rng;
use serde::{Deserialize, Serialize};

mod common;

// 1. The data model: a file with its `problem` tag, validated on load.

/// A 0/1 knapsack.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Knapsack {
    /// Always "knapsack".
    problem: String,
    capacity: u64,
    weights: Vec<u64>,
    values: Vec<f64>,
}

impl Knapsack {
    fn validate(&self) -> Result<(), ValidationError> {
        if self.problem != "knapsack" {
            return Err(ValidationError::new("problem", "must be \"knapsack\""));
        }
        if self.weights.len() != self.values.len() {
            return Err(ValidationError::new("values", "one value per weight"));
        }
        if let Some(i) = self
            .values
            .iter()
            .position(|v| !(v.is_finite() && *v >= 0.0))
        {
            return Err(ValidationError::new(
                format!("values[{i}]"),
                "must be finite and >= 0",
            ));
        }
        if let Some(i) = self.weights.iter().position(|&w| w == 0) {
            return Err(ValidationError::new(
                format!("weights[{i}]"),
                "must be positive",
            ));
        }
        Ok(())
    }
}

// 2. The methods: a named enum.

moe_opt::named! {
    enum Method: "method" {
        /// exact MILP, HiGHS
        Milp,
        /// every subset (n <= 20)
        Exhaustive,
        /// by value per weight
        Greedy,
        /// greedy, or the best single item if better
        GreedyPlus,
    }
}

// 3. The problem: methods find a packing, the one evaluator values it.

struct KnapsackProblem;

fn greedy(k: &Knapsack) -> Vec<usize> {
    let mut order: Vec<usize> = (0..k.weights.len()).collect();
    order.sort_by(|&a, &b| {
        let ra = k.values[a] / k.weights[a] as f64;
        let rb = k.values[b] / k.weights[b] as f64;
        rb.total_cmp(&ra).then(a.cmp(&b))
    });
    let mut left = k.capacity;
    let mut chosen = Vec::new();
    for i in order {
        if k.weights[i] <= left {
            left -= k.weights[i];
            chosen.push(i);
        }
    }
    chosen.sort();
    chosen
}

fn value(k: &Knapsack, items: &[usize]) -> f64 {
    items.iter().map(|&i| k.values[i]).sum()
}

impl Problem for KnapsackProblem {
    const TAG: &'static str = "knapsack";
    const ABOUT: &'static str = "0/1 knapsack (a toy problem of the tests)";
    const SENSE: Sense = Sense::Maximize;
    const OBJECTIVE: &'static str = "value";
    type Instance = Knapsack;
    type Model = Knapsack;
    type Method = Method;
    type Solution = Vec<usize>;
    type Evaluation = f64;
    type Detail = ();

    fn load(path: &Path) -> Result<Knapsack, Error> {
        let k: Knapsack = formulations::error::read_json(path)?;
        k.validate().map_err(|e| e.in_file(path))?;
        Ok(k)
    }

    fn model(instance: &Knapsack) -> Knapsack {
        instance.clone()
    }

    const EXACT: &'static [Method] = &[Method::Milp, Method::Exhaustive];

    fn default_methods(k: &Knapsack) -> Vec<Method> {
        Method::ALL
            .iter()
            .copied()
            .filter(|&m| m != Method::Exhaustive || k.weights.len() <= 20)
            .collect()
    }

    fn solve(k: &Knapsack, method: Method, options: &RunOptions) -> Result<Solved<Self>, Error> {
        Ok(match method {
            Method::Milp => {
                let milp = Self::milp(k)?;
                let solution = milp.solve(&options.solve, None)?;
                let items = solution.values.as_ref().map(|x| {
                    (0..k.weights.len())
                        .filter(|&i| x[i] > 0.5)
                        .collect::<Vec<_>>()
                });
                Solved::exact(items, &solution)
            }
            Method::Exhaustive => {
                let n = k.weights.len();
                if n > 20 {
                    return Err(Error::TooLarge(format!("exhaustive: {n} items > 20")));
                }
                let best = (0u32..1 << n)
                    .map(|mask| (0..n).filter(|&i| mask >> i & 1 == 1).collect::<Vec<_>>())
                    .filter(|s| s.iter().map(|&i| k.weights[i]).sum::<u64>() <= k.capacity)
                    .max_by(|a, b| value(k, a).total_cmp(&value(k, b)))
                    .expect("the empty packing fits");
                Solved::found(best)
            }
            Method::Greedy => Solved::found(greedy(k)),
            Method::GreedyPlus => {
                let g = greedy(k);
                let single = (0..k.weights.len())
                    .filter(|&i| k.weights[i] <= k.capacity)
                    .max_by(|&a, &b| k.values[a].total_cmp(&k.values[b]));
                match single {
                    Some(i) if k.values[i] > value(k, &g) => Solved::found(vec![i]),
                    _ => Solved::found(g),
                }
            }
        })
    }

    fn evaluate(k: &Knapsack, items: &Vec<usize>) -> Result<f64, ValidationError> {
        let weight: u64 = items.iter().map(|&i| k.weights[i]).sum();
        if weight > k.capacity {
            return Err(ValidationError::new(
                "weights",
                "the packing exceeds the capacity",
            ));
        }
        Ok(value(k, items))
    }

    fn objective(value: &f64) -> f64 {
        *value
    }

    fn milp(k: &Knapsack) -> Result<Milp, Error> {
        let mut m = Milp::new("knapsack", MilpSense::Maximize);
        let x: Vec<_> = (0..k.weights.len())
            .map(|i| m.binary(format!("x{i}")))
            .collect();
        for (i, &v) in x.iter().enumerate() {
            m.add_objective(v, k.values[i]);
        }
        let terms = x
            .iter()
            .zip(&k.weights)
            .map(|(&v, &w)| (v, w as f64))
            .collect();
        m.row("capacity", terms, f64::NEG_INFINITY, k.capacity as f64);
        Ok(m)
    }
}

// 4. Claims: a family, a check, and the moves of the worst-case search.

/// The hand-worked instance of the module doc.
fn hand_worked() -> Knapsack {
    Knapsack {
        problem: "knapsack".into(),
        capacity: 10,
        weights: vec![1, 10],
        values: vec![2.0, 15.0],
    }
}

/// One seed in four gives the hand-worked instance; the others are random.
fn family(seed: u64) -> Knapsack {
    if seed.is_multiple_of(4) {
        return hand_worked();
    }
    let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(seed);
    let n = rng.random_range(2..=6);
    Knapsack {
        problem: "knapsack".into(),
        capacity: rng.random_range(5..=20),
        weights: (0..n).map(|_| rng.random_range(1..=12)).collect(),
        values: (0..n).map(|_| rng.random_range(1..=20) as f64).collect(),
    }
}

fn ratio_claim(id: &'static str, method: Method) -> Claim<Knapsack> {
    Claim {
        info: ClaimInfo {
            id,
            paper: "toy",
            place: "textbook",
            statement: "the method reaches half the optimum",
            measured: "value / optimum",
            bound: "ratio >= 1/2",
            family: "the hand-worked instance at one seed in four, else 2-6 random items",
            quote: "the method reaches half the optimum",
            ..ClaimInfo::DEFAULTS
        },
        family,
        check: if method == Method::Greedy {
            check_greedy
        } else {
            check_greedy_plus
        },
        paper: PaperScale::Without("a textbook toy: no paper, no paper's scale"),
    }
}

/// "Some instance has the method below half the optimum": the ratio claim's failures are its
/// witnesses, and its passes are no evidence either way.
fn existence_claim(id: &'static str, method: Method) -> Claim<Knapsack> {
    Claim {
        info: ClaimInfo {
            id,
            statement: "some instance has the method below half the optimum",
            bound: "ratio < 1/2 on some instance",
            quantifier: Quantifier::Existential,
            ..ratio_claim(id, method).info
        },
        family,
        check: if method == Method::Greedy {
            |k, o| witness_of(check_greedy(k, o))
        } else {
            |k, o| witness_of(check_greedy_plus(k, o))
        },
        paper: PaperScale::Without("a textbook toy: no paper, no paper's scale"),
    }
}

/// A failure of the ratio is a witness (pass); anything else shows nothing (inconclusive, no
/// margin: an existence claim has nothing to drive down).
fn witness_of(ratio: Check) -> Check {
    let outcome = if ratio.outcome == Outcome::Fail {
        Outcome::Pass
    } else {
        Outcome::Inconclusive
    };
    Check {
        outcome,
        margin: None,
        certificate: None,
        ..ratio
    }
}

fn check_greedy(k: &Knapsack, options: &CheckOptions) -> Check {
    check(k, options, Method::Greedy)
}

fn check_greedy_plus(k: &Knapsack, options: &CheckOptions) -> Check {
    check(k, options, Method::GreedyPlus)
}

fn check(k: &Knapsack, options: &CheckOptions, method: Method) -> Check {
    let run_options = RunOptions {
        solve: options.solve.clone(),
        seed: 0,
    };
    let alg = problem::run::<KnapsackProblem>(k, method, &run_options).unwrap();
    let opt = problem::run::<KnapsackProblem>(k, Method::Exhaustive, &run_options).unwrap();
    let (a, o) = (alg.objective().unwrap(), opt.objective().unwrap());
    let margin = a - o / 2.0;
    let outcome = if margin < -1e-9 {
        Outcome::Fail
    } else {
        Outcome::Pass
    };
    let note = format!("{method} {a} against the optimum {o}");
    Check {
        ratio: (o > 0.0).then(|| a / o),
        bound: Some(0.5),
        margin: Some(margin),
        ..Check::against_optimum(outcome, a, o, "exhaustive", note)
    }
}

impl Searchable for Knapsack {
    const DIMS: &'static [&'static str] = &["items"];
    type Size = usize;

    fn load(path: &Path) -> Result<Self, Error> {
        KnapsackProblem::load(path)
    }

    fn dims(&self) -> Vec<u64> {
        vec![self.weights.len() as u64]
    }

    fn size(&self) -> usize {
        self.weights.len()
    }

    fn perturb(&self, rng: &mut rand_chacha::ChaCha8Rng) -> Self {
        let mut k = self.clone();
        let i = rng.random_range(0..k.values.len());
        k.values[i] = (k.values[i] + rng.random_range(-3.0..3.0)).max(0.0);
        k
    }

    /// The textbook knapsack's assumption (every item fits alone; greedy-plus's 1/2 rests on
    /// it) and an "evaluation range" of at most 12 items.
    fn premises() -> Vec<Premise<Self>> {
        vec![
            Premise {
                name: "item-fits",
                level: Level::Model,
                place: "textbook",
                quote: "every item fits in the knapsack",
                claims: &[],
                holds: |k| match k.weights.iter().position(|&w| w > k.capacity) {
                    Some(i) => Err(format!("item {i} weighs more than the capacity")),
                    None => Ok(()),
                },
            },
            Premise {
                name: "few-items",
                level: Level::Regime,
                place: "the toy's evaluation",
                quote: "at most 12 items",
                claims: &[],
                holds: |k| match k.weights.len() {
                    n if n <= 12 => Ok(()),
                    n => Err(format!("{n} items")),
                },
            },
        ]
    }

    fn shrink_candidates(&self) -> Vec<Self> {
        (0..self.weights.len())
            .filter(|_| self.weights.len() > 1)
            .map(|drop| {
                let mut k = self.clone();
                k.weights.remove(drop);
                k.values.remove(drop);
                k
            })
            .collect()
    }
}

// 5. The command line: the standard reports (no generator, importer or sweep).

impl Commands for KnapsackProblem {
    fn claims() -> Vec<Box<dyn ClaimGroup>> {
        vec![Box::new(vec![
            ratio_claim("knapsack/greedy-half", Method::Greedy),
            ratio_claim("knapsack/greedy-plus-half", Method::GreedyPlus),
            existence_claim("knapsack/greedy-below-half-somewhere", Method::Greedy),
            existence_claim(
                "knapsack/greedy-plus-below-half-somewhere",
                Method::GreedyPlus,
            ),
        ])]
    }
}

// 6. The registry line.

fn table() -> Registry {
    moe_opt::problems::builtin().with(Box::new(ProblemEntry::<KnapsackProblem>::new()))
}

fn cli(args: &[&str]) {
    let cli = Cli::try_parse_from(std::iter::once("moe-opt").chain(args.iter().copied()))
        .expect("the arguments parse");
    if let Err(e) = run_with(&table(), cli) {
        panic!("{args:?}: {}", e.message);
    }
}

#[test]
fn a_toy_problem_added_through_the_registry_is_solved_compared_written_and_verified() {
    let dir = common::scratch("toy-knapsack");
    let file = dir.join("k.json");
    std::fs::write(&file, serde_json::to_string(&hand_worked()).unwrap()).unwrap();
    let f = file.to_str().unwrap();

    // solve: the MILP proves 15 (item 1 alone).
    let solved = dir.join("solve.csv");
    let solved_s = solved.to_str().unwrap();
    // `solve` has no table in the standard entry: --json only.
    cli(&["solve", f, "--method", "milp", "--json"]);
    let e = Cli::try_parse_from(["moe-opt", "solve", f, "--method", "milp", "--csv", solved_s])
        .map(|c| run_with(&table(), c))
        .unwrap()
        .unwrap_err();
    assert!(e.message.contains("--csv"), "{}", e.message);

    // compare: every method against the proved optimum.
    let compared = dir.join("compare.csv");
    cli(&["compare", f, "--csv", compared.to_str().unwrap()]);
    let rows = common::csv_records(&compared);
    let ratio = |m: &str| -> f64 {
        let row = rows.iter().find(|r| r["method"] == m).unwrap();
        assert_eq!(row["reference_kind"], "optimum");
        assert_eq!(row["reference_value"].parse::<f64>().unwrap(), 15.0);
        row["ratio"].parse().unwrap()
    };
    assert_eq!(ratio("milp"), 1.0);
    assert_eq!(ratio("exhaustive"), 1.0);
    assert!((ratio("greedy") - 2.0 / 15.0).abs() < 1e-12);
    assert_eq!(ratio("greedy-plus"), 1.0);

    // write-lp: one binary per item and the capacity row.
    let lp = dir.join("k.lp");
    cli(&["write-lp", f, "-o", lp.to_str().unwrap()]);
    let text = std::fs::read_to_string(&lp).unwrap();
    assert!(
        text.contains("capacity") && text.contains("x0") && text.contains("x1"),
        "{text}"
    );

    // verify: the plain greedy's claim is violated (the hand-worked instance at seed 0), the
    // textbook one holds on every generated instance.
    let out = dir.join("verify");
    cli(&[
        "verify",
        "--paper",
        "toy",
        "--instances",
        "20",
        "--search",
        "0",
        "--jobs",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    let claims = common::csv_records(&out.join("claims.csv"));
    let verdict = |id: &str| claims.iter().find(|r| r["id"] == id).unwrap()["verdict"].clone();
    assert_eq!(verdict("knapsack/greedy-half"), "violated");
    assert_eq!(verdict("knapsack/greedy-plus-half"), "holds");
    // The existence claims: the hand-worked instance witnesses the plain greedy's; no instance
    // can witness the textbook theorem's negation, which is then "not witnessed", not
    // "violated" (an existence claim cannot fail).
    assert_eq!(verdict("knapsack/greedy-below-half-somewhere"), "witnessed");
    assert_eq!(
        verdict("knapsack/greedy-plus-below-half-somewhere"),
        "not witnessed"
    );
    for r in &claims {
        let quantifier = if r["id"].ends_with("-somewhere") {
            "existential"
        } else {
            "universal"
        };
        assert_eq!(
            (r["kind"].as_str(), r["quantifier"].as_str()),
            ("stated", quantifier)
        );
    }
    let saved = out.join("counterexamples/knapsack-greedy-half.json");
    let shrunk: Knapsack = serde_json::from_str(&std::fs::read_to_string(saved).unwrap()).unwrap();
    let alg = value(&shrunk, &greedy(&shrunk));
    let opt = problem::run::<KnapsackProblem>(&shrunk, Method::Exhaustive, &RunOptions::default())
        .unwrap()
        .objective()
        .unwrap();
    assert!(
        alg < opt / 2.0,
        "the saved counterexample fails the claim: {shrunk:?}"
    );
}
