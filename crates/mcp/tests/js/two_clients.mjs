// A token is a client, and a session belongs to the client that opened it. Client A (the default token) asks its
// human to approve a 70 USDC transfer; while the form is open, client B — another token, holding A's full session id
// — tries everything: answer A's form (approve, with the ids a server would have used: 0 and 1), call a tool, read
// A's registers, open A's event stream, delete A's session. Each is refused exactly as for a session that does not
// exist. A's own guessed answer (id 0) is dropped too: the server's requests carry random ids. Then A's human
// declines, and the decline stands. The Rust side checks the chain: nothing moved.
//
// Environment: MCP_URL, MCP_TOKEN (client A, `default`), MCP_TOKEN_B (client B, added with `mcp token add`).
import { check, connect, fails, human, ok, run } from './common.mjs';

const ALICE = '0x90F79bf6EB2c4f870365E785982E1f101E93b906';
const TRANSFER = {
  network: 'base', token_register: 'transfer_token', amount_register: 'transfer_amount',
  preset: null, recipient_register: 'recipient_address',
};
const url = process.env.MCP_URL;

/** One raw request as client `token` in session `session`: the HTTP status and body text. */
async function raw(token, session, method, body) {
  const headers = {
    Authorization: `Bearer ${token}`,
    'Mcp-Session-Id': session,
    'Mcp-Protocol-Version': '2025-06-18',
    Accept: 'application/json, text/event-stream',
  };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), 3000);
  try {
    const r = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: controller.signal });
    const text = method === 'GET' && r.status === 200 ? '(stream)' : await r.text();
    return { status: r.status, text };
  } catch (e) {
    return { status: 0, text: String(e) };
  } finally {
    clearTimeout(timer);
  }
}

run(async () => {
  const tokenA = process.env.MCP_TOKEN;
  const tokenB = process.env.MCP_TOKEN_B;
  check(tokenA && tokenB && tokenA !== tokenB, 'two clients, two tokens');
  const attempts = {};
  let sessionA;
  const h = human({
    approval: async () => {
      // A's human has the form open. B tries to answer it for them, and more.
      const approve = (id) => ({ jsonrpc: '2.0', id, result: { action: 'accept', content: { approve: true } } });
      attempts.b_answer_0 = await raw(tokenB, sessionA, 'POST', approve(0));
      attempts.b_answer_1 = await raw(tokenB, sessionA, 'POST', approve(1));
      attempts.b_tool = await raw(tokenB, sessionA, 'POST',
        { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'register_get', arguments: { key: 'transfer_amount', path: null } } });
      attempts.b_read = await raw(tokenB, sessionA, 'POST',
        { jsonrpc: '2.0', id: 10, method: 'resources/read', params: { uri: 'holdfast://session/registers' } });
      attempts.b_stream = await raw(tokenB, sessionA, 'GET');
      attempts.b_delete = await raw(tokenB, sessionA, 'DELETE');
      // A's own client guessing rmcp's counter: not an id this session was sent.
      attempts.a_guess_0 = await raw(tokenA, sessionA, 'POST', approve(0));
      return { action: 'decline' };
    },
  });
  const a = await connect({ name: 'client-a', elicit: h.handler, token: tokenA });
  sessionA = a.transport.sessionId;
  check(typeof sessionA === 'string' && sessionA.length > 0, 'A has a session id', sessionA);
  const b = await connect({ name: 'client-b', token: tokenB });
  check(b.transport.sessionId !== sessionA, 'B has a session of its own');
  await ok(b.client, 'register_set', { key: 'note', value: 'b was here' });

  await a.client.getPrompt({ name: 'user_request', arguments: { text: `send 70 USDC to ${ALICE}` } });
  await ok(a.client, 'token_lookup', { symbol: 'USDC', network: 'base', cache_as: 'transfer_token' });
  await ok(a.client, 'context_address', { index: null, cache_as: 'recipient_address' });
  const amount = await ok(a.client, 'to_raw_amount', { amount: '70', token_register: 'transfer_token', cache_as: 'transfer_amount' });
  check(amount.origin === 'user', 'the amount is the human\'s words', amount);
  await fails(a.client, 'transfer', TRANSFER, 'confirmation_denied');
  check(h.seen.approvals.length === 1, 'A\'s human was asked once', h.seen.approvals.length);

  for (const [name, got] of Object.entries(attempts)) {
    if (name.startsWith('b_')) {
      check(got.status === 404 && /Session not found/.test(got.text), `${name}: refused as a session that does not exist`, got);
    }
  }
  check(attempts.a_guess_0.status === 202, 'a guessed id is dropped (202, nothing answered)', attempts.a_guess_0);
  // A's session is intact after B's DELETE, and B's own session is B's.
  const still = await ok(a.client, 'register_get', { key: 'transfer_amount', path: null });
  check(still !== undefined, 'A\'s session survived B\'s DELETE');
  const notes = await raw(tokenA, b.transport.sessionId, 'POST',
    { jsonrpc: '2.0', id: 11, method: 'tools/call', params: { name: 'register_get', arguments: { key: 'note', path: null } } });
  check(notes.status === 404, 'A cannot reach B\'s session either', notes);
  await a.client.close();
  await b.client.close();
  return { attempts: Object.fromEntries(Object.entries(attempts).map(([k, v]) => [k, v.status])) };
});
