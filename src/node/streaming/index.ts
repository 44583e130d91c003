// The node agent's streaming endpoints (kubelet's /containerLogs, /exec, /attach,
// /portForward), served over the runtime seam (../runtime.ts). The agent's HTTPS server
// (agent-server.ts) authenticates and authorizes a request first, then hands it here:
// plain requests from its 'request' event, upgrades (WebSocket, SPDY) from its 'upgrade'
// event. A stub until the streaming protocols land.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ContainerRuntime } from '../runtime.js';

/** Whether the path is one of the streaming endpoints (so the server routes it here). */
export function isStreamingPath(path: string): boolean {
  return /^\/(containerLogs|exec|attach|portForward)\//.test(path);
}

/** A plain request to a streaming path (GET /containerLogs/...; exec without an upgrade gets 400). */
export function serveStreaming(req: IncomingMessage, res: ServerResponse, runtime: ContainerRuntime): void {
  void req;
  void runtime;
  res.writeHead(501).end('not built yet\n');
}

/** An upgrade request to a streaming path (exec, attach, portForward over WebSocket or SPDY). */
export function serveStreamingUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, runtime: ContainerRuntime): void {
  void req;
  void head;
  void runtime;
  socket.end('HTTP/1.1 501 Not Implemented\r\nConnection: close\r\n\r\n');
}
