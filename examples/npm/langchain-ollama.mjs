// Drives toolrouter's Ollama API with LangChain's ChatOllama, as a LangChain agent would, and
// prints what it saw as one JSON object for the Go test that runs it (main's TestOllamaClient).
// TOOLROUTER_HOST is toolrouter's base URL, TOOLROUTER_API_KEY the key.
import { ChatOllama } from '@langchain/ollama';

const llm = new ChatOllama({
  baseUrl: process.env.TOOLROUTER_HOST,
  model: 'fake',
  temperature: 0,
  keepAlive: '5m',
  headers: { Authorization: `Bearer ${process.env.TOOLROUTER_API_KEY}` },
});
const out = {};

const answer = await llm.invoke([['system', 'Be brief.'], ['user', 'What is 2+3?']]);
out.invoke = { content: answer.content, doneReason: answer.response_metadata?.done_reason, usage: answer.usage_metadata };

const withTools = llm.bindTools([{
  type: 'function',
  function: {
    name: 'get_weather', description: 'The weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
}]);
const called = await withTools.invoke('Weather in Paris?');
out.bindTools = { calls: (called.tool_calls ?? []).map((c) => ({ name: c.name, args: c.args, id: c.id })) };

process.stdout.write(JSON.stringify(out));
