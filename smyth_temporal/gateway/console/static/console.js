// smyth console: vanilla JavaScript over the gateway's API; no build step, no CDN.
// Data is shown with textContent only (never innerHTML), so nothing an agent or a
// model wrote can become markup or script; the page's CSP forbids inline script too.
"use strict";

const KEY_ITEM = "smyth.console.key";
const POLL_MS = 5000;

// ---- the API ---------------------------------------------------------------------

/** The URL of an API path; relative to the page, so a proxy's path prefix is kept. */
function apiUrl(path) {
  return new URL("../v1/" + path, document.baseURI);
}

function storedKey() {
  return sessionStorage.getItem(KEY_ITEM);
}

class ApiError extends Error {
  constructor(status, detail) {
    super(detail);
    this.status = status;
  }
}

async function failure(response) {
  let detail = response.statusText || "request failed";
  try {
    const body = await response.json();
    detail = body.detail || (body.error && body.error.message) || detail;
  } catch (_) {
    // not problem details: keep the status text
  }
  if (response.status === 401) signOut("The key was refused: " + detail);
  return new ApiError(response.status, detail);
}

/** Call the API with the stored key; the JSON answer, or an ApiError. */
async function call(path, { method = "GET", body, signal } = {}) {
  const headers = { Authorization: "Bearer " + storedKey(), Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(apiUrl(path), {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
  });
  if (!response.ok) throw await failure(response);
  return response.json();
}

/**
 * Read a run's Server-Sent Events with fetch, so the key goes in a header (EventSource
 * cannot send one, and a key in the URL would land in logs). Resumes after the last
 * offset seen until the run finishes or `signal` aborts.
 */
async function followEvents(workflowId, onEvent, signal) {
  let after = null;
  let finished = false;
  while (!finished && !signal.aborted) {
    const query = after === null ? "" : "?after=" + after;
    try {
      const response = await fetch(apiUrl("runs/" + encodeURIComponent(workflowId) + "/events" + query), {
        headers: { Authorization: "Bearer " + storedKey(), Accept: "text/event-stream" },
        signal,
      });
      if (!response.ok) throw await failure(response);
      for await (const message of sseMessages(response.body)) {
        if (message.id !== null) after = Number(message.id);
        const data = JSON.parse(message.data);
        if (message.event === "error") throw new ApiError(data.status, data.detail);
        onEvent(data);
        if (data.kind === "run_finished") finished = true;
      }
    } catch (error) {
      if (signal.aborted) return;
      if (error instanceof ApiError && error.status < 500) throw error;
    }
    if (!finished) await sleep(1000, signal);
  }
}

/** The messages of a text/event-stream body: {event, id, data}; comments skipped. */
async function* sseMessages(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let fields = { event: null, id: null, data: [] };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, end).replace(/\r$/, "");
      buffer = buffer.slice(end + 1);
      if (line === "") {
        if (fields.data.length) yield { event: fields.event, id: fields.id, data: fields.data.join("\n") };
        fields = { event: null, id: null, data: [] };
      } else if (!line.startsWith(":")) {
        const colon = line.indexOf(":");
        const name = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (name === "data") fields.data.push(value);
        else if (name === "event" || name === "id") fields[name] = value;
      }
    }
  }
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => { clearTimeout(timer); resolve(); }, { once: true });
  });
}

// ---- building the page -------------------------------------------------------------

/** An element with attributes and children (strings become text nodes). */
function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else element.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat(Infinity)) {
    if (child !== null && child !== undefined) element.append(child);
  }
  return element;
}

