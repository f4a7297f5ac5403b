//! ZipMoE (paper 003): compression-aware expert caching and scheduling on edge devices.

pub mod pool;
