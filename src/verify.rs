//! `moe-opt verify`: checks registered claims on many instances, in parallel, with a journal
//! that makes runs resumable and outputs that depend only on the seed.
//!
//! Claims of any problem take part: a problem's instance type implements [`Searchable`] and its
//! claim table (a `Vec<Claim<I>>`) is a [`ClaimGroup`]; one run may mix groups (every paper's
//! claims, or a paper with two instance types), sharing one journal and one pair of tables
//! whose size columns are the union of the groups' [`Searchable::DIMS`].
//!
//! A run has three phases per claim:
//! 1. **generated**: the claim's family at seeds derived from `--seed` and the instance index;
//! 2. **searched**: for every claim whose checks report a margin ([`Check::margin`], the
//!    claim's signed slack: < 0 exactly on a fail), a hill climb
//!    ([`verification::search::local_search_batched`]) over the instance's numbers
//!    ([`Searchable::perturb`]) driving the margin down, from the generated
//!    instance with the lowest margin (ties: the lowest family seed); neighbours without a
//!    margin (inconclusive) are rejected. The best instance found is saved under
//!    `OUT/searched/`, checked and recorded like the others. Claims without any margin (the
//!    existence claim `prop2-neither`) are not searched;
//! 3. **counterexample**: when some instance fails, the smallest failing one is shrunk
//!    ([`verification::search::shrink`] with [`Searchable::shrink_candidates`])
//!    and saved under `OUT/counterexamples/`, re-checkable with `verify --instance FILE
//!    --claim ID`.
//!
//! Every finished instance is appended to `OUT/journal.jsonl` at once (a crash loses nothing
//! already finished); `--resume` reads the journal and skips what it holds. The journal's
//! records are keyed by claim and index only, so `OUT/run.json` records the settings the run
//! started with ([`RunSettings`]) and `--resume` refuses a folder written with others, naming
//! the flag (as `sweep` refuses another spec hash). At the end the
//! journal is rewritten in a fixed order and the tables are written, so the same seed gives
//! byte-identical files whatever `--jobs` and however often the run was interrupted. No
//! wall-clock time enters any output.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use verification::search::{local_search_batched, shrink, SearchOptions};

use crate::claims::{Check, CheckOptions, Claim, ClaimInfo, Outcome, Scale};
use crate::report::canonical_sha256;
use crate::tier::{classify, Classified, Premise, PremiseInfo, Tier};

pub mod claims_csv;
#[cfg(test)]
mod tests;
mod verdict;

use claims_csv::ClaimRow;
use verdict::{enum_name, link_repairs, verdict};

/// An instance type whose claims `moe-opt verify` can check: how to read it back, describe its
/// size, perturb it for the worst-case search and shrink it to a smallest counterexample.
pub trait Searchable: Clone + Send + Sync + Serialize + DeserializeOwned + 'static {
    /// Names of the size columns of journal records and instances.csv, in order.
    const DIMS: &'static [&'static str];
    /// Order of simplicity: the smallest failing instance is shrunk and saved.
    type Size: Ord;
    /// Reads and validates an instance file.
    fn load(path: &Path) -> Result<Self, formulations::Error>;
    /// The sizes named by [`Searchable::DIMS`], in that order.
    fn dims(&self) -> Vec<u64>;
    /// How simple the instance is (smaller is simpler).
    fn size(&self) -> Self::Size;
    /// A random valid neighbour, for the worst-case search.
    fn perturb(&self, rng: &mut ChaCha8Rng) -> Self;
    /// Strictly smaller valid instances, for shrinking a counterexample.
    fn shrink_candidates(&self) -> Vec<Self>;
    /// The paper's premises on such instances, which fix an instance's [`Tier`].
    fn premises() -> Vec<Premise<Self>>;
}

/// The tier of an instance for claim `claim` under its problem's premises. A repaired claim
/// is judged under the premises of the claim it repairs: it corrects that statement inside the
/// same model.
fn tier_of<I: Searchable>(claim: &ClaimInfo, instance: &I) -> Classified {
    classify(&I::premises(), claim.repairs.unwrap_or(claim.id), instance)
}

