//! `GET /healthz`: what a load balancer asks a replica before sending it work.
//!
//! The answer is JSON: `status` (`ok`, `draining` or `unavailable`), the
//! `replica` (the name its runs and questions carry in the store) and `version`, the `store` (its
//! backend, and whether a `SELECT 1` came back within
//! [`STORE_CHECK_TIMEOUT_MS`]), and the `scheduler` (`running`, `stopping`,
//! `stopped`, or `off` where the server runs none). It is 200 while the replica
//! can take calls and 503 when its store does not answer or it is draining (it
//! got SIGTERM and finishes the calls under way): either way a balancer should
//! send new work elsewhere. No token is needed.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};
use toolbelt_store::{Backend, StoreHandle};

/// How long `/healthz` waits for the store's answer, in milliseconds; a store
/// slower than this counts as unreachable.
pub const STORE_CHECK_TIMEOUT_MS: u64 = 1_500;

/// Where the scheduler beside the server is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SchedulerState {
    /// This server runs no scheduler.
    Off,
    /// Firing jobs and delivering messages.
    Running,
    /// Asked to stop: no new firing is claimed; runs under way end.
    Stopping,
    /// Stopped.
    Stopped,
}

impl SchedulerState {
    /// Its name in `/healthz`.
    pub fn as_str(self) -> &'static str {
        match self {
            SchedulerState::Off => "off",
            SchedulerState::Running => "running",
            SchedulerState::Stopping => "stopping",
            SchedulerState::Stopped => "stopped",
        }
    }

    fn from_u8(n: u8) -> SchedulerState {
        match n {
            1 => SchedulerState::Running,
            2 => SchedulerState::Stopping,
            3 => SchedulerState::Stopped,
            _ => SchedulerState::Off,
        }
    }

    fn to_u8(self) -> u8 {
        match self {
            SchedulerState::Off => 0,
            SchedulerState::Running => 1,
            SchedulerState::Stopping => 2,
            SchedulerState::Stopped => 3,
        }
    }
}

/// What `/healthz` says of this replica besides its store: its name and
/// version, the scheduler's state (set by whoever runs it), and whether the
/// server is draining (set by the server when it is told to stop). Cheap to
/// clone; clones share the state.
#[derive(Debug, Clone)]
pub struct Health {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    replica: String,
    version: String,
    scheduler: AtomicU8,
    draining: AtomicBool,
}

impl Health {
    /// The health of replica `replica` (the name its runs and questions carry in
    /// the store, say) running `version`; no scheduler, not draining.
    pub fn new(replica: impl Into<String>, version: impl Into<String>) -> Health {
        Health {
            inner: Arc::new(Inner {
                replica: replica.into(),
                version: version.into(),
                scheduler: AtomicU8::new(SchedulerState::Off.to_u8()),
                draining: AtomicBool::new(false),
            }),
        }
    }

    /// The replica's name.
    pub fn replica(&self) -> &str {
        &self.inner.replica
    }

    /// The version it runs.
    pub fn version(&self) -> &str {
        &self.inner.version
    }

    /// Records where the scheduler is.
    pub fn set_scheduler(&self, state: SchedulerState) {
        self.inner.scheduler.store(state.to_u8(), Ordering::Relaxed);
    }

    /// Where the scheduler is.
    pub fn scheduler(&self) -> SchedulerState {
        SchedulerState::from_u8(self.inner.scheduler.load(Ordering::Relaxed))
    }

    /// Marks the server as draining: `/healthz` answers 503 from now on.
    pub fn start_draining(&self) {
        self.inner.draining.store(true, Ordering::Relaxed);
    }

    /// Whether the server is draining.
    pub fn is_draining(&self) -> bool {
        self.inner.draining.load(Ordering::Relaxed)
    }
}

impl Default for Health {
    /// A replica named by [`crate::replica_id`], with this crate's version.
    fn default() -> Health {
        Health::new(crate::replica_id(), env!("CARGO_PKG_VERSION"))
    }
}

/// What the route reads.
pub(super) struct HealthState {
    pub(super) health: Health,
    pub(super) store: Option<StoreHandle>,
}

/// The `/healthz` route.
pub(super) fn routes(state: HealthState) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .with_state(Arc::new(state))
}

/// `GET /healthz`.
///
/// # Security
/// Answered without a token: it names the backend, never where the store is nor
/// why it failed (that goes to the log).
async fn healthz(State(state): State<Arc<HealthState>>) -> Response {
    let store = match &state.store {
        Some(handle) => Some(check_store(handle).await),
        None => None,
    };
    let reachable = store.as_ref().is_none_or(|s| s.reachable);
    let draining = state.health.is_draining();
    let (status, word) = if draining {
        (StatusCode::SERVICE_UNAVAILABLE, "draining")
    } else if !reachable {
        (StatusCode::SERVICE_UNAVAILABLE, "unavailable")
    } else {
        (StatusCode::OK, "ok")
    };
    let body = json!({
        "status": word,
        "replica": state.health.replica(),
        "version": state.health.version(),
        "store": store.map(|s| s.to_json()),
        "scheduler": state.health.scheduler().as_str(),
    });
    (status, axum::Json(body)).into_response()
}

/// What the store check found.
struct StoreCheck {
    backend: Backend,
    reachable: bool,
    elapsed: Duration,
}

impl StoreCheck {
    fn to_json(&self) -> Value {
        json!({
            "backend": match self.backend {
                Backend::Sqlite => "sqlite",
                Backend::Postgres => "postgres",
            },
            "reachable": self.reachable,
            "latency_ms": u64::try_from(self.elapsed.as_millis()).unwrap_or(u64::MAX),
        })
    }
}

/// Opens the store if it is not yet and asks it `SELECT 1`, all within
/// [`STORE_CHECK_TIMEOUT_MS`].
async fn check_store(handle: &StoreHandle) -> StoreCheck {
    let started = Instant::now();
    let backend = match handle.location() {
        toolbelt_store::Location::Sqlite(_) => Backend::Sqlite,
        toolbelt_store::Location::Postgres(_) => Backend::Postgres,
    };
    let ping = async {
        let store = handle.store().await?;
        store.ping().await
    };
    let reachable = match tokio::time::timeout(Duration::from_millis(STORE_CHECK_TIMEOUT_MS), ping)
        .await
    {
        Ok(Ok(())) => true,
        Ok(Err(e)) => {
            tracing::warn!(target: "toolbelt::serve", error = %toolbelt_core::error_chain(&e), "health check: the store does not answer");
            false
        }
        Err(_) => {
            tracing::warn!(target: "toolbelt::serve", "health check: the store did not answer within {STORE_CHECK_TIMEOUT_MS} ms");
            false
        }
    };
    StoreCheck {
        backend,
        reachable,
        elapsed: started.elapsed(),
    }
}

#[cfg(test)]
#[path = "health_tests.rs"]
mod tests;
