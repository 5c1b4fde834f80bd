// The Vercel AI SDK (ai + @ai-sdk/openai) against the scripted server, with the SDK's own OpenTelemetry spans
// (experimental_telemetry). The agent is a ToolLoopAgent (generateText / streamText in a loop with tools and a
// step limit) on the OpenAI provider's default model API, the Responses API. Run by gen_vercel_ai.py.
//
// Per run key: retries uses the SDK's own maxRetries (2); streaming uses agent.stream (streamText); turn_limit sets
// stopWhen: stepCountIs(3); tool_error_fatal adds a stop condition that ends the loop after a step whose tool
// failed (the SDK hands tool errors back to the model by default); multi_agent calls a translator agent from
// a tool (an agent used as a tool).
import { createOpenAI } from '@ai-sdk/openai';
import { ToolLoopAgent, stepCountIs, tool } from 'ai';
import { z } from 'zod';
import * as h from '../common.mjs';

h.startTelemetry();

const openai = createOpenAI({ baseURL: h.env.server, apiKey: h.DUMMY_KEY });
const telemetry = (functionId) => ({ isEnabled: true, functionId });

function toolSet(key) {
  const t = h.tools(key);
  return {
    get_weather: tool({ description: 'Current weather for a city.', inputSchema: z.object({ city: z.string() }),
      execute: t.get_weather }),
    get_time: tool({ description: 'Local time in a city.', inputSchema: z.object({ city: z.string() }),
      execute: t.get_time }),
    lookup_order: tool({ description: 'Status of an order.', inputSchema: z.object({ order_id: z.string() }),
      execute: t.lookup_order }),
    charge_card: tool({ description: "Charge the customer's card (always fails in the fixtures).",
      inputSchema: z.object({ amount: z.number().int() }), execute: t.charge_card }),
  };
}

const translator = new ToolLoopAgent({
  id: 'translator',
  model: openai('gpt-4o'),
  instructions: '[agent:translator] You translate to French.',
  maxRetries: 0,
  temperature: 0,
  experimental_telemetry: telemetry('translator'),
});

function askTranslator(key) {
  return tool({
    description: 'Ask the translator agent.',
    inputSchema: z.object({ text: z.string() }),
    execute: async ({ text }) => {
      await h.logTool(key, 'ask_translator', { text });
      await h.logSubAgent(key, 'translator');
      const out = await translator.generate({ prompt: text });
      return out.text;
    },
  });
}

// the app's stop condition for tool_error_fatal: the last step has a failed tool call
const toolFailed = ({ steps }) => steps.at(-1).content.some((part) => part.type === 'tool-error');

function agentFor(key) {
  const tools = toolSet(key);
  let stopWhen = stepCountIs(8);
  if (key === 'turn_limit') stopWhen = stepCountIs(h.TURN_LIMIT);
  if (key === 'tool_error_fatal') stopWhen = [stepCountIs(8), toolFailed];
  if (key === 'multi_agent') tools.ask_translator = askTranslator(key);
  return new ToolLoopAgent({
    id: 'assistant',
    model: openai('gpt-4o-mini'),
    instructions: '[agent:assistant] You answer with the tools.',
    tools,
    stopWhen,
    maxRetries: key.startsWith('retries') ? h.RETRIES : 0,
    temperature: 0,
    experimental_telemetry: telemetry('assistant'),
  });
}

async function runAgent(key) {
  const agent = agentFor(key);
  if (key === 'streaming') {
    let failure = null;
    const result = await agent.stream({ prompt: h.prompt(key) });
    await result.consumeStream({ onError: (error) => { failure = error; } });
    if (failure) throw failure;
    return;
  }
  await agent.generate({ prompt: h.prompt(key) });
}

await h.main(runAgent);
