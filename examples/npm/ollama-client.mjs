// Drives toolrouter's Ollama API with the official ollama client, as a local agent would, and
// prints what it saw as one JSON object for the Go test that runs it (main's TestOllamaClient).
// TOOLROUTER_HOST is toolrouter's base URL (what OLLAMA_HOST would be), TOOLROUTER_API_KEY the key.
import { Ollama } from 'ollama';

const host = process.env.TOOLROUTER_HOST;
const ollama = new Ollama({ host, headers: { Authorization: `Bearer ${process.env.TOOLROUTER_API_KEY}` } });
const messages = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'What is 2+3?' },
];
const weather = {
  type: 'function',
  function: {
    name: 'get_weather', description: 'The weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};
const out = {};

// responseError is what the client threw: ResponseError carries the server's {"error"} message
// and the status.
async function responseError(fn) {
  try {
    await fn();
    return { thrown: false };
  } catch (e) {
    return { thrown: true, name: e.name, status: e.status_code, message: e.message };
  }
}

out.list = (await ollama.list()).models.map((m) => m.name);
const shown = await ollama.show({ model: out.list[out.list.length - 1] });
out.show = { capabilities: shown.capabilities, details: shown.details };
out.version = (await ollama.version()).version;
out.ps = (await ollama.ps()).models;

const chat = await ollama.chat({ model: 'fake', messages, stream: false, options: { temperature: 0 } });
out.chat = {
  content: chat.message.content, role: chat.message.role, done: chat.done, doneReason: chat.done_reason,
  promptEvalCount: chat.prompt_eval_count, evalCount: chat.eval_count, mode: chat.x_toolrouter?.mode,
};

const stream = await ollama.chat({ model: 'fake', messages, stream: true });
out.stream = { content: '', parts: 0, done: false, doneReason: null };
for await (const part of stream) {
  out.stream.parts++;
  out.stream.content += part.message.content;
  if (part.done) {
    out.stream.done = true;
    out.stream.doneReason = part.done_reason;
  }
}

const tools = await ollama.chat({
  model: 'fake', stream: false, tools: [weather],
  messages: [{ role: 'user', content: 'Weather in Paris?' }],
});
out.tools = { calls: tools.message.tool_calls ?? [], doneReason: tools.done_reason };

// A tool-result round trip: the client ran its tool and sends the result back.
const roundTrip = await ollama.chat({
  model: 'fake', stream: false, tools: [weather],
  messages: [
    { role: 'user', content: 'Weather in Paris?' },
    { role: 'assistant', content: '', tool_calls: out.tools.calls },
    { role: 'tool', tool_name: 'get_weather', content: 'sunny, 21 C' },
  ],
});
out.roundTrip = { content: roundTrip.message.content, done: roundTrip.done };

out.pull = await responseError(() => ollama.pull({ model: 'llama3.2', stream: false }));
out.badRequest = await responseError(() => ollama.chat({ model: 'fake', messages: [], stream: false }));
out.unauthenticated = await responseError(() => new Ollama({ host, headers: { Authorization: 'Bearer wrong' } }).list());

process.stdout.write(JSON.stringify(out));
