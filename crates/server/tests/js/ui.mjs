#!/usr/bin/env node
// The web UI in real headless Chromium (Debian's /usr/bin/chromium), driven by playwright-core from devnet/node_modules.
//
//   node crates/server/tests/js/ui.mjs --url http://127.0.0.1:PORT --token TOKEN --code CODE [--scenario swap|chat] [--out DIR]
//
// Every scenario first checks who may reach the UI: a page without a session asks to sign in (a wrong code gets the
// server's sign-in page saying so), the one-time link `/?code=…` is traded for an HttpOnly SameSite=Strict session
// cookie with a Max-Age and a redirect whose fragment hands the page its key, then the clean URL (neither the code,
// the cookie nor the API token is then anywhere the page can read, and the cookie alone is refused), the same link a second time is refused as used, and the page runs under a Content-Security-Policy
// that blocks inline script.
//
// Scenario `swap` (a server without an LLM, on the devnet): opens the UI with the token, types "swap 0.02 ETH for USDC"
// (no LLM: it goes to the context bank), runs the swap step by step from the tool console, checks that the registers
// panel updates live (from WebSocket events) with origins, approves the confirmation dialog, and checks the receipt and
// the journal; then the wallet's balances and spending gauges, the built-in transaction page and the payments; then the layout at 360, 390, 1,024, 1,440 and 2,560 px (the chat input, tool console and journal usable and uncovered, no horizontal overflow). Scenario `agents` (two agents with scripted models): the agent list, a session for the researcher, and the
// message it sent the assistant shown in the assistant's inbox session with its answer. Scenario `chat` (a server with a scripted model): the reply streams in, the model's tool call shows
// inline and its register appears. Prints one JSON line per step; exits 0 when every step passed, 1 otherwise (with a
// failure screenshot). Never downloads a browser.
//
// Development: HOLDFAST_UI_FILE=path/to/index.html serves that file (and the app.js and money.js beside it) instead of
// the server's embedded page and scripts, so the UI can be iterated on against a running `holdfast serve` without rebuilding.

import { createRequire } from "node:module";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

process.env.PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD = "1";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "../../../..");

function arg(name, fallback) {
  const i = process.argv.indexOf("--" + name);
  return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}
const base = (arg("url") || "").replace(/\/$/, "");
const token = arg("token");
const code = arg("code");
const scenario = arg("scenario", "swap");
const out = path.resolve(arg("out", path.join(repo, "target", "ui-screenshots")));
const executablePath = arg("chromium", process.env.HOLDFAST_CHROMIUM || "/usr/bin/chromium");
if (!base || !token || !code) {
  console.error("usage: ui.mjs --url http://127.0.0.1:PORT --token TOKEN --code CODE [--out DIR] [--chromium PATH]");
  process.exit(2);
}
if (!existsSync(executablePath)) {
  console.error(`chromium not found at ${executablePath}: install it (apt-get install -y chromium) or run scripts/test.sh`);
  process.exit(3);
}
let chromium;
try {
  ({ chromium } = createRequire(path.join(repo, "devnet", "package.json"))("playwright-core"));
} catch (e) {
  console.error(`playwright-core is not installed in devnet/node_modules (run: npm ci --prefix devnet): ${e.message}`);
  process.exit(3);
}
mkdirSync(out, { recursive: true });

const T = (id) => `[data-testid="${id}"]`;
const log = (o) => console.log(JSON.stringify(o));
const fail = (msg) => { throw new Error(msg); };
const shots = [];

const override = process.env.HOLDFAST_UI_FILE;
const args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync"];
// A page fulfilled by interception has no IP address space, so Chromium's local-network checks would block its
// WebSocket to loopback; only the development override needs this.
if (override) args.push("--disable-features=LocalNetworkAccessChecks");
const userDataDir = mkdtempSync(path.join(tmpdir(), "holdfast-ui-"));
const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath,
  headless: true,
  args,
  viewport: { width: 1500, height: 1000 },
  colorScheme: "light",
});
context.setDefaultTimeout(30_000);
if (override) {
  const html = readFileSync(override, "utf8");
  const js = readFileSync(path.join(path.dirname(override), "app.js"), "utf8");
  await context.route(base + "/", (route) => route.fulfill({ status: 200, contentType: "text/html; charset=utf-8", body: html }));
  await context.route(base + "/app.js", (route) => route.fulfill({ status: 200, contentType: "text/javascript; charset=utf-8", body: js }));
  const money = readFileSync(path.join(path.dirname(override), "money.js"), "utf8");
  await context.route(base + "/money.js", (route) => route.fulfill({ status: 200, contentType: "text/javascript; charset=utf-8", body: money }));
}

const problems = [];
/** While set, the Content-Security-Policy violation the CSP step provokes on purpose is expected. */
let expectCspViolation = false;
function watch(page, name) {
  page.on("pageerror", (e) => problems.push(`${name}: page error: ${e.message}`));
  page.on("console", (m) => {
    // Chromium logs every HTTP error status of a fetch; the coded errors this test provokes are expected.
    if (m.type() !== "error" || /Failed to load resource: the server responded with a status of (401|422)\b/.test(m.text())) return;
    if (expectCspViolation && /Content Security Policy/.test(m.text())) return;
    problems.push(`${name}: console error: ${m.text()}`);
  });
}

let page;
let current = "launch";
// What the page's own script sends beside the cookie: the page key it keeps (the test's own API calls send it too).
const keyHeader = () => page.evaluate(() => ({ "x-holdfast-page": localStorage.getItem("holdfast.page") || "" }));
async function step(name, fn) {
  current = name;
  const t0 = Date.now();
  await fn();
  log({ step: name, ok: true, ms: Date.now() - t0 });
}
async function shot(file, target) {
  const p = path.join(out, file);
  await (target || page).screenshot({ path: p, animations: "disabled" });
  shots.push(p);
  log({ screenshot: p });
}