/// Implements [`Searchable`] for an instance type from its problem's `mutate` module, which has
/// `perturb`, `shrink_candidates`, `size` (a `u64`), `dims` (named sizes, in the order of
/// `DIMS`; a test of each problem checks the names) and `premises` in scope.
#[macro_export]
macro_rules! searchable_from_mutate {
    ($instance:ty, $load:path, [$($dim:literal),+ $(,)?]) => {
        impl $crate::verify::Searchable for $instance {
            const DIMS: &'static [&'static str] = &[$($dim),+];
            type Size = u64;

            fn load(path: &std::path::Path) -> Result<Self, formulations::Error> {
                $load(path)
            }

            fn dims(&self) -> Vec<u64> {
                dims(self).into_iter().map(|(_, v)| v).collect()
            }

            fn size(&self) -> u64 {
                size(self)
            }

            fn perturb(&self, rng: &mut rand_chacha::ChaCha8Rng) -> Self {
                perturb(self, rng)
            }

            fn shrink_candidates(&self) -> Vec<Self> {
                shrink_candidates(self)
            }

            fn premises() -> Vec<$crate::tier::Premise<Self>> {
                premises()
            }
        }
    };
}

/// Test support for the problems' `mutate` modules: `moves` perturbations of `start` (drawn
/// from `rng`), each keeping `invariant`; the last instance and how many moves changed it.
#[cfg(test)]
pub fn assert_perturbations<S: Searchable + PartialEq>(
    start: S,
    moves: usize,
    rng: &mut ChaCha8Rng,
    invariant: impl Fn(&S) -> bool,
) -> (S, usize) {
    assert!(invariant(&start), "the start breaks the invariant");
    let (mut instance, mut changed) = (start, 0);
    for step in 0..moves {
        let next = instance.perturb(rng);
        assert!(invariant(&next), "move {step} breaks the invariant");
        changed += usize::from(next != instance);
        instance = next;
    }
    (instance, changed)
}

/// Test support: the shrink candidates of `instance` are `valid`, strictly smaller and sorted
/// by size; how many there are.
#[cfg(test)]
pub fn assert_shrinks<S: Searchable>(instance: &S, valid: impl Fn(&S) -> bool) -> usize {
    let before = instance.size();
    let candidates = instance.shrink_candidates();
    for (k, c) in candidates.iter().enumerate() {
        assert!(valid(c), "candidate {k} is invalid");
        assert!(c.size() < before, "candidate {k} is not smaller");
    }
    assert!(candidates.windows(2).all(|w| w[0].size() <= w[1].size()));
    candidates.len()
}

/// Where an instance of a run came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The claim's family at a derived seed.
    Generated,
    /// The worst-case search's best instance.
    Searched,
}

/// One checked instance: a line of the journal and of instances.csv.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Claim id.
    pub claim: String,
    /// Generated or searched.
    pub source: Source,
    /// Instance index within the claim and source.
    pub index: u64,
    /// Family seed the instance was generated from (the search's start for searched ones).
    pub family_seed: u64,
    /// SHA-256 of the instance's canonical JSON.
    pub instance_sha256: String,
    /// The instance's sizes, named by its problem ([`Searchable::DIMS`]: SlimCaching's are
    /// servers, users, experts and max_top_k).
    #[serde(flatten)]
    pub dims: BTreeMap<String, u64>,
    /// What the check found.
    pub check: Check,
    /// Where the instance stands with respect to the paper's model.
    pub tier: Tier,
    /// The premises it breaks, `name: reason`.
    pub broken_premises: Vec<String>,
}

/// Most generated instances per claim (`--instances`): the run lists its tasks first.
pub const MAX_INSTANCES: u64 = 1_000_000;

/// Most neighbours of a worst-case search (`--search`).
pub const MAX_SEARCH_ITERATIONS: u64 = 1_000_000;

/// Most worst-case searches per claim (`--restarts`).
pub const MAX_SEARCH_RESTARTS: u64 = 1_000;

