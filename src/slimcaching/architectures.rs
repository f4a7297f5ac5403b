//! The model shapes of SlimCaching instances: the seven architectures Section VI-A names, the
//! paper library built from them, and the bf16 expert shape they share with the importer's
//! known models ([`super::import`]).
//!
//! The paper's library has 18 models, "nearly 4,000 experts", in three families, but names only
//! 7 architectures. Reading (following the paper's remark in Section V that "numerous downstream
//! models are developed by fine-tuning a pre-trained base model" with identical expert sizes):
//! the 18 models are the 7 architectures plus fine-tuned variants that share their shapes but
//! have their own activation statistics. Model j is architecture `j mod 7` of
//! [`PAPER_ARCHITECTURES`] (in the order ST-b-8, ST-b-16, ST-b-32, LLaMA-MoE-3.5B,
//! MoE-LLaVA-StableLM, -Qwen, -Phi2), variant `j / 7` (named `-ft1`, `-ft2`). For 18 models:
//! three each of the Switch models and LLaMA-MoE, two of each MoE-LLaVA model, 3,872 experts.
//!
//! Shapes (expert bytes = parameters x 2 bytes, bf16/fp16; D_m = hidden size x 2 bytes; FLOPs
//! per expert per token = 2 x parameters), from the models' public configuration files:
//!
//! | architecture | K | MoE layers | experts | hidden | expert parameters | bytes (MiB) |
//! |---|---|---|---|---|---|---|
//! | ST-b-8/16/32 (google/switch-base-*) | 1 | 12 | 8/16/32 | 768 | 2 x 768 x 3072 (d_model, d_ff; wi, wo) | 9 |
//! | MoE-LLaVA-StableLM-1.6B-4e | 2 | 12 | 4 | 2048 | 3 x 2048 x 5632 (SwiGLU) | 66 |
//! | MoE-LLaVA-Qwen-1.8B-4e | 2 | 12 | 4 | 2048 | 3 x 2048 x 5504 (Qwen's w1, w2, c_proj use intermediate_size / 2) | 64.5 -> 65 |
//! | MoE-LLaVA-Phi2-2.7B-4e | 2 | 16 | 4 | 2560 | 2 x 2560 x 10240 + biases (fc1, fc2) | 100.02 -> 100 |
//! | LLaMA-MoE-3.5B (4/16) | 4 | 32 | 16 | 4096 | 3 x 4096 x 688 (LLaMA-2-7B's FFN split in 16) | 16.125 -> 16 |
//!
//! Switch-base is T5-base (12 encoder + 12 decoder blocks) with every other FFN an MoE layer:
//! 12 MoE layers. MoE-LLaVA's "sparse" mode makes every other decoder layer MoE (StableLM-2-1.6B
//! and Qwen-1.8B have 24 layers, Phi-2 has 32). LLaMA-MoE converts all 32 FFNs. The MoE-LLaVA
//! Qwen and Phi2 sizes are approximate (biases and Qwen's halved intermediate size as read from
//! the configs). Expert bytes are rounded to the nearest multiple of 1 MiB (ties up) so the
//! knapsack DPs can work on 1 MiB units; capacities Q are exact bytes (5 GB = 5 x 10^9 bytes).
//! FLOPs use the unrounded parameter counts.

use formulations::slimcaching::MoeModel;
use serde::{Deserialize, Serialize};

/// One mebibyte, the unit expert sizes are rounded to.
pub const MIB: u64 = 1 << 20;

/// `bytes` rounded to the nearest multiple of 1 MiB (ties up), at least 1 MiB.
pub fn round_to_mib(bytes: u64) -> u64 {
    ((bytes + MIB / 2) / MIB).max(1) * MIB
}

/// Per-expert sizes of a model: b_m, D_m, mu_m^CP.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpertShape {
    /// b_m, bytes of one expert.
    pub expert_bytes: u64,
    /// D_m, bytes of one hidden state.
    pub hidden_bytes: u64,
    /// mu_m^CP, FLOPs of one expert for one token.
    pub expert_flops: f64,
}

impl ExpertShape {
    /// bf16 weights: expert bytes 2 x parameters rounded to 1 MiB, D_m = 2 x hidden size,
    /// FLOPs per token 2 x parameters (one multiply-add per weight).
    pub fn bf16(expert_params: u64, hidden_size: u64) -> Self {
        ExpertShape {
            expert_bytes: round_to_mib(2 * expert_params),
            hidden_bytes: 2 * hidden_size,
            expert_flops: 2.0 * expert_params as f64,
        }
    }
}

/// One of the 7 MoE architectures named in Section VI-A (shapes: see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Architecture {
    /// Name as in the paper.
    pub name: &'static str,
    /// K_m.
    pub top_k: u32,
    /// L_m, MoE layers.
    pub layers: u32,
    /// E_m.
    pub experts_per_layer: u32,
    /// Hidden size (elements); D_m = 2 x this bytes.
    pub hidden_size: u64,
    /// Parameters of one expert.
    pub expert_params: u64,
}