/** Fills the generated form of `tool` (null → left empty) and runs it; returns the HTTP status and body. */
async function runTool(tool, values, expectStatus) {
  await page.selectOption(T("tool-select"), tool);
  await page.waitForSelector(`${T("tool-form")} ${T("field-" + Object.keys(values)[0])}`);
  for (const [name, value] of Object.entries(values)) {
    const el = page.locator(`${T("tool-form")} ${T("field-" + name)}`);
    const tag = await el.evaluate((e) => e.tagName + (e.type === "checkbox" ? ":checkbox" : ""));
    if (tag === "SELECT") await el.selectOption(value === null ? "" : String(value));
    else if (tag === "INPUT:checkbox") await el.setChecked(Boolean(value));
    else await el.fill(value === null ? "" : typeof value === "string" ? value : JSON.stringify(value));
  }
  const preview = JSON.parse(await page.textContent(T("tool-body-preview")));
  for (const [k, v] of Object.entries(values)) {
    if (JSON.stringify(preview[k]) !== JSON.stringify(v)) fail(`${tool}: form sends ${k}=${JSON.stringify(preview[k])}, expected ${JSON.stringify(v)}`);
  }
  const [resp] = await Promise.all([
    page.waitForResponse((r) => new URL(r.url()).pathname.endsWith(`/tools/${tool}`) && r.request().method() === "POST"),
    page.click(T("tool-run")),
  ]);
  const status = resp.status();
  const body = await resp.json();
  if (expectStatus !== undefined && status !== expectStatus) fail(`${tool}: HTTP ${status}, expected ${expectStatus}: ${JSON.stringify(body)}`);
  await page.waitForFunction(([sel, st]) => document.querySelector(sel)?.dataset.status === st,
    [T("tool-result"), status === 200 ? "ok" : status === 202 ? "confirmation" : "error"]);
  return { status, body };
}

/** Waits until the registers panel shows `key` with `origin`, written by a live WebSocket event. */
async function register(key, origin, extra = "") {
  const sel = `${T("register")}[data-key="${key}"][data-origin="${origin}"][data-via="event"]${extra}`;
  await page.waitForSelector(sel);
  const badge = (await page.textContent(`${sel} ${T("register-origin")}`)).trim();
  if (badge !== origin) fail(`${key}: origin badge ${badge}, expected ${origin}`);
  return sel;
}

async function openUi() {
  await step("a page without a session asks to sign in; a wrong code gets the sign-in page saying so", async () => {
    page = await context.newPage();
    watch(page, "signed-out page");
    const r = await page.goto(base + "/");
    if (!r || r.status() !== 200) fail(`GET / → ${r && r.status()}`);
    await page.waitForSelector(`${T("signin-prompt")}.show`);
    await page.fill(T("signin-input"), "not-a-code-of-this-server");
    const [answer] = await Promise.all([page.waitForNavigation(), page.click(T("signin-submit"))]);
    if (!answer || answer.status() !== 401) fail(`a wrong code → ${answer && answer.status()}`);
    if (!/not valid for this server/.test(await page.textContent("body"))) fail("the sign-in page does not say why");
    if ((await context.cookies(base)).length) fail("a wrong code set a cookie");
    await page.close();
  });

  await step("open the UI with its one-time sign-in link: an HttpOnly session cookie, then the clean URL", async () => {
    page = await context.newPage();
    watch(page, "ui");
    // The page's clock runs normally until the staleness step fast-forwards it.
    await page.clock.install();
    const r = await page.goto(`${base}/?code=${code}`);
    if (page.url() !== base + "/") fail(`the code stays in the address bar: ${page.url()}`);
    const redirect = r.request().redirectedFrom();
    if (!redirect || (await redirect.response()).status() !== 303) fail("the server did not redirect to the clean URL");
    await page.waitForFunction((sel) => /^0x[0-9a-fA-F]{40}$/.test(document.querySelector(sel)?.textContent || ""), T("wallet-address"));
    await page.waitForSelector(`${T("ws-status")}[data-state="open"]`);
    const cookies = await context.cookies(base);
    const cookie = cookies.find((c) => c.name.startsWith("holdfast_session_"));
    if (!cookie || !cookie.httpOnly || cookie.sameSite !== "Strict" || cookie.path !== "/") fail(`session cookie: ${JSON.stringify(cookies)}`);
    // A Max-Age of 7 days: the browser keeps it about that long, not for ever and not only for this window.
    const days = (cookie.expires - Date.now() / 1000) / 86400;
    if (!(days > 6.9 && days < 7.1)) fail(`the session cookie lasts ${days} days`);
    if (cookie.value === token || cookie.value === code) fail("the session cookie is the token or the code");
    const visible = await page.evaluate(() => document.cookie + "|" + JSON.stringify({ ...sessionStorage }) + "|" + JSON.stringify({ ...localStorage }));
    if (visible.includes(token) || visible.includes(code) || visible.includes(cookie.value)) fail("the page's script can read the token, the code or the cookie");
    // The session's other half, the page key, came in the redirect's fragment: kept in this origin's storage, gone
    // from the address bar, and without it the cookie (which the browser also sends to other ports) is refused.
    const pageKey = await page.evaluate(() => localStorage.getItem("holdfast.page") || "");
    if (!/^[0-9a-f]{64}$/.test(pageKey)) fail(`the page keeps no page key: ${pageKey}`);
    if (page.url().includes(pageKey)) fail(`the page key stays in the address bar: ${page.url()}`);
    const cookieAlone = await page.request.get(`${base}/api/info`);
    if (cookieAlone.status() !== 401) fail(`the cookie alone was accepted: ${cookieAlone.status()}`);
    const both = await page.request.get(`${base}/api/info`, { headers: { "x-holdfast-page": pageKey } });
    if (both.status() !== 200) fail(`the cookie with the page key was refused: ${both.status()}`);
    // Any site can send the browser here with a key of its own in the fragment: it is not kept, and the page stays
    // signed in.
    const other = await context.newPage();
    await other.goto(`${base}/?from=elsewhere#page=${"0".repeat(64)}`);
    await other.waitForSelector(`${T("ws-status")}[data-state="open"]`);
    const kept = await other.evaluate(() => localStorage.getItem("holdfast.page"));
    await other.close();
    if (kept !== pageKey) fail(`a key another site chose replaced the page's: ${kept}`);
    if (!/base/.test(await page.textContent(T("networks")))) fail("the networks are not shown");
    await page.waitForSelector(`${T("session-item")}`);
    // The token is gone from every URL the page uses (the WebSocket and API calls ride on the cookie).
    const csp = (await r.allHeaders())["content-security-policy"] || "";
    const scriptSrc = (csp.split(";").map((d) => d.trim()).find((d) => d.startsWith("script-src")) || "");
    if (scriptSrc !== "script-src 'self'" || !/frame-ancestors 'none'/.test(csp)) fail(`CSP: ${csp}`);
  });

  await step("the Content-Security-Policy blocks inline script in the page", async () => {
    expectCspViolation = true;
    const blocked = await page.evaluate(() => new Promise((resolve) => {
      document.addEventListener("securitypolicyviolation", (e) => resolve(e.violatedDirective), { once: true });
      const s = document.createElement("script");
      s.textContent = "window.__inlineRan = true;";
      document.body.append(s);
      setTimeout(() => resolve(window.__inlineRan ? "ran" : "no event"), 2000);
    }));
    await page.waitForTimeout(500); // the console message of the violation arrives after the event
    expectCspViolation = false;
    if (!/^script-src/.test(blocked)) fail(`an inline script was not blocked: ${blocked}`);
  });

  await step("the same sign-in link a second time is refused as used", async () => {
    // A fresh request without this browser's cookie: what a second person with the link would get.
    const r = await page.request.get(`${base}/?code=${code}`, { maxRedirects: 0, headers: { cookie: "" } });
    if (r.status() !== 401) fail(`a used code → ${r.status()}`);
    if (!/already used/.test(await r.text())) fail("the page does not say the link was used");
    if (r.headers()["set-cookie"]) fail("a used code set a cookie");
  });
}

