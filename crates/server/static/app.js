// The holdfast web UI: plain JavaScript, no build step, no inline script (the page's Content-Security-Policy allows
// scripts from this server only). Served as /app.js; embedded in the binary like index.html.
"use strict";
(() => {
// ---------------------------------------------------------------- state
const S = {
  info: null, tools: [], toolsByName: new Map(), sessions: [], session: null,
  ws: null, wsRetry: 0, wsTimer: null, skew: 0,
  registers: new Map(), maxAge: new Map(), regTouched: new Map(), openRegs: new Set(), removed: [],
  contextBank: [], latest: [], latestText: "", pending: new Map(), memory: [], tasks: [], reminders: [],
  dialogId: null, dialogDone: false, consoleConfirm: null, dismissed: new Set(),
  streamEl: null, turnRunning: false, remoteTurn: false, toolRows: [], turnFinal: false, finalEl: null, finalTimer: null,
};
const ORIGINS = [
  ["intrinsic", "computed by the runtime"], ["config", "operator's configuration"], ["user", "from your own message"],
  ["tool", "produced by a tool"], ["model", "typed by the model — lowest trust"],
];
const SUMMARY_LABELS = {
  action: "Action", network: "Network", sell: "You sell", buy_expected: "You receive (expected)",
  buy_minimum: "Minimum received", buy_simulated: "Simulated amount received", contract: "Contract",
  spender: "Spender", token: "Token", amount: "Amount", value: "Value sent", gas_limit: "Gas limit",
  max_network_fee: "Max network fee", payee: "Payee", to: "To", preset: "Preset",
  price_check: "Independent price", recipient: "Recipient", recipient_source: "Recipient from",
  token_address: "Token contract", call: "Calldata (decoded)",
};
/** A summary value as the user reads it: the independent price check as a sentence, anything else as text. */
function summaryText(k, v) {
  if (k === "price_check" && v && typeof v === "object") {
    const below = v.deviation_bps >= 0 ? `${v.deviation_bps} bps below it` : `${-v.deviation_bps} bps above it`;
    return `worth ${v.expected} by ${v.source}; at least ${v.minimum_accepted} accepted (${v.max_slippage_bps} bps); ` +
      `the quote promises ${v.promised} (${below})`;
  }
  if (k === "call" && v && typeof v === "object") {
    return `${v.function}: pays ${v.recipient}${v.settler ? ` through ${v.settler}` : ""}, ` +
      `reverts below ${v.min_out} (base units)`;
  }
  return typeof v === "string" ? v : JSON.stringify(v);
}
const $ = (id) => document.getElementById(id);
const tid = (t) => document.querySelector(`[data-testid="${t}"]`);

function h(tag, props, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "testid") e.dataset.testid = v;
    else if (k === "data") Object.entries(v).forEach(([dk, dv]) => { e.dataset[dk] = String(dv); });
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k === "text") e.textContent = v;
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of kids.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    e.append(c instanceof Node ? c : String(c));
  }
  return e;
}
function toast(text, err) {
  const t = h("div", { class: "toast" + (err ? " err" : "") }, text);
  $("toasts").append(t);
  setTimeout(() => t.remove(), err ? 7000 : 3500);
}
const short = (a) => typeof a === "string" && /^0x[0-9a-fA-F]{40,}$/.test(a) ? a.slice(0, 6) + "…" + a.slice(-4) : a;
const pretty = (v) => JSON.stringify(v, null, 2);
/** Text with `code` spans, as nodes (never HTML). */
function ticks(text) {
  return String(text).split("`").map((part, i) => (i % 2 ? h("code", {}, part) : part)).filter((p) => p !== "");
}
function humanKey(k) { return SUMMARY_LABELS[k] || k.replace(/_/g, " ").replace(/^./, (c) => c.toUpperCase()); }
function fmtAge(secs) {
  if (secs < 0) secs = 0;
  if (secs < 60) return Math.floor(secs) + "s";
  if (secs < 3600) return Math.floor(secs / 60) + "m " + (Math.floor(secs) % 60) + "s";
  if (secs < 86400) return Math.floor(secs / 3600) + "h " + Math.floor(secs / 60) % 60 + "m";
  return Math.floor(secs / 86400) + "d";
}
function rel(iso) {
  const t = Date.parse(iso);
  if (!Number.isFinite(t)) return "";
  const d = (t - (Date.now() - S.skew)) / 1000;
  return d >= 0 ? "in " + fmtAge(d) : fmtAge(-d) + " ago";
}
function formatUnits(raw, decimals) {
  if (typeof raw !== "string" || !/^\d+$/.test(raw) || !Number.isInteger(decimals) || decimals < 0 || decimals > 80) return null;
  const s = raw.padStart(decimals + 1, "0");
  const int = s.slice(0, s.length - decimals).replace(/^0+(?=\d)/, "");
  const frac = decimals ? s.slice(s.length - decimals).replace(/0+$/, "") : "";
  return frac ? int + "." + frac : int;
}

// ---------------------------------------------------------------- API
class ApiError extends Error {
  constructor(status, error) { super(error && error.message || "HTTP " + status); this.status = status; this.error = error || {}; }
}
/** One API call. The browser's session is two halves: the HttpOnly cookie the sign-in link set, which this script
 * never sees, and the page key it keeps in this origin's storage and sends in a header (the browser also sends the
 * cookie to other ports of this host; the key, nobody but this page sends). Bodies are always JSON (the server
 * refuses anything else on mutating calls). */
async function call(method, path, body) {
  const headers = {};
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const key = pageKey();
  if (key) headers["X-Holdfast-Page"] = key;
  const r = await fetch(path, { method, headers, credentials: "same-origin", body: body === undefined ? undefined : JSON.stringify(body) });
  let data = null;
  try { data = await r.json(); } catch (_) { data = null; }
  if (r.status === 401) askSignIn(S.info ? "This browser's sign-in has ended (expired, or signed out on the server). Sign in again." : null);
  return { status: r.status, ok: r.ok, data };
}
async function get(path) {
  const r = await call("GET", path);
  if (!r.ok) throw new ApiError(r.status, r.data && r.data.error);
  return r.data;
}
const sid = () => encodeURIComponent(S.session);
/** What the other scripts of the page (money.js) share with this one: rendering helpers and the API call. */
window.holdfast = Object.freeze({ h, get, rel, short, humanKey, summaryText, toast });

// ---------------------------------------------------------------- sign-in
// A browser signs in with a one-time code: `GET /?code=…` (the link `holdfast serve` prints at start and
// `holdfast serve --print-url` prints again, or the form below) makes the server set an HttpOnly, SameSite=Strict
// session cookie and redirect here without it. A used, expired or unknown code gets the server's sign-in page saying
// which. The access token is for programs and never reaches the page.
// The redirect after sign-in hands the page its key in the URL's fragment (never sent to a server): kept in this
// origin's storage, which no other port's page can read, and taken out of the address bar at once (the browser's
// history may keep the URL it was sent to; the key signs nobody in without the cookie).
const PAGE_KEY = "holdfast.page";
let keptInMemory = ""; // where storage is blocked: this tab only
function pageKey() {
  try { return localStorage.getItem(PAGE_KEY) || keptInMemory; } catch (_) { return keptInMemory; }
}
function keepPageKey(key) {
  keptInMemory = key;
  try { localStorage.setItem(PAGE_KEY, key); } catch (_) { /* storage blocked: kept in memory */ }
}
// A key in the fragment replaces the kept one only once the server accepts it: any site can send the browser here
// with a fragment of its own choosing, which would otherwise sign the user out.
const adoptingPageKey = (async () => {
  const m = /^#page=([0-9a-f]{64})$/.exec(location.hash);
  if (!m) return;
  history.replaceState(null, "", location.pathname + location.search);
  try {
    const r = await fetch("/api/info", { credentials: "same-origin", headers: { "X-Holdfast-Page": m[1] } });
    if (r.ok) keepPageKey(m[1]);
  } catch (_) { /* the server is unreachable: the kept key stays */ }
})();
function askSignIn(why) {
  if (why) $("signin-why").textContent = why;
  $("signin-prompt").classList.add("show");
  setTimeout(() => $("signin-input").focus(), 0);
}
sessionStorage.removeItem("holdfast.token");

