//! The API's OpenAPI 3.1 document, generated from the handlers' `#[utoipa::path]` annotations and the response
//! types, served at `GET /api/openapi.json` (with the token, like every `/api/*` route). `scripts/test.sh` runs
//! schemathesis against a live server with it: no 5xx, every answer matching its schema.

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

/// The document.
#[derive(OpenApi)]
#[openapi(
    info(title = "holdfast", description = "The REST API of `holdfast serve`: sessions, messages, tools by name \
        through the same registry as the model, registers, context bank, confirmations, memory, and the money views. \
        Every route needs the access token: `Authorization: Bearer TOKEN` (or the browser's session cookie). Errors \
        are `{\"error\": {\"code\", \"message\"}}` with the stable codes of docs/interfaces.md."),
    paths(
        crate::api::info, crate::api::tools, crate::api::list_sessions, crate::api::create_session,
        crate::api::get_session, crate::api::send_message, crate::api::cancel, crate::api::call_tool,
        crate::api::registers, crate::api::context_bank, crate::api::confirmations, crate::api::approve,
        crate::api::deny, crate::api::memory, crate::api::tasks, crate::api::reminders,
        crate::money::wallet, crate::money::journal, crate::money::tx_page,
    ),
    components(schemas(crate::error::ErrorBody)),
    modifiers(&BearerToken),
    security(("token" = [])),
)]
pub struct ApiDoc;

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

/// The document as JSON text.
pub fn document() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}
