/**
 * The store's pool: one statement on a pooled connection (honouring the caller's signal, prepared
 * once per connection by name), or a transaction on one connection (the locked fallback path,
 * checkpoint writes, migrations). A connection that broke, or whose statement was aborted, is
 * discarded instead of returned to the pool.
 */
import { throwIfAborted } from '../../core/abort.js';
import { DurableEventStoreError } from '../../protocol/errors.js';
import { isConnectionLoss, runQuery, type PgPool, type PgPoolClient } from './driver.js';
import { readFailure } from './failures.js';
import { preparedStatementName } from './statements.js';

/** Pooled connections that already carry the store's no-op 'error' listener. */
const guarded = new WeakSet<object>();

/** Statements and transactions on the store's pool. */
export class PostgresConnection {
  /** Set by the store's `close`: no new connection is taken after it. */
  closed = false;
  /** Prepared-statement names by statement text (a handful: the statements are fixed per schema), see `preparedStatementName`. */
  readonly #names = new Map<string, string>();

  constructor(
    readonly pool: PgPool,
    private readonly prepare: boolean,
  ) {}

  async connect(): Promise<PgPoolClient> {
    if (this.closed) throw new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', 'the store is closed');
    try {
      const client = await this.pool.connect();
      // A checked-out connection that breaks emits 'error' (the pool only listens while it is
      // idle); the failing query reports it, so the event itself must not crash the process.
      if (!guarded.has(client)) {
        guarded.add(client);
        client.on('error', () => undefined);
      }
      return client;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', `cannot connect to PostgreSQL: ${message}`, { cause: error });
    }
  }

  /** Runs one statement on a pooled connection, honouring `signal`. */
  async query<R extends object>(text: string, values: unknown[], signal?: AbortSignal): Promise<R[]> {
    return (await this.statement<R>(text, values, signal)).rows;
  }

  /** {@link query} for a read call: a failure is reported as `readFailure(error, what, signal)`. */
  async read<R extends object>(what: string, text: string, values: unknown[], signal?: AbortSignal): Promise<R[]> {
    try {
      return await this.query<R>(text, values, signal);
    } catch (error) {
      throw readFailure(error, what, signal);
    }
  }

  async statement<R extends object>(
    text: string,
    values: unknown[],
    signal?: AbortSignal,
  ): Promise<{ rows: R[]; rowCount: number }> {
    throwIfAborted(signal);
    const client = await this.connect();
    let run: ReturnType<typeof runQuery<R & Record<string, unknown>>>;
    try {
      run = runQuery<R & Record<string, unknown>>(client, text, values, signal, this.#statementName(text, values));
    } catch (error) {
      client.release();
      throw error;
    }
    let broken = false;
    run.result.catch((error: unknown) => {
      broken = isConnectionLoss(error);
    });
    void run.settled.then(() => {
      // Give the catch above a chance to run first, then hand the connection back.
      queueMicrotask(() => client.release(broken || run.aborted()));
    });
    const result = await run.result;
    return { rows: result.rows, rowCount: result.rowCount ?? 0 };
  }

  /** Runs `fn` in a transaction on one connection (the locked fallback path). */
  async transaction<T>(signal: AbortSignal | undefined, fn: (client: PgPoolClient) => Promise<T>): Promise<T> {
    throwIfAborted(signal);
    const client = await this.connect();
    let broken = false;
    try {
      await client.query('BEGIN');
      try {
        const result = await fn(client);
        await client.query('COMMIT');
        return result;
      } catch (error) {
        broken = isConnectionLoss(error);
        if (!broken) await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      }
    } catch (error) {
      broken ||= isConnectionLoss(error);
      throw error;
    } finally {
      client.release(broken);
    }
  }

  /** The prepared-statement name of `text` (the store's own parameterized statements only), or none. */
  #statementName(text: string, values: unknown[]): string | undefined {
    if (!this.prepare || values.length === 0) return undefined;
    let name = this.#names.get(text);
    if (name === undefined) {
      name = preparedStatementName(text);
      this.#names.set(text, name);
    }
    return name;
  }
}
