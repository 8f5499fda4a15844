#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::fixtures::{
    ReadFileParams, http_request_spec, read_file_spec, sample_specs, todo_write_spec,
};
use super::*;
use toolbelt_core::SchemaValidator;

/// Every subschema position reached by a walk, with its JSON pointer.
fn all_nodes<'a>(value: &'a Value, path: String, out: &mut Vec<(String, &'a Value)>) {
    match value {
        Value::Object(map) => {
            out.push((path.clone(), value));
            for (k, v) in map {
                all_nodes(v, format!("{path}/{k}"), out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                all_nodes(v, format!("{path}/{i}"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn format_names_round_trip() {
    let names: Vec<&str> = Format::ALL.iter().map(|f| f.as_str()).collect();
    assert_eq!(
        names,
        [
            "openai",
            "openai-strict",
            "openai-responses",
            "anthropic",
            "gemini",
            "mcp",
            "text"
        ]
    );
    for format in Format::ALL {
        assert_eq!(Format::parse(format.as_str()), Some(format));
        assert_eq!(format.to_string(), format.as_str());
    }
    assert_eq!(Format::parse("OpenAI"), None);
    assert_eq!(Format::parse(""), None);
}

#[test]
fn snapshot_openai() {
    insta::assert_json_snapshot!("openai", export(&sample_specs(), Format::OpenAi));
}

#[test]
fn snapshot_openai_strict() {
    insta::assert_json_snapshot!(
        "openai_strict",
        export(&sample_specs(), Format::OpenAiStrict)
    );
}

#[test]
fn snapshot_openai_responses() {
    insta::assert_json_snapshot!(
        "openai_responses",
        export(&sample_specs(), Format::OpenAiResponses)
    );
}

#[test]
fn snapshot_anthropic() {
    insta::assert_json_snapshot!("anthropic", export(&sample_specs(), Format::Anthropic));
}

#[test]
fn snapshot_gemini() {
    insta::assert_json_snapshot!("gemini", export(&sample_specs(), Format::Gemini));
}

#[test]
fn snapshot_mcp() {
    insta::assert_json_snapshot!("mcp", export(&sample_specs(), Format::Mcp));
}

#[test]
fn snapshot_text() {
    insta::assert_snapshot!("text", text_prompt(&sample_specs()));
}

#[test]
fn text_export_is_the_prompt_as_a_string() {
    let specs = sample_specs();
    assert_eq!(
        export(&specs, Format::Text),
        Value::String(text_prompt(&specs))
    );
}

#[test]
fn export_tool_is_one_element_of_export() {
    let specs = sample_specs();
    for format in Format::ALL {
        let all = export(&specs, format);
        for (i, spec) in specs.iter().enumerate() {
            let one = export_tool(spec, format);
            let expected = match format {
                Format::Gemini => all["functionDeclarations"][i].clone(),
                Format::Text => {
                    let prompt = all.as_str().unwrap();
                    assert!(
                        prompt.contains(one.as_str().unwrap()),
                        "{format}: {}",
                        spec.name
                    );
                    continue;
                }
                _ => all[i].clone(),
            };
            assert_eq!(one, expected, "{format}: {}", spec.name);
        }
    }
}

#[test]
fn no_format_leaks_the_dialect_or_the_root_title() {
    let specs = sample_specs();
    for format in Format::ALL {
        let out = export(&specs, format);
        let mut nodes = Vec::new();
        all_nodes(&out, String::new(), &mut nodes);
        for (path, node) in nodes {
            assert!(node.get("$schema").is_none(), "{format}: $schema at {path}");
        }
    }
    // MCP keeps a dialect the author declared, at the input schema's root only.
    let mut spec = read_file_spec();
    spec.input_schema["$schema"] = json!("https://json-schema.org/draft/2020-12/schema");
    for format in Format::ALL {
        let out = export(std::slice::from_ref(&spec), format);
        let mut nodes = Vec::new();
        all_nodes(&out, String::new(), &mut nodes);
        let with_dialect: Vec<String> = nodes
            .into_iter()
            .filter(|(_, node)| node.get("$schema").is_some())
            .map(|(path, _)| path)
            .collect();
        if format == Format::Mcp {
            assert_eq!(with_dialect, ["/0/inputSchema"], "{format}");
            assert_eq!(
                out[0]["inputSchema"]["$schema"],
                "https://json-schema.org/draft/2020-12/schema"
            );
        } else {
            assert!(with_dialect.is_empty(), "{format}: {with_dialect:?}");
        }
    }
    let mut spec = read_file_spec();
    spec.input_schema["title"] = json!("ReadFileParams");
    for format in [
        Format::OpenAi,
        Format::OpenAiStrict,
        Format::Anthropic,
        Format::Mcp,
    ] {
        let text = export_tool(&spec, format).to_string();
        assert!(!text.contains("ReadFileParams"), "{format}: {text}");
    }
}

#[test]
fn openai_strict_tools_pass_the_strict_check_or_fall_back_to_plain() {
    let specs = sample_specs();
    let strict = export(&specs, Format::OpenAiStrict);
    let plain = export(&specs, Format::OpenAi);
    let flags: Vec<bool> = strict
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["strict"].as_bool().unwrap())
        .collect();
    // read_file and todo_write can be strict; http_request has a map and a free-form body.
    assert_eq!(flags, [true, true, false]);
    for (i, tool) in strict.as_array().unwrap().iter().enumerate() {
        let parameters = &tool["function"]["parameters"];
        if flags[i] {
            check_strict(parameters).unwrap();
        } else {
            assert!(check_strict(&strict_schema(parameters)).is_err());
            assert_eq!(parameters, &plain[i]["function"]["parameters"]);
        }
    }
}

#[test]
fn gemini_declarations_pass_the_gemini_check() {
    let out = export(&sample_specs(), Format::Gemini);
    let declarations = out["functionDeclarations"].as_array().unwrap();
    assert_eq!(declarations.len(), 3);
    for declaration in declarations {
        check_gemini(&declaration["parameters"]).unwrap();
    }
}

#[test]
fn mcp_entries_carry_annotations_and_envelope_output_schemas() {
    let read = export_tool(&read_file_spec(), Format::Mcp);
    assert_eq!(
        read["annotations"],
        json!({"title": "Read File", "readOnlyHint": true, "destructiveHint": false,
               "idempotentHint": true, "openWorldHint": false})
    );
    assert_eq!(read["title"], json!("Read File"));
    // structuredContent is the envelope: the output schema describes it, with the
    // tool's own result schema at `data`.
    assert_eq!(read["outputSchema"]["type"], json!("object"));
    assert_eq!(
        read["outputSchema"]["required"],
        json!(["status", "data", "text"])
    );
    // An error envelope's data is any object; the tool's data schema applies to
    // the others.
    assert_eq!(
        read["outputSchema"]["properties"]["data"]["type"],
        json!("object")
    );
    assert_eq!(
        read["outputSchema"]["if"],
        json!({"properties": {"status": {"const": "error"}}})
    );
    assert_eq!(
        read["outputSchema"]["else"]["properties"]["data"]["type"],
        json!("object")
    );
    assert_eq!(read["inputSchema"]["type"], json!("object"));

    // http_request returns a string: the envelope's data is a string.
    let http = export_tool(&http_request_spec(), Format::Mcp);
    assert_eq!(http["outputSchema"]["type"], json!("object"), "{http}");
    assert_eq!(
        http["outputSchema"]["else"]["properties"]["data"]["type"],
        json!("string")
    );
    assert_eq!(http["annotations"]["destructiveHint"], json!(true));
    assert_eq!(http["annotations"]["openWorldHint"], json!(true));
}

#[test]
fn a_tool_without_arguments_fits_every_consumer() {
    let spec = ToolSpec::describe("ping", "Checks that the runtime answers.");
    let empty = json!({"type": "object", "properties": {}});
    assert_eq!(
        export_tool(&spec, Format::OpenAi)["function"]["parameters"],
        empty
    );
    assert_eq!(export_tool(&spec, Format::Anthropic)["input_schema"], empty);
    assert_eq!(export_tool(&spec, Format::Mcp)["inputSchema"], empty);
    assert_eq!(
        export_tool(&spec, Format::OpenAiStrict)["function"],
        json!({"name": "ping", "description": "Checks that the runtime answers.", "strict": true,
               "parameters": {"type": "object", "properties": {}, "required": [],
                              "additionalProperties": false}})
    );
    // Gemini rejects an object without properties: the declaration has none.
    assert_eq!(
        export_tool(&spec, Format::Gemini),
        json!({"name": "ping", "description": "Checks that the runtime answers."})
    );
    assert!(
        export_tool(&spec, Format::Text)
            .as_str()
            .unwrap()
            .contains("Parameters: none.")
    );
}

#[test]
fn export_is_deterministic() {
    let a = serde_json::to_string(&export(&sample_specs(), Format::Mcp)).unwrap();
    let b = serde_json::to_string(&export(&sample_specs(), Format::Mcp)).unwrap();
    assert_eq!(a, b);
    // Keys come out sorted whatever order a hand-written schema used.
    let spec = ToolSpec::new(
        "t",
        "d",
        serde_json::from_str(
            r#"{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"string"}}}"#,
        )
        .unwrap(),
    );
    let text = serde_json::to_string(&export_tool(&spec, Format::Anthropic)).unwrap();
    assert_eq!(
        text,
        r#"{"description":"d","input_schema":{"properties":{"a":{"type":"string"},"z":{"type":"string"}},"type":"object"},"name":"t"}"#
    );
}

/// What a model under strict mode sends back: every key, `null` for "not given".
#[test]
fn strict_arguments_become_valid_original_arguments() {
    let spec = read_file_spec();
    let strict = export_tool(&spec, Format::OpenAiStrict)["function"]["parameters"].clone();
    let arguments = json!({
        "path": "src/lib.rs", "offset": null, "limit": null, "encoding": null, "line_numbers": null
    });
    assert!(SchemaValidator::new(&strict).unwrap().is_valid(&arguments));
    let original = SchemaValidator::new(&spec.input_schema).unwrap();
    assert!(
        !original.is_valid(&arguments),
        "limit: null breaks the original schema"
    );

    // The registry's safe repair leaves out nulls the original schema does not take.
    let arguments = toolbelt_core::repair_arguments(&spec.input_schema, arguments).value;
    // offset is an Option: null means None and is kept; the others fall back to defaults.
    assert_eq!(arguments, json!({"path": "src/lib.rs", "offset": null}));
    assert!(original.is_valid(&arguments));
    let params: ReadFileParams = serde_json::from_value(arguments).unwrap();
    assert_eq!(
        (params.limit, params.line_numbers, params.offset),
        (2000, true, None)
    );
}

/// The strict schema takes every full argument set the original takes, and
/// rejects what the original rejects.
#[test]
fn strict_schemas_keep_their_meaning() {
    let todo = todo_write_spec();
    let strict = strict_schema(&todo.input_schema);
    let strict = SchemaValidator::new(&strict).unwrap();
    let original = SchemaValidator::new(&todo.input_schema).unwrap();
    let full = json!({
        "todos": [{"id": "1", "content": "write tests", "status": "in_progress",
                   "priority": null, "owner": {"name": "ana", "tags": ["x"]}}],
        "merge": false
    });
    assert!(original.is_valid(&full) && strict.is_valid(&full));
    for bad in [
        json!({"todos": [{"id": "1", "content": "x", "status": "started", "priority": null, "owner": null}], "merge": null}),
        json!({"todos": [], "merge": null}),
        json!({"todos": [{"id": "1", "content": "", "status": "pending", "priority": null, "owner": null}], "merge": null}),
    ] {
        assert!(!original.is_valid(&bad), "{bad}");
        // An empty `content` is only described (minLength is not strict-mode), so the
        // strict schema lets it through; the registry still validates the original.
        let expect_strict = bad["todos"][0]["content"] == json!("");
        assert_eq!(strict.is_valid(&bad), expect_strict, "{bad}");
    }
}

#[test]
fn json_schema_consumers_get_only_formats_json_schema_defines() {
    let spec = ToolSpec::new(
        "formats",
        "Formats of every kind.",
        json!({"type": "object", "properties": {
            "count": {"type": "integer", "format": "uint32", "minimum": 0},
            "when": {"type": "string", "format": "date-time"},
            "ratio": {"type": ["number", "null"], "format": "double", "default": {"format": "uint8"}},
        }}),
    )
    .output_schema(json!({"type": "object", "properties": {
        "total": {"type": "integer", "format": "uint64"},
    }}));
    for format in [
        Format::OpenAi,
        Format::OpenAiStrict,
        Format::OpenAiResponses,
        Format::Anthropic,
        Format::Mcp,
    ] {
        let out = export(std::slice::from_ref(&spec), format);
        let mut nodes = Vec::new();
        all_nodes(&out, String::new(), &mut nodes);
        let formats: Vec<&str> = nodes
            .iter()
            .filter(|(path, _)| !path.contains("/default"))
            .filter_map(|(_, node)| node.get("format").and_then(Value::as_str))
            .collect();
        assert_eq!(formats, ["date-time"], "{format}");
    }
    let gemini = export(std::slice::from_ref(&spec), Format::Gemini);
    let props = &gemini["functionDeclarations"][0]["parameters"]["properties"];
    assert_eq!(props["count"]["format"], "int64");
    assert_eq!(props["ratio"]["format"], "double");
}