async function chatScenario() {
  const final = "USDC is in the register buy_token now (6 decimals, origin config). I pass its name; I never type its address.";
  await step("a configured model is shown", async () => {
    const llm = await page.textContent(T("llm-status"));
    if (!/scripted/.test(llm)) fail(`LLM status: ${llm}`);
  });
  await step("the reply streams in, with the model's tool call inline", async () => {
    await page.fill(T("chat-input"), "what is USDC on base?");
    await page.click(T("chat-send"));
    await page.waitForSelector("#typing");
    const streaming = `${T("chat-msg")}[data-role="assistant"].streaming`;
    // Read the partial text in the same poll that sees it, so the stream finishing in between cannot race the test.
    const partial = await (await page.waitForFunction((sel) => {
      const text = document.querySelector(sel)?.textContent || "";
      return /^USDC is in/.test(text) && text;
    }, streaming, { polling: 20 })).jsonValue();
    if (partial === final) fail("the reply arrived whole, not streamed");
    await shot("chat-1-streaming.png");
    await page.waitForSelector(`${T("chat-tool")}[data-tool="token_lookup"][data-status="ok"]`);
    await page.waitForFunction(([sel, text]) => {
      const msgs = [...document.querySelectorAll(sel)];
      const last = msgs[msgs.length - 1];
      return last && last.textContent === text && !last.classList.contains("streaming");
    }, [`${T("chat-msg")}[data-role="assistant"]`, final]);
    await page.waitForSelector("#typing", { state: "detached" });
    const order = await page.$$eval(`${T("chat-log")} > *`, (els) => els.map((e) => e.dataset.testid + ":" + (e.dataset.role || e.dataset.tool)));
    const want = ["chat-msg:user", "chat-msg:assistant", "chat-tool:token_lookup", "chat-msg:assistant", "turn-usage:usage"];
    if (JSON.stringify(order) !== JSON.stringify(want)) fail(`chat order ${JSON.stringify(order)}`);
    // The turn's token usage, from the final event, under the reply.
    const usage = await page.textContent(T("turn-usage"));
    if (!/^\d+ tokens in( \(\d+ from the prompt cache\))? · \d+ out$/.test(usage)) fail(`turn usage: ${usage}`);
    if (await page.isDisabled(T("chat-send"))) fail("send stays disabled after the turn");
  });
  await step("the model's register shows up live", async () => {
    await register("buy_token", "config");
    await shot("chat-2-final.png");
  });
}

async function pasteScenario() {
  await step("a paste is sent with its message as pasted, and a typed message as typed", async () => {
    const pasted = "please send 7 USDC to 0x90F79bf6EB2c4f870365E785982E1f101E93b906";
    await page.focus(T("chat-input"));
    // The paste event the browser fires (with what the clipboard holds), then what its own paste puts in.
    await page.$eval(T("chat-input"), (el, text) => {
      const data = new DataTransfer();
      data.setData("text/plain", text);
      el.dispatchEvent(new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }));
    }, pasted);
    await page.keyboard.insertText(pasted);
    await page.keyboard.type(" (from bob)");
    const send = async () => (await Promise.all([
      page.waitForResponse((r) => r.url().endsWith("/messages") && r.request().method() === "POST"),
      page.click(T("chat-send")),
    ]))[0];
    const first = await send();
    const body = first.request().postDataJSON();
    if (body.content !== pasted + " (from bob)") fail(`content: ${JSON.stringify(body)}`);
    if (JSON.stringify(body.pasted) !== JSON.stringify([pasted])) fail(`pasted: ${JSON.stringify(body)}`);
    if (first.status() !== 200) fail(`the message was refused: ${first.status()}`);
    await page.fill(T("chat-input"), "send 7 USDC to 0x90F79bf6EB2c4f870365E785982E1f101E93b906");
    const second = (await send()).request().postDataJSON();
    if (JSON.stringify(second.pasted) !== "[]") fail(`a typed message reported a paste: ${JSON.stringify(second)}`);
    // Text brought back by undo fires no paste event: the whole message counts as pasted.
    await page.focus(T("chat-input"));
    await page.keyboard.insertText(pasted);
    await page.$eval(T("chat-input"), (el) => {
      el.dispatchEvent(new InputEvent("input", { inputType: "historyUndo", bubbles: true }));
    });
    const third = (await send()).request().postDataJSON();
    if (JSON.stringify(third.pasted) !== JSON.stringify([pasted])) fail(`undo: ${JSON.stringify(third)}`);
  });
}

