// Drives a smyth gateway's AG-UI endpoint with the official client (@ag-ui/client's
// HttpAgent), as a front end would. Reads a scenario as JSON on stdin and prints what
// the client saw as JSON on stdout; tests/gateway/test_gateway_agui_node.py runs it.
//
// Scenario: {url, agent, threadId, keys: {run, resume}, prompts: [..], approve: bool}
// - each prompt is one run on the same thread (the agent's durable session);
// - a run that ends with the interrupt outcome is resumed (approve: the decision the
//   interrupt's metadata pins, by its arguments_sha256; else the entry is cancelled),
//   with the resume key.
import { HttpAgent } from "@ag-ui/client";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const scenario = JSON.parse(Buffer.concat(chunks).toString("utf8"));

const agent = new HttpAgent({
  url: `${scenario.url}/ag-ui/${scenario.agent}`,
  threadId: scenario.threadId,
  headers: { Authorization: `Bearer ${scenario.keys.run}` },
});

const runs = [];
async function run(parameters) {
  const seen = { events: [], text: "", outcome: null, interrupts: [], error: null };
  try {
    const result = await agent.runAgent(parameters, {
      onEvent({ event }) {
        seen.events.push(event.type);
      },
      onTextMessageContentEvent({ event }) {
        seen.text += event.delta;
      },
      onRunFinishedEvent({ event }) {
        seen.outcome = event.outcome?.type ?? "success";
        seen.interrupts = event.outcome?.interrupts ?? [];
      },
    });
    seen.result = result.result ?? null;
  } catch (error) {
    seen.error = String(error?.message ?? error);
  }
  runs.push(seen);
  return seen;
}

for (const prompt of scenario.prompts) {
  agent.addMessage({ id: crypto.randomUUID(), role: "user", content: prompt });
  let seen = await run({});
  while (seen.outcome === "interrupt") {
    const resume = agent.pendingInterrupts.map((interrupt) => {
      const smyth = interrupt.metadata?.smyth ?? {};
      return scenario.approve
        ? {
            interruptId: interrupt.id,
            status: "resolved",
            payload: { approved: true, arguments_sha256: smyth.arguments_sha256 },
          }
        : { interruptId: interrupt.id, status: "cancelled" };
    });
    agent.headers = { Authorization: `Bearer ${scenario.keys.resume}` };
    seen = await run({ resume });
    agent.headers = { Authorization: `Bearer ${scenario.keys.run}` };
  }
}

const messages = agent.messages.map((m) => ({
  role: m.role,
  content: typeof m.content === "string" ? m.content : null,
  toolCalls: (m.toolCalls ?? []).map((c) => c.function.name),
}));
process.stdout.write(JSON.stringify({ runs, messages, pending: agent.pendingInterrupts }));
