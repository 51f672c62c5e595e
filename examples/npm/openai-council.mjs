// Streams a chat completion of model "council" with the official openai client, as a chat UI that
// shows reasoning would, and prints what it saw as one JSON object for the Go test that runs it
// (main's TestOpenAIClientCouncil): every reasoning_content and content delta, in order, the
// finish reason and x_toolrouter; then the same with reasoning_effort "none".
// TOOLROUTER_BASE_URL is the API's /v1 URL, TOOLROUTER_API_KEY the key.
import OpenAI from 'openai';

const client = new OpenAI({
  baseURL: process.env.TOOLROUTER_BASE_URL,
  apiKey: process.env.TOOLROUTER_API_KEY,
  maxRetries: 0,
  timeout: 20000,
});
const messages = [{ role: 'user', content: 'What is 2+3?' }];

async function read(extra) {
  const stream = await client.chat.completions.create({ model: 'council', messages, stream: true, ...extra });
  const run = { deltas: [], finish: null, trace: null };
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      // reasoning_content is not in the client's types: a chat UI reads it from the raw delta.
      if (c.delta?.reasoning_content) run.deltas.push({ reasoning: c.delta.reasoning_content });
      if (c.delta?.content) run.deltas.push({ content: c.delta.content });
      if (c.finish_reason) run.finish = c.finish_reason;
    }
    if (chunk.x_toolrouter) run.trace = chunk.x_toolrouter;
  }
  return run;
}

const out = {
  deliberation: await read({}),
  quiet: await read({ reasoning_effort: 'none' }),
};
process.stdout.write(JSON.stringify(out));
