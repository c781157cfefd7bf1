//! Errors of the resolved system and of the back ends that run it:
//! invalid configuration (field path, value, rule) or a core error surfaced
//! with context. Never a panic.

#[derive(Debug, thiserror::Error)]
pub enum SystemError {
    #[error("{path}: {value}: {rule}")]
    Config {
        path: String,
        value: String,
        rule: String,
    },
    #[error("{context}: {source}")]
    Core {
        context: String,
        source: irqlab_core::CoreError,
    },
    #[error("invalid JSON: {0}")]
    Json(#[from] serde_json::Error),
}
