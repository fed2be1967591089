// smyth console: vanilla JavaScript over the gateway's API; no build step, no CDN.
// Data is shown with textContent only (never innerHTML), so nothing an agent or a
// model wrote can become markup or script; the page's CSP forbids inline script too.
"use strict";

const KEY_ITEM = "smyth.console.key";
const POLL_MS = 5000;
const REFRESH_MS = 1000; // relative times ("3 s ago") are redrawn this often
const RECENT_MEMORIES = 20; // the memory page lists this many on open

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

/** `value` on one line, for a collapsed row: `name: "value", ...`, cut at `max` characters. */
function oneLine(value, max = 160) {
  const text = value !== null && typeof value === "object" && !Array.isArray(value)
    ? Object.entries(value).map(([name, v]) => name + ": " + JSON.stringify(v)).join(", ")
    : typeof value === "string" ? value : JSON.stringify(value);
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? flat.slice(0, max - 1) + "…" : flat;
}

function duration(seconds) {
  if (seconds < 90) return seconds + " s";
  if (seconds < 5400) return Math.round(seconds / 60) + " min";
  if (seconds < 172800) return Math.round(seconds / 3600) + " h";
  return Math.round(seconds / 86400) + " days";
}

/** How far `iso` is from now: "3 min ago" or "in 3 min". */
function relative(iso) {
  const seconds = Math.round((Date.parse(iso) - Date.now()) / 1000);
  return seconds <= 0 ? duration(-seconds) + " ago" : "in " + duration(seconds);
}

/** A time shown relative to now, kept current by refreshTimes (the exact time on hover). */
function when(iso) {
  return h("time", { datetime: iso, class: "relative", title: new Date(iso).toLocaleString() }, relative(iso));
}