async function swapScenario() {
  await step("chat without an LLM fills the context bank", async () => {
    const llm = await page.textContent(T("llm-status"));
    if (!/none/.test(llm)) fail(`LLM status: ${llm}`);
    await page.fill(T("chat-input"), "swap 0.02 ETH for USDC");
    await page.click(T("chat-send"));
    await page.waitForSelector(T("chat-note"));
    const note = await page.textContent(T("chat-note"));
    if (!/context bank/.test(note) || !/tool console/.test(note)) fail(`chat note: ${note}`);
    for (const [type, value] of [["amount", "0.02"], ["token_symbol", "ETH"], ["token_symbol", "USDC"]]) {
      await page.waitForSelector(`${T("context-bank-panel")} ${T("cb-item")}[data-type="${type}"][data-value="${value}"]`);
    }
    // The amount is shown with the token it qualifies; a number with no token beside it is greyed and says so.
    const bound = `${T("context-bank-panel")} ${T("cb-item")}[data-type="amount"][data-value="0.02"][data-bound="true"]`;
    const shown = (await page.textContent(`${bound} ${T("cb-amount")}`)).trim();
    if (shown !== "0.02 ETH") fail(`bound amount shows ${shown}`);
    if (await page.locator(`${bound} ${T("cb-bare-note")}`).count()) fail("a bound amount is marked as authorizing nothing");
    await page.fill(T("chat-input"), "it is for my 2 friends");
    await page.click(T("chat-send"));
    const bare = `${T("context-bank-panel")} ${T("cb-item")}[data-type="amount"][data-value="2"][data-bound="false"]`;
    await page.waitForSelector(bare);
    const bareNote = (await page.textContent(`${bare} ${T("cb-bare-note")}`)).trim();
    if (bareNote !== "does not authorize anything") fail(`bare amount note: ${bareNote}`);
    if ((await page.textContent(`${bare} ${T("cb-amount")}`)).trim() !== "2") fail("a bare amount is shown with a token");
    const opacity = await page.$eval(bare, (e) => Number(getComputedStyle(e).opacity));
    if (!(opacity < 1)) fail(`a bare amount is not greyed (opacity ${opacity})`);
    await shot("01-context-bank.png");
  });

  await step("a coded error from the tool console", async () => {
    const { body } = await runTool("register_set", { key: "sell_token", value: "0xdead" }, 422);
    if (body.error.code !== "register_write_denied") fail(JSON.stringify(body));
    const code = await page.textContent(`${T("tool-result")} ${T("tool-error-code")}`);
    if (code.trim() !== "register_write_denied") fail(`shown code: ${code}`);
  });

  await step("a value typed through register_set is a model-origin scratch register", async () => {
    await runTool("register_set", { key: "memo", value: "swap before noon" }, 200);
    const sel = await register("memo", "model");
    await page.waitForSelector(`${sel} ${T("register-scratch")}`);
  });

  await step("1. wallet address → wallet_address (intrinsic)", async () => {
    await runTool("local_burner_wallet", { action: "address", token_register: null, network: null, cache_as: "wallet_address" }, 200);
    await register("wallet_address", "intrinsic");
    const chatTool = `${T("chat-tool")}[data-tool="local_burner_wallet"][data-status="ok"]`;
    await page.waitForSelector(chatTool);
  });

  await step("2. token_lookup ETH → sell_token (config)", async () => {
    await runTool("token_lookup", { symbol: "ETH", network: "base", cache_as: "sell_token" }, 200);
    const sel = await register("sell_token", "config");
    const src = await page.textContent(`${sel} ${T("register-source")}`);
    if (!/token_lookup/.test(src)) fail(`sell_token source: ${src}`);
  });

  await step("3. token_lookup USDC → buy_token (config)", async () => {
    await runTool("token_lookup", { symbol: "USDC", network: "base", cache_as: "buy_token" }, 200);
    await register("buy_token", "config");
  });

  await step("4. to_raw_amount 0.02 → sell_amount (user)", async () => {
    await runTool("to_raw_amount", { amount: "0.02", token_register: "sell_token", cache_as: "sell_amount" }, 200);
    const sel = await register("sell_amount", "user");
    const value = await page.textContent(`${sel} ${T("register-value")}`);
    if (!value.includes("20000000000000000") || !value.includes("0.02 ETH")) fail(`sell_amount shows ${value}`);
  });

  await step("5. x402_fetch swap_quote → swap_quote (tool, preset, max age)", async () => {
    await runTool("x402_fetch", { preset: "swap_quote", network: "base", cache_as: "swap_quote" }, 200);
    const sel = await register("swap_quote", "tool", '[data-stale="false"]');
    const preset = await page.textContent(`${sel} ${T("register-preset")}`);
    if (!/swap_quote/.test(preset)) fail(`preset: ${preset}`);
    const age = await page.textContent(`${sel} ${T("register-age")}`);
    if (!/\/ 60s/.test(age)) fail(`swap_quote age shows no max age: ${age}`);
    const summary = await page.textContent(`${sel} ${T("register-value")}`);
    if (!/sell 0\.02 ETH → buy [\d.]+ USDC \(min [\d.]+ USDC\)/.test(summary)) fail(`quote summary: ${summary}`);
    const count = await page.locator(`${T("registers-panel")} ${T("register")}`).count();
    if (count !== 6) fail(`${count} registers shown, expected 6`);
    if (await page.locator(`${T("register")}[data-key="swap_quote"] ${T("register-scratch")}`).count()) fail("swap_quote is declared, not scratch");
    await page.waitForSelector(`${T("journal-list")} ${T("journal-entry")}[data-kind="payment"][data-status="confirmed"]`);
    await page.locator(T("registers-panel")).scrollIntoViewIfNeeded();
    await shot("02-registers-after-quote.png");
    await shot("02b-registers-panel.png", page.locator(T("registers-panel")));
  });

  await step("6. web3_tx → the confirmation dialog with the decoded action", async () => {
    const { body } = await runTool("web3_tx", { from_register: "swap_quote", network: "base" }, 202);
    if (body.error.code !== "confirmation_required") fail(JSON.stringify(body));
    await page.waitForSelector(`${T("confirm-dialog")}[open]`);
    const summary = body.error.details.summary;
    for (const k of ["sell", "buy_expected", "buy_minimum", "buy_simulated", "contract", "value", "gas_limit", "max_network_fee"]) {
      if (summary[k] === undefined) fail(`the API summary lacks ${k}`);
    }
    for (const [k, v] of Object.entries(summary)) {
      if (v === null) continue;
      const shown = (await page.textContent(`${T("confirm-dialog")} ${T("confirm-field")}[data-field="${k}"] td`)).trim();
      if (k === "price_check") {
        // The independent price as a sentence: what it is worth, the least accepted, what the quote promises.
        if (!v.passed || !shown.includes(v.expected) || !shown.includes(v.minimum_accepted) || !shown.includes(v.promised)) {
          fail(`dialog price_check: ${shown} for ${JSON.stringify(v)}`);
        }
      } else if (k === "call") {
        // The decoded calldata as a sentence: the function, who is paid (the wallet), the minimum it enforces.
        if (!shown.startsWith(v.function) || !shown.includes(v.recipient) || !shown.includes(v.min_out)) {
          fail(`dialog call: ${shown} for ${JSON.stringify(v)}`);
        }
      } else if (shown !== String(v)) fail(`dialog ${k}: ${shown}, expected ${v}`);
    }
    if ((await page.textContent(`${T("confirm-field")}[data-field="sell"] td`)).trim() !== "0.02 ETH") fail("sell is not 0.02 ETH");
    const reason = await page.textContent(T("confirm-reason"));
    if (!/auto-approve/.test(reason)) fail(`reason: ${reason}`);
    await page.waitForSelector(`${T("pending-item")}`, { state: "attached" });
    await shot("03-confirmation-dialog.png");
  });

  await step("decide later keeps it in \"About to do\"; Review reopens it", async () => {
    await page.click(T("confirm-later"));
    await page.waitForFunction((sel) => !document.querySelector(sel).open, T("confirm-dialog"));
    await page.waitForTimeout(300);
    if (await page.evaluate((sel) => document.querySelector(sel).open, T("confirm-dialog"))) fail("the dialog reopened by itself");
    const item = await page.textContent(T("pending-item"));
    if (!/sell 0\.02 ETH → at least [\d.]+ USDC/.test(item)) fail(`pending item: ${item}`);
    // A click that lands as the question appears (one aimed at what was there before) approves nothing: the page
    // clicks Approve from a DOM observer, before any timer can run, and no approval is sent.
    let approvals = 0;
    const count = (r) => { if (/\/confirmations\/[^/]+\/(approve|deny)$/.test(r.url())) approvals += 1; };
    page.on("request", count);
    await page.evaluate((sel) => {
      window.__earlyClick = null;
      const seen = new MutationObserver(() => {
        const approve = document.querySelector(sel);
        if (approve && window.__earlyClick === null) {
          window.__earlyClick = approve.disabled;
          approve.click();
          seen.disconnect();
        }
      });
      seen.observe(document.getElementById("confirm"), { childList: true, subtree: true });
    }, T("confirm-approve"));
    await page.click(T("pending-review"));
    await page.waitForSelector(`${T("confirm-dialog")}[open]`);
    if ((await page.evaluate(() => window.__earlyClick)) !== true) fail("Approve was enabled as the question appeared");
    await page.waitForSelector(`${T("confirm-approve")}:not([disabled])`);
    page.off("request", count);
    if (approvals !== 0) fail(`a click as the question appeared decided it (${approvals} requests)`);
    if ((await page.textContent(T("confirm-badge"))).trim() !== "approval needed") fail("the question was decided");
  });

  await step("7. approve → the receipt", async () => {
    const [resp] = await Promise.all([
      page.waitForResponse((r) => /\/confirmations\/[^/]+\/approve$/.test(r.url())),
      page.click(T("confirm-approve")),
    ]);
    if (resp.status() !== 200) fail(`approve → HTTP ${resp.status()}: ${await resp.text()}`);
    await page.waitForSelector(T("receipt"));
    const status = (await page.textContent(T("receipt-status"))).trim();
    if (status !== "confirmed") fail(`receipt status: ${status}`);
    const hash = (await page.textContent(T("receipt-hash"))).trim();
    if (!/^0x[0-9a-f]{64}$/.test(hash)) fail(`receipt hash: ${hash}`);
    const answered = (await page.textContent(`${T("confirm-dialog")} ${T("confirm-title")}`)).trim();
    if (answered !== "swap: confirmed") fail(`the dialog's title after approving: ${answered}`);
    const badge = (await page.textContent(`${T("confirm-dialog")} ${T("confirm-badge")}`)).trim();
    if (badge !== "approved") fail(`the dialog's badge after approving: ${badge}`);
    await shot("04-receipt.png");
    await page.click(T("confirm-close"));
    await page.waitForSelector(`${T("confirm-dialog")}[open]`, { state: "detached" }).catch(() => {});
    await page.waitForFunction((sel) => !document.querySelector(sel).open, T("confirm-dialog"));
    const consoleStatus = (await page.textContent(`${T("tool-result")} ${T("tool-result-status")}`)).trim();
    if (consoleStatus !== "confirmed") fail(`tool console result status: ${consoleStatus}`);
    await page.waitForFunction((sel) => document.querySelectorAll(sel).length === 0, T("pending-item"));
  });

  await step("8. the journal shows the swap; the used quote is cleared", async () => {
    await page.waitForSelector(`${T("journal-list")} ${T("journal-entry")}[data-kind="swap"][data-status="confirmed"]`);
    await page.waitForSelector(`${T("register-removed")}[data-key="swap_quote"]`);
    if (await page.locator(`${T("register")}[data-key="swap_quote"]`).count()) fail("swap_quote is still shown after it was used");
    await page.waitForSelector(`${T("chat-tool")}[data-tool="web3_tx"][data-status="ok"]`);
    await page.locator(T("activity-panel")).scrollIntoViewIfNeeded();
    await shot("05-journal.png");
  });

  await step("the journal follows the user, not the session; a new tab reopens the latest session", async () => {
    const swapSel = `${T("journal-list")} ${T("journal-entry")}[data-kind="swap"][data-status="confirmed"]`;
    const first = await page.getAttribute(`${T("session-item")}.active`, "data-id");
    await page.click(T("session-new"));
    await page.waitForFunction(([sel, id]) => document.querySelector(sel)?.dataset.id !== id, [`${T("session-item")}.active`, first]);
    // Every entry by default, with the session it belongs to.
    await page.waitForSelector(`${swapSel} ${T("journal-session")}`);
    await page.check(T("journal-this-session"));
    await page.waitForFunction((sel) => !document.querySelector(sel), swapSel);
    await page.uncheck(T("journal-this-session"));
    await page.waitForSelector(swapSel);
    await page.click(`${T("session-item")}[data-id="${first}"]`);
    await page.waitForSelector(`${T("session-item")}.active[data-id="${first}"]`);
    // Another tab: no new empty session, one of the user's own is open.
    const count = await page.locator(T("session-item")).count();
    const other = await context.newPage();
    watch(other, "second tab");
    await other.goto(base + "/");
    await other.waitForSelector(`${T("session-item")}.active`);
    const ids = await other.$$eval(T("session-item"), (els) => els.map((e) => e.dataset.id));
    if (ids.length !== count) fail(`a new tab made a session: ${count} → ${ids.length}`);
    await other.close();
  });

  await step("9. the wallet: balances, today's spending against the caps, the x402 budget", async () => {
    const wallet = `${T("wallet-panel")} ${T("wallet-network")}[data-network="base"]`;
    // The swap's 0.02 ETH counts against the 5 ETH daily cap; the quote's x402 payment against the 5 USDC budget.
    await page.waitForFunction((sel) => /^0\.02 of 5 ETH today$/.test(document.querySelector(sel)?.textContent || ""),
      `${wallet} ${T("spend-gauge")}[data-budget="transactions"][data-symbol="ETH"] ${T("spend-text")}`);
    const x402 = await page.textContent(`${wallet} ${T("spend-gauge")}[data-budget="x402"][data-symbol="USDC"] ${T("spend-text")}`);
    const paid = /^([\d.]+) of 5 USDC today$/.exec(x402);
    if (!paid || !(Number(paid[1]) > 0)) fail(`x402 gauge: ${x402}`);
    const usdcCap = await page.textContent(`${wallet} ${T("spend-gauge")}[data-budget="transactions"][data-symbol="USDC"] ${T("spend-text")}`);
    if (usdcCap !== "0 of 20000 USDC today") fail(`USDC gauge: ${usdcCap}`);
    // Balances as the chain has them (app-independent check: the API reads the node; the page shows the same).
    const api = await page.evaluate(async (headers) => (await fetch("/api/wallet", { credentials: "same-origin", headers })).json(), await keyHeader());
    const base = api.networks.find((n) => n.network === "base");
    for (const symbol of ["ETH", "USDC", "WETH"]) {
      const want = base.holdings.find((t) => t.symbol === symbol).balance_human;
      if (want === null) fail(`no ${symbol} balance from the node`);
      const cell = `${wallet} ${T("balance")}[data-symbol="${symbol}"] ${T("balance-value")}`;
      const shown = await page.textContent(cell);
      // At most 6 decimals, cut from the node's value (never rounded up); the full value on hover.
      const [whole, frac = ""] = want.split(".");
      const cut = shown.replace("…", "");
      if (!(cut === whole || (cut.startsWith(whole + ".") && want.startsWith(cut) && cut.split(".")[1].length <= 6))) {
        fail(`${symbol} balance shows ${shown}, the node says ${want}`);
      }
      if ((await page.getAttribute(cell, "title")) !== `${want} ${symbol}`) fail(`${symbol}: the full value is not on hover`);
    }
    if (!(Number(base.holdings.find((t) => t.symbol === "USDC").balance_human) > 0)) fail("the swap bought no USDC");
    await page.locator(T("wallet-panel")).scrollIntoViewIfNeeded();
    await shot("07-wallet.png");
  });

  await step("10. the devnet has no explorer: the journal opens the built-in transaction page", async () => {
    const swap = `${T("journal-list")} ${T("journal-entry")}[data-kind="swap"][data-status="confirmed"]`;
    if (await page.locator(`${swap} ${T("explorer-link")}`).count()) fail("an explorer link on a network without one");
    const summary = await page.textContent(`${swap} ${T("journal-summary")}`);
    if (!/sell 0\.02 ETH → [\d.]+ USDC/.test(summary)) fail(`journal summary: ${summary}`);
    if (!/gas [\d,]+/.test(await page.textContent(swap))) fail("the journal entry shows no gas");
    await page.click(`${swap} ${T("tx-page-link")}`);
    await page.waitForSelector(`${T("tx-page")}[open] ${T("tx-status")}`);
    const status = (await page.textContent(T("tx-status"))).trim();
    if (status !== "success") fail(`tx page status: ${status}`);
    const transfers = await page.locator(T("tx-transfer")).allTextContents();
    if (!transfers.some((t) => / USDC from /.test(t))) fail(`tx page transfers: ${transfers.join(" | ")}`);
    await shot("08-tx-page.png");
    await page.keyboard.press("Escape");
    await page.waitForFunction((sel) => !document.querySelector(sel).open, T("tx-page"));
    await page.click(T("tab-payments"));
    await page.waitForSelector(`${T("payment-list")} ${T("journal-entry")}[data-kind="payment"][data-status="confirmed"]`);
    await page.click(T("tab-journal"));
  });

  await step("deny: the dialog and the console both say it was denied", async () => {
    await runTool("x402_fetch", { preset: "swap_quote", network: "base", cache_as: "swap_quote" }, 200);
    const { body: first } = await runTool("web3_tx", { from_register: "swap_quote", network: "base" }, 202);
    if (first.error.code !== "confirmation_required") fail(JSON.stringify(first));
    await page.waitForSelector(`${T("confirm-dialog")}[open]`);
    await page.click(T("confirm-later"));
    await page.waitForFunction((sel) => !document.querySelector(sel).open, T("confirm-dialog"));
    // Asked again before answering: the newer request replaces the first, which leaves the pending list live
    // (its confirmation.withdrawn event), with no reload.
    const { body } = await runTool("web3_tx", { from_register: "swap_quote", network: "base" }, 202);
    if (body.error.code !== "confirmation_required") fail(JSON.stringify(body));
    const second = body.error.details.confirmation_id;
    await page.waitForFunction(([sel, id]) => {
      const items = [...document.querySelectorAll(sel)];
      return items.length === 1 && items[0].dataset.id === id;
    }, [T("pending-item"), second]);
    await page.waitForSelector(`${T("confirm-dialog")}[open]`);
    await page.click(T("confirm-deny"));
    await page.waitForSelector(T("confirm-denied"));
    const title = (await page.textContent(`${T("confirm-dialog")} ${T("confirm-title")}`)).trim();
    if (title !== "swap: denied") fail(`the dialog's title after denying: ${title}`);
    if ((await page.textContent(`${T("confirm-dialog")} ${T("confirm-badge")}`)).trim() !== "denied") fail("the badge after denying");
    await page.click(T("confirm-close"));
    await page.waitForSelector(`${T("tool-result")} ${T("tool-result-denied")}`);
    if (/waits for your approval/.test(await page.textContent(T("tool-result")))) fail("the console still says it waits");
  });

  await step("memory blocks update live", async () => {
    await runTool("update_memory", { label: "human", value: "Prefers ETH; wants low fees.", description: null }, 200);
    await page.click(T("tab-memory"));
    await page.waitForSelector(`${T("memory-block")}[data-label="human"]`);
  });

  await step("a quote older than its max age is marked stale", async () => {
    await runTool("x402_fetch", { preset: "swap_quote", network: "base", cache_as: "swap_quote" }, 200);
    const fresh = await register("swap_quote", "tool", '[data-stale="false"]');
    if (await page.isVisible(`${fresh} ${T("register-stale")}`)) fail("a fresh quote is marked stale");
    await page.clock.fastForward("01:05");
    const stale = `${T("register")}[data-key="swap_quote"][data-stale="true"]`;
    await page.waitForSelector(`${stale} ${T("register-stale")}`);
    await shot("06-stale-quote.png", page.locator(T("registers-panel")));
  });

  await step("after a reload the tool console's calls and the decisions are in the chat history", async () => {
    const live = await page.$$eval(T("chat-tool"), (rows) => rows.length);
    await page.reload();
    await page.waitForSelector(`${T("ws-status")}[data-state="open"]`);
    const console = `${T("chat-tool")}[data-source="console"]`;
    await page.waitForSelector(console);
    const rows = await page.$$eval(console, (rs) => rs.map((r) => `${r.dataset.tool}:${r.dataset.status}`));
    for (const want of ["token_lookup:ok", "x402_fetch:ok", "web3_tx:confirmation", "web3_tx:ok", "web3_tx:error"]) {
      if (!rows.includes(want)) fail(`${want} is not in the history after a reload: ${JSON.stringify(rows)}`);
    }
    const all = await page.$$eval(T("chat-tool"), (rs) => rs.length);
    if (all < live) fail(`${live} tool rows before the reload, ${all} after`);
    const decided = await page.$$eval(console, (rs) => rs.map((r) => r.textContent).filter((t) => /decision/.test(t)));
    if (!decided.some((t) => /approved/.test(t)) || !decided.some((t) => /denied/.test(t))) fail(`decisions: ${JSON.stringify(decided)}`);
  });
}

