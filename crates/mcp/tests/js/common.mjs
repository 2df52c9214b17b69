// Shared helpers for the MCP interop scripts: the official TypeScript SDK (@modelcontextprotocol/sdk), resolved from
// the repository's pinned devnet/node_modules, as a stdio or streamable-HTTP client of holdfast.
//
// Connection settings come from the environment (set by crates/mcp/tests/interop.rs):
//   MCP_TRANSPORT=stdio  MCP_COMMAND=/path/to/binary  MCP_ARGS='["mcp","--config","…"]'
//   MCP_TRANSPORT=http   MCP_URL=http://127.0.0.1:PORT/mcp  MCP_TOKEN=…
// A script prints one JSON line of findings on success and exits 0; any failed check throws (exit 1).

const sdk = new URL('../../../../devnet/node_modules/@modelcontextprotocol/sdk/dist/esm/', import.meta.url);
const load = (path) => import(new URL(path, sdk).href);

export const { Client } = await load('client/index.js');
export const { StdioClientTransport } = await load('client/stdio.js');
export const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');
export const types = await load('types.js');
export const { AjvJsonSchemaValidator } = await load('validation/ajv-provider.js');

export function check(condition, message, detail) {
  if (!condition) {
    const extra = detail === undefined ? '' : `\n${JSON.stringify(detail, null, 2)}`;
    throw new Error(`check failed: ${message}${extra}`);
  }
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `predicate()` holds, polling, or fails after `ms`. */
export async function eventually(predicate, message, ms = 5000) {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (predicate()) return;
    await sleep(25);
  }
  check(false, `timed out: ${message}`);
}

function transport(token) {
  const kind = process.env.MCP_TRANSPORT ?? 'stdio';
  if (kind === 'stdio') {
    return new StdioClientTransport({
      command: process.env.MCP_COMMAND,
      args: JSON.parse(process.env.MCP_ARGS ?? '["mcp"]'),
      env: { HOLDFAST_LOG: process.env.HOLDFAST_LOG ?? 'warn' },
      stderr: 'inherit',
    });
  }
  check(kind === 'http', `unknown MCP_TRANSPORT ${kind}`);
  return new StreamableHTTPClientTransport(new URL(process.env.MCP_URL), {
    requestInit: { headers: { Authorization: `Bearer ${token ?? process.env.MCP_TOKEN}` } },
  });
}

/**
 * A connected client. `elicit` (optional) answers elicitation requests: when given, the client declares the
 * elicitation capability (form mode), as Claude Code and other elicitation-capable clients do. `token` (HTTP only)
 * is the client's bearer token instead of MCP_TOKEN.
 */
export async function connect({ name = 'holdfast-interop', elicit, token } = {}) {
  const capabilities = elicit ? { elicitation: { form: {} } } : {};
  const client = new Client({ name, version: '1.0.0' }, { capabilities });
  if (elicit) client.setRequestHandler(types.ElicitRequestSchema, (request) => elicit(request.params));
  const updates = [];
  client.setNotificationHandler(types.ResourceUpdatedNotificationSchema, (n) => updates.push(n.params.uri));
  const t = transport(token);
  await client.connect(t);
  return { client, updates, transport: t };
}

/** Calls a tool; returns the raw result (the SDK has already checked structuredContent against outputSchema). */
export async function call(client, name, args) {
  return client.callTool({ name, arguments: args });
}

/** Calls a tool that must succeed; returns its structuredContent, checking the text holds the same JSON. */
export async function ok(client, name, args) {
  const result = await call(client, name, args);
  check(!result.isError, `${name} should succeed`, result);
  check(result.structuredContent !== undefined, `${name} returns structuredContent`, result);
  const text = result.content.find((c) => c.type === 'text')?.text;
  check(text !== undefined && JSON.stringify(JSON.parse(text)) === JSON.stringify(result.structuredContent),
    `${name}: the text content is the same JSON as structuredContent`, result);
  return result.structuredContent;
}

/**
 * Calls a tool that must fail with `code`; returns the error `{code, message, details}`. A tool error is
 * `isError: true` with the text blocks `code: message` and the error's JSON, and the same JSON in
 * `_meta["holdfast/error"]`.
 */
export async function fails(client, name, args, code) {
  const result = await call(client, name, args);
  check(result.isError === true, `${name} should be an MCP tool error`, result);
  const error = result._meta?.['holdfast/error'];
  check(error?.code === code, `${name} fails with ${code}`, result);
  const texts = result.content.filter((c) => c.type === 'text').map((c) => c.text);
  check(texts[0] === `${code}: ${error.message}`, `${name}: the first text is "code: message"`, result);
  check(JSON.stringify(JSON.parse(texts[1])) === JSON.stringify(error), `${name}: the second text is the JSON`, result);
  return error;
}

/**
 * An elicitation handler that plays the human at the client's forms: holdfast asks for two things, told apart by
 * the requested schema — confirming a `user_request` (a `request` text field, pre-filled with what the client sent)
 * and approving a value-moving action (an `approve` checkbox). `request(params)` and `approval(params)` answer them;
 * by default the human submits the request unchanged and declines every action. `seen` collects the forms.
 */
export function human({ request, approval } = {}) {
  const seen = { requests: [], approvals: [] };
  const handler = async (params) => {
    if (params.requestedSchema?.properties?.request) {
      seen.requests.push(params);
      return request ? request(params) : submit(params);
    }
    check(params.requestedSchema?.properties?.approve?.type === 'boolean', 'a form holdfast knows', params);
    seen.approvals.push(params);
    return approval ? approval(params) : { action: 'decline' };
  };
  return { handler, seen };
}

/** Submits a `user_request` confirmation form with `text`, or unchanged (its pre-filled default). */
export function submit(params, text) {
  return { action: 'accept', content: { request: text ?? params.requestedSchema.properties.request.default } };
}

/** Runs `fn`, which must throw; returns the error. */
export async function rejects(fn, message) {
  try {
    await fn();
  } catch (e) {
    return e;
  }
  check(false, `should have been refused: ${message}`);
  return undefined;
}

/** Reads a JSON resource. */
export async function readJson(client, uri) {
  const result = await client.readResource({ uri });
  check(result.contents.length === 1 && result.contents[0].mimeType === 'application/json', `${uri} is JSON`, result);
  return JSON.parse(result.contents[0].text);
}

/** Runs `main`, printing its findings as one JSON line, or the failure on stderr with exit code 1. */
export function run(main) {
  main()
    .then((findings) => {
      process.stdout.write(`${JSON.stringify(findings ?? {})}\n`);
      process.exit(0);
    })
    .catch((error) => {
      process.stderr.write(`${error?.stack ?? error}\n`);
      process.exit(1);
    });
}