function pretty(value) {
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

function ago(iso) {
  const seconds = Math.round((Date.now() - Date.parse(iso)) / 1000);
  return duration(seconds) + " ago";
}

function until(iso) {
  const seconds = Math.round((Date.parse(iso) - Date.now()) / 1000);
  return seconds < 0 ? duration(-seconds) + " ago" : "in " + duration(seconds);
}

function duration(seconds) {
  if (seconds < 90) return seconds + " s";
  if (seconds < 5400) return Math.round(seconds / 60) + " min";
  if (seconds < 172800) return Math.round(seconds / 3600) + " h";
  return Math.round(seconds / 86400) + " days";
}

function time(iso) {
  return h("time", { datetime: iso, title: new Date(iso).toLocaleString() }, new Date(iso).toLocaleString());
}

function runLink(workflowId) {
  return h("a", { href: "#/runs/" + encodeURIComponent(workflowId) }, workflowId);
}

function statusBadge(status) {
  return h("span", { class: "badge", "data-status": status }, status.replace(/_/g, " "));
}

function view() {
  return document.getElementById("view");
}

// ---- an approval request, with its decision form ------------------------------------

/** A card for one approval request; the decision pins the hash of the arguments shown. */
function approvalCard(workflowId, agent, request) {
  const argumentsList = h("dl", { class: "arguments" },
    Object.entries(request.arguments).map(([name, value]) => [h("dt", {}, name), h("dd", {}, pretty(value))]));
  // Built by h(), which leaves out a missing reason (DOM append would write "null").
  const card = h("article", { class: "card approval", "data-request": request.id, "aria-label": "Approval: " + request.tool },
    h("h3", {}, request.tool),
    h("p", { class: "meta" }, agent ? agent + " · " : "", runLink(workflowId)),
    argumentsList,
    request.reason ? h("blockquote", { class: "reason" }, request.reason) : null,
    h("p", { class: "meta" }, "Requested ", h("span", { title: request.requested_at }, ago(request.requested_at)),
      " · deadline ", h("span", { title: request.deadline }, until(request.deadline)),
      " (then " + request.on_timeout.replace(/_/g, " ") + ")"),
  );
  card.append(request.status === "pending" ? decisionForm(workflowId, request) : decided(request));
  return card;
}

function decided(request) {
  const by = request.decision ? " by " + request.decision.by : "";
  const comment = request.decision && request.decision.comment ? ": " + request.decision.comment : "";
  return h("p", { class: "outcome", "data-status": request.status }, request.status + by + comment);
}

function decisionForm(workflowId, request) {
  const id = "d-" + request.id.replace(/[^A-Za-z0-9_-]/g, "_");
  const original = JSON.stringify(request.arguments, null, 2);
  const comment = h("input", { id: id + "-comment", name: "comment", type: "text", autocomplete: "off" });
  const edited = h("textarea", { id: id + "-arguments", name: "arguments", rows: 4, spellcheck: "false" });
  edited.value = original;
  const error = h("p", { class: "error", role: "alert" });
  const form = h("form", { class: "decide" },
    h("label", { for: comment.id }, "Comment"), comment,
    h("details", {}, h("summary", {}, "Edit arguments"),
      h("label", { for: edited.id }, "Arguments (JSON)"), edited),
    h("div", { class: "actions" },
      h("button", { type: "submit", value: "approve", class: "approve" }, "Approve"),
      h("button", { type: "submit", value: "reject", class: "reject" }, "Reject")),
    error);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const approved = event.submitter ? event.submitter.value === "approve" : false;
    const decision = { approved, arguments_sha256: request.arguments_sha256 };
    if (comment.value.trim()) decision.comment = comment.value.trim();
    if (approved && edited.value.trim() !== original) {
      try {
        decision.arguments = JSON.parse(edited.value);
      } catch (_) {
        error.textContent = "The edited arguments are not valid JSON.";
        return;
      }
    }
    for (const button of form.querySelectorAll("button")) button.disabled = true;
    try {
      const outcome = await call(
        "runs/" + encodeURIComponent(workflowId) + "/approvals/" + encodeURIComponent(request.id),
        { method: "POST", body: decision });
      form.replaceWith(decided(outcome.request));
    } catch (failed) {
      error.textContent = failed.message;
      for (const button of form.querySelectorAll("button")) button.disabled = false;
    }
  });
  return form;
}

// ---- views ----------------------------------------------------------------------------

/** Poll `load` every POLL_MS until `signal` aborts; errors go to `status`. */
function poll(load, status, signal) {
  const tick = async () => {
    try {
      await load();
      status.textContent = "Updated " + new Date().toLocaleTimeString();
    } catch (error) {
      if (!signal.aborted) status.textContent = error.message;
    }
  };
  tick();
  const timer = setInterval(tick, POLL_MS);
  signal.addEventListener("abort", () => clearInterval(timer), { once: true });
}

