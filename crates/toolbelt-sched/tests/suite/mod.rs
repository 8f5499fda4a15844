#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod channels;
mod email;
mod scheduler;
mod server;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use toolbelt_sched::{ChannelConfig, Channels, Clock, Messaging, RetryPolicy, SystemClock};
use toolbelt_store::{Location, StoreHandle};

/// Bound on every test's waiting.
pub const TEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Fast retries for tests: waits of 50, 100, 200... ms.
pub fn fast_policy() -> RetryPolicy {
    RetryPolicy {
        initial_delay: Duration::from_millis(50),
        ..toolbelt_sched::DELIVERY_RETRY
    }
}

/// Messaging over the store at `location` with `configs`, secrets from `env`.
pub fn messaging(
    location: &Location,
    configs: &[(&str, ChannelConfig)],
    env: &[(&str, &str)],
    state_dir: &Path,
    clock: Arc<dyn Clock>,
) -> Messaging {
    let configs: BTreeMap<String, ChannelConfig> = configs
        .iter()
        .map(|(n, c)| (n.to_string(), c.clone()))
        .collect();
    let env: BTreeMap<String, String> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let channels = Channels::from_config(&configs, &|k| env.get(k).cloned(), state_dir).unwrap();
    Messaging::with_clock(
        StoreHandle::lazy(location.clone()),
        channels,
        clock,
        fast_policy(),
    )
}

/// Messaging on the system clock.
pub fn system_messaging(
    location: &Location,
    configs: &[(&str, ChannelConfig)],
    env: &[(&str, &str)],
    state_dir: &Path,
) -> Messaging {
    messaging(location, configs, env, state_dir, Arc::new(SystemClock))
}