async function agentsScenario() {
  await step("the agents are listed, and a new session talks to the one chosen", async () => {
    await page.waitForSelector(`${T("session-agent")}:not([hidden])`);
    const names = await page.$$eval(`${T("session-agent")} option`, (os) => os.map((o) => o.value));
    if (JSON.stringify(names) !== JSON.stringify(["assistant", "researcher"])) fail(`agents ${JSON.stringify(names)}`);
    await page.selectOption(T("session-agent"), "researcher");
    await page.click(T("session-new"));
    await page.fill(T("chat-input"), "ask the assistant which network USDC is on");
    await page.click(T("chat-send"));
    await page.waitForFunction((sel) => [...document.querySelectorAll(sel)].some((m) => m.textContent === "I asked the assistant."),
      `${T("chat-msg")}[data-role="assistant"]`);
  });
  await step("the memory, tasks and reminders tabs show the session's agent's own, and say whose", async () => {
    await page.click(T("tab-memory"));
    await page.waitForSelector(`${T("memory-list")} ${T("pane-agent")}[data-agent="researcher"]`);
    // Asked outside the page (its console would log the 404 the last one is meant to get).
    const headers = await keyHeader();
    const get = async (q) => { const r = await page.request.get(`${base}/api/memory${q}`, { headers }); return [r.status(), await r.json()]; };
    const api = [await get("?agent=researcher"), await get(""), await get("?agent=nobody")];
    if (api[0][0] !== 200 || api[0][1].agent !== "researcher") fail(`researcher's memory: ${JSON.stringify(api[0])}`);
    if (api[1][1].agent !== "assistant") fail(`the default agent's: ${JSON.stringify(api[1])}`);
    if (api[2][0] !== 404 || api[2][1].error.code !== "not_found") fail(`an unknown agent: ${JSON.stringify(api[2])}`);
    for (const tab of ["tasks", "reminders"]) {
      await page.click(T("tab-" + tab));
      await page.waitForSelector(`${T(tab === "tasks" ? "task-list" : "reminder-list")} ${T("pane-agent")}[data-agent="researcher"]`);
    }
    await page.click(T("tab-journal"));
  });
  await step("the message between the agents shows in the assistant's inbox session with the researcher, with its answer", async () => {
    const inbox = `${T("session-item")}:has-text("Inbox · assistant · agent 'researcher'")`;
    for (let i = 0; i < 40 && !(await page.locator(inbox).count()); i++) {
      await page.waitForTimeout(250);
      await page.reload();
      await page.waitForSelector(T("session-item"));
    }
    await page.click(inbox);
    await page.waitForFunction((sel) => [...document.querySelectorAll(sel)].some((m) => m.textContent === "From agent 'researcher': Which network is USDC on?"),
      `${T("chat-msg")}[data-role="inbox"]`);
    await page.waitForFunction((sel) => [...document.querySelectorAll(sel)].some((m) => m.textContent === "USDC is on Base."),
      `${T("chat-msg")}[data-role="assistant"]`);
    await shot("agents-1-inbox.png");
  });
  await step("a turn the inbox started shows its stop button there, and the stop ends it", async () => {
    await page.click(`${T("session-item")}:has-text("ask the assistant which network")`);
    await page.fill(T("chat-input"), "ask the assistant to wait");
    await page.click(T("chat-send"));
    await page.waitForFunction((sel) => [...document.querySelectorAll(sel)].some((m) => m.textContent === "I asked again."),
      `${T("chat-msg")}[data-role="assistant"]`);
    await page.click(`${T("session-item")}:has-text("Inbox · assistant · agent 'researcher'")`);
    await page.waitForSelector(`${T("chat-stop")}:not([hidden])`);
    await page.click(T("chat-stop"));
    await page.waitForFunction((sel) => [...document.querySelectorAll(sel)].some((m) => m.textContent.includes("Cancelled by the user.")),
      `${T("chat-msg")}`);
    await page.waitForSelector(`${T("chat-stop")}[hidden]`, { state: "attached" });
  });
}

