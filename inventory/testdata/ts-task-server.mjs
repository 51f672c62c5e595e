// An MCP server over stdio built on the official TypeScript SDK (the version examples/npm pins),
// whose "delay" tool runs as a task (the SDK's experimental tasks, protocol 2025-11-25) for the
// milliseconds asked. TS_SDK_DIR is examples/npm/node_modules: the SDK and zod are loaded from it.
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';

const modules = process.env.TS_SDK_DIR;
const load = (p) => import(pathToFileURL(join(modules, p)).href);
const { McpServer } = await load('@modelcontextprotocol/sdk/dist/esm/server/mcp.js');
const { StdioServerTransport } = await load('@modelcontextprotocol/sdk/dist/esm/server/stdio.js');
const { InMemoryTaskStore } = await load('@modelcontextprotocol/sdk/dist/esm/experimental/tasks/stores/in-memory.js');
const z = await load('zod/v4/index.js');

const taskStore = new InMemoryTaskStore();
const server = new McpServer({ name: 'ts-tasks', version: '1.0.0' },
  { capabilities: { tasks: { requests: { tools: { call: {} } }, cancel: {} } }, taskStore });

server.experimental.tasks.registerToolTask('delay', {
  description: 'Waits for the given milliseconds, as a task',
  inputSchema: { duration: z.number() },
  execution: { taskSupport: 'required' },
}, {
  async createTask({ duration }, { taskStore, taskRequestedTtl }) {
    const task = await taskStore.createTask({ ttl: taskRequestedTtl, pollInterval: 100 });
    setTimeout(() => {
      taskStore.storeTaskResult(task.taskId, 'completed', {
        content: [{ type: 'text', text: `waited ${duration} ms` }],
      }).catch(() => {}); // cancelled meanwhile
    }, duration);
    return { task };
  },
  async getTask(_args, { taskId, taskStore }) { return await taskStore.getTask(taskId); },
  async getTaskResult(_args, { taskId, taskStore }) { return await taskStore.getTaskResult(taskId); },
});

await server.connect(new StdioServerTransport());
