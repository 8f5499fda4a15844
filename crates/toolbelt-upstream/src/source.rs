//! Every configured server, as one source of tools for the registry.

use std::path::Path;
use std::sync::Arc;

use toolbelt_core::{Tool, ToolSource};

use crate::config::ServerSpec;
use crate::connection::{PromptError, Server};
pub use crate::connection::{ServerState, ServerStatus};
use crate::resources::{NAME as RESOURCE_TOOL, ResourceTool};

/// The configured servers and their tools: a [`ToolSource`] for
/// [`Registry::add_source`](toolbelt_core::Registry::add_source).
pub struct Upstreams {
    servers: Vec<Arc<Server>>,
    /// True once [`Upstreams::start`] has run.
    started: tokio::sync::watch::Sender<bool>,
    /// `mcp_resource`, when a server is configured.
    resources: Option<Arc<dyn Tool>>,
}

impl std::fmt::Debug for Upstreams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.servers.iter().map(|s| s.name()))
            .finish()
    }
}

impl Upstreams {
    /// The servers of `specs`, joined to their tools' names by `separator`; none is
    /// started yet ([`Upstreams::start`]). The tool lists of lazy servers are kept
    /// in `cache_dir`, when given.
    pub fn new(specs: Vec<ServerSpec>, separator: &str, cache_dir: Option<&Path>) -> Upstreams {
        let servers = specs
            .into_iter()
            .map(|spec| {
                let cache = cache_dir.map(|d| d.join(format!("{}.json", spec.name)));
                Server::new(spec, separator, cache)
            })
            .collect::<Vec<_>>();
        let resources =
            (!servers.is_empty()).then(|| Arc::new(ResourceTool::new(&servers)) as Arc<dyn Tool>);
        Upstreams {
            servers,
            resources,
            started: tokio::sync::watch::Sender::new(false),
        }
    }

    /// True when no server is configured.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Starts the servers side by side (each within its startup timeout; a lazy
    /// one whose tools were listed before waits for its first call). A server
    /// that fails is logged and its calls say why; the others go on.
    pub async fn start(&self) {
        futures::future::join_all(self.servers.iter().map(|s| s.start())).await;
        self.started.send_replace(true);
    }

    /// Waits until [`Upstreams::start`] has run (at once when no server is
    /// configured): a server that answers before its tools are known lets its
    /// client's first `tools/list` wait here.
    pub async fn started(&self) {
        if self.servers.is_empty() {
            return;
        }
        let mut started = self.started.subscribe();
        let _ = started.wait_for(|s| *s).await;
    }

    /// Starts the servers whose tools `names` name (a one-off call needs no other).
    pub async fn start_for(&self, names: &[&str]) {
        let wanted = self
            .servers
            .iter()
            .filter(|s| names.iter().any(|n| n.starts_with(s.prefix())));
        futures::future::join_all(wanted.map(|s| s.start())).await;
    }

    /// The prompts of the servers that offer some (each started if it is not
    /// running), named `SERVER__prompt` as their tools are. A server that fails is
    /// left out (and logged).
    pub async fn prompts(&self) -> Vec<rmcp::model::Prompt> {
        let lists = futures::future::join_all(self.servers.iter().map(|s| s.prompts())).await;
        lists.into_iter().flatten().collect()
    }

    /// Whether `name` is a prompt of one of the servers (by its prefix).
    pub fn owns_prompt(&self, name: &str) -> bool {
        self.servers.iter().any(|s| name.starts_with(s.prefix()))
    }

    /// The prompt `name` (`SERVER__prompt`) with `arguments`, from its server.
    ///
    /// # Errors
    /// No server has that prefix, the server is unavailable, or it refused.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<serde_json::Map<String, serde_json::Value>>,
    ) -> Result<rmcp::model::GetPromptResult, PromptError> {
        let Some(server) = self.servers.iter().find(|s| name.starts_with(s.prefix())) else {
            return Err(PromptError::Unknown(name.to_string()));
        };
        server
            .get_prompt(&name[server.prefix().len()..], arguments)
            .await
    }

    /// Where each server is.
    pub fn status(&self) -> Vec<ServerStatus> {
        self.servers.iter().map(|s| s.status()).collect()
    }
}

impl ToolSource for Upstreams {
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.resources
            .iter()
            .cloned()
            .chain(self.servers.iter().flat_map(|s| {
                s.tools()
                    .values()
                    .map(|t| Arc::clone(t) as Arc<dyn Tool>)
                    .collect::<Vec<_>>()
            }))
            .collect()
    }

    fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        if name == RESOURCE_TOOL {
            return self.resources.clone();
        }
        self.servers.iter().find_map(|s| {
            if !name.starts_with(s.prefix()) {
                return None;
            }
            s.tools().get(name).map(|t| Arc::clone(t) as Arc<dyn Tool>)
        })
    }

    fn revision(&self) -> u64 {
        self.servers.iter().fold(0u64, |acc, s| {
            acc.wrapping_mul(31).wrapping_add(s.revision())
        })
    }
}