/// Options of a run.
#[derive(Debug, Clone)]
pub struct VerifyOptions {
    /// Generated instances per claim.
    pub instances: u64,
    /// Base seed.
    pub seed: u64,
    /// Parallel workers.
    pub jobs: usize,
    /// Neighbours tried by each worst-case search of a claim with a margin (0: no search).
    pub search_iterations: usize,
    /// Worst-case searches per claim, started from the generated instances with the lowest,
    /// second lowest, ... margin (a hill climb tends to stall at an equality; several starts
    /// find more).
    pub search_restarts: usize,
    /// Successful shrink steps at most.
    pub shrink_steps: usize,
    /// Options of the checks (MILP time limit).
    pub check: CheckOptions,
    /// Output folder (journal, tables, counterexamples).
    pub out: PathBuf,
    /// Continue from the journal in `out`.
    pub resume: bool,
    /// The tier the claims are judged in, and the searches and shrinks stay in.
    pub tier: Tier,
    /// The claims' small families or the papers' scale (`--scale`).
    pub scale: Scale,
}

/// The command that re-checks a saved instance of a claim (`verify` prints it under each
/// counterexample, `report` on the page).
pub fn recheck_command(claim: &str, instance: &Path) -> String {
    format!(
        "moe-opt verify --claim {claim} --instance {}",
        instance.display()
    )
}