function approvalsView(signal) {
  const list = h("div", { class: "cards" });
  const status = h("p", { class: "status", role: "status" });
  const empty = h("p", { class: "empty", hidden: true }, "Nothing waits for a decision.");
  view().append(h("h2", {}, "Approvals"), status, empty, list);
  poll(async () => {
    const { approvals } = await call("approvals", { signal });
    const wanted = new Set(approvals.map((p) => p.workflow_id + "/" + p.request.id));
    for (const card of list.querySelectorAll("[data-key]")) {
      const answered = card.querySelector(".outcome");
      if (!wanted.has(card.dataset.key) && !answered) card.remove();
    }
    for (const pending of approvals) {
      const key = pending.workflow_id + "/" + pending.request.id;
      if (list.querySelector('[data-key="' + CSS.escape(key) + '"]')) continue;
      const card = approvalCard(pending.workflow_id, pending.agent, pending.request);
      card.dataset.key = key;
      list.append(card);
    }
    empty.hidden = list.childElementCount > 0;
  }, status, signal);
}

function runsView(signal) {
  const body = h("tbody");
  const status = h("p", { class: "status", role: "status" });
  view().append(h("h2", {}, "Runs"), status,
    h("table", { class: "runs" },
      h("thead", {}, h("tr", {}, ["Run", "Agent", "Status", "Approvals", "Started"].map((c) => h("th", { scope: "col" }, c)))),
      body));
  let shown = "";
  poll(async () => {
    const { runs } = await call("runs", { signal });
    const fingerprint = JSON.stringify(runs);
    if (fingerprint === shown) return;
    shown = fingerprint;
    body.replaceChildren(...runs.map((run) => h("tr", {},
      h("td", { "data-label": "Run" }, runLink(run.workflow_id)),
      h("td", { "data-label": "Agent" }, run.agent),
      h("td", { "data-label": "Status" }, statusBadge(run.agent_status && run.status === "running" ? run.agent_status : run.status)),
      h("td", { "data-label": "Approvals" }, String(run.pending_approvals)),
      h("td", { "data-label": "Started" }, run.started_at ? time(run.started_at) : ""))));
    if (!runs.length) body.append(h("tr", {}, h("td", { colspan: 5 }, "No runs yet.")));
  }, status, signal);
}

/** The live run: its conversation, streamed text, tool calls, approvals, status, usage. */
function runView(workflowId, signal) {
  const status = h("span", { id: "run-status" }, statusBadge("connecting"));
  const usage = h("span", { id: "run-usage" });
  const problem = h("p", { class: "error", role: "alert" });
  const log = h("ol", { class: "conversation", "aria-label": "Conversation" });
  view().append(
    h("h2", {}, "Run ", h("code", {}, workflowId)),
    h("p", { class: "meta" }, "Status: ", status, " · ", usage),
    problem, log);
  let agent = null;
  const texts = new Map(); // message id -> {element, attempt}

  const setStatus = (value) => status.replaceChildren(statusBadge(value));
  const setUsage = (u) => {
    usage.textContent = u.requests + " model calls · " + u.input_tokens + " in / " + u.output_tokens +
      " out tokens · " + u.tool_calls + " tool calls" + (u.cost ? " · cost " + u.cost.toFixed(4) : "");
  };
  const add = (kind, ...children) => {
    const item = h("li", { class: "event " + kind }, ...children);
    log.append(item);
    return item;
  };
  const bubble = (messageId) => {
    if (!texts.has(messageId)) {
      const text = h("p", { class: "text" });
      add("assistant", h("span", { class: "who" }, "Assistant"), text);
      texts.set(messageId, { element: text, attempt: 0 });
    }
    return texts.get(messageId);
  };

  const handlers = {
    run_started: (e) => { agent = e.agent; add("note", "Run of " + e.agent + " started (" + e.mode + ")"); },
    text_reset: (e) => { const b = bubble(e.message_id); b.attempt = e.attempt; b.element.textContent = ""; },
    text_delta: (e) => {
      const b = bubble(e.message_id);
      if (e.attempt < b.attempt) return;
      if (e.attempt > b.attempt) { b.attempt = e.attempt; b.element.textContent = ""; }
      b.element.textContent += e.text;
    },
    message: (e) => {
      const m = e.message;
      if (m.role === "user") add("user", h("span", { class: "who" }, "User"), h("p", { class: "text" }, m.content || ""));
      else if (m.role === "assistant" && m.content) bubble(e.message_id || "m" + e.offset).element.textContent = m.content;
    },
    tool_call: (e) => {
      let args = e.call.arguments;
      try { args = pretty(JSON.parse(args)); } catch (_) { /* shown as sent */ }
      add("tool-call", h("span", { class: "who" }, "Tool call"), h("code", {}, e.call.name), h("pre", {}, args));
    },
    tool_result: (e) => add("tool-result" + (e.error ? " failed" : ""),
      h("span", { class: "who" }, e.error ? "Tool error" : "Tool result"), h("code", {}, e.name), h("pre", {}, e.content)),
    approval_requested: (e) => add("approval", approvalCard(workflowId, agent, e.request)),
    approval_decided: (e) => replaceApproval(e.request),
    approval_expired: (e) => replaceApproval(e.request),
    compaction: () => add("note", "Older messages were summarised."),
    continued_as_new: (e) => add("note", "Continued as new (generation " + e.generation + ")"),
    status: (e) => setStatus(e.status),
    usage: (e) => setUsage(e.usage),
    run_finished: (e) => {
      setStatus(e.status);
      log.dataset.finished = e.status;
      add("note finished", "Run " + e.status + (e.output ? ": " + e.output : ""));
    },
  };
  const replaceApproval = (request) => {
    const card = log.querySelector('[data-request="' + CSS.escape(request.id) + '"]');
    const form = card && card.querySelector("form.decide, .outcome");
    if (form) form.replaceWith(decided(request));
  };

  call("runs/" + encodeURIComponent(workflowId), { signal })
    .then((state) => { if (!log.dataset.finished) setUsage(state.usage); })
    .catch(() => { /* the events carry status and usage too */ });
  followEvents(workflowId, (event) => {
    const handle = handlers[event.kind];
    if (handle) handle(event);
  }, signal).catch((error) => { problem.textContent = error.message; });
}

