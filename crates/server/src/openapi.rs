//! The API's OpenAPI 3.1 document, served at `GET /api/openapi.json` (with the token, like every `/api/*` route).
//! `scripts/test.sh` runs schemathesis against a live server with it: no 5xx, every answer matching its schema.
//!
//! Two generators, one job each: utoipa writes the paths from the handlers' `#[utoipa::path]` annotations, and
//! schemars — the schema crate the tools' input and output schemas already come from — writes the response bodies'
//! schemas from the very types the handlers serialize. A body is named in a path by a marker of the same name
//! ([`schema`]); [`document`] puts schemars' schemas (JSON Schema 2020-12, the dialect of OpenAPI 3.1) under
//! `components/schemas` in the markers' place, so the document cannot drift from what the handlers send.

use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

/// Markers naming the response bodies in `#[utoipa::path]` annotations, and the types whose schemas they stand for.
pub mod schema {
    use utoipa::openapi::RefOr;
    use utoipa::openapi::schema::{ObjectBuilder, Schema};

    /// Declares one marker per body type and [`bodies`], which asks schemars for each type's schema.
    macro_rules! bodies {
        ($($(#[$doc:meta])* $marker:ident => $ty:ty),* $(,)?) => {
            $(
                $(#[$doc])*
                pub struct $marker;

                impl utoipa::PartialSchema for $marker {
                    fn schema() -> RefOr<Schema> {
                        // A placeholder: `document` replaces it with schemars' schema of the body type.
                        ObjectBuilder::new().into()
                    }
                }

                impl utoipa::ToSchema for $marker {
                    fn name() -> std::borrow::Cow<'static, str> {
                        std::borrow::Cow::Borrowed(stringify!($marker))
                    }
                }
            )*

            /// Each marker's name and the schema of the type it stands for (a `$ref` into `components/schemas`
            /// for named types, whose definitions stay in the generator).
            pub(super) fn bodies(generator: &mut schemars::SchemaGenerator) -> Vec<(&'static str, schemars::Schema)> {
                vec![$((stringify!($marker), generator.subschema_for::<$ty>())),*]
            }
        };
    }

    bodies! {
        /// `GET /api/info`.
        Info => crate::bodies::Info,
        /// `GET /api/tools`.
        ToolList => Vec<holdfast_core::registry::ToolInfo>,
        /// `GET /api/sessions`.
        SessionList => crate::bodies::SessionList,
        /// `POST /api/sessions`.
        SessionInfo => holdfast_agent::SessionInfo,
        /// `GET /api/sessions/{id}`.
        SessionDetail => crate::bodies::SessionDetail,
        /// `POST /api/sessions/{id}/messages`.
        TurnReply => crate::bodies::TurnReply,
        /// `POST /api/sessions/{id}/cancel`.
        Cancelled => crate::bodies::Cancelled,
        /// A tool's answer.
        ToolOutput => crate::bodies::ToolOutput,
        /// `GET /api/sessions/{id}/registers`.
        Registers => crate::bodies::Registers,
        /// `GET /api/sessions/{id}/context-bank`.
        ContextBankView => crate::bodies::ContextBankView,
        /// `GET /api/sessions/{id}/confirmations`.
        PendingList => crate::bodies::PendingList,
        /// The answer to an approval or a denial.
        Resolution => crate::bodies::Resolution,
        /// `GET /api/memory`.
        MemoryList => crate::bodies::MemoryList,
        /// `GET /api/tasks`.
        TaskList => crate::bodies::TaskList,
        /// `GET /api/reminders`.
        ReminderList => crate::bodies::ReminderList,
        /// `GET /api/wallet`.
        WalletView => crate::money::WalletView,
        /// `GET /api/journal`.
        JournalList => crate::money::JournalList,
        /// `GET /api/journal/{id}/tx`.
        TxPage => holdfast_web3::report::TxPage,
        /// Every error answer.
        ErrorBody => crate::error::ErrorBody,
    }
}

/// The paths.
#[derive(OpenApi)]
#[openapi(
    info(title = "holdfast", description = "The REST API of `holdfast serve`: sessions, messages, tools by name \
        through the same registry as the model, registers, context bank, confirmations, memory, and the money views. \
        Every route needs the access token: `Authorization: Bearer TOKEN` (or a signed-in browser's session cookie \
        with its page key, `X-Holdfast-Page`). Errors \
        are `{\"error\": {\"code\", \"message\"}}` with the stable codes of docs/interfaces.md."),
    paths(
        crate::api::info, crate::api::tools, crate::api::list_sessions, crate::api::create_session,
        crate::api::get_session, crate::api::send_message, crate::api::cancel, crate::api::call_tool,
        crate::api::registers, crate::api::context_bank, crate::api::confirmations, crate::api::approve,
        crate::api::deny, crate::api::memory, crate::api::tasks, crate::api::reminders,
        crate::money::wallet, crate::money::journal, crate::money::tx_page,
    ),
    modifiers(&BearerToken),
    security(("token" = [])),
)]
struct ApiDoc;

/// Declares the `token` security scheme (HTTP bearer).
struct BearerToken;