async function walkthroughScenario() {
  const source = T("walkthrough-source");
  const say = async (text) => {
    const before = await page.locator(T("chat-note")).count();
    await page.fill(T("chat-input"), text);
    await page.click(T("chat-send"));
    await page.waitForFunction(([sel, n]) => document.querySelectorAll(sel).length > n, [T("chat-note"), before]);
  };
  const fill = async (n, field) => {
    await page.click(`${T("walkthrough-step")}:nth-of-type(${n})`);
    return page.inputValue(T("field-" + field));
  };
  await step("before any message the walkthrough says where its values come from", async () => {
    await page.waitForSelector(source);
    if (!/latest message/.test(await page.textContent(source))) fail(`source: ${await page.textContent(source)}`);
  });
  await step("each swap pre-fills from the latest message, never an earlier one", async () => {
    await say("swap 0.001 ETH for USDC");
    await page.waitForSelector(`${source}[data-prefilled="true"]:has-text("0.001 ETH")`);
    if ((await fill(4, "amount")) !== "0.001") fail("first swap's amount");
    await say("swap 0.02 ETH for USDC");
    await page.waitForSelector(`${source}[data-prefilled="true"]:has-text("0.02 ETH")`);
    if ((await fill(4, "amount")) !== "0.02") fail(`second swap's amount: ${await fill(4, "amount")}`);
    await say("actually, swap 5 USDC for ETH instead");
    await page.waitForSelector(`${source}[data-prefilled="true"]:has-text("5 USDC for ETH")`);
    if ((await fill(2, "symbol")) !== "USDC") fail("sell token of the latest message");
    if ((await fill(3, "symbol")) !== "ETH") fail("buy token of the latest message");
    if ((await fill(4, "amount")) !== "5") fail("amount of the latest message");
    await shot("walkthrough-1-latest.png");
  });
  await step("a latest message with no bound amount pre-fills nothing, and says why", async () => {
    await say("thanks, and my 2 friends say hi");
    await page.waitForSelector(`${source}[data-prefilled="false"]`);
    if (!/nothing is pre-filled/.test(await page.textContent(source))) fail(`source: ${await page.textContent(source)}`);
    if ((await fill(4, "amount")) !== "") fail("an amount was pre-filled from an older message");
    if ((await fill(2, "symbol")) !== "") fail("a token was pre-filled from an older message");
  });
  await step("a transfer pre-fills from the latest message: token, amount, and which of the user's addresses", async () => {
    await say("send 5 USDC to 0x90F79bf6EB2c4f870365E785982E1f101E93b906");
    await page.waitForSelector(`${source}[data-prefilled="true"][data-kind="transfer"]:has-text("send 5 USDC to 0x90F79bf6EB2c4f870365E785982E1f101E93b906")`);
    if (!/Transfer walkthrough/.test(await page.textContent(T("walkthrough-title")))) fail("not titled a transfer");
    if ((await fill(1, "symbol")) !== "USDC") fail("the transfer's token");
    if ((await fill(2, "amount")) !== "5") fail("the transfer's amount");
    if ((await fill(3, "index")) !== "") fail("the only address needs no index");
    if ((await page.locator(`${T("walkthrough-step")}:nth-of-type(4)`).getAttribute("data-tool")) !== "transfer") fail("step 4 is not the transfer");
    await say("now send 7 USDC to 0x70997970C51812dc3A010C7d01b50e0d17dc79C8");
    await page.waitForSelector(`${source}[data-prefilled="true"]:has-text("send 7 USDC to 0x70997970C51812dc3A010C7d01b50e0d17dc79C8")`);
    if ((await fill(2, "amount")) !== "7") fail("the second transfer's amount");
    if ((await fill(3, "index")) !== "2") fail(`the second address is the user's 2nd: ${await fill(3, "index")}`);
    await say("swap 0.003 ETH for USDC");
    await page.waitForSelector(`${source}[data-prefilled="true"][data-kind="swap"]:has-text("0.003 ETH")`);
    if ((await fill(4, "amount")) !== "0.003") fail("back to a swap");
  });
  await step("a message sent from another client pre-fills its own values and never quotes this tab's text", async () => {
    const id = await page.getAttribute(`${T("session-item")}.active`, "data-id");
    const sent = await page.evaluate(async ([id, key]) => (await fetch(`/api/sessions/${id}/messages`, { method: "POST",
      credentials: "same-origin", headers: { "content-type": "application/json", ...key }, body: JSON.stringify({ content: "swap 0.004 ETH for USDC" }) })).status, [id, await keyHeader()]);
    if (sent !== 200) fail(`sending from another client: HTTP ${sent}`);
    await page.waitForSelector(`${source}[data-prefilled="true"]:has-text("0.004 ETH")`);
    const said = await page.textContent(source);
    if (/0\.003/.test(said) || !/another tab or client/.test(said)) fail(`source: ${said}`);
    if ((await fill(4, "amount")) !== "0.004") fail("the other client's amount");
  });
}

