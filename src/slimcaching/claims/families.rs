//! The claims' instance families (see the parent module's doc): the generator's presets with
//! a few knobs changed, each a pure function of the seed.

use formulations::slimcaching::Instance;

use crate::slimcaching::generate::{
    try_generate, Between, ComputeConfig, GeneratorConfig, Library, Preset,
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