function memoryView(signal) {
  const query = h("input", { id: "memory-q", name: "q", type: "search", required: true });
  const results = h("ol", { class: "cards memories" });
  const status = h("p", { class: "status", role: "status" });
  const form = h("form", { class: "search" },
    h("label", { for: query.id }, "Search memories"), query, h("button", { type: "submit" }, "Search"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    status.textContent = "Searching…";
    try {
      const { hits } = await call("memory/search?k=20&q=" + encodeURIComponent(query.value), { signal });
      results.replaceChildren(...hits.map((hit) => h("li", { class: "card" },
        h("p", {}, hit.record.text),
        h("p", { class: "meta" }, hit.record.kind + " · " + hit.record.scope.namespace + " · score " +
          hit.score.toFixed(3) + " · ", time(hit.record.created_at)))));
      status.textContent = hits.length + " found";
    } catch (error) {
      status.textContent = error.message;
    }
  });
  view().append(h("h2", {}, "Memory"), form, status, results);
}

// ---- sign-in and routing ----------------------------------------------------------

let current = null;

function route() {
  if (current) current.abort();
  current = new AbortController();
  view().replaceChildren();
  const signedIn = storedKey() !== null;
  document.getElementById("login").hidden = signedIn;
  document.getElementById("nav").hidden = !signedIn;
  if (!signedIn) {
    document.getElementById("key").focus();
    return;
  }
  const path = location.hash.replace(/^#\/?/, "");
  for (const link of document.querySelectorAll("#nav a")) {
    const active = path === link.hash.slice(2) || path.startsWith(link.hash.slice(2) + "/");
    if (active) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  if (path.startsWith("runs/")) runView(decodeURIComponent(path.slice(5)), current.signal);
  else if (path === "runs") runsView(current.signal);
  else if (path === "memory") memoryView(current.signal);
  else approvalsView(current.signal);
}

function signOut(reason) {
  sessionStorage.removeItem(KEY_ITEM);
  document.getElementById("login-error").textContent = reason || "";
  route();
}

async function signIn(event) {
  event.preventDefault();
  const input = document.getElementById("key");
  sessionStorage.setItem(KEY_ITEM, input.value.trim());
  input.value = "";
  try {
    await call("approvals");
    document.getElementById("login-error").textContent = "";
    route();
  } catch (error) {
    if (storedKey() !== null) signOut(error.message); // a refused key already signed out
  }
}

document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("login-form").addEventListener("submit", signIn);
  document.getElementById("sign-out").addEventListener("click", () => signOut("Signed out."));
  window.addEventListener("hashchange", route);
  route();
});