// ---------------------------------------------------------------- header
function renderHeader() {
  const i = S.info;
  tid("version").textContent = "v" + i.version;
  tid("wallet-address").textContent = i.wallet_address;
  tid("wallet-address").title = i.wallet_address;
  const nets = tid("networks");
  nets.replaceChildren("networks", ...(i.networks.length ? i.networks.map((n) => h("span", { class: "chip", title: "chain id " + n.chain_id }, n.name + " · " + n.chain_id)) : [h("span", { class: "chip off" }, "none")]));
  const llm = tid("llm-status");
  if (i.agent) {
    llm.replaceChildren("LLM", h("span", { class: "chip on", data: { on: "true" } }, i.agent.provider + " · " + i.agent.model));
    $("chat-hint").textContent = "the agent answers and calls tools; you approve what moves value";
  } else {
    llm.replaceChildren("LLM", h("span", { class: "chip off", data: { on: "false" }, title: "Set OPENAI_API_KEY or ANTHROPIC_API_KEY and restart to chat with the agent" }, "none — tool console mode"));
    $("chat-hint").textContent = "no LLM: messages feed the context bank";
  }
  S.maxAge = new Map(i.registers.map((d) => [d.key, d.max_age_secs]));
  const leg = $("legend");
  leg.replaceChildren("trust:", ...ORIGINS.map(([o, d]) => h("span", { class: "badge origin o-" + o, title: d }, o)), h("span", {}, "highest → lowest"));
}
$("copy-wallet").addEventListener("click", () => {
  if (!S.info) return;
  navigator.clipboard && navigator.clipboard.writeText(S.info.wallet_address).then(() => toast("Address copied"), () => toast("Copy failed", true));
});
function setWs(state, label) {
  const el = tid("ws-status");
  el.dataset.state = state;
  $("ws-label").textContent = label;
}

// ---------------------------------------------------------------- sessions
async function loadSessions() {
  S.sessions = (await get("/api/sessions")).sessions || [];
  renderSessions();
}
function renderSessions() {
  const ul = tid("session-list");
  ul.replaceChildren(...S.sessions.map((s) => h("li", {
    class: s.id === S.session ? "active" : "", testid: "session-item", data: { id: s.id }, title: s.id,
    onclick: () => { if (s.id !== S.session) selectSession(s.id); },
  }, h("div", { class: "st" }, s.kind === "inbox" ? "Inbox · " + s.agent + (s.title ? " · " + s.title : "") : (s.title || "New session")),
    h("div", { class: "sm" }, ((S.info && (S.info.agents || []).length > 1) ? s.agent + " · " : "") + (s.message_count || 0) + " msg · " + ((s.input_tokens || 0) + (s.output_tokens || 0)) + " tokens · " + rel(s.updated_at)))));
}
tid("session-new").addEventListener("click", async () => {
  const pick = $("session-agent");
  const r = await call("POST", "/api/sessions", pick.hidden ? undefined : { agent: pick.value });
  if (!r.ok) { toast("Could not create a session: " + (r.data && r.data.error ? r.data.error.message : r.status), true); return; }
  await selectSession(r.data.id);
  await loadSessions();
});
async function selectSession(id) {
  S.session = id;
  sessionStorage.setItem("holdfast.session", id);
  S.registers.clear(); S.regTouched.clear(); S.removed = []; S.contextBank = []; S.latest = []; S.latestText = ""; S.pending.clear();
  S.streamEl = null; S.toolRows = [];
  if (S.remoteTurn) { S.remoteTurn = false; setTurn(false); }
  renderSessions(); renderRegisters(); renderContextBank(); renderPending(); moneyChanged(id);
  $("chatlog").replaceChildren();
  try {
    const { history, turn_running } = await get("/api/sessions/" + sid());
    renderHistory(history || []);
    // A turn this page did not start (the inbox's, or one from another tab): shown running, and stoppable.
    S.remoteTurn = !!turn_running && !S.turnRunning;
    if (S.remoteTurn) setTurn(true);
  } catch (e) { toast("History: " + e.message, true); }
  connectWs();
}

// ---------------------------------------------------------------- WebSocket
function connectWs() {
  clearTimeout(S.wsTimer);
  if (S.ws) { S.ws.onclose = null; S.ws.onmessage = null; try { S.ws.close(); } catch (_) { /* closing anyway */ } }
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  const session = S.session;
  // Authenticated by the session cookie, which the browser sends with the upgrade request, and the page key, offered
  // as a second subprotocol (a page cannot set other headers on it); the server selects the plain "holdfast".
  const protocols = pageKey() ? ["holdfast", "holdfast.page." + pageKey()] : ["holdfast"];
  const ws = new WebSocket(`${proto}//${location.host}/ws?session=${encodeURIComponent(session)}`, protocols);
  S.ws = ws;
  setWs("connecting", "connecting…");
  ws.onmessage = (m) => {
    let msg;
    try { msg = JSON.parse(m.data); } catch (_) { return; }
    if (msg.type === "subscribed") {
      S.wsRetry = 0;
      setWs("open", "live");
      refreshAll();
    } else if (msg.type === "lagged") {
      refreshAll();
    } else if (msg.type === "error") {
      toast("Live updates: " + (msg.error && msg.error.message), true);
    } else if (msg.type === "event" && msg.session_id === S.session) {
      onEvent(msg);
    }
  };
  ws.onclose = () => {
    if (S.ws !== ws) return;
    setWs("closed", "reconnecting…");
    S.wsRetry += 1;
    const delay = Math.min(5000, 400 * 2 ** Math.min(S.wsRetry, 4));
    S.wsTimer = setTimeout(async () => {
      if (S.wsRetry > 2) { try { await get("/api/info"); } catch (_) { /* a 401 asks for the token */ } }
      if (S.session === session) connectWs();
    }, delay);
  };
}

async function refreshAll() {
  moneyChanged();
  // The session list first: it names the session's agent, whose memory, tasks and reminders are shown.
  await loadSessions().catch(() => {});
  const tasks = [refreshRegisters(), refreshContextBank(), refreshPending(), refreshMemory(),
    refreshTasks(), refreshReminders()];
  const results = await Promise.allSettled(tasks);
  const failed = results.filter((r) => r.status === "rejected");
  if (failed.length) toast("Refresh: " + failed[0].reason.message, true);
}

function onEvent(msg) {
  const d = msg.data || {};
  switch (msg.event) {
    case "register.update": applyRegisterEvent(d); break;
    case "context_bank.update": S.contextBank = d.items || []; S.latest = d.latest_message || []; renderContextBank(); break;
    case "memory.update": refreshMemory().catch(() => {}); break;
    case "tool.call": chatToolCall(d); break;
    case "tool.result": chatToolResult(d);
      if (d.tool === "track_task") refreshTasks().catch(() => {});
      if (d.tool === "schedule_reminder") refreshReminders().catch(() => {});
      break;
    case "agent.message": onAgentMessage(d);
      if (d.final && S.remoteTurn) { S.remoteTurn = false; setTurn(false); }
      break;
    case "agent.inbox_turn": S.remoteTurn = true; setTurn(true); break;
    case "confirmation.required":
      S.pending.set(d.id, d); renderPending(); openConfirm(d.id); break;
    case "confirmation.resolved":
      S.pending.delete(d.id); renderPending();
      if (S.dialogId === d.id && !S.dialogDone && S.deciding !== d.id) closeConfirm();
      break;
    case "confirmation.withdrawn":
      S.pending.delete(d.id); renderPending();
      if (S.dialogId === d.id && !S.dialogDone && S.deciding !== d.id) { closeConfirm(); toast("Withdrawn: " + (d.reason || "")); }
      // Events of two requests made at once may arrive out of order: the list is read again.
      refreshPending().catch(() => {});
      break;
    case "tx.pending": case "tx.confirmed": case "payment.made":
      moneyChanged(); break;
    case "message.outbox":
      addMsg("assistant", d.content || d.text || pretty(d)); break;
    default: break;
  }
}