impl Modify for BearerToken {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "token",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The generator of the bodies' schemas: JSON Schema 2020-12 as the handlers serialize (fields skipped when empty
/// are optional), definitions under `components/schemas`.
fn generator() -> SchemaGenerator {
    SchemaSettings::draft2020_12()
        .for_serialize()
        .with(|s| {
            s.definitions_path = "/components/schemas".into();
            s.meta_schema = None;
        })
        .into_generator()
}

/// The `enum` of a string-valued type's JSON Schema (a parameter's allowed values), from its schemars schema.
pub(crate) fn string_values<T: schemars::JsonSchema>() -> Vec<String> {
    let schema = generator().root_schema_for::<T>();
    let one_of = schema.get("oneOf").and_then(Value::as_array).into_iter().flatten();
    let enumerated = schema.get("enum").and_then(Value::as_array).into_iter().flatten();
    one_of
        .filter_map(|v| v.get("const").or_else(|| v.get("enum").and_then(|e| e.get(0))))
        .chain(enumerated)
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect()
}

/// The edge's refusals, which answer before any handler on every route (`holdfast_agent::access`): status, which
/// methods, and why.
const EDGE_REFUSALS: &[(&str, &[&str], &str)] = &[
    ("401", &["get", "post"], "No valid access token (or a token in the URL, which is refused)"),
    ("403", &["get", "post"], "The Host or Origin header is not one this server answers"),
    ("415", &["post"], "A body that is not `application/json`"),
];

/// Documents [`EDGE_REFUSALS`] on every operation, with the error body.
fn document_edge(doc: &mut Value) {
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else { return };
    for item in paths.values_mut() {
        for (status, methods, why) in EDGE_REFUSALS {
            for method in *methods {
                if let Some(responses) =
                    item.get_mut(*method).and_then(|o| o.get_mut("responses")).and_then(Value::as_object_mut)
                {
                    responses.entry(*status).or_insert_with(|| {
                        serde_json::json!({"description": why, "content": {"application/json": {"schema":
                            {"$ref": "#/components/schemas/ErrorBody"}}}})
                    });
                }
            }
        }
    }
}

/// The document as JSON: utoipa's paths with schemars' body schemas, and the edge's refusals on every operation.
pub fn document() -> Value {
    let mut doc = serde_json::to_value(ApiDoc::openapi()).unwrap_or_else(|_| Value::Object(Map::new()));
    document_edge(&mut doc);
    let mut generator = generator();
    let bodies = schema::bodies(&mut generator);
    let definitions = generator.take_definitions(true);
    if let Some(schemas) = doc
        .as_object_mut()
        .and_then(|d| d.entry("components").or_insert_with(|| Value::Object(Map::new())).as_object_mut())
        .and_then(|c| c.entry("schemas").or_insert_with(|| Value::Object(Map::new())).as_object_mut())
    {
        for (name, schema) in bodies {
            schemas.insert(name.to_owned(), schema.to_value());
        }
        // After the markers: a marker named like its type is that type's definition, not a `$ref` to itself.
        schemas.extend(definitions);
    }
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `$ref` in `v`.
    fn refs<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref") {
                    out.push(r);
                }
                m.values().for_each(|v| refs(v, out));
            }
            Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }

    #[test]
    fn every_body_is_typed_and_every_reference_resolves() {
        let doc = document();
        let schemas = doc["components"]["schemas"].as_object().cloned().unwrap_or_default();
        let mut found = Vec::new();
        refs(&doc, &mut found);
        assert!(found.len() > 30, "the bodies reference their parts: {found:?}");
        for r in found {
            let name = r.strip_prefix("#/components/schemas/").unwrap_or_else(|| panic!("foreign $ref {r}"));
            let schema = schemas.get(name).unwrap_or_else(|| panic!("{r} does not resolve"));
            assert_ne!(schema, &serde_json::json!({}), "{name} is still a placeholder");
        }
        // The session list is typed down to its fields, not a bare object.
        let session = &schemas["SessionInfo"];
        let required: Vec<&str> =
            session["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        for field in ["id", "kind", "created_at", "message_count", "input_tokens"] {
            assert!(required.contains(&field), "SessionInfo requires {field}: {session}");
        }
        assert_eq!(
            schemas["SessionList"]["properties"]["sessions"]["items"]["$ref"],
            "#/components/schemas/SessionRow"
        );
        let row: Vec<&str> =
            schemas["SessionRow"]["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        assert!(row.contains(&"agent") && row.contains(&"id"), "a session row is the session and its agent: {row:?}");
        assert_eq!(schemas["ToolList"]["type"], "array");
        assert_eq!(doc["openapi"], "3.1.0");
    }

    #[test]
    fn no_marker_shadows_another_type() {
        let mut generator = generator();
        let bodies = schema::bodies(&mut generator);
        let definitions = generator.take_definitions(true);
        for (name, schema) in bodies {
            if definitions.contains_key(name) {
                let own = format!("#/components/schemas/{name}");
                assert_eq!(schema.get("$ref").and_then(Value::as_str), Some(own.as_str()), "{name} is two types");
            }
        }
    }

    #[test]
    fn the_journal_kind_parameter_lists_the_kinds() {
        assert_eq!(
            string_values::<holdfast_web3::EntryKind>(),
            ["swap", "approval", "reset", "transfer", "payment", "fund"]
        );
    }
}