/** Bring every relative time on the page up to date; runs every REFRESH_MS. */
function refreshTimes() {
  for (const element of document.querySelectorAll("time.relative")) {
    element.textContent = relative(element.getAttribute("datetime"));
  }
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

/** Add `parts` to the view, leaving out nulls (append would write them as "null"). */
function show(...parts) {
  view().append(...parts.filter((part) => part !== null && part !== undefined));
}

// ---- who is signed in ----------------------------------------------------------------

/** The signed-in key, from GET whoami: {name, tenant, role, permissions}; null before. */
let me = null;

/** Whether the signed-in key's role grants `permission`; the API refuses the rest anyway. */
function may(permission) {
  return me !== null && me.permissions.includes(permission);
}

/** Ask the gateway whom the stored key stands for, and show it in the header. */
async function identify() {
  me = await call("whoami");
  showIdentity();
}

function showIdentity() {
  document.getElementById("identity").textContent =
    me === null ? "" : me.tenant + " · " + me.role + " (" + me.name + ")";
}

/** Why the signed-in key may not do something, in the words the API's 403 uses. */
function notAllowed(action) {
  return me === null
    ? "Sign in with a key that may " + action + "."
    : "Your key " + me.name + " has role " + me.role + ", which may not " + action + ".";
}

// ---- an approval request, with its decision form ------------------------------------

/**
 * A card for one approval request; the decision pins the hash of the arguments shown.
 * Given `card`, draws it again in place for the request's new state (voted, decided,
 * expired), so the element, its place and its data-key stay.
 */
function approvalCard(workflowId, agent, request, card = h("article", { class: "card approval" })) {
  const argumentsList = h("dl", { class: "arguments" },
    Object.entries(request.arguments).map(([name, value]) => [h("dt", {}, name), h("dd", {}, pretty(value))]));
  // In the inbox (data-selectable), a request the key may decide can join a bulk decision;
  // a selection survives a redraw only if the arguments shown are the same.
  const picked = card.querySelector("input.pick");
  const kept = picked !== null && picked.checked && card.dataset.sha === request.arguments_sha256;
  card.dataset.request = request.id;
  card.dataset.workflow = workflowId;
  card.dataset.agent = agent || "";
  card.dataset.sha = request.arguments_sha256; // what a bulk decision on this card pins
  card.dataset.status = request.status;
  card.setAttribute("aria-label", "Approval: " + request.tool);
  const pick = "selectable" in card.dataset && request.status === "pending" && decideRefusal(request) === null
    ? h("input", { type: "checkbox", class: "pick", "aria-label": "Select " + request.tool + " in " + workflowId,
      checked: kept })
    : null;
  const decidedHere = (outcome) => {
    approvalCard(workflowId, agent, outcome, card);
    const result = card.querySelector(".outcome, .quorum");
    if (result) { result.tabIndex = -1; result.focus(); } // where the pressed button was
  };
  // A missing part (no reason, no quorum) is left out: replaceChildren would write "null".
  card.replaceChildren(...[
    h("h3", {}, pick, request.tool),
    h("p", { class: "meta" }, agent ? agent + " · " : "", runLink(workflowId)),
    argumentsList,
    request.reason ? h("blockquote", { class: "reason" }, request.reason) : null,
    timing(request),
    quorumProgress(request),
    request.status === "pending" ? decisionForm(workflowId, request, decidedHere) : decided(request),
  ].filter((part) => part !== null));
  return card;
}

/** When it was asked; while it waits, its deadline too (a decided request has none). */
function timing(request) {
  const asked = ["Requested ", when(request.requested_at)];
  if (request.status !== "pending") return h("p", { class: "meta timing" }, asked);
  return h("p", { class: "meta timing" }, asked, " · deadline ", when(request.deadline),
    " (then " + request.on_timeout.replace(/_/g, " ") + ")");
}

/** "Approvals: 1 of 2: alice" for a request that needs several approvers; null otherwise. */
function quorumProgress(request) {
  const rule = request.policy;
  if (!rule || rule.quorum <= 1) return null;
  const approvers = (request.votes || []).filter((vote) => vote.approved).map((vote) => vote.by);
  return h("p", { class: "quorum" }, "Approvals: " + approvers.length + " of " + rule.quorum +
    (approvers.length ? ": " + approvers.join(", ") : ""));
}

/** The roles that may decide `request` now: its policy's, widened by each escalation step. */
function decidingRoles(rule, request) {
  const roles = [...rule.roles];
  for (const step of rule.escalation.slice(0, (request.escalated_at || []).length)) {
    for (const role of step.roles) if (!roles.includes(role)) roles.push(role);
  }
  return roles;
}

/** Why the signed-in key may not decide `request` (the API refuses it too); null if it may. */
function decideRefusal(request) {
  if (!may("approve")) return notAllowed("decide approvals");
  const rule = request.policy;
  if (!rule) return null;
  const roles = decidingRoles(rule, request);
  if (!roles.includes(me.role)) {
    return "Your role " + me.role + " may not decide this request (roles that may: " + roles.join(", ") + ").";
  }
  if (rule.forbid_requester && request.requested_by === me.name) {
    return "Your key " + me.name + " started this run and may not decide its own request.";
  }
  const vote = (request.votes || []).find((v) => v.by === me.name);
  if (vote) return "You " + (vote.approved ? "approved" : "rejected") + " it already; each approver counts once.";
  return null;
}

/** How a request ended: approved or rejected by whom, or expired; when; the comment. */
function decided(request) {
  const decision = request.decision;
  const by = decision && request.status !== "expired" ? " by " + decision.by : "";
  return h("div", { class: "decided" },
    h("p", { class: "outcome", "data-status": request.status }, request.status + by,
      request.decided_at ? [" ", when(request.decided_at)] : null),
    decision && decision.comment ? h("p", { class: "comment" }, decision.comment) : null);
}

let forms = 0; // numbers each decision form's ids: request ids repeat across runs

/** The form that decides `request`; `onDecided` gets the decided request. */
function decisionForm(workflowId, request, onDecided) {
  const id = "decision-" + ++forms;
  const original = JSON.stringify(request.arguments, null, 2);
  const comment = h("input", { id: id + "-comment", name: "comment", type: "text", autocomplete: "off" });
  const edited = h("textarea", { id: id + "-arguments", name: "arguments", rows: 4, spellcheck: "false" });
  edited.value = original;
  const error = h("p", { class: "error", role: "alert" });
  // A key that may not decide sees why instead of buttons that would only fail (the API
  // refuses it anyway: 403, or 409 for a policy's refusal).
  const refusal = decideRefusal(request);
  const allowed = refusal === null;
  const controls = h("fieldset", { class: "controls", disabled: !allowed },
    // Nothing to type for a key that may not decide: only the buttons, disabled, and why.
    h("div", { class: "inputs", hidden: !allowed },
      h("label", { for: comment.id }, "Comment"), comment,
      // Every approver of a quorum approves the same arguments: edits need a quorum of one.
      request.policy && request.policy.quorum > 1 ? null : h("details", {}, h("summary", {}, "Edit arguments"),
        h("label", { for: edited.id }, "Arguments (JSON)"), edited)),
    h("div", { class: "actions" },
      h("button", { type: "submit", value: "approve", class: "approve" }, "Approve"),
      h("button", { type: "submit", value: "reject", class: "reject" }, "Reject")));
  const form = h("form", { class: "decide" }, controls,
    allowed ? null : h("p", { class: "hint not-allowed" }, refusal),
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
    controls.disabled = true;
    try {
      const outcome = await call(
        "runs/" + encodeURIComponent(workflowId) + "/approvals/" + encodeURIComponent(request.id),
        { method: "POST", body: decision });
      onDecided(outcome.request);
    } catch (failed) {
      error.textContent = failed.message;
      controls.disabled = !allowed;
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

/** The inbox: every pending request of the tenant; several can be decided at once. */
function approvalsView(signal) {
  const list = h("div", { class: "cards" });
  const status = h("p", { class: "status", role: "status" });
  const empty = h("p", { class: "empty", hidden: true }, "Nothing waits for a decision.");
  const bulk = bulkBar(list);
  show(h("h2", {}, "Approvals"), status, may("approve") ? bulk.bar : null, empty, list);
  poll(async () => {
    const { approvals } = await call("approvals", { signal });
    const wanted = new Set(approvals.map((p) => p.workflow_id + "/" + p.request.id));
    for (const card of list.querySelectorAll("[data-key]")) {
      // Decided or refused here: the answer stays in view.
      if (wanted.has(card.dataset.key) || card.querySelector(".outcome, .bulk-error")) continue;
      // Gone from the list (decided elsewhere, expired). A selected card stays, so a bulk
      // decision never covers fewer requests than the person chose: it is answered there.
      if (!card.querySelector("input.pick:checked")) card.remove();
      else if (!card.querySelector(".gone")) {
        card.append(h("p", { class: "hint gone" }, "No longer listed as waiting: decided elsewhere or expired."));
      }
    }
    for (const pending of approvals) {
      const key = pending.workflow_id + "/" + pending.request.id;
      const votes = String((pending.request.votes || []).length);
      const shown = list.querySelector('[data-key="' + CSS.escape(key) + '"]');
      if (shown && shown.dataset.votes === votes && shown.dataset.sha === pending.request.arguments_sha256) continue;
      // New, someone's vote counted since (quorum progress), or other arguments: drawn (again).
      const card = shown || h("article", { class: "card approval", "data-key": key, "data-selectable": "" });
      approvalCard(pending.workflow_id, pending.agent, pending.request, card);
      card.dataset.votes = votes;
      if (!shown) list.append(card);
    }
    empty.hidden = list.childElementCount > 0;
    bulk.update();
  }, status, signal);
}

/**
 * The inbox's bulk bar: select all, and approve or reject every selected request in one
 * call (POST approvals/decisions), each pinned to the hash of the arguments its card
 * shows. Each answer lands on its own card: a refused one (expired, settled by its
 * quorum) says why there, and changes nothing else.
 */
function bulkBar(list) {
  const count = h("span", { class: "count" }, "0 selected");
  const all = h("input", { type: "checkbox", id: "pick-all", class: "pick-all" });
  const approve = h("button", { type: "button", class: "approve", disabled: true }, "Approve selected");
  const reject = h("button", { type: "button", class: "reject", disabled: true }, "Reject selected");
  const error = h("p", { class: "error", role: "alert" });
  const bar = h("div", { class: "bulk", role: "group", "aria-label": "Decide the selected requests" },
    h("label", { for: all.id, class: "pick-all-label" }, all, "Select all"), count, approve, reject, error);
  const picks = () => [...list.querySelectorAll("input.pick")];
  const update = () => {
    const chosen = picks().filter((box) => box.checked).length;
    count.textContent = chosen + " selected";
    approve.disabled = reject.disabled = chosen === 0;
    all.checked = chosen > 0 && chosen === picks().length;
  };
  all.addEventListener("change", () => { for (const box of picks()) box.checked = all.checked; update(); });
  list.addEventListener("change", (event) => { if (event.target.matches("input.pick")) update(); });
  const decideAll = async (approved) => {
    const cards = picks().filter((box) => box.checked).map((box) => box.closest("article"));
    // Each decision pins the hash of the arguments its card shows (data-sha, set when drawn),
    // never a newer listing's: nobody approves arguments they were not shown.
    const decisions = cards.map((card) => ({
      workflow_id: card.dataset.workflow, request_id: card.dataset.request, approved,
      arguments_sha256: card.dataset.sha,
    }));
    approve.disabled = reject.disabled = true;
    error.textContent = "";
    try {
      const { results } = await call("approvals/decisions", { method: "POST", body: { decisions } });
      results.forEach((result, index) => {
        const card = cards[index];
        if (result.outcome) {
          approvalCard(card.dataset.workflow, card.dataset.agent || null, result.outcome.request, card);
        } else {
          const problem = card.querySelector(".bulk-error") || card.appendChild(h("p", { class: "error bulk-error", role: "alert" }));
          problem.textContent = result.problem ? result.problem.detail : "refused (" + result.status + ")";
          card.querySelector("input.pick").checked = false; // answered: out of the next bulk action
        }
      });
    } catch (failed) {
      error.textContent = failed.message;
    }
    update();
  };
  approve.addEventListener("click", () => decideAll(true));
  reject.addEventListener("click", () => decideAll(false));
  return { bar, update };
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

/**
 * The live run as a compact timeline: the conversation's text in full, each tool call
 * one line (its arguments and result open on click), approvals, status and usage. The
 * run's output is its last answer, already shown: the end says only how the run ended.
 * Above it, the run's lineage (its parent, forks and rewinds); on each step, "Fork
 * here" and "Rewind here" for keys that may operate runs (disabled, with why, for the rest).
 */
function runView(workflowId, signal, focus = null) {
  const status = h("span", { id: "run-status" }, statusBadge("connecting"));
  const usage = h("span", { id: "run-usage" });
  const problem = h("p", { class: "error", role: "alert" });
  const lineage = h("div", { id: "run-lineage", class: "lineage" });
  const log = h("ol", { class: "conversation", "aria-label": "Conversation" });
  show(
    h("h2", {}, "Run ", h("code", {}, workflowId)),
    h("p", { class: "meta" }, "Status: ", status, " · ", usage),
    lineage,
    may("operate") ? null : h("p", { class: "hint not-allowed" }, notAllowed("fork or rewind runs")),
    problem, log);
  const setUsage = (u) => {
    usage.textContent = u.requests + " model calls · " + u.input_tokens + " in / " + u.output_tokens +
      " out tokens · " + u.tool_calls + " tool calls" + (u.cost ? " · cost " + u.cost.toFixed(4) : "");
  };
  call("runs/" + encodeURIComponent(workflowId), { signal })
    .then((state) => {
      if (!log.dataset.finished) setUsage(state.usage);
      lineage.replaceChildren(...lineageLines(workflowId, state));
    })
    .catch(() => { /* the events carry status and usage too */ });
  timeline(workflowId, log, signal, {
    focus,
    setStatus: (value) => status.replaceChildren(statusBadge(value)),
    setUsage,
    onError: (error) => { problem.textContent = error.message; },
    stepActions: (step) => stepActions(workflowId, step),
  });
}

/** Where a run came from and went: its parent, its forks (each to compare) and its rewinds. */
function lineageLines(workflowId, state) {
  const lines = [];
  const origin = state.fork_of;
  if (origin) {
    const ancestors = [];
    for (let up = origin.parent; up; up = up.parent) { // a fork of a fork: the whole line back
      ancestors.push(", itself forked from ", runLink(up.workflow_id), " after step " + up.step);
    }
    lines.push(h("p", { class: "meta lineage-parent" }, "Forked from ", runLink(origin.workflow_id),
      " after step " + origin.step, ancestors, " · ", compareLink(origin.workflow_id, workflowId)));
  }
  if (state.forks && state.forks.length) {
    lines.push(h("p", { class: "meta lineage-forks" }, "Forks: ", state.forks.map((fork, index) => [
      index ? "; " : "", runLink(fork.workflow_id),
      " (after step " + (fork.step === null ? "?" : fork.step) + ", " + fork.status.replace(/_/g, " ") + ") ",
      compareLink(workflowId, fork.workflow_id)])));
  }
  for (const rewind of state.rewinds || []) {
    const calls = rewind.side_effects.map((c) => c.tool + " at step " + c.step).join(", ");
    lines.push(h("p", { class: "meta lineage-rewind" }, "Rewound to step " + rewind.to_step +
      (rewind.by ? " by " + rewind.by : "") + " ", when(rewind.time),
      rewind.side_effects.length ? "; side effects not undone: " + calls : ""));
  }
  return lines;
}

function compareLink(parent, fork) {
  return h("a", { class: "compare-link", href: "#/compare/" + encodeURIComponent(parent) + "/" + encodeURIComponent(fork) },
    "compare");
}

/**
 * "Fork here" and "Rewind here" for step `step`: each opens a small form under the step
 * (a message to add; for a fork, another model) and sends it; a fork opens the new run,
 * a rewind shows this run again. A key that may not operate runs sees both disabled,
 * with why (the API refuses it anyway: 403). Returns the buttons (for the step's label
 * line) and the place for the form and its error.
 */
function stepActions(workflowId, step) {
  const refusal = may("operate") ? null : notAllowed("fork or rewind runs");
  const slot = h("form", { class: "step-form" });
  const error = h("p", { class: "error", role: "alert" });
  const button = (kind, label, title) => h("button", { type: "button", class: kind + "-here",
    disabled: refusal !== null, title: refusal || title, onclick: () => ask(kind) }, label);
  const buttons = h("div", { class: "step-actions" },
    button("fork", "Fork here", "Start a new run from right after step " + step),
    button("rewind", "Rewind here", "Take this run back to right after step " + step));
  const ask = (kind) => {
    const prompt = h("input", { type: "text", name: "prompt", autocomplete: "off",
      "aria-label": "Message before step " + (step + 1), placeholder: "message before step " + (step + 1) + " (optional)" });
    const model = kind === "fork"
      ? h("input", { type: "text", name: "model", autocomplete: "off", "aria-label": "Model", placeholder: "another model (optional)" })
      : null;
    const submit = h("button", { type: "submit", class: "approve" }, kind === "fork" ? "Fork" : "Rewind");
    slot.className = "step-form " + kind;
    slot.onsubmit = async (event) => {
      event.preventDefault();
      submit.disabled = true;
      error.textContent = "";
      const body = kind === "fork" ? { at_step: step } : { to_step: step };
      if (prompt.value.trim()) body.prompt = prompt.value.trim();
      if (model && model.value.trim()) body.model = model.value.trim();
      try {
        const answer = await call("runs/" + encodeURIComponent(workflowId) + "/" + kind, { method: "POST", body });
        if (kind === "fork") location.hash = "#/runs/" + encodeURIComponent(answer.workflow_id);
        else route(); // the same run, going on from the step
      } catch (failed) {
        error.textContent = failed.message;
        submit.disabled = false;
      }
    };
    slot.replaceChildren(prompt, model || "", submit,
      h("button", { type: "button", class: "cancel", onclick: () => { slot.replaceChildren(); error.textContent = ""; } }, "Cancel"));
    prompt.focus();
  };
  return { buttons, below: [slot, error] };
}

/**
 * A parent and its fork side by side from the step they share: each column follows its
 * run's events after that step (the steps before are the same in both).
 */
async function compareView(parentId, forkId, signal) {
  const problem = h("p", { class: "error", role: "alert" });
  show(h("h2", {}, "Compare"), problem);
  let fork;
  try {
    fork = await call("runs/" + encodeURIComponent(forkId), { signal });
  } catch (error) {
    if (!signal.aborted) problem.textContent = error.message;
    return;
  }
  if (!fork.fork_of || fork.fork_of.workflow_id !== parentId) {
    problem.textContent = forkId + " is not a fork of " + parentId + ": they share no step.";
    return;
  }
  const common = fork.fork_of.step;
  const column = (workflowId, label) => {
    const status = h("span", {}, statusBadge("connecting"));
    const log = h("ol", { class: "conversation", "aria-label": label + " after step " + common });
    const error = h("p", { class: "error", role: "alert" });
    timeline(workflowId, log, signal, {
      afterStep: common,
      setStatus: (value) => status.replaceChildren(statusBadge(value)),
      onError: (failed) => { error.textContent = failed.message; },
    });
    return h("section", { class: "side", "data-run": workflowId, "aria-label": label },
      h("h3", {}, label + " ", runLink(workflowId)), h("p", { class: "meta" }, "Status: ", status), error, log);
  };
  const same = common === 1 ? "Step 1 is" : "Steps 1 to " + common + " are";
  show(h("p", { class: "meta common" }, common
    ? same + " the same in both; from step " + (common + 1) + " on:"
    : "They differ from the first step:"),
  h("div", { class: "compare" }, column(parentId, "Parent"), column(forkId, "Fork")));
}

/**
 * Follow `workflowId`'s events into `log`: a card per step with its tool calls, the
 * user's messages, approvals and notes. Options: `afterStep` leaves out what happened
 * up to that step (a comparison's shared part); `focus` marks an approval request;
 * `stepActions(step)` adds controls to each step's card; `setStatus`, `setUsage` and
 * `onError` report the rest.
 */
function timeline(workflowId, log, signal, options = {}) {
  const { afterStep = null, focus = null, stepActions = null } = options;
  const setStatus = options.setStatus || (() => {});
  const setUsage = options.setUsage || (() => {});
  let agent = null;
  const steps = new Map(); // run id/step -> {text, tools, attempt}
  const calls = new Map(); // tool call id -> its row's parts

  const add = (kind, ...children) => {
    const item = h("li", { class: "event " + kind }, ...children);
    log.append(item);
    return item;
  };
  /** The step's card: its text and, under it, a line per tool call it made. */
  const stepOf = (e) => {
    const key = e.step ? e.run_id + "/" + e.step : "message/" + e.message_id;
    if (!steps.has(key)) {
      const text = h("p", { class: "text" });
      const tools = h("ol", { class: "tools" });
      const who = h("span", { class: "who" }, e.step ? "Step " + e.step : "Assistant");
      const actions = e.step && stepActions ? stepActions(e.step) : null;
      const item = add("assistant", actions ? h("div", { class: "step-head" }, who, actions.buttons) : who,
        text, tools, actions ? actions.below : null);
      if (e.step) item.dataset.step = e.step;
      steps.set(key, { text, tools, attempt: 0 });
    }
    return steps.get(key);
  };
  /** One line per tool call: name, arguments and outcome in brief; the rest on click. */
  const toolRow = (e, callId, name) => {
    if (!calls.has(callId)) {
      const preview = h("span", { class: "preview" });
      const outcome = h("span", { class: "result", "data-state": "running" }, "running");
      const body = h("div", { class: "tool-body" });
      const item = h("li", { class: "tool", "data-call": callId }, h("details", {},
        h("summary", {}, h("code", { class: "name" }, name), preview, outcome), body));
      stepOf(e).tools.append(item);
      calls.set(callId, { item, preview, outcome, body });
    }
    return calls.get(callId);
  };
  const texted = (output) => [...steps.values()].some((b) => b.text.textContent.trim() === output.trim());
  /** Whether `e` is part of what a comparison's two runs share (left out there). */
  const shared = (e) => afterStep !== null && e.kind !== "run_finished" &&
    (e.step < afterStep || (e.step === afterStep && !(e.kind === "message" && e.message.role === "user")));

  const handlers = {
    run_started: (e) => { agent = e.agent; add("note", "Run of " + e.agent + " started (" + e.mode + ")"); },
    text_reset: (e) => { const b = stepOf(e); b.attempt = e.attempt; b.text.textContent = ""; },
    text_delta: (e) => {
      const b = stepOf(e);
      if (e.attempt < b.attempt) return;
      if (e.attempt > b.attempt) { b.attempt = e.attempt; b.text.textContent = ""; }
      b.text.textContent += e.text;
    },
    message: (e) => {
      const m = e.message;
      if (m.role === "user") add("user", h("span", { class: "who" }, "User"), h("p", { class: "text" }, m.content || ""));
      else if (m.role === "assistant" && m.content) stepOf(e).text.textContent = m.content;
    },
    tool_call: (e) => {
      const row = toolRow(e, e.call.id, e.call.name);
      let args = e.call.arguments;
      try {
        const parsed = JSON.parse(args);
        args = pretty(parsed);
        row.preview.textContent = oneLine(parsed);
      } catch (_) {
        row.preview.textContent = oneLine(args); // shown as sent
      }
      row.body.prepend(h("span", { class: "who" }, "Arguments"), h("pre", {}, args));
    },
    tool_result: (e) => {
      const row = toolRow(e, e.call_id, e.name);
      row.item.classList.toggle("failed", e.error);
      row.outcome.dataset.state = e.error ? "error" : "done";
      // An error's content says "Error: ..." itself; the line says it once.
      row.outcome.textContent = e.error
        ? "error: " + oneLine(e.content.replace(/^error:\s*/i, ""), 80)
        : "→ " + oneLine(e.content, 80);
      row.body.append(h("span", { class: "who" }, e.error ? "Tool error" : "Tool result"), h("pre", {}, e.content));
    },
    approval_requested: (e) => {
      const item = add("approval", approvalCard(workflowId, agent, e.request));
      if (e.request.id === focus) { // the request a link named: in view, marked
        item.classList.add("focused");
        item.scrollIntoView({ block: "center" });
      }
    },
    approval_voted: (e) => replaceApproval(e.request),
    approval_decided: (e) => replaceApproval(e.request),
    approval_expired: (e) => replaceApproval(e.request),
    approval_escalated: (e) => {
      replaceApproval(e.request);
      add("note", "No decision on " + e.request.tool + " yet: escalated (step " + e.step + "); " +
        e.roles.join(", ") + " may decide now.");
    },
    notification_failed: (e) => add("note", "A notification over " + e.channel + " about request " +
      e.request_id + " could not be delivered; the request still waits."),
    compaction: () => add("note", "Older messages were summarised."),
    continued_as_new: (e) => add("note", "Continued as new (generation " + e.generation + ")"),
    gap: (e) => add("note", "Events " + e.first_missing + " to " + e.offset +
      " are no longer kept; the timeline goes on from " + e.first_available + "."),
    status: (e) => setStatus(e.status),
    usage: (e) => setUsage(e.usage),
    run_finished: (e) => {
      setStatus(e.status);
      log.dataset.finished = e.status;
      // The output is normally the last answer, shown above; repeat it only if it is not.
      const output = e.output && !texted(e.output) ? h("pre", { class: "output" }, e.output) : null;
      add("note finished", "Run " + e.status.replace(/_/g, " "), output);
    },
  };
  const replaceApproval = (request) => {
    const card = log.querySelector('[data-request="' + CSS.escape(request.id) + '"]');
    if (card) approvalCard(workflowId, agent, request, card);
  };

  followEvents(workflowId, (event) => {
    const handle = handlers[event.kind];
    if (event.kind === "run_started") agent = event.agent; // approvals name it, shared or not
    if (handle && !shared(event)) handle(event);
  }, signal).catch((error) => { if (options.onError) options.onError(error); });
}

/** The memory page: the most recent memories at once, a search, and Forget for admins. */
function memoryView(signal) {
  const query = h("input", { id: "memory-q", name: "q", type: "search", placeholder: "empty: the most recent" });
  const heading = h("h3", {}, "Recent memories");
  const results = h("ol", { class: "cards memories" });
  const status = h("p", { class: "status", role: "status" });
  const form = h("form", { class: "search" },
    h("label", { for: query.id }, "Search memories"), query, h("button", { type: "submit" }, "Search"));
  const load = async () => {
    const q = query.value.trim();
    status.textContent = q ? "Searching…" : "Loading…";
    try {
      if (q) {
        const { hits } = await call("memory/search?k=20&q=" + encodeURIComponent(q), { signal });
        heading.textContent = "Closest to “" + q + "”";
        results.replaceChildren(...hits.map((hit) => memoryCard(hit.record, hit.score)));
        status.textContent = hits.length + " found";
      } else {
        const { memories } = await call("memory?limit=" + RECENT_MEMORIES, { signal });
        heading.textContent = "Recent memories";
        results.replaceChildren(...memories.map((record) => memoryCard(record, null)));
        status.textContent = memories.length ? memories.length + " most recent" : "No memories yet.";
      }
    } catch (error) {
      if (!signal.aborted) status.textContent = error.message;
    }
  };
  form.addEventListener("submit", (event) => { event.preventDefault(); load(); });
  show(h("h2", {}, "Memory"), form,
    may("admin") ? null : h("p", { class: "hint not-allowed" }, notAllowed("forget memories")),
    status, heading, results);
  load();
}

/** One memory: its text, kind, namespace, age and id; Forget (after a confirmation) for admins. */
function memoryCard(record, score) {
  const actions = h("div", { class: "actions" });
  const error = h("p", { class: "error", role: "alert" });
  const card = h("li", { class: "card memory", "data-memory": record.id },
    h("p", { class: "text" }, record.text),
    h("p", { class: "meta" }, record.kind + " · " + record.scope.namespace +
      (score === null ? "" : " · score " + score.toFixed(3)) + " · ", when(record.created_at),
      " · id ", h("code", { class: "memory-id" }, record.id)),
    may("admin") ? actions : null, error);
  const offer = () => actions.replaceChildren(
    h("button", { type: "button", class: "forget", onclick: confirm }, "Forget…"));
  const confirm = () => actions.replaceChildren(
    h("span", { class: "confirm" }, "Forget this memory for good?"),
    h("button", { type: "button", class: "reject confirm-forget", onclick: forget }, "Forget"),
    h("button", { type: "button", class: "cancel", onclick: offer }, "Cancel"));
  const forget = async () => {
    for (const button of actions.querySelectorAll("button")) button.disabled = true;
    try {
      await call("memory/" + encodeURIComponent(record.id) + "?namespace=" +
        encodeURIComponent(record.scope.namespace), { method: "DELETE" });
      card.dataset.forgotten = "";
      actions.replaceChildren(h("p", { class: "outcome", "data-status": "forgotten" }, "Forgotten."));
    } catch (failed) {
      error.textContent = failed.message;
      offer();
    }
  };
  offer();
  return card;
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
    me = null;
    showIdentity();
    document.getElementById("key").focus();
    return;
  }
  if (me === null) { // a reload: the key is kept in the tab, whom it names is asked again
    const signal = current.signal;
    identify()
      .then(() => { if (!signal.aborted) route(); })
      .catch((error) => {
        if (!signal.aborted && storedKey() !== null) view().append(h("p", { class: "error", role: "alert" }, error.message));
      });
    return;
  }
  const path = location.hash.replace(/^#\/?/, "");
  for (const link of document.querySelectorAll("#nav a")) {
    const active = path === link.hash.slice(2) || path.startsWith(link.hash.slice(2) + "/");
    if (active) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  if (path.startsWith("compare/")) {
    const [parent, fork] = path.slice(8).split("/").map(decodeURIComponent);
    compareView(parent, fork, current.signal);
  }
  else if (path.startsWith("runs/")) {
    // #/runs/<run>[/approvals/<request>], each part encoded whole: a notification's link
    // opens the run at its request.
    const [run, part, request] = path.slice(5).split("/");
    const focus = part === "approvals" && request ? decodeURIComponent(request) : null;
    runView(decodeURIComponent(run), current.signal, focus);
  }
  else if (path === "runs") runsView(current.signal);
  else if (path === "memory") memoryView(current.signal);
  else approvalsView(current.signal);
}

function signOut(reason) {
  sessionStorage.removeItem(KEY_ITEM);
  me = null;
  document.getElementById("login-error").textContent = reason || "";
  route();
}

async function signIn(event) {
  event.preventDefault();
  const input = document.getElementById("key");
  sessionStorage.setItem(KEY_ITEM, input.value.trim());
  input.value = "";
  try {
    await identify();
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
  setInterval(refreshTimes, REFRESH_MS);
  route();
});