// ---------------------------------------------------------------- registers
async function refreshRegisters() {
  const started = performance.now();
  const { registers } = await get("/api/sessions/" + sid() + "/registers");
  const next = new Map();
  for (const [k, e] of Object.entries(registers || {})) {
    const touched = S.regTouched.get(k);
    if (touched !== undefined && touched > started) { if (S.registers.has(k)) next.set(k, S.registers.get(k)); continue; }
    if (typeof e.age_secs === "number") S.skew = Date.now() - (Date.parse(e.created_at) + e.age_secs * 1000);
    if (e.max_age_secs !== undefined) S.maxAge.set(k, e.max_age_secs);
    next.set(k, Object.assign({}, e, { key: k, via: "rest" }));
  }
  for (const [k, t] of S.regTouched) if (t > started && S.registers.has(k) && !next.has(k)) next.set(k, S.registers.get(k));
  S.registers = next;
  renderRegisters();
}
function applyRegisterEvent(d) {
  S.regTouched.set(d.key, performance.now());
  if (d.action === "remove") {
    S.registers.delete(d.key);
    S.removed.unshift({ key: d.key, at: d.created_at });
    S.removed = S.removed.slice(0, 3);
    renderRegisters();
    return;
  }
  const e = Object.assign({}, d, { via: "event" });
  delete e.action;
  S.removed = S.removed.filter((r) => r.key !== d.key);
  S.registers.set(d.key, e);
  renderRegisters(d.key);
}
function regAge(e) { return (Date.now() - S.skew - Date.parse(e.created_at)) / 1000; }
function isStale(k, e) { const m = S.maxAge.get(k); return typeof m === "number" && regAge(e) > m; }
function tokenByAddress(addr) {
  if (typeof addr !== "string") return null;
  for (const e of S.registers.values()) {
    const v = e.value;
    if (v && typeof v === "object" && typeof v.address === "string" && v.address.toLowerCase() === addr.toLowerCase() && Number.isInteger(v.decimals)) return v;
  }
  return null;
}
function amountWith(raw, tok) { const f = tok ? formatUnits(raw, tok.decimals) : null; return f ? f + " " + tok.symbol : raw; }
function valueSummary(k, v) {
  if (v && typeof v === "object" && !Array.isArray(v)) {
    if (typeof v.symbol === "string" && typeof v.address === "string") {
      return `${v.symbol} · ${v.decimals} decimals · ${v.network || ""} · ${short(v.address)}`;
    }
    if (v.sellAmount !== undefined && v.buyAmount !== undefined) {
      const st = tokenByAddress(v.sellToken), bt = tokenByAddress(v.buyToken);
      let s = `sell ${amountWith(v.sellAmount, st)} → buy ${amountWith(v.buyAmount, bt)}`;
      if (v.minBuyAmount !== undefined) s += ` (min ${amountWith(v.minBuyAmount, bt)})`;
      if (v.transaction && v.transaction.to) s += ` · via ${short(v.transaction.to)}`;
      return s;
    }
    const keys = Object.keys(v);
    return `{ ${keys.slice(0, 5).join(", ")}${keys.length > 5 ? ", …" : ""} }`;
  }
  if (Array.isArray(v)) return `[ ${v.length} items ]`;
  return null;
}
function humanAmount(k, v) {
  if (typeof v !== "string" || !/^\d+$/.test(v) || !k.endsWith("_amount")) return null;
  const tk = S.registers.get(k.replace(/_amount$/, "_token"));
  const tok = tk && tk.value && typeof tk.value === "object" ? tk.value : null;
  const f = tok ? formatUnits(v, tok.decimals) : null;
  return f ? "= " + f + " " + tok.symbol : null;
}
function renderRegisters(flashKey) {
  const list = $("reg-list");
  const entries = [...S.registers.entries()].sort((a, b) => Date.parse(a[1].created_at) - Date.parse(b[1].created_at) || a[0].localeCompare(b[0]));
  $("reg-count").textContent = entries.length;
  if (!entries.length) {
    list.replaceChildren(h("div", { class: "empty" }, "No registers yet. Tools write here (e.g. token_lookup → sell_token); the model only ever names them."));
  } else {
    list.replaceChildren(...entries.map(([k, e]) => {
      const stale = isStale(k, e);
      const v = e.value;
      const sum = valueSummary(k, v);
      let val;
      if (sum !== null) {
        const det = h("details", { ontoggle: (ev) => { if (ev.target.open) S.openRegs.add(k); else S.openRegs.delete(k); } },
          h("summary", { class: "mono" }, sum), h("pre", {}, pretty(v)));
        if (S.openRegs.has(k)) det.open = true;
        val = det;
      } else {
        val = [h("code", {}, typeof v === "string" ? v : JSON.stringify(v)), humanAmount(k, v) && h("span", { class: "human" }, humanAmount(k, v))];
      }
      const m = S.maxAge.get(k);
      return h("div", {
        class: "reg" + (k === flashKey ? " flash" : ""), testid: "register",
        data: { key: k, origin: e.origin || "unknown", via: e.via || "rest", stale: stale ? "true" : "false" },
      },
      h("div", { class: "rh" },
        h("span", { class: "key", testid: "register-key" }, k),
        h("span", { class: "badge origin o-" + (e.origin || "unknown"), testid: "register-origin", title: (ORIGINS.find((o) => o[0] === e.origin) || ["", ""])[1] }, e.origin || "?"),
        h("span", { class: "src", testid: "register-source" }, "by ", h("code", {}, e.source || "?")),
        e.preset && h("span", { class: "badge b-neutral", testid: "register-preset", title: "preset" }, "preset " + e.preset),
        S.info && !S.info.registers.some((d) => d.key === k) && h("span", { class: "badge b-neutral", testid: "register-scratch", title: "Undeclared scratch register: value-moving tools never read it" }, "scratch"),
        h("span", { class: "badge b-err", testid: "register-stale", hidden: !stale, title: "older than its max age: tools refuse it until it is fetched again" }, "stale"),
        h("span", { class: "age", testid: "register-age", data: { key: k }, title: "created " + e.created_at + (typeof m === "number" ? ` · max age ${m}s` : "") }, fmtAge(regAge(e)) + (typeof m === "number" ? ` / ${m}s` : ""))),
      h("div", { class: "val", testid: "register-value" }, val),
      e.derived_from && e.derived_from.length ? h("div", { class: "der" }, "derived from " + e.derived_from.join(", ")) : null);
    }));
  }
  $("reg-removed").replaceChildren(...S.removed.map((r) => h("div", { class: "removed", testid: "register-removed", data: { key: r.key }, title: r.at }, `${r.key} was used and cleared at ${new Date(Date.parse(r.at) + S.skew).toLocaleTimeString()}`)));
  renderWalk();
}
function tickAges() {
  for (const el of document.querySelectorAll('[data-testid="register-age"]')) {
    const k = el.dataset.key;
    const e = S.registers.get(k);
    if (!e) continue;
    const m = S.maxAge.get(k);
    el.textContent = fmtAge(regAge(e)) + (typeof m === "number" ? ` / ${m}s` : "");
    const row = el.closest('[data-testid="register"]');
    const stale = isStale(k, e);
    if (row && row.dataset.stale !== String(stale)) {
      row.dataset.stale = String(stale);
      const b = row.querySelector('[data-testid="register-stale"]');
      if (b) b.hidden = !stale;
    }
  }
}

// ---------------------------------------------------------------- context bank
async function refreshContextBank() {
  const bank = await get("/api/sessions/" + sid() + "/context-bank");
  S.contextBank = bank.items || [];
  S.latest = bank.latest_message || [];
  renderContextBank();
}
const CB_TYPES = { eth_address: "address", token_symbol: "token", network: "network", amount: "amount" };
/** An amount item as `{amount, token}` (`token` null when the number is bare), or null for other items. Amounts come
 * as `item_type: "amount"` with `label` = the token they are bound to; a bound pair may also come as an item type of
 * its own carrying the token in `token`/`symbol` or an object value — all read the same. */
function cbAmount(it) {
  if (!/amount/.test(it.item_type || "")) return null;
  const v = it.value;
  const obj = v !== null && typeof v === "object" ? v : null;
  const amount = obj ? (obj.amount ?? obj.value ?? "") : v;
  const token = it.label || it.token || it.symbol || (obj && (obj.token || obj.symbol)) || null;
  return { amount: String(amount), token: token ? String(token) : null };
}
function renderContextBank() {
  const list = $("cb-list");
  $("cb-count").textContent = S.contextBank.length;
  if (!S.contextBank.length) {
    list.replaceChildren(h("div", { class: "empty" }, "Nothing yet. Addresses, tokens, networks and amounts you type in the chat appear here."));
  } else {
    list.replaceChildren(...S.contextBank.map((it) => {
      const amt = cbAmount(it);
      if (amt) {
        // Only an amount together with the token it qualifies authorizes anything; a bare number is shown greyed.
        const bound = amt.token !== null;
        return h("div", { class: "cbitem" + (bound ? "" : " bare"), testid: "cb-item",
          data: { type: it.item_type, value: amt.amount, token: amt.token || "", bound: bound ? "true" : "false", flagged: "false" },
          title: bound ? `${amt.amount} ${amt.token}: an amount you wrote together with its token` : "A number without a token next to it: it authorizes no amount of any token" },
          h("span", { class: "ty" }, "amount"),
          h("span", { class: "v", testid: "cb-amount" }, bound ? `${amt.amount} ${amt.token}` : amt.amount),
          !bound && h("span", { class: "note", testid: "cb-bare-note" }, "does not authorize anything"));
      }
      const flagged = (it.flags || []).length > 0;
      return h("div", { class: "cbitem", testid: "cb-item", data: { type: it.item_type, flagged: flagged ? "true" : "false", value: it.value } },
        h("span", { class: "ty" }, CB_TYPES[it.item_type] || it.item_type),
        h("span", { class: "v" }, it.value),
        it.label && h("span", { class: "l" }, it.label),
        flagged && h("span", { class: "badge b-err", testid: "cb-flag", title: "The mixed-case checksum is wrong: likely a typo. The agent will not use it without asking you." }, "⚠ " + it.flags.join(", ").replace(/_/g, " ")));
    }));
  }
  renderWalk();
}

