//! Integration tests: one spec exported for every consumer, and strict-mode
//! arguments run back through the registry.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use pretty_assertions::assert_eq;
use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use toolbelt_core::{
    Category, Hints, Registry, Reply, Session, Status, ToolContext, ToolResult, ToolSpec, TypedTool,
};
use toolbelt_wire::export::{
    Format, check_gemini, check_strict, export, gemini_schema, strict_schema,
};

/// Bound on every async test.
const TEST_TIMEOUT_MS: u64 = 10_000;

/// Where to look.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Scope {
    /// Only file names.
    Names,
    /// File contents.
    Contents,
}

fn default_max() -> u32 {
    50
}

#[derive(Debug, Deserialize, JsonSchema)]
struct SearchParams {
    /// What to find.
    query: String,
    /// Where to look.
    scope: Option<Scope>,
    /// Most results.
    #[serde(default = "default_max")]
    #[schemars(range(min = 1, max = 500))]
    max_results: u32,
    /// Case-sensitive match.
    #[serde(default)]
    case_sensitive: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
struct SearchOutput {
    query: String,
    max_results: u32,
    case_sensitive: bool,
    scope: String,
}

struct Search;

impl TypedTool for Search {
    type Params = SearchParams;
    type Output = SearchOutput;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("search", "Searches the workspace.")
            .category(Category::Search)
            .hints(Hints::read_only())
    }

    async fn call(&self, _ctx: &ToolContext, p: SearchParams) -> ToolResult<SearchOutput> {
        let scope = format!("{:?}", p.scope.unwrap_or(Scope::Contents)).to_lowercase();
        let out = SearchOutput {
            query: p.query,
            max_results: p.max_results,
            case_sensitive: p.case_sensitive,
            scope,
        };
        Ok(Reply::new(out, "searched"))
    }
}

fn registry() -> Registry {
    let mut registry = Registry::new(Session::new(std::env::temp_dir()));
    registry.register_typed(Search).unwrap();
    registry
}

#[test]
fn registry_definitions_export_for_every_consumer() {
    let specs = registry().definitions();
    for format in Format::ALL {
        assert_eq!(Format::parse(&format.to_string()), Some(format));
    }

    let strict = export(&specs, Format::OpenAiStrict);
    assert_eq!(strict[0]["function"]["strict"], json!(true));
    check_strict(&strict[0]["function"]["parameters"]).unwrap();

    let gemini = export(&specs, Format::Gemini);
    check_gemini(&gemini["functionDeclarations"][0]["parameters"]).unwrap();

    let mcp = export(&specs, Format::Mcp);
    assert_eq!(mcp[0]["annotations"]["readOnlyHint"], json!(true));
    assert_eq!(
        mcp[0]["outputSchema"]["else"]["properties"]["data"]["required"],
        json!(["query", "max_results", "case_sensitive", "scope"])
    );

    let anthropic = export(&specs, Format::Anthropic);
    assert_eq!(anthropic[0]["input_schema"]["required"], json!(["query"]));

    let responses = export(&specs, Format::OpenAiResponses);
    assert_eq!(
        (
            responses[0]["type"].clone(),
            responses[0]["name"].clone(),
            responses[0]["strict"].clone()
        ),
        (json!("function"), json!("search"), json!(false))
    );

    let text = export(&specs, Format::Text);
    let text = text.as_str().unwrap();
    assert!(
        text.contains("## search\nSearches the workspace.\n"),
        "{text}"
    );
    assert!(
        text.contains("- max_results (integer, optional, default 50, 1 to 500): Most results.\n"),
        "{text}"
    );
}

async fn run(registry: &Registry, arguments: Value) -> toolbelt_core::Envelope {
    tokio::time::timeout(
        Duration::from_millis(TEST_TIMEOUT_MS),
        registry.execute("search", arguments),
    )
    .await
    .unwrap()
}

/// A model in strict mode sends every key, with `null` for what it leaves out: the
/// registry leaves those out (and says so) so the tool's defaults apply.
#[tokio::test]
async fn strict_mode_arguments_run_with_their_nulls_left_out() {
    let registry = registry();
    let from_model =
        json!({"query": "fn main", "scope": null, "max_results": null, "case_sensitive": null});
    let env = run(&registry, from_model).await;
    assert_eq!(env.status, Status::Success, "{:?}", env.error);
    assert_eq!(
        env.data,
        json!({"query": "fn main", "max_results": 50, "case_sensitive": false, "scope": "contents"})
    );
    let repaired: Vec<_> = env
        .context
        .repairs
        .iter()
        .map(|r| r.path.as_str())
        .collect();
    // `scope` is an Option: null is a valid "not given" and is kept.
    assert_eq!(repaired, ["case_sensitive", "max_results"]);
}

