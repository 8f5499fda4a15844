//! The constraints for small models, over the real specs of the minimal toolset
//! (as `--model-size small` offers them: short descriptions) and the agent's
//! `finish`: the action grammar, checked with the GBNF checker and read back by
//! the text protocol's parser; the reply schema, checked with the JSON Schema
//! validator the registry uses and read back by `calls_in_text`.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tempfile::TempDir;
use toolbelt_agent::constrain::{action_grammar, reply_schema};
use toolbelt_agent::testing::gbnf::Grammar;
use toolbelt_core::toolset::ToolSelection;
use toolbelt_core::{Descriptions, Registry, SchemaValidator, Session, ToolSpec};
use toolbelt_wire::calls::{calls_in_text, parse_text_reply};

/// The tools a small model is offered: the minimal toolset, short descriptions
/// (the required and the short arguments only), and the agent's `finish`.
fn small_model_specs() -> Vec<ToolSpec> {
    minimal_specs(Descriptions::Short)
}

/// The minimal toolset with every argument, and `finish`: the grammar's
/// coverage of what schemas hold (enums, arrays, bounded numbers, unions).
fn every_argument_specs() -> Vec<ToolSpec> {
    minimal_specs(Descriptions::Full)
}

fn minimal_specs(descriptions: Descriptions) -> Vec<ToolSpec> {
    let root = TempDir::new().unwrap();
    let mut registry = Registry::new(Session::new(root.path()));
    toolbelt_tools::register_builtins(&mut registry).unwrap();
    registry
        .select(&ToolSelection::parse("minimal"), toolbelt_tools::TOOLSETS)
        .unwrap();
    registry.set_descriptions(descriptions);
    let mut specs = registry.definitions();
    specs.push(finish());
    specs
}

/// The finish tool the agent adds.
fn finish() -> ToolSpec {
    ToolSpec::new(
        "finish",
        "Ends the task.",
        json!({
            "type": "object",
            "properties": {"answer": {"type": "string", "description": "Your final answer."}},
            "required": ["answer"],
            "additionalProperties": false
        }),
    )
}

/// Valid arguments for each tool of [`every_argument_specs`]: a full call and one
/// with the required arguments only.
fn examples(tool: &str) -> Vec<Value> {
    match tool {
        "read_file" => vec![
            json!({"path": "src/main.rs", "offset": -50, "limit": 20}),
            json!({"path": "README.md"}),
        ],
        "write_file" => vec![
            json!({"path": "notes/todo.md", "content": "line one\nline \"two\" \\ tab\t é ✓",
                   "mode": "append", "create_dirs": true}),
            json!({"path": "a.txt", "content": ""}),
        ],
        "edit_file" => vec![
            json!({"path": "src/lib.rs", "old_string": "fn a() {}", "new_string": "fn b() {}\n",
                   "replace_all": false, "dry_run": true}),
            json!({"path": "src/lib.rs", "old_string": "x", "new_string": ""}),
        ],
        "bash" => vec![
            json!({"command": "cargo test -p x 2>&1 | tail -n 20", "timeout": 600,
                   "env": ["RUST_LOG=debug", "A=b"], "run_in_background": false}),
            json!({"command": "ls"}),
        ],
        "grep" => vec![
            json!({"pattern": "fn\\s+main", "path": "src", "output_mode": "files_with_matches",
                   "context_lines": 2, "case_sensitive": false, "head_limit": 0}),
            json!({"pattern": "TODO"}),
        ],
        "glob" => vec![
            json!({"pattern": "**/*.rs", "sort": "path", "limit": 0, "include_dirs": true}),
            json!({"pattern": "*.toml"}),
        ],
        "finish" => vec![
            json!({"answer": "Renamed the function and ran the tests: 12 passed."}),
            json!({"answer": ""}),
        ],
        other => panic!("no example for {other}: add one"),
    }
}