// ---------------------------------------------------------------- chat
function scrollChat() { const c = $("chatlog"); c.scrollTop = c.scrollHeight; }
/** Appends to the chat, above the "working…" line while a turn runs. */
function appendChat(el) { const c = $("chatlog"); const ty = $("typing"); if (ty) c.insertBefore(el, ty); else c.append(el); }
function addMsg(role, text, extra) {
  const el = h("div", { class: "msg " + role + (extra && extra.cls ? " " + extra.cls : ""), testid: extra && extra.testid || "chat-msg", data: { role } }, text);
  appendChat(el);
  scrollChat();
  return el;
}
function renderHistory(history) {
  for (const m of history) {
    if (m.role === "user") { addMsg("user", m.content); S.latestText = m.content; }
    else if (m.role === "assistant") {
      if (m.content) addMsg("assistant", m.content);
      for (const c of m.tool_calls || []) chatToolCall({ tool: c.name, params: c.arguments }, true);
    } else if (m.role === "tool") {
      let parsed = null;
      try { parsed = JSON.parse(m.content); } catch (_) { parsed = m.content; }
      const err = parsed && typeof parsed === "object" && parsed.error;
      chatToolResult({ tool: m.name, ok: !err, output: err ? undefined : parsed, error: err || undefined });
    } else if (m.role === "inbox") addMsg("inbox", (m.name ? "From " + m.name + ": " : "") + m.content);
    else if (m.role === "console") consoleFromHistory(m);
    else addMsg("system", m.content);
  }
}
/** A tool console call (or the user's decision on one) recorded in the session's history, shown as it was live. */
function consoleFromHistory(m) {
  let rec = null;
  try { rec = JSON.parse(m.content); } catch (_) { rec = null; }
  if (!rec || typeof rec !== "object") { addMsg("system", m.content); return; }
  const tool = rec.tool || m.name || "?";
  const params = rec.decision ? { decision: rec.decision } : rec.params || {};
  chatToolCall({ tool, params });
  const row = S.toolRows[S.toolRows.length - 1].row;
  row.dataset.source = "console";
  row.querySelector(".tn").title = rec.decision ? "your decision in the UI" : "run from the tool console";
  chatToolResult({ tool, ok: !!rec.ok, output: rec.output, error: rec.error });
}
function argsLine(params) {
  if (!params || typeof params !== "object") return String(params === undefined ? "" : params);
  return Object.entries(params).filter(([, v]) => v !== null).map(([k, v]) => `${k}: ${typeof v === "string" ? JSON.stringify(v) : JSON.stringify(v)}`).join(", ");
}
function chatToolCall(d) {
  if (S.streamEl) { S.streamEl.classList.remove("streaming"); S.streamEl = null; }
  const status = h("span", { class: "badge b-neutral", testid: "chat-tool-status" }, "running");
  const body = h("pre", {}, pretty(d.params));
  const row = h("details", { class: "toolrow", testid: "chat-tool", data: { tool: d.tool, status: "running" } },
    h("summary", {}, "⚙", h("span", { class: "tn" }, d.tool), h("span", { class: "args" }, "(" + argsLine(d.params) + ")"), status), body);
  appendChat(row);
  S.toolRows.push({ tool: d.tool, row, status, body });
  scrollChat();
}
function chatToolResult(d) {
  let idx = -1;
  for (let i = S.toolRows.length - 1; i >= 0; i--) if (S.toolRows[i].tool === d.tool && S.toolRows[i].row.dataset.status === "running") { idx = i; break; }
  if (idx < 0) { chatToolCall({ tool: d.tool, params: {} }); idx = S.toolRows.length - 1; }
  const t = S.toolRows[idx];
  if (d.ok) {
    t.row.dataset.status = "ok";
    t.status.className = "badge b-ok";
    const out = d.output;
    t.status.textContent = out && out.cached_as ? "✓ → " + out.cached_as : out && out.status ? "✓ " + out.status : "✓ ok";
    if (out !== null && out !== undefined) t.body.append("\n→ ", pretty(out));
  } else {
    const code = d.error && d.error.code || "error";
    t.row.dataset.status = code === "confirmation_required" ? "confirmation" : "error";
    t.status.className = "badge " + (code === "confirmation_required" ? "b-warn" : "b-err");
    t.status.textContent = code === "confirmation_required" ? "⚠ waiting for approval" : "✗ " + code;
    if (d.error) t.body.append("\n→ ", d.error.message ? `${d.error.code}: ${d.error.message}` : pretty(d.error));
  }
  scrollChat();
}
function onAgentMessage(d) {
  if (d.delta !== undefined) {
    if (!S.streamEl) S.streamEl = addMsg("assistant", "", { cls: "streaming" });
    S.streamEl.textContent += d.delta;
    scrollChat();
    return;
  }
  if (d.final) {
    const role = d.role === "system" ? "system" : "assistant";
    clearTimeout(S.finalTimer);
    if (S.finalEl) {
      // The reply was already shown from the HTTP response (this event came late): update that bubble, never add one.
      S.finalEl.textContent = d.content || S.finalEl.textContent;
      if (S.streamEl && S.streamEl !== S.finalEl) S.streamEl.remove();
      S.streamEl = null;
      S.finalEl = null;
      return;
    }
    if (S.streamEl && role === "assistant") {
      S.streamEl.textContent = d.content || S.streamEl.textContent;
      S.streamEl.classList.remove("streaming");
    } else {
      if (S.streamEl) S.streamEl.classList.remove("streaming");
      addMsg(role, d.content || "");
    }
    S.streamEl = null;
    S.turnFinal = true;
    if (d.usage) addUsage(d.usage);
  }
}
/** The turn's token usage, under its last message. */
function addUsage(u) {
  const cached = u.cache_read_tokens ? ` (${u.cache_read_tokens} from the prompt cache)` : "";
  appendChat(h("div", { class: "usage muted", testid: "turn-usage", data: { role: "usage" } }, `${u.input_tokens} tokens in${cached} · ${u.output_tokens} out`));
}
function setTurn(running) {
  S.turnRunning = running;
  $("chat-send").disabled = running;
  $("chat-stop").hidden = !running;
  const ty = $("typing");
  if (running && !ty) $("chatlog").append(h("div", { class: "typing", id: "typing" }, "the agent is working…"));
  if (!running && ty) ty.remove();
}
$("chat-stop").addEventListener("click", () => { call("POST", "/api/sessions/" + sid() + "/cancel"); });
// What the user pastes (or drops) into the message: the server reads a pasted text (but a lone address or number) as quoted,
// so someone else's "send 7 USDC to 0x…", pasted to ask about it, moves nothing by itself.
S.pasted = [];
// A textarea's value has \n line ends, whatever the clipboard held.
const pastedText = (t) => t.replace(/\r\n?/g, "\n");
$("chat-input").addEventListener("paste", (ev) => {
  const t = ev.clipboardData && ev.clipboardData.getData("text/plain");
  if (t) S.pasted.push(pastedText(t));
});
$("chat-input").addEventListener("drop", (ev) => {
  const t = ev.dataTransfer && ev.dataTransfer.getData("text/plain");
  if (t) S.pasted.push(pastedText(t));
});
$("chat-input").addEventListener("input", (ev) => {
  if (!ev.target.value) { S.pasted = []; return; }
  // Text that comes back by undo or redo, or a replacement the keyboard offers, fires no paste event: all of the
  // message counts as pasted then.
  if (/^history|^insertReplacementText/.test(ev.inputType || "")) S.pasted.push(ev.target.value);
});
$("chat-input").addEventListener("keydown", (ev) => {
  if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); $("chatform").requestSubmit(); }
});
$("chatform").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const input = $("chat-input");
  const text = input.value.trim();
  if (!text || S.turnRunning) return;
  input.value = "";
  // More pastes than the server takes, or one longer than it takes: the whole message counts as pasted.
  const pasted = S.pasted.length > 32 || S.pasted.some((p) => p.length > 65536) ? [text] : S.pasted;
  S.pasted = [];
  addMsg("user", text);
  S.latestText = text;
  S.turnFinal = false;
  S.finalEl = null;
  clearTimeout(S.finalTimer);
  if (S.info && S.info.agent) setTurn(true);
  let r;
  try { r = await call("POST", "/api/sessions/" + sid() + "/messages", { content: text, pasted }); }
  catch (e) { setTurn(false); addMsg("system", "Could not send: " + e.message, { cls: "error" }); return; }
  setTurn(false);
  if (!r.ok) {
    const e = r.data && r.data.error || {};
    addMsg("system", `✗ ${e.code || r.status}: ${e.message || "request failed"}`, { cls: "error" });
    return;
  }
  if (r.data.agent === null) {
    const items = r.data.context_bank || [];
    const note = addMsg("system", "", { testid: "chat-note" });
    note.append("No LLM is configured, so nothing answers here — but your message went to the ",
      h("b", {}, "context bank"), ` (${items.length} item${items.length === 1 ? "" : "s"} so far).`,
      h("div", { class: "cbchips" }, ...items.map((it) => {
        const amt = cbAmount(it);
        if (amt && !amt.token) return h("span", { class: "cbchip bare", title: "A number without a token: it authorizes nothing" }, h("span", { class: "v" }, amt.amount), h("span", { class: "muted" }, "no token"));
        if (amt) return h("span", { class: "cbchip" }, h("span", { class: "v" }, amt.amount), h("span", { class: "muted" }, amt.token));
        return h("span", { class: "cbchip" }, h("span", { class: "v" }, it.value), h("span", { class: "muted" }, it.label || CB_TYPES[it.item_type] || ""));
      })),
      h("div", { style: "margin-top:6px" }, "Act on it from the ", h("button", { type: "button", class: "link", onclick: () => { $("console").scrollIntoView({ behavior: "smooth" }); $("tool-select").focus(); } }, "tool console ↓"),
        " — the swap walkthrough there pre-fills each step from what you typed."));
    S.contextBank = items; S.latest = r.data.latest_message || []; renderContextBank();
  } else if (r.data.agent && !S.turnFinal && r.data.agent.text) {
    // The HTTP response can overtake the streamed `final` event. Wait for it briefly; if it has not come, show the
    // outcome's text in its place (a late `final` then updates this bubble instead of adding a second one).
    const outcome = r.data.agent;
    S.finalTimer = setTimeout(() => {
      if (S.turnFinal) return;
      S.turnFinal = true;
      if (S.streamEl) { S.streamEl.textContent = outcome.text; S.streamEl.classList.remove("streaming"); S.finalEl = S.streamEl; S.streamEl = null; }
      else S.finalEl = addMsg(outcome.stopped ? "system" : "assistant", outcome.text);
    }, 1500);
  }
  loadSessions().catch(() => {});
});

