// A 2025-11-25 task tool on the official TypeScript SDK that server-everything is built on (the copy installed with
// it under .cache/npm, @modelcontextprotocol/sdk 1.x). server-everything's only task tool, simulate-research-query,
// creates its task with ttl 300000 whatever params.task.ttl asks, so no test can see a ttl pass on it; and its HTTP
// mode keeps a server and task store per Mcp-Session-Id, so no task outlives the session that made it. This one is
// made the same way (registerToolTask, the SDK's InMemoryTaskStore and its tasks/get, tasks/result, tasks/list and
// tasks/cancel handlers) but keeps the ttl the client asked for.
//
// `slow-task` (taskSupport "required", argument `seconds`, default 60): a task with the requested ttl and
// pollInterval 400 that completes after that many seconds. The store deletes it when the ttl has passed.
//
// `node ttl_tasks.mjs` speaks stdio. `node ttl_tasks.mjs http` is the SDK's stateless Streamable HTTP (no
// Mcp-Session-Id: a server and transport per request, as the SDK's stateless example does) on 127.0.0.1, a port
// the OS picks (tests/everything/loopback.cjs, preloaded, prints it); one task store serves every request, so a
// task is still there for a client that initializes again (a console after a restart).
import { createRequire } from "node:module";

const require = createRequire(
  new URL("../../.cache/npm/node_modules/@modelcontextprotocol/server-everything/package.json", import.meta.url));
const { McpServer } = require("@modelcontextprotocol/sdk/server/mcp.js");
const { StdioServerTransport } = require("@modelcontextprotocol/sdk/server/stdio.js");
const { StreamableHTTPServerTransport } = require("@modelcontextprotocol/sdk/server/streamableHttp.js");
const { InMemoryTaskStore, InMemoryTaskMessageQueue } = require("@modelcontextprotocol/sdk/experimental/tasks");
const { z } = require("zod");
const http = require("node:http");

const taskStore = new InMemoryTaskStore();
const taskMessageQueue = new InMemoryTaskMessageQueue();

function makeServer() {
  const server = new McpServer({ name: "ttl-tasks", version: "1.0.0" }, {
    capabilities: { tools: {}, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
    taskStore,
    taskMessageQueue,
  });
  register(server);
  return server;
}

function register(server) {
  server.experimental.tasks.registerToolTask("slow-task", {
    description: "A task that completes after `seconds`, kept for the ttl the client asked for",
    inputSchema: { seconds: z.number().default(60) },
    execution: { taskSupport: "required" },
  }, {
    createTask: async ({ seconds }, extra) => {
      const task = await extra.taskStore.createTask({ ttl: extra.taskRequestedTtl, pollInterval: 400 });
      const timer = setTimeout(() => {
        extra.taskStore.storeTaskResult(task.taskId, "completed", {
          content: [{ type: "text", text: `done after ${seconds} s` }],
        }).catch(() => {});  // expired (deleted) or cancelled before it finished
      }, seconds * 1000);
      timer.unref();
      return { task };
    },
    getTask: async (_args, extra) => await extra.taskStore.getTask(extra.taskId),
    getTaskResult: async (_args, extra) => await extra.taskStore.getTaskResult(extra.taskId),
  });
}

if (process.argv[2] === "http") {
  const listener = http.createServer(async (req, res) => {
    const server = makeServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => { transport.close(); server.close(); });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  });
  listener.listen(0, "127.0.0.1");  // loopback.cjs, preloaded by the tests, prints the port
} else {
  await makeServer().connect(new StdioServerTransport());
  process.stdin.on("end", () => { taskStore.cleanup(); process.exit(0); });
}
