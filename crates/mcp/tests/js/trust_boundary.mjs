// The MCP client is the model's host, not the user: what it sends is never by itself the user's word.
//   1. A client without elicitation sends user_request: the text is recorded as the client's, nothing reaches the
//      context bank, the result says so, and to_raw_amount gives the amount origin `model`.
//   2. A client with elicitation: the human edits the request in the form; only what the human submitted reaches
//      the bank (origin `user`), the client's own amount stays `model`.
//   3. The human declines the form: as 1.
//   4. Nothing the server exposes approves: no approval prompt (the old holdfast_confirm / holdfast_deny names are
//      refused), no completion of confirmation ids, no tool that takes a confirmation id or a decision, no resource
//      beyond the read-only three.
import { check, connect, fails, human, ok, readJson, rejects, run, submit } from './common.mjs';

const BANK = 'holdfast://session/context-bank';

/** Every property name anywhere in a JSON schema. */
function propertyNames(schema) {
  if (Array.isArray(schema)) return schema.flatMap(propertyNames);
  if (!schema || typeof schema !== 'object') return [];
  const own = schema.properties && typeof schema.properties === 'object' ? Object.keys(schema.properties) : [];
  return [...own, ...Object.values(schema).flatMap(propertyNames)];
}

async function rawAmount(client, amount) {
  return ok(client, 'to_raw_amount', { amount, token_register: 'sell_token', cache_as: null });
}

async function unconfirmed(client, text, why) {
  const prompt = await client.getPrompt({ name: 'user_request', arguments: { text } });
  check(prompt.messages.length === 2 && prompt.messages[0].role === 'user' && prompt.messages[0].content.text === text,
    'the client\'s text is still its message', prompt);
  const note = prompt.messages[1];
  check(note.role === 'assistant' && note.content.text.includes('not confirmed by the user')
    && note.content.text.includes(why) && note.content.text.includes('`model`'), 'the result says so', prompt);
  check(prompt.description.includes('nothing was added to the context bank'), 'the description says so', prompt);
  const bank = await readJson(client, BANK);
  check(bank.items.length === 0, 'nothing the client sent reaches the context bank', bank);
  await ok(client, 'token_lookup', { symbol: 'ETH', network: 'base', cache_as: 'sell_token' });
  const amount = await rawAmount(client, '0.001');
  check(amount.origin === 'model', 'an amount only the client sent is origin model', amount);
  return prompt;
}

run(async () => {
  // 1. No elicitation.
  const plain = await connect({ name: 'no-elicitation' });
  await unconfirmed(plain.client, 'swap 0.001 ETH for USDC on base', 'does not support elicitation');

  // 4. Every path a client might try to approve with.
  const oldPrompts = [];
  for (const name of ['holdfast_confirm', 'holdfast_deny', 'approve', 'confirm']) {
    const e = await rejects(() => plain.client.getPrompt({ name, arguments: { confirmation_id: 'cf_0000000000000000' } }),
      `prompts/get ${name}`);
    check(e.code === -32602 && String(e.message).includes('no prompt named'), `prompts/get ${name} is refused`, String(e));
    oldPrompts.push(name);
  }
  const { prompts } = await plain.client.listPrompts();
  check(prompts.map((p) => p.name).join() === 'user_request', 'user_request is the only prompt', prompts);
  check(plain.client.getServerCapabilities()?.completions === undefined, 'no completions capability',
    plain.client.getServerCapabilities());
  for (const name of ['holdfast_confirm', 'holdfast_deny', 'user_request']) {
    for (const argument of ['confirmation_id', 'text']) {
      let values = [];
      try {
        values = (await plain.client.complete({ ref: { type: 'ref/prompt', name }, argument: { name: argument, value: 'cf_' } }))
          .completion.values;
      } catch {
        // A refusal is as good as an empty list.
      }
      check(values.length === 0, `completion of ${name}.${argument} offers nothing`, values);
    }
  }
  const { tools } = await plain.client.listTools();
  for (const tool of tools) {
    // (`token_approve` is an ERC-20 allowance — a value-moving action itself, never a decision about one.)
    check(!/confirm|decision|decide/.test(tool.name), `${tool.name} is no confirmation tool`, tool.name);
    const names = propertyNames(tool.inputSchema).join(' ').toLowerCase();
    check(!/confirm|approv|decision|decide/.test(names), `${tool.name} takes no confirmation id or decision`, names);
  }
  for (const name of ['holdfast_confirm', 'confirm', 'approve', 'confirmation_approve']) {
    await fails(plain.client, name, { confirmation_id: 'cf_0000000000000000' }, 'unknown_tool');
  }
  const { resources } = await plain.client.listResources();
  check(resources.length === 3 && resources.every((r) => r.uri.startsWith('holdfast://session/')),
    'three read-only session resources', resources);
  const e = await rejects(() => plain.client.readResource({ uri: 'holdfast://session/confirmations/cf_0/approve' }),
    'an approve resource');
  check(e.code === -32002, 'no resource approves', String(e));
  await plain.client.close();

  // 2. Elicitation: the human corrects the amount; only the human's words count.
  const editor = human({ request: (params) => submit(params, 'swap 0.002 ETH for USDC on base') });
  const edited = await connect({ name: 'edited', elicit: editor.handler });
  const sent = 'swap 0.5 ETH for USDC on base';
  const prompt = await edited.client.getPrompt({ name: 'user_request', arguments: { text: sent } });
  check(editor.seen.requests.length === 1 && editor.seen.requests[0].message.includes(sent), 'the human saw it',
    editor.seen.requests);
  check(prompt.messages.length === 1 && prompt.messages[0].content.text === 'swap 0.002 ETH for USDC on base',
    'the conversation gets what the human submitted', prompt);
  const bank = await readJson(edited.client, BANK);
  check(bank.items.some((i) => i.item_type === 'amount' && i.value === '0.002')
    && !bank.items.some((i) => i.value === '0.5'), 'only the submitted words are in the bank', bank);
  await ok(edited.client, 'token_lookup', { symbol: 'ETH', network: 'base', cache_as: 'sell_token' });
  const mine = await rawAmount(edited.client, '0.002');
  const theirs = await rawAmount(edited.client, '0.5');
  check(mine.origin === 'user' && theirs.origin === 'model', 'the human\'s amount is user, the client\'s model',
    [mine, theirs]);
  await edited.client.close();

  // 3. Elicitation, declined.
  const decliner = human({ request: () => ({ action: 'decline' }) });
  const declined = await connect({ name: 'declined', elicit: decliner.handler });
  await unconfirmed(declined.client, 'swap 0.001 ETH for USDC on base', 'declined');
  check(decliner.seen.requests.length === 1, 'the human was asked', decliner.seen.requests);
  await declined.client.close();

  return { refused_prompts: oldPrompts, tools: tools.length, user: mine.origin, client: theirs.origin };
});