// ---------------------------------------------------------------- tool console: schema → form
function resolveRef(s, root) {
  let guard = 0;
  while (s && typeof s.$ref === "string" && guard++ < 16) {
    const m = /^#\/(\$defs|definitions)\/(.+)$/.exec(s.$ref);
    const target = m && root && root[m[1]] ? root[m[1]][m[2]] : null;
    if (!target) break;
    const { $ref: _ignored, ...rest } = s;
    s = Object.assign({}, target, rest);
  }
  return s || {};
}
function analyze(schema, root) {
  const s = resolveRef(schema, root);
  const out = { types: new Set(), options: null, nullable: false, free: false };
  const addOpts = (opts) => { out.options = (out.options || []).concat(opts); };
  if (s.const !== undefined) {
    if (s.const === null) out.nullable = true; else addOpts([{ value: s.const, desc: s.description || "" }]);
  }
  if (Array.isArray(s.enum)) {
    addOpts(s.enum.filter((v) => v !== null).map((v) => ({ value: v, desc: "" })));
    if (s.enum.includes(null)) out.nullable = true;
  }
  const types = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
  for (const t of types) { if (t === "null") out.nullable = true; else out.types.add(t); }
  if (types.some((t) => t !== "null") && s.const === undefined && !Array.isArray(s.enum)) out.free = true;
  for (const key of ["anyOf", "oneOf", "allOf"]) {
    if (!Array.isArray(s[key])) continue;
    for (const sub of s[key]) {
      const a = analyze(sub, root);
      if (a.nullable) out.nullable = true;
      a.types.forEach((t) => out.types.add(t));
      if (a.options) addOpts(a.options);
      if (a.free) out.free = true;
    }
  }
  return out;
}
function fieldSpec(name, schema, required, root) {
  const s = resolveRef(schema, root);
  const a = analyze(s, root);
  let kind;
  if (a.options && a.options.length && !a.free) kind = "enum";
  else if (a.types.size === 1) {
    const t = [...a.types][0];
    kind = t === "string" ? "string" : t === "integer" ? "integer" : t === "number" ? "number" : t === "boolean" ? "boolean" : "json";
  } else if (a.types.size === 2 && a.types.has("integer") && a.types.has("number")) kind = "number";
  else kind = "json";
  return { name, kind, nullable: a.nullable, required, options: a.options || [], description: s.description || "", default: s.default, schema: s };
}
function toolFields(tool) {
  const root = tool.input_schema || {};
  const sch = resolveRef(root, root);
  const req = new Set(sch.required || []);
  return Object.entries(sch.properties || {}).map(([n, p]) => fieldSpec(n, p, req.has(n), root));
}
function renderToolSelect() {
  const sel = $("tool-select");
  const plain = S.tools.filter((t) => t.kind !== "value_moving");
  const vm = S.tools.filter((t) => t.kind === "value_moving");
  sel.replaceChildren(
    h("optgroup", { label: "Tools" }, ...plain.map((t) => h("option", { value: t.name }, t.name))),
    vm.length ? h("optgroup", { label: "Value-moving (may ask for approval)" }, ...vm.map((t) => h("option", { value: t.name }, "⚠ " + t.name))) : null);
  const first = S.toolsByName.has("local_burner_wallet") ? "local_burner_wallet" : S.tools[0] && S.tools[0].name;
  if (first) { sel.value = first; renderToolForm(); }
}
$("tool-select").addEventListener("change", () => renderToolForm());
function renderToolForm(prefill) {
  const tool = S.toolsByName.get($("tool-select").value);
  const fields = $("tool-fields");
  if (!tool) { fields.replaceChildren(); return; }
  const desc = $("tool-desc");
  desc.replaceChildren(...ticks(tool.description || ""));
  if (tool.kind === "value_moving") desc.append(h("div", { class: "vm-note", style: "margin-top:6px" }, "Value-moving: it takes register and preset names only. Above the auto-approve limits, or with model-typed inputs, it waits for your approval."));
  const specs = toolFields(tool);
  fields.replaceChildren(...specs.flatMap((f) => {
    const id = "f-" + f.name;
    const common = { id, name: f.name, testid: "field-" + f.name, data: { kind: f.kind, nullable: f.nullable ? "true" : "false" }, oninput: updatePreview, onchange: updatePreview };
    let input;
    const pre = prefill && Object.prototype.hasOwnProperty.call(prefill, f.name) ? prefill[f.name] : f.default;
    if (f.kind === "enum") {
      const opts = [];
      if (f.nullable || !f.required) opts.push(h("option", { value: "" }, f.nullable ? "— null —" : "— omit —"));
      f.options.forEach((o) => opts.push(h("option", { value: String(o.value), title: o.desc }, String(o.value) + (o.desc ? " — " + o.desc : ""))));
      input = h("select", common, ...opts);
      const at = f.options.findIndex((o) => o.value === pre);
      input.value = at >= 0 ? String(f.options[at].value) : (f.nullable || !f.required ? "" : String(f.options[0].value));
    } else if (f.kind === "boolean" && !f.nullable) {
      input = h("input", Object.assign({ type: "checkbox" }, common));
      input.checked = pre === true;
    } else if (f.kind === "boolean") {
      input = h("select", common, h("option", { value: "" }, "— null —"), h("option", { value: "true" }, "true"), h("option", { value: "false" }, "false"));
      input.value = pre === true ? "true" : pre === false ? "false" : "";
    } else if (f.kind === "integer" || f.kind === "number") {
      input = h("input", Object.assign({ type: "number", step: f.kind === "integer" ? "1" : "any", placeholder: f.nullable ? "null" : "" }, common));
      if (typeof pre === "number") input.value = String(pre);
    } else if (f.kind === "json") {
      input = h("textarea", Object.assign({ rows: 3, class: "mono", placeholder: f.nullable ? "null (or JSON)" : "JSON" }, common));
      if (pre !== undefined && pre !== null) input.value = JSON.stringify(pre, null, 2);
      else if (f.required && !f.nullable && f.schema.properties) {
        // A skeleton of the object's fields, to be filled in.
        const skel = {};
        for (const [k, sub] of Object.entries(f.schema.properties)) skel[k] = analyze(sub, tool.input_schema).nullable ? null : "";
        input.value = JSON.stringify(skel);
      }
    } else {
      input = h("input", Object.assign({ type: "text", placeholder: f.nullable ? "null" : "" }, common));
      if (typeof pre === "string") input.value = pre;
    }
    const help = [...ticks(f.description), f.nullable ? " (leave empty for null)" : !f.required ? " (optional: leave empty to omit)" : ""].filter(Boolean);
    return [h("label", { for: id }, f.name, f.required && !f.nullable ? h("span", { class: "req", title: "required" }, " *") : null),
      h("div", {}, input, help.length ? h("div", { class: "fhelp" }, help) : null, h("div", { class: "ferr", testid: "field-error-" + f.name, hidden: true }))];
  }));
  updatePreview();
}
function collectBody() {
  const tool = S.toolsByName.get($("tool-select").value);
  if (!tool) return { body: {}, errors: [] };
  const body = {}, errors = [];
  for (const f of toolFields(tool)) {
    const el = $("f-" + f.name);
    const errEl = tid("field-error-" + f.name);
    if (errEl) { errEl.hidden = true; errEl.textContent = ""; }
    if (!el) continue;
    const empty = () => { if (f.nullable) body[f.name] = null; else if (f.required && f.kind === "string") body[f.name] = ""; };
    let v;
    if (f.kind === "enum") {
      if (el.value === "") { empty(); continue; }
      const o = f.options.find((x) => String(x.value) === el.value);
      if (!o) { errors.push([f.name, "choose one of the options"]); continue; }
      v = o.value;
    } else if (f.kind === "boolean" && el.type === "checkbox") v = el.checked;
    else if (f.kind === "boolean") { if (el.value === "") { empty(); continue; } v = el.value === "true"; }
    else if (f.kind === "integer" || f.kind === "number") {
      if (el.value.trim() === "") { empty(); continue; }
      v = Number(el.value);
      if (!Number.isFinite(v) || (f.kind === "integer" && !Number.isInteger(v))) { errors.push([f.name, "not " + (f.kind === "integer" ? "an integer" : "a number")]); continue; }
    } else if (f.kind === "json") {
      if (el.value.trim() === "") { empty(); continue; }
      try { v = JSON.parse(el.value); } catch (e) { errors.push([f.name, "not valid JSON: " + e.message]); continue; }
    } else {
      if (el.value === "") { empty(); continue; }
      v = el.value;
    }
    body[f.name] = v;
  }
  return { body, errors };
}
function updatePreview() {
  const { body, errors } = collectBody();
  $("tool-preview").textContent = errors.length ? errors.map(([n, m]) => `${n}: ${m}`).join("\n") : JSON.stringify(body);
}
$("tool-form").addEventListener("submit", (ev) => { ev.preventDefault(); runTool(); });
$("tool-run").addEventListener("click", () => runTool());
async function runTool() {
  const name = $("tool-select").value;
  const { body, errors } = collectBody();
  if (errors.length) {
    for (const [n, m] of errors) { const e = tid("field-error-" + n); if (e) { e.textContent = m; e.hidden = false; } }
    return;
  }
  const btn = $("tool-run");
  btn.disabled = true;
  $("tool-running").textContent = "running " + name + "…";
  let r;
  // Recorded in the session's history, so the call is shown again after a reload.
  try { r = await call("POST", "/api/sessions/" + sid() + "/tools/" + encodeURIComponent(name) + "?record=true", body); }
  catch (e) { r = { status: 0, ok: false, data: { error: { code: "network_error", message: e.message } } }; }
  finally { btn.disabled = false; $("tool-running").textContent = ""; }
  showToolResult(name, r);
}
function showToolResult(name, r) {
  const box = $("tool-result");
  box.hidden = false;
  const err = r.data && r.data.error;
  if (r.ok && r.status !== 202 && r.data && r.data.ok) {
    box.dataset.status = "ok"; box.dataset.code = "";
    const out = r.data.output;
    box.replaceChildren(h("div", { class: "rh" }, h("span", { class: "badge b-ok" }, "✓ " + r.status), h("b", { class: "mono" }, name),
      out && out.cached_as ? h("span", { class: "muted" }, "stored in register ", h("code", {}, out.cached_as)) : null,
      out && out.status ? h("span", { class: "badge " + (out.status === "confirmed" ? "b-ok" : "b-warn"), testid: "tool-result-status" }, out.status) : null),
    out !== null && out !== undefined ? h("pre", { testid: "tool-result-output" }, pretty(out)) : null);
  } else if (err && err.code === "confirmation_required") {
    const cid = err.details && err.details.confirmation_id;
    box.dataset.status = "confirmation"; box.dataset.code = err.code;
    box.replaceChildren(h("div", { class: "rh" }, h("span", { class: "badge b-warn" }, "⚠ " + r.status), h("b", { class: "mono" }, name),
      h("span", {}, "waits for your approval"), cid ? h("button", { type: "button", class: "small", onclick: () => openConfirm(cid) }, "Review") : null),
    h("div", { class: "muted" }, err.message));
    if (cid) {
      S.consoleConfirm = cid;
      if (!S.pending.has(cid)) S.pending.set(cid, { id: cid, tool: name, params: {}, summary: err.details.summary || {}, reason: err.details.reason || err.message, state: "pending" });
      renderPending();
      openConfirm(cid);
    }
  } else {
    const e = err || { code: "http_" + r.status, message: "unexpected response" };
    box.dataset.status = "error"; box.dataset.code = e.code;
    box.replaceChildren(h("div", { class: "rh" }, h("span", { class: "badge b-err" }, "✗ " + r.status), h("b", { class: "mono" }, name),
      h("code", { testid: "tool-error-code" }, e.code)),
    h("div", { testid: "tool-error-message" }, e.message || ""),
    e.details !== undefined && e.details !== null ? h("pre", { style: "margin-top:5px" }, pretty(e.details)) : null);
  }
}

