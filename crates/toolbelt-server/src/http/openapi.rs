//! The OpenAPI 3.1 document of the JSON API, served at `/v1/openapi.json`.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use toolbelt_core::{ErrorCode, Registry};

use crate::web;

/// An OpenAPI 3.1 document for the JSON API: one path per tool, whose request body
/// is the tool's input schema (under `components.schemas`, with its own `$id` so
/// that the schema's internal references keep resolving).
pub(super) fn openapi_document(registry: &Registry) -> Value {
    let mut paths = Map::new();
    let mut schemas = Map::new();
    schemas.insert("Envelope".into(), envelope_schema());
    schemas.insert(
        "Error".into(),
        json!({
            "type": "object",
            "required": ["error"],
            "properties": { "error": {
                "type": "object",
                "required": ["code", "message"],
                "properties": { "code": { "type": "string" }, "message": { "type": "string" } }
            } }
        }),
    );
    schemas.insert("Health".into(), health_schema());
    let health_ref = json!({ "$ref": "#/components/schemas/Health" });
    let envelope_ref = json!({ "$ref": "#/components/schemas/Envelope" });
    let error_ref = json!({ "$ref": "#/components/schemas/Error" });
    let unauthorized = json!({
        "description": "Missing or wrong bearer token.",
        "content": { "application/json": { "schema": error_ref } }
    });
    paths.insert(
        "/healthz".into(),
        json!({ "get": {
            "operationId": "healthz",
            "summary": "What a load balancer asks: the replica, its store (a bounded SELECT 1) and its scheduler (no token needed).",
            "security": [],
            "responses": {
                "200": { "description": "The replica takes calls.",
                    "content": { "application/json": { "schema": health_ref.clone() } } },
                "503": { "description": "Send new work elsewhere: the store does not answer, or the server is draining (it was told to stop and finishes the calls under way).",
                    "content": { "application/json": { "schema": health_ref } } }
            }
        } }),
    );
    paths.insert(
        "/v1/tools".into(),
        json!({ "get": {
            "operationId": "listTools",
            "summary": "The tool specs, with the names the active profile exposes.",
            "responses": {
                "200": { "description": "The tools.", "content": { "application/json": { "schema": {
                    "type": "object", "required": ["tools"],
                    "properties": { "tools": { "type": "array", "items": { "type": "object" } } } } } } },
                "401": unauthorized
            }
        } }),
    );
    paths.insert(
        "/v1/batch".into(),
        json!({ "post": {
            "operationId": "batch",
            "summary": "Several calls, run in order (each sees what the ones before it did; a failed call does not stop the rest).",
            "requestBody": { "required": true, "content": { "application/json": { "schema": {
                "type": "array", "maxItems": toolbelt_wire::batch::MAX_BATCH_CALLS,
                "items": { "type": "object", "required": ["tool"], "additionalProperties": false,
                    "properties": {
                        "tool": { "type": "string", "description": "The tool's name (canonical or as the profile exposes it)." },
                        "params": { "type": "object", "description": "Its arguments (also accepted as `arguments`)." },
                        "arguments": { "type": "object" },
                        "id": { "type": "string", "description": "A call id, echoed in the envelope's context." }
                    } } } } } },
            "responses": {
                "200": { "description": "One envelope per call, in order.", "content": { "application/json": {
                    "schema": { "type": "array", "items": envelope_ref } } } },
                "400": { "description": "The batch cannot be read; no call ran.",
                    "content": { "application/json": { "schema": error_ref } } },
                "401": unauthorized
            }
        } }),
    );
    paths.insert(
        "/v1/openapi.json".into(),
        json!({ "get": {
            "operationId": "openapi",
            "summary": "This document.",
            "responses": { "200": { "description": "OpenAPI 3.1 document.",
                "content": { "application/json": { "schema": { "type": "object" } } } },
                "401": unauthorized }
        } }),
    );
    web::api::openapi_paths(&mut paths, &unauthorized);
    web::questions::openapi_paths(&mut paths, &unauthorized);
    super::checkpoints::openapi_paths(&mut paths, &unauthorized);
    let mut tools = BTreeMap::new();
    for spec in registry.definitions() {
        tools.insert(spec.name.clone(), spec);
    }
    for (name, spec) in tools {
        let schema_name = format!("{name}.arguments");
        let mut input = spec.input_schema.clone();
        if let Value::Object(map) = &mut input {
            map.remove("$schema");
            map.insert(
                "$id".into(),
                Value::String(format!("urn:toolbelt:tool:{name}:arguments")),
            );
        }
        schemas.insert(schema_name.clone(), input);
        let mut operation = json!({
            "operationId": name,
            "summary": spec.title,
            "description": spec.description,
            "tags": [spec.category.as_str()],
            "requestBody": { "required": false, "content": { "application/json": {
                "schema": { "$ref": format!("#/components/schemas/{schema_name}") } } } },
            "responses": {
                "200": { "description": "The result envelope; `status` is success, partial or error \
                    (tool errors such as invalid arguments are envelopes too).",
                    "content": { "application/json": { "schema": envelope_ref } } },
                "400": { "description": "The body is not JSON (an error envelope).",
                    "content": { "application/json": { "schema": envelope_ref } } },
                "401": unauthorized,
                "413": { "description": "The body is over the size limit.",
                    "content": { "application/json": { "schema": error_ref } } }
            }
        });
        if let (Some(output), Value::Object(op)) = (&spec.output_schema, &mut operation) {
            op.insert(
                "x-toolbelt-output-schema".into(),
                strip_dialect(output.clone()),
            );
        }
        paths.insert(format!("/v1/tools/{name}"), json!({ "post": operation }));
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "toolbelt",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "toolbelt's tools over HTTP. MCP streamable HTTP is served at /mcp."
        },
        "servers": [{ "url": "/" }],
        "security": [{ "bearer": [] }],
        "paths": paths,
        "components": {
            "securitySchemes": { "bearer": { "type": "http", "scheme": "bearer" } },
            "schemas": schemas
        }
    })
}

fn strip_dialect(mut schema: Value) -> Value {
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
    }
    schema
}

fn envelope_schema() -> Value {
    let codes: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
    json!({
        "type": "object",
        "required": ["status", "data", "text", "stats", "context"],
        "properties": {
            "status": { "enum": ["success", "partial", "error"] },
            "data": { "description": "Machine-readable result (the tool's output schema on success)." },
            "text": { "type": "string", "description": "What a model reads." },
            "stats": { "type": "object", "properties": { "time_ms": { "type": "integer" } } },
            "context": { "type": "object", "properties": {
                "tool": { "type": "string" }, "call_id": { "type": "string" } } },
            "error": { "type": "object", "required": ["code", "message"], "properties": {
                "code": { "enum": codes },
                "message": { "type": "string" },
                "hint": { "type": ["string", "null"] }
            } }
        }
    })
}

/// The body of `/healthz`.
fn health_schema() -> Value {
    json!({
        "type": "object",
        "required": ["status", "replica", "version", "store", "scheduler"],
        "properties": {
            "status": { "enum": ["ok", "draining", "unavailable"] },
            "replica": { "type": "string", "description": "The replica's name, which its agent runs and questions carry in the store." },
            "version": { "type": "string" },
            "store": { "type": ["object", "null"], "required": ["backend", "reachable", "latency_ms"],
                "properties": {
                    "backend": { "enum": ["sqlite", "postgres"] },
                    "reachable": { "type": "boolean" },
                    "latency_ms": { "type": "integer", "minimum": 0 }
                } },
            "scheduler": { "enum": ["off", "running", "stopping", "stopped"] }
        }
    })
}
