// Drives toolrouter's OpenAI-compatible API with the official openai client, as a chat UI would,
// and prints what it saw as one JSON object for the Go test that runs it (main's
// TestOpenAIClient). TOOLROUTER_BASE_URL is the API's /v1 URL, TOOLROUTER_API_KEY the key.
import OpenAI from 'openai';

const client = new OpenAI({
  baseURL: process.env.TOOLROUTER_BASE_URL,
  apiKey: process.env.TOOLROUTER_API_KEY,
  maxRetries: 0,
  timeout: 20000,
});
const question = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'What is 2+3?' },
];
const out = {};

async function apiError(fn) {
  try {
    await fn();
    return { thrown: false };
  } catch (e) {
    return {
      thrown: true, isAPIError: e instanceof OpenAI.APIError, name: e.constructor.name,
      status: e.status, code: e.code, type: e.type, param: e.param, message: e.message,
    };
  }
}

const completion = await client.chat.completions.create({ model: 'fake', messages: question, temperature: 0 });
out.completion = {
  id: completion.id, object: completion.object, content: completion.choices[0].message.content,
  finish: completion.choices[0].finish_reason, usage: completion.usage, trace: completion.x_toolrouter,
};

const stream = await client.chat.completions.create({
  model: 'fake', messages: question, stream: true, stream_options: { include_usage: true },
});
out.stream = { content: '', chunks: 0, finish: null, usage: null, trace: null };
for await (const chunk of stream) {
  out.stream.chunks++;
  for (const c of chunk.choices) {
    out.stream.content += c.delta?.content ?? '';
    if (c.finish_reason) out.stream.finish = c.finish_reason;
  }
  if (chunk.usage) out.stream.usage = chunk.usage;
  if (chunk.x_toolrouter) out.stream.trace = chunk.x_toolrouter;
}

out.models = [];
for await (const m of client.models.list()) out.models.push(m.id);

const tools = await client.chat.completions.create({
  model: 'remote/gpt-4o-mini',
  messages: [{ role: 'user', content: 'Weather in Paris?' }],
  tools: [{
    type: 'function',
    function: {
      name: 'get_weather', description: 'The weather in a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  }],
});
out.tools = {
  finish: tools.choices[0].finish_reason, content: tools.choices[0].message.content,
  calls: tools.choices[0].message.tool_calls, mode: tools.x_toolrouter?.mode,
};

out.badRequest = await apiError(() => client.chat.completions.create({ model: 'fake', messages: question, n: 2 }));
out.unauthenticated = await apiError(() => new OpenAI({ baseURL: process.env.TOOLROUTER_BASE_URL, apiKey: 'wrong', maxRetries: 0 })
  .chat.completions.create({ model: 'fake', messages: question }));
out.noCouncil = await apiError(() => client.chat.completions.create({ model: 'council', messages: question }));

process.stdout.write(JSON.stringify(out));
