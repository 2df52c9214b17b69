// The register half of the swap flow through a real MCP client (the official TypeScript SDK), over stdio or
// streamable HTTP: initialize, list tools (schemas accepted by the SDK), the user's words through the user_request
// prompt — confirmed by the human in the elicitation form the client shows — into the context bank, token_lookup and
// to_raw_amount with origin `user`, the registers resource read and subscribed, coded errors for protected-register
// writes, and a protocol error for an unknown method.
import {
  AjvJsonSchemaValidator, check, connect, eventually, fails, human, ok, readJson, run, types,
} from './common.mjs';

const REGISTERS = 'holdfast://session/registers';
const BANK = 'holdfast://session/context-bank';

function noRefs(schema, path) {
  const text = JSON.stringify(schema);
  check(!text.includes('"$ref"') && !text.includes('"$defs"'), `${path} has no $ref/$defs`, schema);
}

run(async () => {
  const user = human();
  const { client, updates } = await connect({ elicit: user.handler });
  const server = client.getServerVersion();
  check(server?.name === 'holdfast', 'the server says it is holdfast', server);
  const caps = client.getServerCapabilities();
  check(caps?.tools && caps?.prompts && caps?.resources?.subscribe === true, 'tools, prompts, subscribable resources', caps);
  check(caps?.completions === undefined, 'no completions: there is no argument worth completing', caps);

  // Every registered tool, with strict schemas the SDK compiles (listTools already compiled every outputSchema).
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  for (const expected of ['register_set', 'register_get', 'token_lookup', 'to_raw_amount', 'local_burner_wallet',
    'x402_fetch', 'web3_tx', 'token_approve']) {
    check(names.includes(expected), `tools/list has ${expected}`, names);
  }
  const ajv = new AjvJsonSchemaValidator();
  for (const tool of tools) {
    for (const [which, schema] of [['inputSchema', tool.inputSchema], ['outputSchema', tool.outputSchema]]) {
      check(schema?.type === 'object', `${tool.name}.${which} has a root object`, schema);
      noRefs(schema, `${tool.name}.${which}`);
      ajv.getValidator(schema);
    }
  }
  const web3tx = tools.find((t) => t.name === 'web3_tx');
  check(web3tx.annotations?.destructiveHint === true, 'value-moving tools are marked destructive', web3tx);

  const { prompts } = await client.listPrompts();
  check(prompts.length === 1 && prompts[0].name === 'user_request', 'prompts/list: user_request only', prompts);
  const { resources } = await client.listResources();
  check([REGISTERS, BANK].every((u) => resources.some((r) => r.uri === u)), 'resources/list', resources);
  await client.subscribeResource({ uri: REGISTERS });

  // The user's words reach the context bank through the prompt once the human confirms them in the form, and come
  // back unchanged as a user message.
  const text = 'swap 0.001 ETH for USDC on base';
  const prompt = await client.getPrompt({ name: 'user_request', arguments: { text } });
  check(user.seen.requests.length === 1 && user.seen.requests[0].message.includes(text)
    && user.seen.requests[0].requestedSchema.properties.request.default === text,
  'the human is shown the request, pre-filled', user.seen.requests);
  check(prompt.messages.length === 1 && prompt.messages[0].role === 'user'
    && prompt.messages[0].content.text === text, 'user_request returns the text as a user message', prompt);
  const bank = await readJson(client, BANK);
  check(bank.items.some((i) => i.item_type === 'amount' && i.value === '0.001' && i.label === 'ETH'),
    'the amount is in the context bank', bank);

  // The register half of the swap flow.
  const wallet = await ok(client, 'local_burner_wallet',
    { action: 'address', token_register: null, network: null, cache_as: 'wallet_address' });
  const sell = await ok(client, 'token_lookup', { symbol: 'ETH', network: 'base', cache_as: 'sell_token' });
  await ok(client, 'token_lookup', { symbol: 'USDC', network: 'base', cache_as: 'buy_token' });
  const raw = await ok(client, 'to_raw_amount', { amount: '0.001', token_register: 'sell_token', cache_as: 'sell_amount' });
  check(raw.raw === '1000000000000000' && raw.origin === 'user', 'the amount the user wrote keeps origin user', raw);
  const typed = await ok(client, 'to_raw_amount', { amount: '0.5', token_register: 'sell_token', cache_as: null });
  check(typed.origin === 'model', 'an amount the user never wrote is origin model', typed);
  const bankAfter = await readJson(client, BANK);
  check(!bankAfter.items.some((i) => i.value === '0.5'), 'what the model typed never reaches the bank', bankAfter);

  const registers = (await readJson(client, REGISTERS)).registers;
  check(registers.sell_amount?.origin === 'user' && registers.sell_amount?.value === '1000000000000000',
    'the registers resource shows sell_amount from the user', registers);
  check(registers.sell_token?.source === 'token_lookup', 'sell_token was written by token_lookup', registers);
  await eventually(() => updates.includes(REGISTERS), 'notifications/resources/updated for the registers');

  // Protected registers: coded tool errors, never silent.
  const intrinsic = await fails(client, 'register_set',
    { key: 'wallet_address', value: '0x0000000000000000000000000000000000000001' }, 'register_write_denied');
  const declared = await fails(client, 'register_set', { key: 'sell_token', value: 'USDC' }, 'register_write_denied');
  await fails(client, 'no_such_tool', {}, 'unknown_tool');
  await fails(client, 'token_lookup', { symbol: 7 }, 'invalid_params');

  // A method the server does not have: a JSON-RPC protocol error, and the session goes on.
  let protocolError;
  try {
    await client.request({ method: 'holdfast/no_such_method', params: {} }, types.EmptyResultSchema);
  } catch (e) {
    protocolError = e;
  }
  check(protocolError?.code === -32601, 'an unknown method is -32601', String(protocolError));
  const after = (await readJson(client, REGISTERS)).registers;
  check(after.sell_amount?.value === '1000000000000000', 'the session still serves after a protocol error', after);

  await client.close();
  return {
    tools: names.length,
    wallet: wallet.address ?? null,
    sell_token: sell,
    sell_amount_origin: registers.sell_amount.origin,
    updates: updates.length,
    denied: [intrinsic.message, declared.message],
  };
});