/// Derives the family seed of instance `index`.
pub fn family_seed(seed: u64, index: u64) -> u64 {
    let mut z = seed
        .wrapping_add(index.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn record<I: Searchable>(
    claim: &ClaimInfo,
    source: Source,
    index: u64,
    seed: u64,
    inst: &I,
    check: Check,
) -> Record {
    let Classified { tier, broken } = tier_of(claim, inst);
    Record {
        claim: claim.id.into(),
        source,
        index,
        family_seed: seed,
        instance_sha256: canonical_sha256(inst),
        dims: I::DIMS
            .iter()
            .map(|d| d.to_string())
            .zip(inst.dims())
            .collect(),
        check,
        tier,
        broken_premises: broken,
    }
}

/// A counterexample saved by [`ClaimGroup::counterexample`].
pub struct Saved {
    /// Its path, relative to the output folder.
    pub path: String,
    /// Its check's note.
    pub note: String,
    /// Its tier.
    pub classified: Classified,
}

/// The claims of one problem, with their instance type erased so that claims of several
/// problems (or several instance types of one paper) share a run.
pub trait ClaimGroup: Sync {
    /// The claims, in table order.
    fn infos(&self) -> Vec<ClaimInfo>;
    /// Size column names of the group's instances.
    fn dims(&self) -> &'static [&'static str];
    /// Claim `c`'s family at `scale` in words, or why it has none there.
    fn family(&self, c: usize, scale: Scale) -> Result<&'static str, &'static str>;
    /// The premises that bear on the group's claims.
    fn premises(&self) -> Vec<PremiseInfo>;
    /// Keeps only the claims `keep` accepts; `None` when none is left.
    fn select(&self, keep: &dyn Fn(&ClaimInfo) -> bool) -> Option<Box<dyn ClaimGroup>>;
    /// Checks claim `c` on an instance file (`verify --instance FILE --claim ID`), with the
    /// instance's tier.
    fn recheck(
        &self,
        c: usize,
        path: &Path,
        options: &CheckOptions,
    ) -> Result<(Check, Classified), formulations::Error>;
    /// Phase 1: checks claim `c` on the family instance at `seed`.
    fn generated(&self, c: usize, index: u64, seed: u64, options: &VerifyOptions) -> Record;
    /// Phase 2: the worst-case search `k` of claim `c` from the family instance at
    /// `start_seed`, scoring `batch()` neighbours at a time; `None` when the search could not
    /// run or its result could not be saved.
    fn searched(
        &self,
        c: usize,
        k: u64,
        start_seed: u64,
        options: &VerifyOptions,
        batch: &(dyn Fn() -> usize + Sync),
    ) -> Option<Record>;
    /// Phase 3: the smallest failing instance among `failed`, shrunk inside the run's tier and
    /// saved under `OUT/counterexamples/`.
    fn counterexample(
        &self,
        c: usize,
        failed: &[&Record],
        options: &VerifyOptions,
    ) -> Result<Option<Saved>, formulations::Error>;
}

impl<I: Searchable> ClaimGroup for Vec<Claim<I>> {
    fn infos(&self) -> Vec<ClaimInfo> {
        self.iter().map(|c| c.info).collect()
    }

    fn dims(&self) -> &'static [&'static str] {
        I::DIMS
    }

    fn family(&self, c: usize, scale: Scale) -> Result<&'static str, &'static str> {
        match scale {
            Scale::Small => Ok(self[c].info.family),
            Scale::Paper => self[c].paper.describe(),
        }
    }

    fn premises(&self) -> Vec<PremiseInfo> {
        let ids: Vec<&str> = self.iter().map(|c| c.info.id).collect();
        let Some(paper) = self.first().map(|c| c.info.paper) else {
            return Vec::new();
        };
        I::premises()
            .iter()
            .filter_map(|p| p.info(paper, &ids))
            .collect()
    }

    fn select(&self, keep: &dyn Fn(&ClaimInfo) -> bool) -> Option<Box<dyn ClaimGroup>> {
        let kept: Vec<Claim<I>> = self.iter().filter(|c| keep(&c.info)).copied().collect();
        (!kept.is_empty()).then(|| Box::new(kept) as Box<dyn ClaimGroup>)
    }

    fn recheck(
        &self,
        c: usize,
        path: &Path,
        options: &CheckOptions,
    ) -> Result<(Check, Classified), formulations::Error> {
        let instance = I::load(path)?;
        Ok((
            (self[c].check)(&instance, options),
            tier_of(&self[c].info, &instance),
        ))
    }

    fn generated(&self, c: usize, index: u64, seed: u64, options: &VerifyOptions) -> Record {
        let claim = &self[c];
        let instance = at_scale(claim, options)(seed);
        let check = (claim.check)(&instance, &options.check);
        record(
            &claim.info,
            Source::Generated,
            index,
            seed,
            &instance,
            check,
        )
    }

    fn searched(
        &self,
        c: usize,
        k: u64,
        start_seed: u64,
        options: &VerifyOptions,
        batch: &(dyn Fn() -> usize + Sync),
    ) -> Option<Record> {
        let claim = &self[c];
        let start = at_scale(claim, options)(start_seed);
        // Neighbours outside the run's tier are rejected, like those without a margin.
        let score = |inst: &I| {
            (tier_of(&claim.info, inst).tier <= options.tier)
                .then(|| (claim.check)(inst, &options.check).margin)
                .flatten()
        };
        // Neighbours scored in parallel batches when workers would idle: the same climb
        // whatever the batches (`local_search_batched`).
        let found = local_search_batched(
            start,
            |i: &I, rng: &mut ChaCha8Rng| i.perturb(rng),
            |candidates: &[I]| candidates.par_iter().map(score).collect(),
            SearchOptions {
                iterations: claim
                    .info
                    .search_limit
                    .map_or(options.search_iterations, |l| {
                        l.min(options.search_iterations)
                    }),
                seed: family_seed(options.seed, start_seed),
            },
            batch,
        )?;
        let check = (claim.check)(&found.best, &options.check);
        // Saved so that a failure found by the search can be shrunk and re-checked.
        let path = searched_path(&options.out, &claim.info, k);
        let text = serde_json::to_string_pretty(&found.best).expect("instances serialise");
        std::fs::create_dir_all(path.parent().expect("a folder"))
            .and_then(|_| std::fs::write(&path, text + "\n"))
            .ok()?;
        Some(record(
            &claim.info,
            Source::Searched,
            k,
            start_seed,
            &found.best,
            check,
        ))
    }

    fn counterexample(
        &self,
        c: usize,
        failed: &[&Record],
        options: &VerifyOptions,
    ) -> Result<Option<Saved>, formulations::Error> {
        let claim = &self[c];
        // Failing instances: generated ones rebuilt from their family seeds, searched ones read
        // back from where the search saved them.
        let mut failing: Vec<(I::Size, u64, I)> = Vec::new();
        for r in failed {
            let instance = match r.source {
                Source::Generated => at_scale(claim, options)(r.family_seed),
                Source::Searched => I::load(&searched_path(&options.out, &claim.info, r.index))?,
            };
            failing.push((instance.size(), r.index, instance));
        }
        let Some((_, _, instance)) = failing
            .into_iter()
            .min_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)))
        else {
            return Ok(None);
        };
        let fails = |i: &I| {
            tier_of(&claim.info, i).tier <= options.tier
                && (claim.check)(i, &options.check).outcome == Outcome::Fail
        };
        let small = shrink(
            instance,
            |i: &I| i.shrink_candidates(),
            fails,
            // A claim with costly checks (`search_limit`, or at the papers' scale) keeps its
            // counterexample unshrunk: each of the many candidates would cost a full check.
            if claim.info.search_limit.is_some() || options.scale == Scale::Paper {
                0
            } else {
                options.shrink_steps
            },
        )
        .instance;
        let check = (claim.check)(&small, &options.check);
        let name = format!("{}.json", claim.info.id.replace('/', "-"));
        let dir = options.out.join("counterexamples");
        let io = |source| formulations::Error::Io {
            path: dir.join(&name),
            source,
        };
        std::fs::create_dir_all(&dir).map_err(io)?;
        let text = serde_json::to_string_pretty(&small).expect("instances serialise") + "\n";
        std::fs::write(dir.join(&name), text).map_err(io)?;
        Ok(Some(Saved {
            path: format!("counterexamples/{name}"),
            note: check.note,
            classified: tier_of(&claim.info, &small),
        }))
    }
}

