// An MCP client on the official TypeScript SDK, for toolrouter's conformance tests (main's
// TestTypeScriptSDKClient): it connects over streamable HTTP (--url URL) or stdio (the command
// after --), lists the tools, calls --tool with --args (JSON), answers elicitations with
// --elicit (accept, decline; none declares no elicitation), with --env (JSON) the stdio
// server's environment as a host's entry gives it, and prints what it saw as one JSON
// object, as testdata/gosdk's Go client does.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const argv = process.argv.slice(2);
const opt = { url: '', tool: 'route', args: '{"query": "what is 2 plus 40?"}', elicit: 'none', env: '{}' };
let command = [];
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === '--') { command = argv.slice(i + 1); break; }
  opt[argv[i].replace(/^--/, '')] = argv[++i];
}

const out = { protocol: '', tools: [], is_error: false, text: '', structured: null, asked: [] };
const client = new Client({ name: 'tsclient', version: '1' },
  { capabilities: opt.elicit === 'none' ? {} : { elicitation: {} } });
if (opt.elicit !== 'none') {
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    out.asked.push(req.params.message);
    return { action: opt.elicit, content: {} };
  });
}
const transport = opt.url
  ? new StreamableHTTPClientTransport(new URL(opt.url))
  // As an MCP host does: the server gets a few safe variables of ours (PATH, HOME, ...), not
  // our whole environment, and the entry's env (--env, JSON) on top.
  : new StdioClientTransport({ command: command[0], args: command.slice(1), stderr: 'inherit',
    env: { ...getDefaultEnvironment(), ...JSON.parse(opt.env) } });
// The client tells its transport the version initialize negotiated: kept for the report.
const setVersion = transport.setProtocolVersion?.bind(transport);
transport.setProtocolVersion = (v) => { out.protocol = v; setVersion?.(v); };
const deadline = setTimeout(() => { console.error('tsclient: no answer within 60s'); process.exit(1); }, 60000);
await client.connect(transport);
out.tools = (await client.listTools()).tools.map((t) => t.name);
const res = await client.callTool({ name: opt.tool, arguments: JSON.parse(opt.args) });
out.is_error = res.isError === true;
out.structured = res.structuredContent ?? null;
out.text = (res.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('');
console.log(JSON.stringify(out));
clearTimeout(deadline);
await client.close();