// Swap and transfer walkthroughs: pre-fill the console from the user's latest message (its tokens, the amount bound to
// the first, the address it names), one step at a time; never from an older message, so a step cannot carry an
// earlier action's amount. A latest message that names an address and at most one token is a transfer.
function latestOf(type, n) { const xs = S.latest.filter((i) => i.item_type === type && !(i.flags || []).length); return xs[n || 0]; }
const NO_AMOUNT = "it has no amount written together with its token (e.g. \u201cswap 0.01 ETH for USDC\u201d)";
/** The amount the latest message binds to `token` (an item), or null. */
function boundTo(token) {
  const bound = S.latest.map(cbAmount).filter((a) => a && a.token);
  return token ? bound.find((a) => a.token.toLowerCase() === token.value.toLowerCase()) || null : null;
}
/** What the latest message asks for: `{kind: "swap"|"transfer", …}`, or `{kind, why}` when it cannot be pre-filled. */
function latestAction() {
  const to = S.latest.find((i) => i.item_type === "eth_address");
  const tokens = S.latest.filter((i) => i.item_type === "token_symbol" && !(i.flags || []).length);
  const first = tokens[0];
  const amount = boundTo(first);
  const anyBound = S.latest.map(cbAmount).some((a) => a && a.token);
  const why = anyBound && first ? `it binds no amount to ${first.value}, the token it names first` : NO_AMOUNT;
  if (to && tokens.length <= 1) {
    if ((to.flags || []).length) return { kind: "transfer", why: `the address ${to.value} has a wrong checksum (write it again)` };
    if (!amount) return { kind: "transfer", why };
    // context_address counts every address the user wrote, in order; null when there is only one.
    const all = S.contextBank.filter((i) => i.item_type === "eth_address");
    const index = all.length === 1 ? null : all.findIndex((i) => i.value === to.value) + 1;
    return { kind: "transfer", token: first.value, amount: amount.amount, to: to.value, index };
  }
  if (!amount) return { kind: "swap", why };
  return { kind: "swap", sell: first.value, buy: tokens[1] ? tokens[1].value : "", amount: amount.amount };
}
function walkSteps(a) {
  const net = (latestOf("network") || {}).value || (S.info && S.info.networks[0] ? S.info.networks[0].name : "base");
  if (a.kind === "transfer") {
    const t = a.why ? { token: "", amount: "", index: null } : a;
    return [
      ["token", "token_lookup", { symbol: t.token, network: net, cache_as: "transfer_token" }, "transfer_token"],
      ["amount", "to_raw_amount", { amount: t.amount, token_register: "transfer_token", cache_as: "transfer_amount" }, "transfer_amount"],
      ["recipient", "context_address", { index: t.index, cache_as: "recipient_address" }, "recipient_address"],
      ["send", "transfer", { network: net, token_register: "transfer_token", amount_register: "transfer_amount", preset: null,
        recipient_register: "recipient_address" }, null],
    ];
  }
  const s = a.why ? { sell: "", buy: "", amount: "" } : a;
  return [
    ["wallet", "local_burner_wallet", { action: "address", token_register: null, network: null, cache_as: "wallet_address" }, "wallet_address"],
    ["sell token", "token_lookup", { symbol: s.sell, network: net, cache_as: "sell_token" }, "sell_token"],
    ["buy token", "token_lookup", { symbol: s.buy, network: net, cache_as: "buy_token" }, "buy_token"],
    ["amount", "to_raw_amount", { amount: s.amount, token_register: "sell_token", cache_as: "sell_amount" }, "sell_amount"],
    ["quote", "x402_fetch", { preset: "swap_quote", network: net, cache_as: "swap_quote" }, "swap_quote"],
    ["send", "web3_tx", { from_register: "swap_quote", network: net }, null],
  ];
}
function renderWalk() {
  const w = tid("walkthrough");
  if (!S.toolsByName.has("web3_tx")) { w.replaceChildren(); return; }
  const a = latestAction();
  // Quoted only when the text this tab knows holds every value of the latest message: one sent from another tab or
  // client updates the values (by event) but not the text, and a quote must never contradict what is pre-filled.
  const text = S.latestText.toLowerCase().replace(/[,_]/g, "");
  const fits = S.latest.every((i) => text.includes(String((cbAmount(i) || {}).amount || i.value).toLowerCase()));
  const quoted = S.latestText && fits ? ` \u201c${S.latestText}\u201d` : S.latest.length ? " (sent from another tab or client)" : "";
  const what = a.kind === "transfer" ? `send ${a.amount} ${a.token} to ${a.to}` : `sell ${a.amount} ${a.sell}${a.buy ? ` for ${a.buy}` : ""}`;
  const source = (text, prefilled) => h("div", { class: "faint", testid: "walkthrough-source", data: { prefilled, kind: a.kind } }, text);
  const from = !S.latestText && !S.latest.length
    ? h("div", { class: "faint", testid: "walkthrough-source" }, "Write what to swap or send in the chat first (e.g. \u201cswap 0.01 ETH for USDC\u201d, \u201csend 5 USDC to 0x\u2026\u201d): the steps pre-fill from your latest message.")
    : a.why ? source(`Your latest message${quoted}: ${a.why}, so nothing is pre-filled.`, "false")
      : source(`From your latest message${quoted}: ${what}.`, "true");
  const title = a.kind === "transfer" ? "Transfer walkthrough:" : "Swap walkthrough:";
  w.replaceChildren(from, h("span", { class: "faint", testid: "walkthrough-title" }, title), ...walkSteps(a).map(([label, tool, params, reg], i) =>
    h("button", { type: "button", class: reg && S.registers.has(reg) ? "done" : "", testid: "walkthrough-step", data: { tool }, title: `fill the form: ${tool} ${JSON.stringify(params)}`,
      onclick: () => { $("tool-select").value = tool; renderToolForm(params); } }, `${i + 1} ${label}`)));
}

