//! Registry dispatch: repair + validation + call of a no-op typed tool + envelope.
//!
//! `cargo bench -p toolbelt-core --bench dispatch`

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use toolbelt_core::{Registry, Reply, Session, ToolContext, ToolResult, ToolSpec, TypedTool};

#[derive(Deserialize, JsonSchema)]
struct NoopParams {
    /// A path-like argument.
    path: String,
    /// Optional line offset.
    #[serde(default)]
    offset: Option<i64>,
    /// Optional limit.
    #[serde(default)]
    #[schemars(range(min = 1, max = 10000))]
    limit: Option<u32>,
}

#[derive(Serialize, JsonSchema)]
struct NoopOut {
    ok: bool,
}

struct Noop;

impl TypedTool for Noop {
    type Params = NoopParams;
    type Output = NoopOut;
    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("noop", "Does nothing.")
    }
    async fn call(&self, _ctx: &ToolContext, p: NoopParams) -> ToolResult<NoopOut> {
        black_box((&p.path, p.offset, p.limit));
        Ok(Reply::new(NoopOut { ok: true }, "ok"))
    }
}

fn dispatch(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut registry = Registry::new(Session::new(std::env::temp_dir()));
    registry.register_typed(Noop).unwrap();

    let clean = json!({"path": "src/main.rs", "offset": 10, "limit": 50});
    c.bench_function("dispatch/noop_valid", |b| {
        b.iter(|| {
            let env = rt.block_on(registry.execute("noop", clean.clone()));
            black_box(env)
        });
    });

    let needs_repair = json!("{\"path\": \"src/main.rs\", \"offset\": \"10\", \"limit\": \"50\"}");
    c.bench_function("dispatch/noop_repaired", |b| {
        b.iter(|| {
            let env = rt.block_on(registry.execute("noop", needs_repair.clone()));
            black_box(env)
        });
    });

    let invalid = json!({"path": 5, "limit": 0, "bogus": true});
    c.bench_function("dispatch/noop_invalid", |b| {
        b.iter(|| {
            let env = rt.block_on(registry.execute("noop", invalid.clone()));
            black_box(env)
        });
    });
}

criterion_group!(benches, dispatch);
criterion_main!(benches);
