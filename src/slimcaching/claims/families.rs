//! The claims' instance families (see the parent module's doc): the generator's presets with
//! a few knobs changed, each a pure function of the seed.

use formulations::slimcaching::Instance;

use crate::slimcaching::generate::{
    try_generate, Between, ComputeConfig, GeneratorConfig, Library, Preset, Storage,
};

/// The tiny preset with the given K list, server range and N x E cap.
fn tiny_config(name: &str, top_k: Vec<u32>, servers: Between<u32>) -> GeneratorConfig {
    let mut c = GeneratorConfig::preset(Preset::Tiny);
    c.name = name.into();
    c.servers = servers;
    if let Library::Synthetic(s) = &mut c.library {
        s.top_k = top_k;
        s.max_server_expert_pairs = Some(16);
    }
    c
}

fn generated(config: &GeneratorConfig, seed: u64) -> Instance {
    try_generate(config, seed).expect("claim family configurations are valid (unit-tested)")
}

/// Family `tiny-top1` (see the module doc).
pub fn family_tiny_top1(seed: u64) -> Instance {
    generated(
        &tiny_config("tiny-top1", vec![1], Between { min: 1, max: 3 }),
        seed,
    )
}

/// Family `tiny-top2` (see the module doc).
pub fn family_tiny_top2(seed: u64) -> Instance {
    generated(
        &tiny_config("tiny-top2", vec![2], Between { min: 1, max: 3 }),
        seed,
    )
}

/// Family `tiny-mixed` (see the module doc).
pub fn family_tiny_mixed(seed: u64) -> Instance {
    generated(
        &tiny_config("tiny-mixed", vec![1, 2], Between { min: 1, max: 3 }),
        seed,
    )
}

/// The Prop. 6 setting: every model Top-2, every compute capability 1e30 FLOP/s.
fn prop6_config(name: &str, servers: Between<u32>) -> GeneratorConfig {
    let mut c = tiny_config(name, vec![2], servers);
    c.compute = ComputeConfig {
        user_flops: 1e30,
        edge_flops: 1e30,
        cloud_flops: 1e30,
    };
    c
}

/// Family `prop6-single` (see the module doc).
pub fn family_prop6_single(seed: u64) -> Instance {
    generated(&prop6_config("prop6-single", Between::exactly(1)), seed)
}

/// Family `prop6-multi` (see the module doc).
pub fn family_prop6_multi(seed: u64) -> Instance {
    generated(
        &prop6_config("prop6-multi", Between { min: 2, max: 3 }),
        seed,
    )
}

/// Family `small`: the small preset.
pub fn family_small(seed: u64) -> Instance {
    generated(&GeneratorConfig::preset(Preset::Small), seed)
}

/// One point of the paper's evaluation (Sec. VI-A and the sweeps of Figs. 6 and 8): servers N,
/// users U and the storage Q of every server in bytes.
type Point = (u32, u32, u64);

/// The paper preset at `points[seed % len]`, with `models` of the paper's library, drawn with
/// seed `seed / len` (so every point gets its own sequence of random draws).
fn paper_instance(name: &str, models: u32, points: &[Point], seed: u64) -> Instance {
    let k = points.len() as u64;
    let (servers, users, storage) = points[(seed % k) as usize];
    let mut c = GeneratorConfig::preset(Preset::Paper);
    c.name = format!("{name}-n{servers}-u{users}-q{storage}");
    c.servers = Between::exactly(servers);
    c.users = Between::exactly(users);
    c.storage = Storage::Bytes(storage);
    c.library = Library::Paper { models };
    generated(&c, seed / k)
}

/// The points of family `paper-top1`: Sec. VI-A's N = 4, U = 20 at Fig. 6(a)'s smallest
/// storages 1.25 and 2.5 GB, Fig. 8(a)'s N = 2 and 10, Fig. 8(b)'s U = 50 (the three Top-1
/// models hold 6.3 GB of experts, so the paper's 5 GB would cache nearly all of them).
pub const PAPER_TOP1_POINTS: [Point; 5] = [
    (4, 20, 1_250_000_000),
    (4, 20, 2_500_000_000),
    (2, 20, 1_250_000_000),
    (10, 20, 1_250_000_000),
    (4, 50, 1_250_000_000),
];

/// Family `paper-top1` (see the module doc): the paper preset with the paper's three Top-1
/// models (ST-b-8, ST-b-16, ST-b-32: 672 experts), cycling over [`PAPER_TOP1_POINTS`].
pub fn family_paper_top1(seed: u64) -> Instance {
    paper_instance("paper-top1", 3, &PAPER_TOP1_POINTS, seed)
}

/// The points of family `paper`: Sec. VI-A's N = 4, U = 20, Q = 5 GB, Fig. 6(a)'s 2.5 GB,
/// Fig. 8(a)'s N = 2 and 10, Fig. 8(b)'s U = 50.
pub const PAPER_POINTS: [Point; 5] = [
    (4, 20, 5_000_000_000),
    (4, 20, 2_500_000_000),
    (2, 20, 5_000_000_000),
    (10, 20, 5_000_000_000),
    (4, 50, 5_000_000_000),
];

/// Family `paper` (see the module doc): the paper preset (18 models, 3,872 experts), cycling
/// over [`PAPER_POINTS`].
pub fn family_paper(seed: u64) -> Instance {
    paper_instance("paper", 18, &PAPER_POINTS, seed)
}

/// The points of family `paper-single`: one edge server (Fig. 1's single-server setting and
/// its 1.5 GB) with Sec. VI-A's 5 GB and Fig. 8(b)'s U = 10, 20, 50.
pub const PAPER_SINGLE_POINTS: [Point; 4] = [
    (1, 20, 5_000_000_000),
    (1, 20, 1_500_000_000),
    (1, 10, 5_000_000_000),
    (1, 50, 5_000_000_000),
];

/// Family `paper-single` (see the module doc): the paper preset on one edge server, cycling
/// over [`PAPER_SINGLE_POINTS`].
pub fn family_paper_single(seed: u64) -> Instance {
    paper_instance("paper-single", 18, &PAPER_SINGLE_POINTS, seed)
}