// ---------------------------------------------------------------- confirmations
async function refreshPending() {
  const { pending } = await get("/api/sessions/" + sid() + "/confirmations");
  S.pending = new Map((pending || []).map((c) => [c.id, c]));
  renderPending();
  const first = [...S.pending.keys()].find((id) => !S.dismissed.has(id));
  if (first && !$("confirm").open) openConfirm(first);
}
function oneLine(c) {
  const s = c.summary || {};
  if (s.sell && (s.buy_minimum || s.buy_expected)) return `${s.action || c.tool}: sell ${s.sell} → at least ${s.buy_minimum || s.buy_expected}`;
  return `${s.action || c.tool}: ${Object.entries(s).filter(([k]) => k !== "action").slice(0, 3).map(([k, v]) => `${humanKey(k).toLowerCase()} ${v}`).join(", ")}`;
}
function renderPending() {
  const panel = $("pending-panel");
  $("pending-count").textContent = S.pending.size;
  panel.classList.toggle("none", S.pending.size === 0);
  const list = $("pending-list");
  if (!S.pending.size) { list.replaceChildren(h("div", { class: "empty" }, "Nothing waits for your approval.")); return; }
  list.replaceChildren(...[...S.pending.values()].map((c) => h("div", { class: "pitem", testid: "pending-item", data: { id: c.id } },
    h("div", { class: "pt" }, h("div", {}, h("b", {}, oneLine(c))), h("div", { class: "pr" }, c.reason || "")),
    h("button", { type: "button", class: "primary small", testid: "pending-review", onclick: () => { S.dismissed.delete(c.id); openConfirm(c.id); } }, "Review"))));
}
/** How long a newly drawn question's Approve and Deny stay disabled: a click aimed at what was there a moment before
 * (the previous dialog's Close, in the same place as Approve; the second click of a double click) lands on nothing. */
const ARM_MS = 800;
function openConfirm(id) {
  const c = S.pending.get(id);
  const dlg = $("confirm");
  if (!c) return;
  if (dlg.open && S.dialogId === id) return;
  if (dlg.open && S.dialogId !== id && !S.dialogDone) return; // one decision at a time; the rest wait in "About to do"
  S.dialogId = id; S.dialogDone = false;
  const s = c.summary || {};
  const isSwap = s.sell !== undefined && (s.buy_expected !== undefined || s.buy_minimum !== undefined);
  dlg.replaceChildren(
    h("div", { class: "dlg-h" }, h("span", { class: "badge b-warn", testid: "confirm-badge" }, "approval needed"),
      h("h3", { testid: "confirm-title" }, "Approve " + (s.action || c.tool) + (s.network ? " on " + s.network : "") + "?")),
    h("div", { class: "dlg-b" },
      isSwap ? h("div", { class: "swapline", testid: "confirm-swapline" },
        h("div", { class: "side" }, h("div", { class: "k" }, "You sell"), h("div", { class: "big" }, s.sell)),
        h("div", { class: "arrow" }, "→"),
        h("div", { class: "side" }, h("div", { class: "k" }, "You receive"), h("div", { class: "big" }, s.buy_expected || s.buy_minimum),
          s.buy_minimum ? h("div", { class: "muted" }, "at least " + s.buy_minimum) : null)) : null,
      h("table", { class: "kv", testid: "confirm-summary" }, ...Object.entries(s).filter(([k, v]) => v !== null && v !== undefined && k !== "no_independent_price").map(([k, v]) =>
        h("tr", { testid: "confirm-field", data: { field: k } }, h("th", {}, humanKey(k)), h("td", { title: summaryText(k, v) }, summaryText(k, v))))),
      s.no_independent_price ? h("div", { class: "reason", testid: "confirm-no-price" }, h("b", {}, "No independent price: "),
        `${s.no_independent_price}. Nothing but the quote itself says what this is worth${s.buy_minimum ? "; you receive at least " + s.buy_minimum : ""}.`) : null,
      c.reason ? h("div", { class: "reason", testid: "confirm-reason" }, h("b", {}, "Why you are asked: "), c.reason) : null,
      h("details", { class: "muted" }, h("summary", {}, "tool call"), h("pre", {}, `${c.tool} ${JSON.stringify(c.params || {})}\nconfirmation ${c.id}${c.created_at ? "\ncreated " + c.created_at : ""}`)),
      h("div", { id: "confirm-outcome", testid: "confirm-outcome" })),
    h("div", { class: "dlg-f", id: "confirm-actions" },
      h("button", { type: "button", class: "link", style: "margin-right:auto", testid: "confirm-later", title: "Keep it pending in “About to do”",
        onclick: () => { S.dismissed.add(c.id); closeConfirm(); } }, "Decide later"),
      h("button", { type: "button", class: "danger", testid: "confirm-deny", onclick: () => decide(c, false) }, "Deny"),
      h("button", { type: "button", class: "primary", testid: "confirm-approve", onclick: () => decide(c, true) }, "Approve & send")));
  const armed = [...dlg.querySelectorAll('[data-testid="confirm-approve"], [data-testid="confirm-deny"]')];
  armed.forEach((b) => { b.disabled = true; });
  setTimeout(() => { if (S.dialogId === id && !S.dialogDone) armed.forEach((b) => { b.disabled = false; }); }, ARM_MS);
  if (!dlg.open) dlg.showModal();
}
/** Closes the dialog; the next undismissed pending action (if any) opens after it. */
function closeConfirm() {
  const dlg = $("confirm");
  if (dlg.open) dlg.close();
  S.dialogId = null;
  const next = [...S.pending.keys()].find((id) => !S.dismissed.has(id));
  if (next) setTimeout(() => openConfirm(next), 50);
}
// Esc: put the decision off; it stays in "About to do" (Review reopens it).
$("confirm").addEventListener("cancel", (ev) => {
  ev.preventDefault();
  if (S.dialogId && !S.dialogDone) S.dismissed.add(S.dialogId);
  closeConfirm();
});
async function decide(c, approve) {
  S.deciding = c.id;
  const actions = $("confirm-actions");
  actions.querySelectorAll("button").forEach((b) => { b.disabled = true; });
  const outcome = $("confirm-outcome");
  outcome.replaceChildren(h("div", { class: "muted" }, approve ? "Sending… (simulated again, journaled, then broadcast)" : "Denying…"));
  const r = await call("POST", `/api/sessions/${sid()}/confirmations/${encodeURIComponent(c.id)}/${approve ? "approve" : "deny"}`);
  S.dialogDone = true;
  S.pending.delete(c.id);
  renderPending();
  const done = h("button", { type: "button", class: "primary", testid: "confirm-close", onclick: () => closeConfirm() }, "Close");
  // The question is answered: the title says what became of it.
  const title = document.querySelector('#confirm [data-testid="confirm-title"]');
  const what = (c.summary && c.summary.action) || c.tool;
  const badge = document.querySelector('#confirm [data-testid="confirm-badge"]');
  const setTitle = (t) => {
    if (title) title.textContent = t;
    if (badge) {
      const good = r.ok && approve;
      badge.className = "badge " + (good ? "b-ok" : "b-err");
      badge.textContent = good ? "approved" : approve ? "not sent" : "denied";
    }
  };
  if (!r.ok) setTitle(`${what}: not sent`);
  else if (!approve) setTitle(`${what}: denied`);
  else if (r.data.resumed === "agent") setTitle(`${what}: approved`);
  else setTitle(`${what}: ${(r.data.output && r.data.output.status) || "done"}`);
  if (!r.ok) {
    const e = r.data && r.data.error || { code: "http_" + r.status, message: "request failed" };
    outcome.replaceChildren(h("div", { class: "receipt bad", testid: "confirm-error" }, h("b", {}, "✗ " + e.code), " ", e.message || ""));
    if (S.consoleConfirm === c.id) showToolResult(c.tool, r);
  } else if (!approve) {
    outcome.replaceChildren(h("div", { class: "receipt bad", testid: "confirm-denied" }, "Denied. Nothing was signed or sent."));
    if (S.consoleConfirm === c.id) {
      const box = $("tool-result");
      box.dataset.status = "denied"; box.dataset.code = "denied";
      box.replaceChildren(h("div", { class: "rh" }, h("span", { class: "badge b-err" }, "✗ denied"), h("b", { class: "mono" }, c.tool),
        h("span", { testid: "tool-result-denied" }, "you denied it: nothing was signed or sent")));
    }
  } else if (r.data.resumed === "agent") {
    outcome.replaceChildren(h("div", { class: "receipt", testid: "confirm-resumed" }, "Approved — the agent carries on."));
  } else {
    const out = r.data.output || {};
    const good = out.status === "confirmed";
    outcome.replaceChildren(h("div", { class: "receipt" + (good ? "" : " bad"), testid: "receipt" },
      h("div", { style: "display:flex;gap:8px;align-items:center;margin-bottom:6px" }, h("b", {}, "Receipt"),
        h("span", { class: "badge " + (good ? "b-ok" : "b-err"), testid: "receipt-status" }, out.status || "done")),
      h("table", { class: "kv" },
        out.hash ? h("tr", {}, h("th", {}, "Transaction"), h("td", { testid: "receipt-hash" }, out.hash)) : null,
        out.block_number !== undefined ? h("tr", {}, h("th", {}, "Block"), h("td", {}, String(out.block_number))) : null,
        out.gas_used !== undefined ? h("tr", {}, h("th", {}, "Gas used"), h("td", {}, String(out.gas_used))) : null,
        out.journal_id ? h("tr", {}, h("th", {}, "Journal"), h("td", {}, out.journal_id)) : null)));
    if (S.consoleConfirm === c.id) showToolResult(c.tool, r);
  }
  if (S.consoleConfirm === c.id) S.consoleConfirm = null;
  S.deciding = null;
  actions.replaceChildren(done);
  done.focus();
  moneyChanged();
}

