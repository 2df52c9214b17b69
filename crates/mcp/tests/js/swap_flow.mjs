// The full swap on the devnet through MCP tools, with the user's confirmation (0.02 ETH is above the devnet's
// auto-approve limit of 0.01 ETH, so every swap here needs it):
//   A. a client with elicitation: the user sees the decoded action and approves → the swap is mined;
//   B. a client with elicitation: the user declines → confirmation_denied, nothing is sent;
//   C. a client without elicitation: confirmation_required with instructions → the user runs the holdfast_confirm
//      prompt → the swap is mined.
import { check, connect, fails, ok, readJson, run } from './common.mjs';

const VENUE = '0x0000000000001fF3684f28c67538d4D072C22734';
const TX = { from_register: 'swap_quote', network: 'base' };

async function prepare(client, text) {
  const prompt = await client.getPrompt({ name: 'user_request', arguments: { text } });
  check(prompt.messages[0].content.text === text, 'the request comes back as the user message', prompt);
  await ok(client, 'local_burner_wallet', { action: 'address', token_register: null, network: null, cache_as: 'wallet_address' });
  await ok(client, 'token_lookup', { symbol: 'ETH', network: 'base', cache_as: 'sell_token' });
  await ok(client, 'token_lookup', { symbol: 'USDC', network: 'base', cache_as: 'buy_token' });
  const amount = await ok(client, 'to_raw_amount', { amount: '0.02', token_register: 'sell_token', cache_as: 'sell_amount' });
  check(amount.origin === 'user', 'the sell amount is the one the user wrote', amount);
  const quote = await ok(client, 'x402_fetch', { preset: 'swap_quote', network: 'base', cache_as: 'swap_quote' });
  check(quote.origin === 'tool', 'the quote is a tool-origin register value', quote);
  return quote;
}

function checkShown(message) {
  for (const needle of ['Sell: 0.02 ETH', 'Minimum received:', `Contract: ${VENUE}`, 'Max network fee:']) {
    check(message.includes(needle), `the approval shows "${needle}"`, message);
  }
}

run(async () => {
  // A: elicitation, approved.
  const shownA = [];
  const a = await connect({
    name: 'approver',
    elicit: (params) => {
      shownA.push(params.message);
      check(params.requestedSchema?.properties?.approve?.type === 'boolean', 'a single approve checkbox', params);
      return { action: 'accept', content: { approve: true } };
    },
  });
  await prepare(a.client, 'swap 0.02 ETH for USDC');
  const sent = await ok(a.client, 'web3_tx', TX);
  check(shownA.length === 1, 'the user was asked exactly once', shownA);
  checkShown(shownA[0]);
  check(sent.status === 'confirmed' && /^0x[0-9a-f]{64}$/.test(sent.hash), 'the swap is mined', sent);
  check(sent.summary.sell === '0.02 ETH' && sent.summary.contract === VENUE, 'the decoded action', sent);
  const sentAgain = await ok(a.client, 'web3_tx', TX);
  check(sentAgain.hash === sent.hash && shownA.length === 1, 'the same quote returns the same swap, unasked', sentAgain);
  const pendingA = await readJson(a.client, 'holdfast://session/confirmations');
  check(pendingA.pending.length === 0, 'nothing left pending', pendingA);
  await a.client.close();

  // B: elicitation, declined.
  const b = await connect({ name: 'decliner', elicit: () => ({ action: 'decline' }) });
  await prepare(b.client, 'swap 0.02 ETH for USDC');
  const denied = await fails(b.client, 'web3_tx', TX, 'confirmation_denied');
  check(denied.details?.summary?.sell === '0.02 ETH', 'the denial names the action', denied);
  const again = await fails(b.client, 'web3_tx', TX, 'confirmation_denied');
  check(again.details.confirmation_id !== denied.details.confirmation_id, 'a denial is never reused as approval', again);
  await b.client.close();

  // C: no elicitation: instructions, then the user's prompt.
  const c = await connect({ name: 'no-elicitation' });
  await prepare(c.client, 'please swap 0.02 ETH for USDC on base');
  const waiting = await fails(c.client, 'web3_tx', TX, 'confirmation_required');
  const id = waiting.details.confirmation_id;
  check(/^cf_/.test(id) && waiting.details.summary.sell === '0.02 ETH', 'the pending action and its id', waiting);
  check(waiting.details.approve_with?.prompt === 'holdfast_confirm'
    && waiting.details.approve_with.arguments.confirmation_id === id, 'how the user approves', waiting);
  check(waiting.message.includes('holdfast_confirm') && waiting.message.includes(id), 'instructions in the message', waiting);
  const pendingC = await readJson(c.client, 'holdfast://session/confirmations');
  check(pendingC.pending.length === 1 && pendingC.pending[0].id === id, 'the confirmations resource lists it', pendingC);
  const completion = await c.client.complete({
    ref: { type: 'ref/prompt', name: 'holdfast_confirm' }, argument: { name: 'confirmation_id', value: 'cf_' },
  });
  check(completion.completion.values.includes(id), 'the prompt argument completes to the pending id', completion);
  const approved = await c.client.getPrompt({ name: 'holdfast_confirm', arguments: { confirmation_id: id } });
  const said = approved.messages[0].content.text;
  check(approved.messages[0].role === 'user' && said.includes('I approved') && said.includes('"status":"confirmed"'),
    'the prompt runs the approved swap', approved);
  checkShown(said);
  let reused;
  try {
    await c.client.getPrompt({ name: 'holdfast_deny', arguments: { confirmation_id: id } });
  } catch (e) {
    reused = e;
  }
  check(reused?.code === -32602 && String(reused.message).includes('confirmation_not_found'),
    'a settled confirmation cannot be decided again', String(reused));
  await c.client.close();

  return { hash_a: sent.hash, min_buy_a: sent.summary.buy_minimum, denied: denied.details.confirmation_id, confirmed_c: id };
});
