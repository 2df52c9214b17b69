// Two MCP sessions on one server are two holdfast sessions: registers, context bank and update notifications of
// one never reach the other (invariant 14).
import { check, connect, eventually, human, ok, readJson, run, sleep } from './common.mjs';

const REGISTERS = 'holdfast://session/registers';

run(async () => {
  const a = await connect({ name: 'session-a', elicit: human().handler });
  const b = await connect({ name: 'session-b' });
  await a.client.subscribeResource({ uri: REGISTERS });
  await b.client.subscribeResource({ uri: REGISTERS });

  await a.client.getPrompt({ name: 'user_request', arguments: { text: 'sell 25 USDC' } });
  await ok(a.client, 'token_lookup', { symbol: 'USDC', network: 'base', cache_as: 'sell_token' });
  await eventually(() => a.updates.includes(REGISTERS), 'session A is told its registers changed');
  await sleep(300);
  check(b.updates.length === 0, 'session B hears nothing of session A', b.updates);

  const regsA = await readJson(a.client, REGISTERS);
  const regsB = await readJson(b.client, REGISTERS);
  check(regsA.session_id !== regsB.session_id, 'two MCP sessions, two holdfast sessions', [regsA, regsB]);
  check(regsA.registers.sell_token && !regsB.registers.sell_token, 'registers are per session', [regsA, regsB]);
  const bankA = await readJson(a.client, 'holdfast://session/context-bank');
  const bankB = await readJson(b.client, 'holdfast://session/context-bank');
  check(bankA.items.length > 0 && bankB.items.length === 0, 'the context bank is per session', [bankA, bankB]);

  await a.client.close();
  await b.client.close();
  return { a: regsA.session_id, b: regsB.session_id, updates_a: a.updates.length };
});