// ---------------------------------------------------------------- memory, tasks, reminders (the journal: money.js)
/** The money views (money.js) follow the session and refresh when value moved. */
function moneyChanged(session) {
  document.dispatchEvent(new CustomEvent("holdfast:money", { detail: { session: session || S.session } }));
}
/** The current session's agent: whose memory, tasks and reminders the tabs show. */
function sessionAgent() {
  const s = (S.sessions || []).find((x) => x.id === S.session);
  return s && s.agent ? s.agent : null;
}
/** `GET path?agent=…` for the current session's agent; `{agent, …}` back. */
async function ofAgent(path) {
  const agent = sessionAgent();
  return get(path + (agent ? "?agent=" + encodeURIComponent(agent) : ""));
}
/** With several agents, a caption naming whose list a tab shows. */
function whose(agent) {
  return S.info && (S.info.agents || []).length > 1 ? h("div", { class: "cm", testid: "pane-agent", data: { agent } }, "agent " + agent) : null;
}
async function refreshMemory() {
  const r = await ofAgent("/api/memory");
  S.memory = r.blocks || [];
  $("n-memory").textContent = S.memory.length;
  const pane = $("pane-memory");
  if (!S.memory.length) { pane.replaceChildren(...[whose(r.agent), h("div", { class: "empty" }, "No memory blocks. The agent keeps what persists across conversations here (update_memory).")].filter(Boolean)); return; }
  pane.replaceChildren(...[whose(r.agent)].filter(Boolean), ...S.memory.map((b) => h("div", { class: "card", testid: "memory-block", data: { label: b.label } },
    h("div", { class: "ch" }, h("span", { class: "ct mono" }, b.label), h("span", { class: "badge b-neutral" }, b.permission), b.pinned ? h("span", { class: "badge b-neutral" }, "pinned") : null,
      h("span", { class: "cm", style: "margin-left:auto" }, `${(b.value || "").length} / ${b.char_limit} chars · ${rel(b.updated_at)}`)),
    b.description ? h("div", { class: "cm" }, b.description) : null,
    h("pre", { style: "margin-top:5px;font-family:inherit;font-size:13px" }, b.value),
    h("div", { class: "meter" }, h("div", { style: `width:${Math.min(100, 100 * (b.value || "").length / Math.max(1, b.char_limit))}%` })))));
}
async function refreshTasks() {
  const r = await ofAgent("/api/tasks");
  S.tasks = r.tasks || [];
  $("n-tasks").textContent = S.tasks.filter((t) => t.status !== "done").length;
  const pane = $("pane-tasks");
  if (!S.tasks.length) { pane.replaceChildren(...[whose(r.agent), h("div", { class: "empty" }, "No tasks. The agent tracks multi-step work here (track_task).")].filter(Boolean)); return; }
  pane.replaceChildren(...[whose(r.agent)].filter(Boolean), ...S.tasks.map((t) => h("div", { class: "card", testid: "task-item", data: { id: t.id, status: t.status } },
    h("div", { class: "ch" }, h("span", { class: "ct" }, "#" + t.id + " " + t.title), h("span", { class: "badge " + (t.status === "done" ? "b-ok" : t.status === "blocked" ? "b-err" : "b-neutral") }, t.status.replace(/_/g, " ")),
      h("span", { class: "badge " + (t.priority === "urgent" || t.priority === "high" ? "b-warn" : "b-neutral") }, t.priority),
      t.due_at ? h("span", { class: "cm" }, "due " + rel(t.due_at)) : null),
    t.notes ? h("div", { class: "cm" }, t.notes) : null,
    (t.steps || []).length ? h("ol", { class: "steps" }, ...t.steps.map((s) => h("li", { class: s.done ? "done" : "" }, s.text))) : null)));
}
async function refreshReminders() {
  const list = await ofAgent("/api/reminders");
  S.reminders = list.reminders || [];
  $("n-reminders").textContent = S.reminders.filter((r) => !r.fired_at).length;
  const pane = $("pane-reminders");
  if (!S.reminders.length) { pane.replaceChildren(...[whose(list.agent), h("div", { class: "empty" }, "No reminders (schedule_reminder).")].filter(Boolean)); return; }
  pane.replaceChildren(...[whose(list.agent)].filter(Boolean), ...S.reminders.map((r) => h("div", { class: "card", testid: "reminder-item", data: { id: r.id } },
    h("div", { class: "ch" }, h("span", { class: "ct" }, r.message), r.fired_at ? h("span", { class: "badge b-ok" }, "delivered") : h("span", { class: "badge b-neutral" }, "due " + rel(r.due_at))),
    h("div", { class: "cm" }, "to " + (r.target ? r.target.type + (r.target.id ? " " + r.target.id : "") : "the agent") + " · " + r.due_at))));
}
document.querySelectorAll(".tabs button").forEach((b) => b.addEventListener("click", () => {
  document.querySelectorAll(".tabs button").forEach((x) => x.classList.toggle("active", x === b));
  document.querySelectorAll(".tabpane").forEach((p) => p.classList.toggle("active", p.id === "pane-" + b.dataset.tab));
}));

// ---------------------------------------------------------------- start
async function start() {
  await adoptingPageKey;
  try {
    S.info = await get("/api/info");
  } catch (e) {
    if (e.status !== 401) toast("Cannot reach the server: " + e.message, true);
    return;
  }
  renderHeader();
  // Several agents ([agents.NAME]): a new session asks which one it talks to.
  const agents = (S.info.agents || []).map((a) => a.name);
  const pick = $("session-agent");
  pick.replaceChildren(...agents.map((n) => h("option", { value: n }, n)));
  pick.hidden = agents.length < 2;
  const tools = await get("/api/tools");
  S.tools = Array.isArray(tools) ? tools : [];
  S.toolsByName = new Map(S.tools.map((t) => [t.name, t]));
  renderToolSelect();
  await loadSessions();
  const remembered = sessionStorage.getItem("holdfast.session");
  let id = S.sessions.some((s) => s.id === remembered) ? remembered : null;
  // A new tab reopens the most recent conversation rather than adding an empty one.
  if (!id) {
    const recent = S.sessions.filter((s) => s.kind !== "inbox")
      .sort((a, b) => String(b.updated_at || "").localeCompare(String(a.updated_at || "")))[0];
    id = recent ? recent.id : null;
  }
  if (!id) {
    const r = await call("POST", "/api/sessions");
    if (!r.ok) { toast("Could not create a session", true); return; }
    id = r.data.id;
  }
  await selectSession(id);
  loadSessions().catch(() => {});
}
setInterval(() => { tickAges(); }, 1000);
setInterval(() => { if (S.session) { renderSessions(); } }, 30000);
renderRegisters(); renderContextBank(); renderPending();
start();
})();
