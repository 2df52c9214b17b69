// `[mcp] trust_elicitation = false`: the operator does not trust the MCP host to put holdfast's forms before the
// human. Here the host answers every form itself (it accepts whatever it is shown). No form is sent, so the host's
// answers count for nothing: the request it sends stays the client's text (the amount it names is model origin), an
// x402 payment (for a swap quote) is refused before it is signed, and a transfer that needs the user's approval is
// refused with confirmation_unavailable and withdrawn. Nothing is sent; the Rust side checks the chain.
import { check, connect, fails, human, ok, readJson, run } from './common.mjs';

const TRANSFER = {
  network: 'base', token_register: 'transfer_token', amount_register: 'transfer_amount', preset: 'alice', recipient_register: null,
};

run(async () => {
  const host = human({ approval: () => ({ action: 'accept', content: { approve: true } }) });
  const { client } = await connect({ name: 'self-answering-host', elicit: host.handler });
  const prompt = await client.getPrompt({ name: 'user_request', arguments: { text: 'swap 0.02 ETH for USDC' } });
  check(prompt.messages.length >= 1, 'the prompt answers', prompt);
  await ok(client, 'token_lookup', { symbol: 'ETH', network: 'base', cache_as: 'sell_token' });
  await ok(client, 'token_lookup', { symbol: 'USDC', network: 'base', cache_as: 'buy_token' });
  const amount = await ok(client, 'to_raw_amount', { amount: '0.02', token_register: 'sell_token', cache_as: 'sell_amount' });
  check(amount.origin === 'model', 'the host\'s request is not the user\'s words: the amount is model origin', amount);
  // An x402 payment has no confirmation step: over an untrusted client it is refused before anything is signed.
  const unpaid = await fails(client, 'x402_fetch', { preset: 'swap_quote', network: 'base', cache_as: 'swap_quote' }, 'payment_refused');
  check(unpaid.message.includes('trust_elicitation'), 'the payment refusal names the setting', unpaid);
  await ok(client, 'token_lookup', { symbol: 'USDC', network: 'base', cache_as: 'transfer_token' });
  await ok(client, 'to_raw_amount', { amount: '5', token_register: 'transfer_token', cache_as: 'transfer_amount' });
  const refused = await fails(client, 'transfer', TRANSFER, 'confirmation_unavailable');
  check(refused.message.includes('trust_elicitation'), 'the refusal names the setting', refused);
  check(refused.details.withdrawn === true, 'withdrawn', refused);
  check(host.seen.requests.length === 0 && host.seen.approvals.length === 0, 'no form was sent to the host', host.seen);
  const pending = await readJson(client, 'holdfast://session/confirmations');
  check(pending.pending.length === 0, 'nothing stays pending', pending);
  await client.close();
  return { withdrawn: refused.details.confirmation_id };
});