/// A random schema in the shapes schemars and hand-written tools produce.
fn schema_strategy(free_form: bool) -> impl Strategy<Value = Value> {
    let string = (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>()).prop_map(
        |(min_len, format, default, pattern)| {
            let mut s = json!({"type": "string", "description": "A string"});
            if min_len {
                s["minLength"] = json!(1);
            }
            if format {
                s["format"] = json!("uri");
            }
            if default {
                s["default"] = json!("x");
            }
            if pattern {
                s["pattern"] = json!("^[a-z]+$");
            }
            s
        },
    );
    let integer = (any::<bool>(), 0i64..5).prop_map(|(unsigned, low)| {
        let mut s = json!({"type": "integer", "minimum": low, "maximum": 100, "default": 7});
        s["format"] = json!(if unsigned { "uint32" } else { "int64" });
        s
    });
    let leaf = prop_oneof![
        string,
        integer,
        Just(json!({"type": "number", "format": "double", "exclusiveMinimum": 0.5})),
        Just(json!({"type": "boolean", "default": false})),
        Just(json!({"const": "fixed"})),
        Just(json!({"type": "string", "enum": ["a", "b"]})),
        Just(
            json!({"oneOf": [{"const": "x", "description": "The x."}, {"const": "y", "description": "The y."}]})
        ),
        Just(json!({"type": ["integer", "null"], "format": "int32"})),
    ];
    let free = prop_oneof![
        Just(json!(true)),
        Just(json!({"type": "object", "additionalProperties": {"type": "string"}})),
        Just(json!({"description": "Anything."})),
    ];
    let leaf = if free_form {
        prop_oneof![4 => leaf, 1 => free].boxed()
    } else {
        leaf.boxed()
    };
    leaf.prop_recursive(4, 48, 4, |inner| {
        prop_oneof![
            // A struct, some fields required.
            prop::collection::vec((inner.clone(), any::<bool>()), 1..4).prop_map(|fields| {
                let mut properties = Map::new();
                let mut required = Vec::new();
                for (i, (schema, is_required)) in fields.into_iter().enumerate() {
                    let name = format!("f{i}");
                    if is_required {
                        required.push(json!(name));
                    }
                    properties.insert(name, schema);
                }
                json!({"type": "object", "properties": properties, "required": required})
            }),
            // Vec<T>.
            inner.clone().prop_map(|items| json!({"type": "array", "items": items, "minItems": 1})),
            // Option<T> without a simple type.
            inner.clone().prop_map(|s| json!({"anyOf": [s, {"type": "null"}]})),
            // A tagged union of two structs.
            (inner.clone(), inner.clone()).prop_map(|(a, b)| json!({"oneOf": [
                {"type": "object", "properties": {"kind": {"const": "a"}, "a": a}, "required": ["kind", "a"]},
                {"type": "object", "properties": {"kind": {"const": "b"}, "b": b}, "required": ["kind"]}
            ]})),
            // Flattened parts.
            (inner.clone(), inner).prop_map(|(a, b)| json!({"allOf": [
                {"type": "object", "properties": {"p": a}, "required": ["p"]},
                {"type": "object", "properties": {"q": b}}
            ]})),
        ]
    })
}

/// A tool's input: an object with at least one property.
fn input_strategy(free_form: bool) -> impl Strategy<Value = Value> {
    prop::collection::vec(schema_strategy(free_form), 1..4).prop_map(|fields| {
        let properties: Map<String, Value> = fields
            .into_iter()
            .enumerate()
            .map(|(i, s)| (format!("arg{i}"), s))
            .collect();
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": properties,
            "required": ["arg0"]
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn strict_schemas_pass_the_strict_check(schema in input_strategy(false)) {
        let strict = strict_schema(&schema);
        prop_assert_eq!(check_strict(&strict), Ok(()), "{:#}", strict);
        prop_assert_eq!(strict_schema(&strict), strict.clone(), "not idempotent");
    }

    #[test]
    fn gemini_schemas_pass_the_gemini_check(schema in input_strategy(true)) {
        let gemini = gemini_schema(&schema);
        prop_assert_eq!(check_gemini(&gemini), Ok(()), "{:#}", gemini);
    }

    #[test]
    fn every_format_exports_any_schema(schema in input_strategy(true)) {
        let spec = ToolSpec::new("t", "A tool.", schema);
        for format in Format::ALL {
            let out = export(std::slice::from_ref(&spec), format);
            prop_assert!(!out.is_null());
        }
        let strict = export(std::slice::from_ref(&spec), Format::OpenAiStrict);
        if strict[0]["function"]["strict"] == json!(true) {
            prop_assert_eq!(check_strict(&strict[0]["function"]["parameters"]), Ok(()));
        }
    }
}
