/**
 * BareObject: the baseline Durable Object of the edge benchmark (`bench/edge.bench.ts`).
 *
 * It does the least a SQLite-backed object can do to store an event, so the benchmark can price
 * what `SessionObject` adds on top (validation, sequencing, compare-and-append, lease check,
 * envelope building, cursor frames, socket attachments):
 * - `insertOne(body)`: one `INSERT` of a ready-made row (no transaction of its own; the runtime
 *   commits it like any other write before the reply leaves the output gate);
 * - `insertMany(bodies)`: every row in one `transactionSync`;
 * - `insertAndBroadcast(body)`: one `INSERT`, then `send(body)` on every hibernating socket;
 * - `fetch`: a WebSocket upgrade is accepted with `ctx.acceptWebSocket` (hibernatable, like the
 *   real subscribers); any other request's body text is inserted as one row.
 * Rows are `(seq INTEGER PRIMARY KEY, body TEXT)`: no secondary index, no JSON parsing.
 */
import { DurableObject } from 'cloudflare:workers';

const INSERT_ROW = 'INSERT INTO bare_rows (body) VALUES (?)';

/** The baseline object: raw inserts and a raw broadcast, nothing else. */
export class BareObject extends DurableObject<unknown> {
  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx, env);
    ctx.storage.sql.exec('CREATE TABLE IF NOT EXISTS bare_rows (seq INTEGER PRIMARY KEY, body TEXT NOT NULL)');
  }

  /** Inserts one row. Returns the number of rows written (1). */
  insertOne(body: string): number {
    return this.ctx.storage.sql.exec(INSERT_ROW, body).rowsWritten;
  }

  /** Inserts every body as one row, in one synchronous transaction. Returns the row count. */
  insertMany(bodies: readonly string[]): number {
    const sql = this.ctx.storage.sql;
    this.ctx.storage.transactionSync(() => {
      for (const body of bodies) sql.exec(INSERT_ROW, body);
    });
    return bodies.length;
  }

  /** Inserts one row, then sends the same text to every connected socket. Returns the socket count. */
  insertAndBroadcast(body: string): number {
    this.ctx.storage.sql.exec(INSERT_ROW, body);
    const sockets = this.ctx.getWebSockets();
    for (const ws of sockets) {
      try {
        ws.send(body);
      } catch {
        // A closed socket is skipped; the benchmark notices missing receipts itself.
      }
    }
    return sockets.length;
  }

  /** WebSocket upgrade: accept (hibernatable). Anything else: insert the request body as one row. */
  override async fetch(request: Request): Promise<Response> {
    if (request.headers.get('Upgrade')?.toLowerCase() === 'websocket') {
      const { 0: client, 1: server } = new WebSocketPair();
      this.ctx.acceptWebSocket(server);
      return new Response(null, { status: 101, webSocket: client });
    }
    const body = await request.text();
    const { rowsWritten } = this.ctx.storage.sql.exec(INSERT_ROW, body);
    return Response.json({ rowsWritten });
  }

  override webSocketClose(ws: WebSocket, code: number, reason: string): void {
    try {
      ws.close(code === 1005 || code === 1006 ? 1000 : code, reason);
    } catch {
      // Already closed.
    }
  }
}
