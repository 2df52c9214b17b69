// One request, one action, over MCP: the human submits "send 40 USDC to 0x90F7…b906" in a user_request form, and the
// client then runs four transfers of it, each with the amount converted afresh from those words. The first goes out
// by itself (40 USDC is within the devnet's auto-approve limit of 50); every later one is an action the human did not
// ask for, so it needs the human's approval, which this human declines. The Rust side checks the chain: 40 USDC moved.
import { check, connect, fails, human, ok, run } from './common.mjs';

const ALICE = '0x90F79bf6EB2c4f870365E785982E1f101E93b906';
const TRANSFER = {
  network: 'base', token_register: 'transfer_token', amount_register: 'transfer_amount',
  preset: null, recipient_register: 'recipient_address',
};

run(async () => {
  const h = human();
  const { client } = await connect({ name: 'one-request', elicit: h.handler });
  const text = `send 40 USDC to ${ALICE}`;
  const prompt = await client.getPrompt({ name: 'user_request', arguments: { text } });
  check(prompt.messages[0].content.text === text, 'the human submitted the request', prompt);
  await ok(client, 'token_lookup', { symbol: 'USDC', network: 'base', cache_as: 'transfer_token' });
  await ok(client, 'context_address', { index: null, cache_as: 'recipient_address' });
  const outcomes = [];
  for (let i = 0; i < 4; i += 1) {
    const amount = await ok(client, 'to_raw_amount', { amount: '40', token_register: 'transfer_token', cache_as: 'transfer_amount' });
    check(amount.origin === 'user', 'the amount is the human\'s words', amount);
    if (i === 0) {
      const sent = await ok(client, 'transfer', TRANSFER);
      check(sent.status === 'confirmed', 'the requested transfer goes out by itself', sent);
      outcomes.push(sent.status);
    } else {
      await fails(client, 'transfer', TRANSFER, 'confirmation_denied');
      const form = h.seen.approvals.at(-1);
      check(String(form?.message ?? '').includes('already authorized one action'), 'the form tells the human why', form);
      outcomes.push('confirmation_denied');
    }
  }
  check(h.seen.approvals.length === 3, 'the human was asked about each later transfer', h.seen.approvals.length);
  await client.close();
  return { outcomes };
});
