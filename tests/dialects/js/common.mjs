// What every JavaScript dialect driver shares (the counterpart of common.py for Node).
//
// The OpenTelemetry Node SDK exports spans over OTLP/HTTP (protobuf) to the Python receiver; the HTTP
// instrumentation gives the real SERVER span of the http shapes. The four tools log each execution to the Python
// side (the tool log of the truth), run boundaries are signalled to it (after a flush, so that every span of a run
// has arrived before its end is recorded), and the runs to make come from DIALECT_PLAN. Nothing here calls a
// hosted service: the model server, the receiver and the control server are on 127.0.0.1.
import diagnostics from 'node:diagnostics_channel';
import { createRequire } from 'node:module';
import { context } from '@opentelemetry/api';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { resourceFromAttributes } from '@opentelemetry/resources';

const need = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set: run this driver through its gen_<name>.py`);
  return v;
};

export const env = {
  name: need('DIALECT_NAME'),
  server: need('DIALECT_SERVER_URL'),
  control: need('DIALECT_CONTROL_URL'),
  otlp: need('DIALECT_OTLP_URL'),
  plan: JSON.parse(need('DIALECT_PLAN')),
};
export const DUMMY_KEY = 'sk-dummy-not-a-real-key';

// Nothing hosted: every outgoing request (fetch, node:http and node:https) to a host other than the local servers
// is refused and remembered, and main() then fails, so that a framework calling home is seen and turned off
// rather than reaching the network.
const LOCAL = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);
const refused = [];
const localFetch = globalThis.fetch;
globalThis.fetch = async (input, init) => {
  const url = new URL(input instanceof Request ? input.url : String(input));
  if (!LOCAL.has(url.hostname)) {
    refused.push(url.origin);
    throw new TypeError(`fetch refused by the fixture harness: ${url.origin} is not a local server`);
  }
  return localFetch(input, init);
};
diagnostics.channel('http.client.request.start').subscribe(({ request }) => {
  const host = String(request.host || '').replace(/:\d+$/, '');
  if (!LOCAL.has(host)) {
    refused.push(host);
    request.destroy(new Error(`request refused by the fixture harness: ${host} is not a local server`));
  }
});
export const RETRIES = 2;      // the client's retries in the retries shape (common.RETRIES)
export const TURN_LIMIT = 3;   // the framework's step limit in the turn_limit shape (common.TURN_LIMIT)

const flushers = [];    // every span processor that exports to the receiver, flushed at each run boundary
const shutdowns = [];   // and shut down at the end

// A framework that exports through a span processor of its own registers its flush here.
export const addFlush = (fn) => flushers.push(fn);

async function flush() {
  // a tick first: frameworks that hand ended spans to their exporter asynchronously get them there
  await new Promise((resolve) => setTimeout(resolve, 20));
  await Promise.all(flushers.map((fn) => fn()));
}

const httpInstrumentation = () => new HttpInstrumentation({ ignoreOutgoingRequestHook: () => true });

// The Node SDK with a batch processor in front of the OTLP/HTTP protobuf exporter, and the HTTP instrumentation
// for incoming requests only (outgoing ones, the exporter's and the control calls, make no span).
// `instrumentations` are the dialect's own (registered by the SDK beside the HTTP one). With `global: false` no
// tracer provider is registered globally (for a framework that traces through whatever global provider exists and
// exports its own spans otherwise): the HTTP instrumentation gets a provider of its own, and only the context
// manager is global (needs @opentelemetry/context-async-hooks in the fixture's package.json).
export async function startTelemetry({ instrumentations = [], global = true } = {}) {
  const processor = new BatchSpanProcessor(new OTLPTraceExporter({ url: env.otlp }));
  addFlush(() => processor.forceFlush());
  const resource = resourceFromAttributes({ 'service.name': `dialect-${env.name}` });
  const http = httpInstrumentation();
  if (!global) {
    const { AsyncLocalStorageContextManager } = await import('@opentelemetry/context-async-hooks');
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    const provider = new BasicTracerProvider({ resource, spanProcessors: [processor] });
    for (const i of [http, ...instrumentations]) i.setTracerProvider(provider);
    shutdowns.push(() => provider.shutdown());
    return;
  }
  const sdk = new NodeSDK({
    resource,
    resourceDetectors: [],   // no host, process or OS attributes in a committed fixture
    spanProcessors: [processor],
    instrumentations: [http, ...instrumentations],
  });
  sdk.start();
  shutdowns.push(() => sdk.shutdown());
}

// For a framework that starts the OpenTelemetry SDK itself, exporting to the receiver (env.otlp) and registered
// globally: the HTTP instrumentation traces through its provider, its flush and shutdown serve the run boundaries.
export function useFrameworkTelemetry({ flush: flushFramework, shutdown }) {
  httpInstrumentation();   // enabled on construction, with the global tracer provider: the framework's
  addFlush(flushFramework);
  shutdowns.push(shutdown);
}

export async function stopTelemetry() {
  await flush();
  for (const fn of shutdowns) await fn();
}

async function post(path, body) {
  const res = await fetch(`${env.control}${path}`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`control ${path}: HTTP ${res.status} ${await res.text()}`);
}

export const prompt = (key, text = 'Please help.') => `[run:${key}] ${text}`;
export const logTool = (run, tool, args, error = false) => post('/tool', { run, tool, args, error });
export const logSubAgent = (run, agent, how = 'agent_tool') => post('/sub_agent', { run, agent, how });

function raisedText(e) {
  const name = (e && (e.name || e.constructor?.name)) || 'Error';
  return `${name}: ${String(e && e.message !== undefined ? e.message : e).slice(0, 120)}`;
}

// One agent run between its boundaries; an exception ends the run and is recorded, the driver goes on.
export async function run(key, shape, group, fn) {
  await flush();
  await post('/run/start', { key, shape, group: group ?? key });
  let raised = null;
  try {
    await fn();
  } catch (e) {
    raised = raisedText(e);
  }
  await flush();
  await post('/run/end', { key, raised });
}

// The four tools of every fixture, bound to a run key: plain async functions that log their execution.
export function tools(run) {
  return {
    get_weather: async ({ city }) => { await logTool(run, 'get_weather', { city }); return `sunny, 21C in ${city}`; },
    get_time: async ({ city }) => { await logTool(run, 'get_time', { city }); return `10:00 in ${city}`; },
    lookup_order: async ({ order_id }) => {
      await logTool(run, 'lookup_order', { order_id });
      return `order ${order_id}: delivered`;
    },
    charge_card: async ({ amount }) => {
      await logTool(run, 'charge_card', { amount }, true);
      throw new Error('charge_card failed (scripted tool error)');
    },
  };
}

// An HTTP server behind the OpenTelemetry HTTP instrumentation (real SERVER spans): GET /run?key=K runs one
// agent, GET /two?key=A&key=B runs two, one after the other, in one request. It is called with fetch, which the
// HTTP instrumentation does not trace, so the SERVER span is the trace root.
async function withHttpApp(runAgent, body) {
  const http = createRequire(import.meta.url)('node:http');   // required after the SDK started: instrumented
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
    const keys = url.searchParams.getAll('key');
    const shape = url.pathname === '/run' ? 'http' : 'two_runs';
    for (const k of keys) await run(k, shape, keys.join('+'), () => runAgent(k));
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('ok');
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    await body(`http://127.0.0.1:${server.address().port}`);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}

// Makes the runs of DIALECT_PLAN in order: http and two_runs through the HTTP app, the others directly.
export async function main(runAgent) {
  for (const step of env.plan) {
    if (step.shape === 'http' || step.shape === 'two_runs') {
      const path = step.shape === 'http' ? '/run' : '/two';
      await withHttpApp(runAgent, async (base) => {
        const q = step.keys.map((k) => `key=${encodeURIComponent(k)}`).join('&');
        const res = await fetch(`${base}${path}?${q}`);
        await res.text();
      });
    } else {
      for (const k of step.keys) await run(k, step.shape, null, () => runAgent(k));
    }
  }
  await stopTelemetry();
  if (refused.length) throw new Error(`hosted calls refused: ${[...new Set(refused)].join(', ')}`);
}