/// `Action: name[{...}]` with the members of `args` in the grammar's order: the
/// required properties as `required` lists them, then the others in the order of
/// the schema's `properties` (declared order with serde_json's `preserve_order`,
/// else by name), written `{"k": v, "k2": v2}` as models write.
fn action(spec: &ToolSpec, args: &Value) -> String {
    let properties = spec.input_schema["properties"].as_object().unwrap();
    let required: Vec<&str> = spec.input_schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let declared: Vec<&String> = required
        .iter()
        .filter_map(|r| properties.get_key_value(*r).map(|(k, _)| k))
        .chain(
            properties
                .keys()
                .filter(|k| !required.contains(&k.as_str())),
        )
        .collect();
    let given = args.as_object().unwrap();
    assert!(given.keys().all(|k| declared.contains(&k)), "{args}");
    let members: Vec<String> = declared
        .iter()
        .filter_map(|k| {
            given
                .get(*k)
                .map(|v| format!("{}: {v}", Value::String((*k).clone())))
        })
        .collect();
    format!("Action: {}[{{{}}}]", spec.name, members.join(", "))
}

#[test]
fn the_grammar_takes_a_call_of_every_tool_and_the_parser_reads_it_back() {
    let specs = every_argument_specs();
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "bash",
            "edit_file",
            "glob",
            "grep",
            "read_file",
            "write_file",
            "finish"
        ]
    );
    let text = action_grammar(&specs);
    let grammar = Grammar::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    // Small enough for llama.cpp to compile at once.
    assert!(text.len() < 12_000, "{} bytes:\n{text}", text.len());
    for spec in &specs {
        let validator = SchemaValidator::new(&spec.input_schema).unwrap();
        for args in examples(&spec.name) {
            assert!(validator.is_valid(&args), "{}: {args}", spec.name);
            let line = action(spec, &args);
            assert!(grammar.accepts(&line), "refused: {line}\n{text}");
            assert!(grammar.accepts(&format!("{line}\n")), "{line}");
            let reply = parse_text_reply(&line);
            if spec.name == "finish" {
                // `Action: finish[...]` is the protocol's own ending: the parser
                // gives the bracket's text as the answer.
                assert!(reply.actions.is_empty(), "{line}");
                let answer: Value = serde_json::from_str(&reply.final_answer.unwrap()).unwrap();
                assert_eq!(answer, args);
                continue;
            }
            assert_eq!(reply.actions.len(), 1, "{line}");
            let call = reply.actions[0].clone().unwrap();
            assert_eq!(
                (call.name.as_str(), &call.arguments, call.repairs.len()),
                (spec.name.as_str(), &args, 0),
                "{line}"
            );
        }
    }
}