/// Claim's family at the run's scale; the run gives a claim tasks only where it has one.
fn at_scale<I>(claim: &Claim<I>, options: &VerifyOptions) -> fn(u64) -> I {
    claim
        .family_at(options.scale)
        .expect("tasks only for claims with a family at the run's scale")
}

/// What a run's results depend on (`--jobs` changes none): `OUT/run.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSettings {
    /// The claims checked, in run order (`--claim`, `--paper`).
    pub claims: Vec<String>,
    /// `--instances`.
    pub instances: u64,
    /// `--seed`.
    pub seed: u64,
    /// `--search`.
    pub search: usize,
    /// `--restarts`.
    pub restarts: usize,
    /// Successful shrink steps at most.
    pub shrink_steps: usize,
    /// `--time-limit`, seconds.
    pub time_limit_s: Option<f64>,
    /// HiGHS `mip_rel_gap` of the checks.
    pub mip_rel_gap: f64,
    /// HiGHS `threads` of the checks.
    pub threads: u32,
    /// `--tier` (absent in folders written before tiers).
    #[serde(default)]
    pub tier: Option<Tier>,
    /// `--scale` (absent in folders written before scales: `small`).
    #[serde(default)]
    pub scale: Scale,
}

impl RunSettings {
    fn of(claims: Vec<String>, options: &VerifyOptions) -> Self {
        let solve = &options.check.solve;
        RunSettings {
            claims,
            instances: options.instances,
            seed: options.seed,
            search: options.search_iterations,
            restarts: options.search_restarts,
            shrink_steps: options.shrink_steps,
            time_limit_s: solve.time_limit_s,
            mip_rel_gap: solve.mip_rel_gap,
            threads: solve.threads,
            tier: Some(options.tier),
            scale: options.scale,
        }
    }

    /// The first setting in which `self` (the folder's) differs from `now`, as (field, flag,
    /// folder's value, this run's value), in the order of the fields.
    fn difference(&self, now: &Self) -> Option<(String, &'static str, String, String)> {
        let fields = |s: &Self| match serde_json::to_value(s).expect("settings serialise") {
            serde_json::Value::Object(map) => map,
            _ => unreachable!("a struct serialises to an object"),
        };
        let (old, new) = (fields(self), fields(now));
        let text = |v: &serde_json::Value| match v {
            serde_json::Value::Array(items) => items
                .iter()
                .map(|i| i.as_str().unwrap_or_default())
                .collect::<Vec<_>>()
                .join(","),
            serde_json::Value::Null => "none".into(),
            serde_json::Value::String(s) => s.clone(),
            // 20 s as the flag was given, not 20.0.
            serde_json::Value::Number(n) if n.is_f64() => {
                n.as_f64().unwrap_or_default().to_string()
            }
            other => other.to_string(),
        };
        // The scale first: it changes the defaults of other flags, whose differences follow.
        let (field, was) = old
            .iter()
            .filter(|(k, _)| k.as_str() == "scale")
            .chain(&old)
            .find(|(k, v)| new.get(*k) != Some(*v))
            .map(|(k, v)| (k.clone(), v.clone()))?;
        let flag = match field.as_str() {
            "claims" => "--claim/--paper",
            "time_limit_s" => "--time-limit",
            "instances" => "--instances",
            "seed" => "--seed",
            "search" => "--search",
            "restarts" => "--restarts",
            "mip_rel_gap" => "the MILP gap",
            "threads" => "the HiGHS threads",
            "tier" => "--tier",
            "scale" => "--scale",
            _ => "shrink steps",
        };
        let now = text(&new[&field]);
        Some((field, flag, text(&was), now))
    }
}

