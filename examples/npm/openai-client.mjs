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

// The client's own tools, answered through toolrouter's two phases on an Ollama model ("fake")
// and on an OpenAI-compatible provider's ("remote/gpt-4o-mini"), under each tool_choice, streamed
// (the SDK's own stream helper puts the calls together from their deltas) and not.
const weatherTools = [
  {
    type: 'function',
    function: {
      name: 'get_weather', description: 'The weather in a city',
      parameters: { type: 'object', properties: { city: { type: 'string', minLength: 2 } }, required: ['city'], additionalProperties: false },
    },
  },
  {
    type: 'function',
    function: {
      name: 'get_time', description: 'The time in a zone',
      parameters: { type: 'object', properties: { zone: { type: 'string' } }, required: ['zone'] },
    },
  },
];
const ask = (q) => [{ role: 'user', content: q }];
const toolCases = {
  auto: { messages: ask('Weather in Paris?') },
  required: { messages: ask('Weather in Paris?'), tool_choice: 'required' },
  named: { messages: ask('Weather in Paris?'), tool_choice: { type: 'function', function: { name: 'get_time' } } },
  none: { messages: ask('Weather in Paris?'), tool_choice: 'none' },
  parallel: { messages: ask('Weather and time in Paris, both?') },
  one: { messages: ask('Weather and time in Paris, both?'), parallel_tool_calls: false },
  results: {
    messages: [
      ...ask('Weather in Paris?'),
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_0', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: 'call_0', content: 'sunny' },
    ],
  },
};
const report = (m) => ({
  finish: m.choices[0].finish_reason, content: m.choices[0].message.content,
  calls: (m.choices[0].message.tool_calls ?? []).map((c) => ({ id: c.id, type: c.type, function: { name: c.function.name, arguments: c.function.arguments } })),
  mode: m.x_toolrouter?.mode,
});
out.toolCases = {};
for (const model of ['fake', 'remote/gpt-4o-mini']) {
  for (const [name, body] of Object.entries(toolCases)) {
    const req = { model, tools: weatherTools, ...body };
    out.toolCases[`${model}/${name}`] = report(await client.chat.completions.create(req));
    const s = client.chat.completions.stream(req);
    out.toolCases[`${model}/${name}/stream`] = report(await s.finalChatCompletion());
  }
}

// A tool-result round trip as an agent makes it: the SDK's runTools runs the functions the answer
// calls and sends their results back until the model answers in text.
const ran = [];
const runner = client.chat.completions.runTools({
  model: 'fake', messages: ask('Weather in Paris?'),
  tools: [{
    type: 'function',
    function: {
      name: 'get_weather', description: 'The weather in a city', parse: JSON.parse,
      parameters: weatherTools[0].function.parameters,
      function: (args) => { ran.push(args); return 'sunny'; },
    },
  }],
});
out.runTools = { content: await runner.finalContent(), ran, messages: runner.messages.length };

out.badSchema = await apiError(() => client.chat.completions.create({
  model: 'fake', messages: ask('Weather?'),
  tools: [{ type: 'function', function: { name: 'broken', parameters: { type: 'object', properties: { a: { type: 'strin' } } } } }],
}));
out.unknownFunction = await apiError(() => client.chat.completions.create({
  model: 'fake', messages: ask('Weather?'), tools: weatherTools, tool_choice: { type: 'function', function: { name: 'get_news' } },
}));

out.badRequest = await apiError(() => client.chat.completions.create({ model: 'fake', messages: question, n: 2 }));
out.unauthenticated = await apiError(() => new OpenAI({ baseURL: process.env.TOOLROUTER_BASE_URL, apiKey: 'wrong', maxRetries: 0 })
  .chat.completions.create({ model: 'fake', messages: question }));
out.noCouncil = await apiError(() => client.chat.completions.create({ model: 'council', messages: question }));

process.stdout.write(JSON.stringify(out));