#[test]
fn a_small_models_grammar_offers_the_required_and_the_short_arguments_only() {
    let specs = small_model_specs();
    let grammar = Grammar::parse(&action_grammar(&specs)).unwrap();
    let full = every_argument_specs();
    for spec in &specs {
        // The call with the required arguments only.
        let args = examples(&spec.name).pop().unwrap();
        assert!(
            grammar.accepts(&action(spec, &args)),
            "{}: {args}",
            spec.name
        );
    }
    for good in [
        r#"Action: read_file[{"path": "a.py", "limit": 20, "offset": -20}]"#,
        r#"Action: edit_file[{"path": "a.py", "old_string": "x", "new_string": "y", "replace_all": true}]"#,
    ] {
        assert!(grammar.accepts(good), "{good}");
    }
    // What a 1.5B model filled in when it was offered: a made-up hash, a dry
    // run, an empty path, the defaults copied from the descriptions.
    for (tool, bad) in [
        (
            "edit_file",
            r#"{"path": "a.py", "old_string": "x", "new_string": "y", "expected_hash": "e3b0c442"}"#,
        ),
        (
            "edit_file",
            r#"{"path": "a.py", "old_string": "x", "new_string": "y", "dry_run": false}"#,
        ),
        ("glob", r#"{"pattern": "src", "path": ""}"#),
        ("grep", r#"{"pattern": "port", "timeout_ms": 30000}"#),
        (
            "write_file",
            r#"{"path": "a.py", "content": "", "overwrite": true}"#,
        ),
        ("bash", r#"{"command": "ls", "timeout": 5}"#),
    ] {
        let line = format!("Action: {tool}[{bad}]");
        assert!(!grammar.accepts(&line), "{line}");
        // Still a valid call of the tool: the registry takes it from a model
        // that writes it unconstrained.
        let spec = full.iter().find(|s| s.name == tool).unwrap();
        let args: Value = serde_json::from_str(bad).unwrap();
        assert!(
            SchemaValidator::new(&spec.input_schema)
                .unwrap()
                .is_valid(&args),
            "{tool}: {bad}"
        );
    }
}

#[test]
fn the_grammar_allows_one_space_at_most_where_json_allows_blanks() {
    let specs = every_argument_specs();
    let grammar = Grammar::parse(&action_grammar(&specs)).unwrap();
    for good in [
        r#"Action: read_file[{"path":"a"}]"#,
        r#"Action: read_file[{"path": "a"}]"#,
        r#"Action: read_file[{ "path" : "a" }]"#,
        r#"Action: bash[{"command":"ls","timeout":5}]"#,
        r#"Action: bash[{"command": "ls" , "timeout": 5}]"#,
        r#"Action: bash[{"command": "ls", "env": [ "A=b" ,"C=d"]}]"#,
    ] {
        assert!(grammar.accepts(good), "{good}");
    }
    for bad in [
        r#"Action: read_file[{"path":  "a"}]"#,
        r#"Action: read_file[{  "path": "a"}]"#,
        "Action: read_file[{\"path\":\n\"a\"}]",
        "Action: read_file[{\"path\":\t\"a\"}]",
        r#"Action:read_file[{"path": "a"}]"#,
        r#"Action: read_file [{"path": "a"}]"#,
        "Action: read_file[{\"path\": \"a\"}]\n\n",
        "Action: read_file[{\"path\": \"a\"}] ",
    ] {
        assert!(!grammar.accepts(bad), "{bad:?}");
    }
}

#[test]
fn the_grammar_refuses_anything_but_one_valid_action() {
    let specs = every_argument_specs();
    let grammar = Grammar::parse(&action_grammar(&specs)).unwrap();
    for bad in [
        "I will read the file first.",
        "<tool_response>\n{\"content\": \"fn main() {}\"}\n</tool_response>",
        "Observation: the file holds fn main() {}",
        "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n</tool_call>",
        "Thought: I need the file.\nAction: read_file[{\"path\": \"a\"}]",
        "```\nAction: read_file[{\"path\": \"a\"}]\n```",
        // A required argument missing.
        r#"Action: read_file[{"offset": 1}]"#,
        r#"Action: edit_file[{"path": "a", "new_string": "b"}]"#,
        r#"Action: finish[{}]"#,
        // An unknown tool, an unknown argument.
        r#"Action: delete_everything[{"path": "/"}]"#,
        r#"Action: read_file[{"path": "a", "bogus": 1}]"#,
        // Two actions.
        "Action: read_file[{\"path\": \"a\"}]\nAction: read_file[{\"path\": \"b\"}]",
        r#"Action: read_file[{"path": "a"}]Action: read_file[{"path": "b"}]"#,
        // Wrong values: a type, an enum, a minimum, a minLength, the order.
        r#"Action: read_file[{"path": "a", "limit": "ten"}]"#,
        r#"Action: write_file[{"path": "a", "content": "b", "mode": "sideways"}]"#,
        r#"Action: grep[{"pattern": "x", "context_lines": -1}]"#,
        r#"Action: read_file[{"path": ""}]"#,
        r#"Action: bash[{"timeout": 5, "command": "ls"}]"#,
        // Arguments not an object, or not closed.
        r#"Action: read_file["a"]"#,
        r#"Action: read_file[{"path": "a"}"#,
        "",
    ] {
        assert!(!grammar.accepts(bad), "accepted: {bad:?}");
    }
}

/// A schema with what the minimal tools do not use.
fn shapes() -> ToolSpec {
    ToolSpec::new(
        "shapes",
        "Every kind of value.",
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "kind": {"enum": ["a", "b", 3, null]},
                "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
                "maybe": {"type": ["string", "null"]},
                "either": {"anyOf": [{"type": "integer"}, {"type": "boolean"}]},
                "tree": {"$ref": "#/$defs/Node"},
                "ratio": {"type": "number"},
                "anything": {},
                "fixed": {"const": {"x": [1, 2]}},
                "code": {"type": "string", "minLength": 3},
                "count": {"type": "integer", "minimum": 1}
            },
            "additionalProperties": false,
            "$defs": {
                "Node": {
                    "type": "object",
                    "properties": {
                        "label": {"type": "string"},
                        "nodes": {"type": "array", "items": {"$ref": "#/$defs/Node"}}
                    },
                    "required": ["label"],
                    "additionalProperties": false
                }
            }
        }),
    )
}