/// The journal: records keyed by (claim, source, index), appended as they finish.
struct Journal {
    path: PathBuf,
    file: Mutex<File>,
    done: BTreeMap<(String, Source, u64), Record>,
}

impl Journal {
    /// Opens `OUT/journal.jsonl` afresh, or with `resume` continues it when `OUT/run.json`
    /// holds `settings`; writes `settings` to `OUT/run.json`.
    fn open(out: &Path, resume: bool, settings: &RunSettings) -> Result<Self, formulations::Error> {
        let io = |source| formulations::Error::Io {
            path: out.to_path_buf(),
            source,
        };
        std::fs::create_dir_all(out).map_err(io)?;
        let path = out.join("journal.jsonl");
        let head = out.join("run.json");
        if resume && path.exists() {
            if !head.exists() {
                return Err(formulations::Error::Invalid {
                    path: path.clone(),
                    field: "run.json".into(),
                    reason: "the folder has no run.json to say which options wrote the journal \
                             (an older moe-opt): rerun without --resume, or choose another --out"
                        .into(),
                });
            }
            let old: RunSettings = formulations::error::read_json(&head)?;
            if let Some((field, flag, was, now)) = old.difference(settings) {
                return Err(formulations::Error::Invalid {
                    path: head,
                    field,
                    reason: format!(
                        "the journal was written with {flag} {was}, this run has {now}: resume \
                         with the same options, rerun without --resume, or choose another --out"
                    ),
                });
            }
        }
        let text = serde_json::to_string_pretty(settings).expect("settings serialise") + "\n";
        std::fs::write(&head, text).map_err(io)?;
        let mut done = BTreeMap::new();
        if resume && path.exists() {
            let reader = BufReader::new(File::open(&path).map_err(io)?);
            for (i, line) in reader.lines().enumerate() {
                let line = line.map_err(io)?;
                if line.trim().is_empty() {
                    continue;
                }
                // A line cut short by a crash is the last one: skip it, the task reruns.
                match serde_json::from_str::<Record>(&line) {
                    Ok(r) => {
                        done.insert((r.claim.clone(), r.source, r.index), r);
                    }
                    Err(e) if e.is_eof() => {}
                    Err(e) => {
                        return Err(formulations::Error::Json {
                            path: path.clone(),
                            line: i + 1,
                            column: e.column(),
                            message: e.to_string(),
                        })
                    }
                }
            }
        }
        // Start the file afresh from what was read (drops a torn last line).
        let mut file = File::create(&path).map_err(io)?;
        for r in done.values() {
            writeln!(
                file,
                "{}",
                serde_json::to_string(r).expect("records serialise")
            )
            .map_err(io)?;
        }
        file.flush().map_err(io)?;
        let file = OpenOptions::new().append(true).open(&path).map_err(io)?;
        Ok(Journal {
            path,
            file: Mutex::new(file),
            done,
        })
    }

    fn append(&self, r: &Record) {
        let line = serde_json::to_string(r).expect("records serialise");
        let mut f = self.file.lock().expect("journal lock");
        // A write failure loses only this line from the journal; the run itself goes on.
        let _ = writeln!(f, "{line}").and_then(|_| f.flush());
    }
}

