//! (in progress)

use tokio_util::sync::CancellationToken;
use toolbelt_core::BoxFuture;

use super::{
    ModelRequest, ModelResponse, Provider, ProviderConfig, ProviderError, ProviderKind, StreamSink,
};

/// (in progress)
#[derive(Debug)]
pub struct OpenAiProvider {
    config: ProviderConfig,
}

impl OpenAiProvider {
    /// (in progress)
    ///
    /// # Errors
    /// A bad base URL.
    pub fn new(config: ProviderConfig) -> Result<OpenAiProvider, ProviderError> {
        Ok(OpenAiProvider { config })
    }
}

impl Provider for OpenAiProvider {
    fn kind(&self) -> ProviderKind {
        ProviderKind::OpenAi
    }

    fn model(&self) -> &str {
        &self.config.model
    }

    fn complete<'a>(
        &'a self,
        _request: &'a ModelRequest,
        _events: StreamSink<'a>,
        _cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<ModelResponse, ProviderError>> {
        Box::pin(async { Err(ProviderError::Config("not implemented yet".into())) })
    }
}