#[test]
fn the_grammar_follows_refs_unions_arrays_and_optional_members() {
    let spec = shapes();
    let grammar = Grammar::parse(&action_grammar(std::slice::from_ref(&spec))).unwrap();
    let validator = SchemaValidator::new(&spec.input_schema).unwrap();
    let call = |args: &str| format!("Action: shapes[{args}]");
    for good in [
        "{}",
        "{ }",
        r#"{"kind": "b"}"#,
        r#"{"kind": 3, "tags": ["x"]}"#,
        r#"{"tags": ["x", "y", "z"]}"#,
        r#"{"kind": null, "maybe": null}"#,
        r#"{"either": 1, "ratio": 2}"#,
        r#"{"maybe": "a\"b\\c\u00e9 é\n/\/"}"#,
        r#"{"either": -12}"#,
        r#"{"either": true}"#,
        r#"{"tree": {"label": "root", "nodes": [{"label": "a"}, {"label": "b", "nodes": []}]}}"#,
        r#"{"ratio": -1.5e-3}"#,
        r#"{"ratio": 0}"#,
        r#"{"anything": {"a": [1, {"b": null}], "c": "d"}}"#,
        r#"{"fixed": {"x":[1,2]}}"#,
        r#"{"code": "abc"}"#,
        r#"{"code": "abcd"}"#,
        r#"{"count": 10}"#,
    ] {
        let text = call(good);
        assert!(grammar.accepts(&text), "refused: {text}");
        let args: Value = serde_json::from_str(good).unwrap();
        assert!(validator.is_valid(&args), "the schema refuses {good}");
        let reply = parse_text_reply(&text);
        assert_eq!(reply.actions[0].clone().unwrap().arguments, args);
    }
    for bad in [
        r#"{, "kind": "a"}"#,
        r#"{"kind": "c"}"#,
        r#"{"tags": []}"#,
        r#"{"tags": ["a", "b", "c", "d"]}"#,
        r#"{"maybe": 1}"#,
        r#"{"maybe": "\ud800"}"#,
        "{\"maybe\": \"raw\nline\"}",
        r#"{"either": 1.5}"#,
        r#"{"tree": {"nodes": []}}"#,
        r#"{"tree": {"label": "a", "extra": 1}}"#,
        r#"{"tree": {"nodes": [], "label": "a"}}"#,
        r#"{"ratio": 1e999}"#,
        r#"{"ratio": 01}"#,
        r#"{"fixed": {"x": [1, 2]}}"#,
        r#"{"code": "ab"}"#,
        r#"{"count": 0}"#,
        r#"{"count": -3}"#,
        r#"{"maybe": null, "kind": "a"}"#,
    ] {
        assert!(!grammar.accepts(&call(bad)), "accepted: {bad}");
    }
}