/// Runs the claims of every group; returns one row per claim, in group and table order.
pub fn run(
    groups: &[&dyn ClaimGroup],
    options: &VerifyOptions,
) -> Result<Vec<ClaimRow>, formulations::Error> {
    let ids = groups
        .iter()
        .flat_map(|g| g.infos())
        .map(|i| i.id.to_string())
        .collect();
    let mut journal = Journal::open(&options.out, options.resume, &RunSettings::of(ids, options))?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(options.jobs.max(1))
        .build()
        .map_err(|e| formulations::Error::Solver(format!("thread pool: {e}")))?;
    // Every claim as (group, index in group, info).
    let claims: Vec<(usize, usize, ClaimInfo)> = groups
        .iter()
        .enumerate()
        .flat_map(|(g, group)| {
            group
                .infos()
                .into_iter()
                .enumerate()
                .map(move |(c, info)| (g, c, info))
        })
        .collect();

    // Phase 1: generated instances (none for a claim without a family at the run's scale).
    let tasks: Vec<(usize, u64)> = claims
        .iter()
        .enumerate()
        .filter(|(_, &(g, c, _))| groups[g].family(c, options.scale).is_ok())
        .flat_map(|(k, (_, _, info))| {
            let done = &journal.done;
            (0..options.instances)
                .filter(move |&i| !done.contains_key(&(info.id.to_string(), Source::Generated, i)))
                .map(move |i| (k, i))
        })
        .collect();
    let bar = crate::progress::Progress::new(tasks.len() as u64, "generated instances");
    let fresh: Vec<Record> = pool.install(|| {
        tasks
            .par_iter()
            .map(|&(k, i)| {
                let (g, c, _) = claims[k];
                let r = groups[g].generated(c, i, family_seed(options.seed, i), options);
                journal.append(&r);
                bar.inc();
                r
            })
            .collect()
    });
    drop(bar);
    for r in fresh {
        journal.done.insert((r.claim.clone(), r.source, r.index), r);
    }

    // Phase 2: worst-case searches of the margin, from the generated instances with the lowest
    // margins.
    if options.search_iterations > 0 {
        let todo: Vec<(usize, u64)> = (0..claims.len())
            .flat_map(|k| (0..options.search_restarts as u64).map(move |s| (k, s)))
            .filter(|&(k, s)| {
                !journal
                    .done
                    .contains_key(&(claims[k].2.id.to_string(), Source::Searched, s))
            })
            .collect();
        let bar = crate::progress::Progress::new(todo.len() as u64, "worst-case searches");
        // While searches wait for a worker, each scores one neighbour at a time; once fewer
        // are left than workers, each takes a share of the idle ones (speculative scores are
        // waste while every worker is busy). The batches never change a search's result.
        let unfinished = AtomicUsize::new(todo.len());
        let batch = || (options.jobs / unfinished.load(Ordering::Relaxed).max(1)).max(1);
        let searched: Vec<Record> = pool.install(|| {
            // One search a job: rayon would otherwise run a run of neighbouring searches (a
            // claim's costly ones) on one worker while the others idle.
            todo.par_iter()
                .with_max_len(1)
                .filter_map(|&(k, s)| {
                    let (g, c, info) = claims[k];
                    // Start s: the generated instance with the s-th lowest margin.
                    let mut starts: Vec<(f64, u64)> = journal
                        .done
                        .values()
                        .filter(|r| r.claim == info.id && r.source == Source::Generated)
                        .filter(|r| r.tier <= options.tier)
                        .filter_map(|r| r.check.margin.map(|m| (m, r.family_seed)))
                        .collect();
                    starts.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                    let found = starts.get(s as usize).and_then(|&(_, start_seed)| {
                        groups[g].searched(c, s, start_seed, options, &batch)
                    });
                    unfinished.fetch_sub(1, Ordering::Relaxed);
                    let r = found?;
                    journal.append(&r);
                    bar.inc();
                    Some(r)
                })
                .collect()
        });
        drop(bar);
        for r in searched {
            journal.done.insert((r.claim.clone(), r.source, r.index), r);
        }
    }

    // Phase 3: verdicts, and the smallest counterexample of each violated claim (the shrinks
    // run in parallel, one claim each; the rows keep the claims' order).
    let mut rows = pool.install(|| {
        claims
            .par_iter()
            .with_max_len(1)
            .map(|&(g, c, info)| verdict(groups[g], c, &info, &journal, options))
            .collect::<Result<Vec<ClaimRow>, _>>()
    })?;
    link_repairs(&mut rows);
    let dims: Vec<&str> =
        groups
            .iter()
            .flat_map(|g| g.dims().iter().copied())
            .fold(Vec::new(), |mut all, d| {
                if !all.contains(&d) {
                    all.push(d);
                }
                all
            });
    let infos: Vec<ClaimInfo> = claims.iter().map(|c| c.2).collect();
    finish(&journal, &infos, &dims, &rows, &options.out)?;
    Ok(rows)
}