impl Architecture {
    /// The instance's model: bf16 bytes rounded to 1 MiB, D_m = 2 x hidden, 2 x params FLOPs.
    pub fn to_model(&self, name: String) -> MoeModel {
        let shape = ExpertShape::bf16(self.expert_params, self.hidden_size);
        MoeModel {
            name,
            top_k: self.top_k,
            layers: self.layers,
            experts_per_layer: self.experts_per_layer,
            expert_bytes: shape.expert_bytes,
            hidden_bytes: shape.hidden_bytes,
            expert_flops: shape.expert_flops,
        }
    }
}

/// The paper's architectures, in the order the library cycles through them.
pub const PAPER_ARCHITECTURES: [Architecture; 7] = [
    Architecture {
        name: "ST-b-8",
        top_k: 1,
        layers: 12,
        experts_per_layer: 8,
        hidden_size: 768,
        expert_params: 2 * 768 * 3072,
    },
    Architecture {
        name: "ST-b-16",
        top_k: 1,
        layers: 12,
        experts_per_layer: 16,
        hidden_size: 768,
        expert_params: 2 * 768 * 3072,
    },
    Architecture {
        name: "ST-b-32",
        top_k: 1,
        layers: 12,
        experts_per_layer: 32,
        hidden_size: 768,
        expert_params: 2 * 768 * 3072,
    },
    Architecture {
        name: "LLaMA-MoE-3.5B",
        top_k: 4,
        layers: 32,
        experts_per_layer: 16,
        hidden_size: 4096,
        expert_params: 3 * 4096 * 688,
    },
    Architecture {
        name: "MoE-LLaVA-StableLM-1.6B-4e",
        top_k: 2,
        layers: 12,
        experts_per_layer: 4,
        hidden_size: 2048,
        expert_params: 3 * 2048 * 5632,
    },
    Architecture {
        name: "MoE-LLaVA-Qwen-1.8B-4e",
        top_k: 2,
        layers: 12,
        experts_per_layer: 4,
        hidden_size: 2048,
        expert_params: 3 * 2048 * 5504,
    },
    Architecture {
        name: "MoE-LLaVA-Phi2-2.7B-4e",
        top_k: 2,
        layers: 16,
        experts_per_layer: 4,
        hidden_size: 2560,
        expert_params: 2 * 2560 * 10240 + 10240 + 2560,
    },
];

/// The first `models` models of the paper's library (see the module doc).
pub fn paper_library(models: u32) -> Vec<MoeModel> {
    (0..models as usize)
        .map(|j| {
            let arch = &PAPER_ARCHITECTURES[j % PAPER_ARCHITECTURES.len()];
            let variant = j / PAPER_ARCHITECTURES.len();
            let name = if variant == 0 {
                arch.name.to_string()
            } else {
                format!("{}-ft{variant}", arch.name)
            };
            arch.to_model(name)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_shapes_follow_the_public_configs() {
        let lib = paper_library(18);
        let by_name = |n: &str| lib.iter().find(|m| m.name == n).unwrap().clone();
        // switch-base: d_model 768, d_ff 3072: 2 x 768 x 3072 x 2 bytes = 9 MiB.
        let st = by_name("ST-b-32");
        assert_eq!((st.top_k, st.layers, st.experts_per_layer), (1, 12, 32));
        assert_eq!(st.expert_bytes, 9 * MIB);
        assert_eq!(st.hidden_bytes, 1536);
        assert_eq!(st.expert_flops, 9_437_184.0);
        // LLaMA-MoE-3.5B: 3 x 4096 x 688 x 2 bytes = 16.125 MiB -> 16 MiB.
        let llama = by_name("LLaMA-MoE-3.5B-ft2");
        assert_eq!(
            (llama.top_k, llama.layers, llama.experts_per_layer),
            (4, 32, 16)
        );
        assert_eq!(llama.expert_bytes, 16 * MIB);
        assert_eq!(llama.hidden_bytes, 8192);
        // Qwen-1.8B: 3 x 2048 x 5504 x 2 bytes = 64.5 MiB -> 65 MiB (ties up).
        assert_eq!(by_name("MoE-LLaVA-Qwen-1.8B-4e").expert_bytes, 65 * MIB);
        assert_eq!(by_name("MoE-LLaVA-StableLM-1.6B-4e").expert_bytes, 66 * MIB);
        assert_eq!(
            by_name("MoE-LLaVA-Phi2-2.7B-4e-ft1").expert_bytes,
            100 * MIB
        );
        let count = |prefix: &str| lib.iter().filter(|m| m.name.starts_with(prefix)).count();
        assert_eq!(count("ST-b-"), 9);
        assert_eq!(count("LLaMA-MoE"), 3);
        assert_eq!(count("MoE-LLaVA"), 6);
    }
}