/** What keeps `el` from being used: too small, off screen, or covered where a user would click it ("" when usable). */
async function unusable(locator) {
  return locator.evaluate((e) => {
    const r = e.getBoundingClientRect();
    if (r.width < 8 || r.height < 8) return `is ${Math.round(r.width)}×${Math.round(r.height)} px`;
    if (r.bottom <= 0 || r.top >= innerHeight || r.right <= 0 || r.left >= innerWidth) return "is off screen";
    const x = Math.min(Math.max(r.left + Math.min(r.width / 2, 40), 1), innerWidth - 2);
    const y = Math.min(Math.max(r.top + r.height / 2, 1), innerHeight - 2);
    const hit = document.elementFromPoint(x, y);
    if (!hit || hit === e || e.contains(hit)) return "";
    return `is covered by ${hit.closest("[data-testid]")?.dataset.testid || hit.className || hit.tagName}`;
  });
}

// Phone, small laptop, desktop: the chat input, the tool console and the journal are each reachable (scrolled to, or
// already on screen), big enough and uncovered; the chat input stays usable wherever the page is scrolled; nothing
// makes the page wider than the screen.
async function layoutScenario() {
  for (const [width, height] of [[360, 740], [390, 844], [1024, 768], [1440, 900], [2560, 1440]]) {
    await step(`at ${width} px the chat input, the tool console and the journal are usable, nothing wider than the screen`, async () => {
      await page.setViewportSize({ width, height });
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
      const wider = await page.evaluate(() => document.documentElement.scrollWidth - innerWidth);
      if (wider > 0) fail(`the page is ${wider} px wider than the screen at ${width} px`);
      const console = await page.locator(T("tool-console")).evaluate((e) => e.getBoundingClientRect().height);
      if (console < 200) fail(`the tool console is ${Math.round(console)} px tall at ${width} px`);
      for (const id of ["chat-input", "chat-send", "tool-select", "tool-run", "tab-journal", "journal-list"]) {
        if (id === "journal-list") await page.click(T("tab-journal"));
        const el = page.locator(T(id));
        await el.scrollIntoViewIfNeeded();
        const why = await unusable(el);
        if (why) fail(`${id} ${why} at ${width} px`);
      }
      // Scrolled to the journal, the chat input is still there.
      const why = await unusable(page.locator(T("chat-input")));
      if (why) fail(`after scrolling to the journal, chat-input ${why} at ${width} px`);
      await page.evaluate(() => scrollTo(0, 0));
      if ([390, 1024, 1440].includes(width)) await shot(`layout-${width}.png`);
    });
  }
}