/// Where worst-case search `k` saves its best instance for a claim.
fn searched_path(out: &Path, claim: &ClaimInfo, k: u64) -> PathBuf {
    out.join("searched")
        .join(format!("{}-{k}.json", claim.id.replace('/', "-")))
}

/// Rewrites the journal in a fixed order and writes claims.csv and instances.csv.
fn finish(
    journal: &Journal,
    claims: &[ClaimInfo],
    dims: &[&str],
    rows: &[ClaimRow],
    out: &Path,
) -> Result<(), formulations::Error> {
    let order: BTreeMap<&str, usize> = claims.iter().enumerate().map(|(i, c)| (c.id, i)).collect();
    let mut records: Vec<&Record> = journal.done.values().collect();
    records.sort_by_key(|r| {
        (
            order.get(r.claim.as_str()).copied().unwrap_or(usize::MAX),
            r.source,
            r.index,
        )
    });
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| formulations::Error::Io {
            path: path.clone(),
            source,
        }
    };
    let tmp = journal.path.with_extension("jsonl.tmp");
    let mut text = String::new();
    for r in &records {
        text.push_str(&serde_json::to_string(r).expect("records serialise"));
        text.push('\n');
    }
    std::fs::write(&tmp, text).map_err(io(&tmp))?;
    std::fs::rename(&tmp, &journal.path).map_err(io(&journal.path))?;

    let csv_err = |path: &Path| {
        let path = path.to_path_buf();
        move |e: csv::Error| formulations::Error::Io {
            path: path.clone(),
            source: std::io::Error::other(e.to_string()),
        }
    };
    let path = out.join("claims.csv");
    let mut w = csv::Writer::from_path(&path).map_err(csv_err(&path))?;
    for row in rows {
        w.serialize(row).map_err(csv_err(&path))?;
    }
    w.flush().map_err(|e| io(&path)(e))?;

    let path = out.join("instances.csv");
    let mut w = csv::Writer::from_path(&path).map_err(csv_err(&path))?;
    let mut header: Vec<&str> = vec!["claim", "source", "index", "family_seed", "instance_sha256"];
    header.extend_from_slice(dims);
    header.extend_from_slice(&[
        "outcome",
        "value",
        "reference",
        "reference_kind",
        "lower",
        "upper",
        "certificate",
        "solver_status",
        "ratio",
        "bound",
        "margin",
        "note",
        "tier",
        "broken_premises",
        "ratio_low",
        "ratio_high",
    ]);
    w.write_record(&header).map_err(csv_err(&path))?;
    let opt = |x: Option<f64>| x.map_or(String::new(), |v| format!("{v}"));
    let seen: BTreeSet<&str> = claims.iter().map(|c| c.id).collect();
    for r in records.iter().filter(|r| seen.contains(r.claim.as_str())) {
        let c = &r.check;
        let mut row: Vec<String> = vec![
            r.claim.clone(),
            match r.source {
                Source::Generated => "generated".into(),
                Source::Searched => "searched".into(),
            },
            r.index.to_string(),
            r.family_seed.to_string(),
            r.instance_sha256.clone(),
        ];
        // A size the claim's problem does not have stays empty.
        row.extend(
            dims.iter()
                .map(|d| r.dims.get(*d).map_or(String::new(), u64::to_string)),
        );
        row.extend([
            enum_name(&c.outcome),
            opt(c.value),
            opt(c.reference),
            enum_name(&c.reference_kind),
            opt(c.lower),
            opt(c.upper),
            c.certificate.as_ref().map_or(String::new(), enum_name),
            c.solver_status.clone().unwrap_or_default(),
            opt(c.ratio),
            opt(c.bound),
            opt(c.margin),
            c.note.clone(),
            r.tier.as_str().to_string(),
            r.broken_premises.join("; "),
            opt(c.ratio_interval.map(|i| i[0])),
            opt(c.ratio_interval.map(|i| i[1])),
        ]);
        w.write_record(&row).map_err(csv_err(&path))?;
    }
    w.flush().map_err(|e| io(&path)(e))?;
    Ok(())
}