#[test]
fn with_no_tool_any_name_and_object_is_allowed() {
    let grammar = Grammar::parse(&action_grammar(&[])).unwrap();
    assert!(grammar.accepts(r#"Action: anything[{"a": [1, "b"]}]"#));
    assert!(!grammar.accepts("Action: anything[1]"));
    // A tool the text protocol cannot name is left out.
    let odd = ToolSpec::new("odd/name", "", json!({"type": "object"}));
    let grammar = Grammar::parse(&action_grammar(&[odd, finish()])).unwrap();
    assert!(grammar.accepts(r#"Action: finish[{"answer": "x"}]"#));
    assert!(!grammar.accepts("Action: odd/name[{}]"));
}

#[test]
fn the_reply_schema_takes_a_call_of_every_tool_and_nothing_else() {
    let specs = every_argument_specs();
    let schema = reply_schema(&specs);
    let validator = SchemaValidator::new(&schema).unwrap();
    let known = |name: &str| specs.iter().any(|s| s.name == name);
    for spec in &specs {
        for args in examples(&spec.name) {
            let reply = json!({"name": spec.name, "arguments": args});
            assert!(validator.is_valid(&reply), "{reply}");
            // What the agent reads a whole-reply JSON object as.
            let found = calls_in_text(&reply.to_string(), &known).unwrap();
            assert_eq!(found.form, "a JSON block");
            assert_eq!(found.calls.len(), 1);
            assert_eq!(
                (found.calls[0].name.as_str(), &found.calls[0].arguments),
                (spec.name.as_str(), &args)
            );
        }
    }
    for bad in [
        json!("I will read the file first."),
        json!({"name": "delete_everything", "arguments": {"path": "/"}}),
        json!({"name": "read_file", "arguments": {}}),
        json!({"name": "read_file", "arguments": {"path": "a", "bogus": 1}}),
        json!({"name": "read_file"}),
        json!({"name": "read_file", "arguments": {"path": "a"}, "thought": "x"}),
        json!({"name": "finish", "arguments": {"answer": 42}}),
        json!([{"name": "read_file", "arguments": {"path": "a"}}]),
    ] {
        assert!(!validator.is_valid(&bad), "{bad}");
    }
}

#[test]
fn the_reply_schema_moves_definitions_and_root_references_up() {
    let chain = ToolSpec::new(
        "chain",
        "A list of links.",
        json!({
            "type": "object",
            "properties": {"next": {"$ref": "#"}, "label": {"type": "string"}},
            "additionalProperties": false
        }),
    );
    let schema = reply_schema(&[shapes(), chain]);
    let defs = schema["$defs"].as_object().unwrap();
    let mut keys: Vec<&String> = defs.keys().collect();
    keys.sort();
    assert_eq!(keys, ["chain", "shapes:Node"]);
    assert_eq!(
        schema["anyOf"][0]["properties"]["arguments"]["properties"]["tree"],
        json!({"$ref": "#/$defs/shapes:Node"})
    );
    assert!(
        schema["anyOf"][0]["properties"]["arguments"]
            .get("$schema")
            .is_none()
    );
    let validator = SchemaValidator::new(&schema).unwrap();
    for good in [
        json!({"name": "shapes", "arguments": {"tree": {"label": "a", "nodes": [{"label": "b"}]}}}),
        json!({"name": "chain", "arguments": {"next": {"next": {"label": "end"}}}}),
    ] {
        assert!(validator.is_valid(&good), "{good}");
    }
    for bad in [
        json!({"name": "shapes", "arguments": {"tree": {"nodes": [{"label": "b"}]}}}),
        json!({"name": "shapes", "arguments": {"tree": {"label": "a", "nodes": [{}]}}}),
        json!({"name": "chain", "arguments": {"next": {"next": 1}}}),
    ] {
        assert!(!validator.is_valid(&bad), "{bad}");
    }
}
