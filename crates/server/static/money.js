// The money views of the holdfast web UI: the wallet (balances of the configured tokens, today's spending against
// each daily cap and the x402 budget), the session's journal (status, decoded summary, gas, a link to the block
// explorer, or this server's own transaction page where the network has none, as on the devnet) and the x402
// payments. Read-only: nothing here moves value. Loaded after app.js, whose helpers it uses (window.holdfast); app.js
// tells it when the session changes or value moved with a `holdfast:money` event.
"use strict";
(() => {
const { h, get, rel, short, humanKey, summaryText, toast } = window.holdfast;
const $ = (id) => document.getElementById(id);
const M = { session: null, seq: 0, onlySession: false };
const WALLET_REFRESH_MS = 20000;

function statusBadge(st) {
  const cls = st === "confirmed" ? "b-ok"
    : st === "pending" || st === "signed" || st === "reserved" || st === "stalled" ? "b-warn" : "b-err";
  return h("span", { class: "badge " + cls, testid: "status" }, st.replace(/_/g, " "));
}

// ---------------------------------------------------------------- wallet
function gauge(g) {
  const spent = Number(g.spent_human);
  const cap = g.cap_human === null ? null : Number(g.cap_human);
  const pct = cap ? Math.min(100, (100 * spent) / cap) : 0;
  // No cap, or a cap of zero: the policy allows nothing of this asset (deny by default).
  const denied = cap === null || cap === 0;
  const level = denied ? "deny" : pct >= 90 ? "hot" : pct >= 60 ? "warm" : "cool";
  const what = g.budget === "x402" ? "x402 payments" : "swaps + transfers";
  const text = denied ? `${g.spent_human} ${g.symbol} today · ${cap === null ? "no daily cap" : "daily cap 0"}: not allowed`
    : `${g.spent_human} of ${g.cap_human} ${g.symbol} today`;
  return h("div", { class: "gauge", testid: "spend-gauge", data: { budget: g.budget, symbol: g.symbol, level } },
    h("div", { class: "gl" }, h("b", {}, g.symbol), h("span", { class: "gk" }, what), h("span", { class: "gv", testid: "spend-text" }, text)),
    h("div", { class: "meter " + level, title: denied ? "" : Math.round(pct) + "% of the daily cap" },
      h("div", { style: `width:${pct}%` })));
}
/** A balance as a person reads it: at most 6 decimals, cut (never rounded up); the full value is on hover. */
function shortAmount(v) {
  if (v === null || v === undefined) return "—";
  const [whole, frac = ""] = String(v).split(".");
  const cut = frac.slice(0, 6).replace(/0+$/, "");
  return cut ? `${whole}.${cut}${frac.length > 6 && /[1-9]/.test(frac.slice(6)) ? "…" : ""}` : (frac && /[1-9]/.test(frac) ? `${whole}.000000…` : whole);
}
function renderWallet(w) {
  const body = $("wallet-body");
  if (!w.networks.length) { body.replaceChildren(h("div", { class: "empty" }, "No networks configured.")); return; }
  body.replaceChildren(...w.networks.map((n) => h("div", { class: "netmoney", testid: "wallet-network", data: { network: n.network } },
    h("div", { class: "cm" }, h("b", {}, n.display_name), ` · chain ${n.chain_id}`),
    n.account ? h("div", { class: "faint", testid: "signer-caption" }, "The key (signer; pays the gas):") : null,
    h("table", { class: "bal" }, ...n.holdings.map((t) => h("tr", { testid: "balance", data: { symbol: t.symbol } },
      h("th", { title: t.address }, t.symbol),
      h("td", { class: "mono", testid: "balance-value", title: t.balance_human !== null ? `${t.balance_human} ${t.symbol}` : "" }, shortAmount(t.balance_human)),
      h("td", { class: "faint" }, t.error ? h("span", { title: t.error }, "node unavailable") : "")))),
    n.account ? accountView(n.account) : null,
    n.spend.length ? h("div", { class: "gauges" }, ...n.spend.map(gauge))
      : h("div", { class: "empty" }, "No [policy] for this network: nothing may move."))));
}
/** The smart account the key signs for: its balances and what remains of each on-chain limit (set by its owner). */
function accountView(a) {
  const period = (m) => m === 1440 ? "per day" : m === 0 ? "in total" : `per ${m} min`;
  return h("div", { class: "account", testid: "wallet-account", data: { address: a.address } },
    h("div", { class: "cm" }, h("b", {}, "Smart account "), h("span", { class: "mono", title: a.address }, short(a.address)),
      h("span", { class: "faint" }, " · limits enforced on chain by " + short(a.module))),
    h("table", { class: "bal" }, ...a.holdings.map((t) => {
      const l = a.limits.find((x) => x.symbol === t.symbol);
      const limit = !l ? "" : l.error ? "limit unreadable" : l.limit === "0" ? "no on-chain limit: cannot move"
        : `${l.remaining_human} of ${l.limit_human} left ${period(l.period_minutes)}`;
      return h("tr", { testid: "account-balance", data: { symbol: t.symbol } },
        h("th", { title: t.address }, t.symbol),
        h("td", { class: "mono", testid: "account-balance-value", title: t.balance_human !== null ? `${t.balance_human} ${t.symbol}` : "" }, shortAmount(t.balance_human)),
        h("td", { class: "faint", testid: "onchain-limit" }, limit));
    })));
}
/** One wallet read at a time: a slow node must not pile requests up (the timer and money events both call this). */
let walletLoading = false;
async function refreshWallet() {
  if (walletLoading) return;
  walletLoading = true;
  try { renderWallet(await get("/api/wallet")); } catch (e) {
    if (e.status !== 401) $("wallet-body").replaceChildren(h("div", { class: "empty" }, "Wallet: " + e.message));
  } finally { walletLoading = false; }
}

// ---------------------------------------------------------------- journal and payments
function txLink(j) {
  if (!j.tx_hash) return null;
  if (j.explorer_url) {
    return h("a", { href: j.explorer_url, target: "_blank", rel: "noopener noreferrer", testid: "explorer-link",
      title: j.tx_hash }, short(j.tx_hash) + " ↗");
  }
  return h("button", { type: "button", class: "link mono", testid: "tx-page-link", title: "This server's page of " + j.tx_hash,
    onclick: () => openTx(j) }, short(j.tx_hash));
}
function whatHappened(j) {
  const s = j.summary || {};
  if (j.kind === "payment") return `paid ${s.amount || j.amount + " " + (j.asset_symbol || "")} to ${short(s.payee || j.to)}${s.preset ? " for " + s.preset : ""}`;
  if (s.sell) return `sell ${s.sell} → ${s.buy_simulated || s.buy_expected || "?"}${s.buy_minimum ? " (min " + s.buy_minimum + ")" : ""}`;
  return Object.entries(s).filter(([k]) => k !== "action" && k !== "network").slice(0, 3)
    .map(([k, v]) => `${humanKey(k)} ${summaryText(k, v)}`).join(" · ");
}
function entryCard(j) {
  const gas = j.gas_used ? " · gas " + Number(j.gas_used).toLocaleString("en-US") : "";
  return h("div", { class: "card", testid: "journal-entry", data: { kind: j.kind, status: j.status, id: j.id } },
    h("div", { class: "ch" }, h("span", { class: "ct" }, j.kind), statusBadge(j.status), h("span", { testid: "journal-summary" }, whatHappened(j))),
    h("div", { class: "cm" }, j.network, j.block_number !== null && j.block_number !== undefined ? " · block " + j.block_number : "",
      gas, j.tx_hash ? [" · ", txLink(j)] : "", " · " + rel(j.created_at),
      j.session_id && j.session_id !== M.session ? h("span", { class: "faint", testid: "journal-session", title: j.session_id }, " · session " + j.session_id.slice(0, 8)) : null,
      j.error ? h("div", { class: "b-err" }, j.error) : null));
}
function renderList(paneId, countId, rows, empty) {
  $(countId).textContent = rows.length;
  const pane = $(paneId);
  if (!rows.length) { pane.replaceChildren(h("div", { class: "empty" }, empty)); return; }
  pane.replaceChildren(...[...rows].reverse().map(entryCard));
}
async function refreshJournal(seq) {
  // Every entry by default (the history follows the user, not the tab); the filter narrows it to this session.
  const only = M.onlySession && M.session;
  const [entries, payments] = await Promise.all([
    get(only ? "/api/journal?session_id=" + encodeURIComponent(M.session) : "/api/journal"),
    get("/api/journal?kind=payment"),
  ]);
  if (seq !== M.seq) return;
  renderList("pane-journal", "n-journal", entries.journal || [],
    only ? "No transactions or payments in this session. Each one is written here before it is sent."
      : "No transactions or payments yet. Each one is written here before it is sent.");
  const filter = h("label", { class: "faint journal-filter" },
    h("input", { type: "checkbox", testid: "journal-this-session", checked: M.onlySession,
      onchange: (ev) => { M.onlySession = ev.target.checked; refresh(); } }), " only this session");
  $("pane-journal").prepend(filter);
  renderList("pane-payments", "n-payments", payments.journal || [],
    "No x402 payments yet. A preset that answers HTTP 402 is paid within [payments], and each payment is listed here.");
}

// ---------------------------------------------------------------- the transaction page (networks without explorer)
async function openTx(j) {
  const dlg = $("txpage");
  const row = (k, v) => h("tr", {}, h("th", {}, k), h("td", {}, v === null || v === undefined ? "—" : v));
  dlg.replaceChildren(h("div", { class: "dlg-h" }, h("h3", {}, "Transaction"), statusBadge(j.status)),
    h("div", { class: "dlg-b", testid: "tx-page-body" }, h("div", { class: "muted" }, "Reading the chain…")),
    h("div", { class: "dlg-f" }, h("button", { type: "button", onclick: () => dlg.close() }, "Close")));
  dlg.showModal();
  try {
    const t = await get("/api/journal/" + encodeURIComponent(j.id) + "/tx");
    const transfers = t.transfers.length ? h("ul", { class: "transfers" }, ...t.transfers.map((x) =>
      h("li", { testid: "tx-transfer" }, `${x.amount} ${x.symbol || short(x.token)} from ${short(x.from)} to ${short(x.to)}`))) : "none";
    dlg.querySelector(".dlg-b").replaceChildren(
      h("table", { class: "kv" }, row("Hash", t.tx_hash), row("On chain", h("span", { testid: "tx-status" }, t.status.replace(/_/g, " "))),
        row("Network", j.network), row("Block", t.block_number), row("From", t.from), row("To", t.to),
        row("What", whatHappened(j)), row("Gas used", t.gas_used === null ? null : t.gas_used.toLocaleString("en-US")),
        row("Fee paid", t.fee), row("Token transfers", transfers),
        t.other_logs ? row("Other events", String(t.other_logs)) : null),
      h("div", { class: "faint" }, "Read from the network's RPC node by this server: the network has no block explorer configured."));
  } catch (e) {
    dlg.querySelector(".dlg-b").replaceChildren(h("div", { class: "b-err" }, "Cannot read the transaction: " + e.message));
  }
}

// ---------------------------------------------------------------- wiring
function refresh() {
  M.seq += 1;
  const seq = M.seq;
  refreshJournal(seq).catch((e) => { if (e.status !== 401) toast("Journal: " + e.message, true); });
  refreshWallet();
}
document.addEventListener("holdfast:money", (ev) => {
  if (ev.detail && ev.detail.session) M.session = ev.detail.session;
  refresh();
});
$("wallet-refresh").addEventListener("click", refreshWallet);
setInterval(() => { if (M.session && document.visibilityState === "visible") refreshWallet(); }, WALLET_REFRESH_MS);
})();