async function accountScenario() {
  await step("the wallet panel shows the smart account, its balances and what remains of each on-chain limit", async () => {
    const api = await page.evaluate(async (headers) => (await fetch("/api/wallet", { credentials: "same-origin", headers })).json(), await keyHeader());
    const account = api.networks.find((n) => n.network === "base").account;
    if (!account) fail(`no account in /api/wallet: ${JSON.stringify(api)}`);
    const panel = `${T("wallet-panel")} ${T("wallet-account")}[data-address="${account.address}"]`;
    await page.waitForSelector(panel);
    const limit = async (symbol) => page.textContent(`${panel} ${T("account-balance")}[data-symbol="${symbol}"] ${T("onchain-limit")}`);
    if ((await limit("USDC")) !== "100 of 100 left per day") fail(`USDC limit shows ${await limit("USDC")}`);
    if ((await limit("ETH")) !== "0.05 of 0.05 left per day") fail(`ETH limit shows ${await limit("ETH")}`);
    if ((await limit("WETH")) !== "no on-chain limit: cannot move") fail(`WETH limit shows ${await limit("WETH")}`);
    const usdc = await page.textContent(`${panel} ${T("account-balance")}[data-symbol="USDC"] ${T("account-balance-value")}`);
    if (usdc !== "10000") fail(`the account's USDC shows ${usdc}`);
    await page.waitForSelector(`${T("wallet-panel")} ${T("signer-caption")}`);
    await page.locator(T("wallet-panel")).scrollIntoViewIfNeeded();
    await shot("account-1-wallet.png");
  });
}

try {
  await openUi();
  if (scenario === "chat") await chatScenario();
  else if (scenario === "account") await accountScenario();
  else if (scenario === "walkthrough") await walkthroughScenario();
  else if (scenario === "agents") await agentsScenario();
  else if (scenario === "paste") await pasteScenario();
  else {
    await swapScenario();
    await layoutScenario();
  }
  if (problems.length) fail("browser errors:\n" + problems.join("\n"));
  log({ ok: true, screenshots: shots });
  await context.close();
  rmSync(userDataDir, { recursive: true, force: true });
  process.exit(0);
} catch (e) {
  log({ step: current, ok: false, error: String(e && e.stack || e) });
  if (problems.length) log({ browser_errors: problems });
  if (page) {
    const p = path.join(out, "failure.png");
    await page.screenshot({ path: p }).catch(() => {});
    log({ screenshot: p });
  }
  await context.close().catch(() => {});
  rmSync(userDataDir, { recursive: true, force: true });
  process.exit(1);
}
