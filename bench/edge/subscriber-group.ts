/**
 * WebSocket clients (`ws`) for the broadcast measurement of `bench/edge.bench.ts`.
 *
 * 1. `open` connects `count` sockets to one URL and waits until each is ready (the protocol
 *    decides: on open for a bare socket, on `caught_up` for a ledger subscriber).
 * 2. `next(trigger)` clears the receipts, runs `trigger` (the append), and resolves once every
 *    socket has received exactly one event frame, with each socket's receipt time
 *    (`performance.now()`, taken before the frame is parsed). A second frame, an unexpected frame
 *    or a missing receipt (after {@link RECEIPT_TIMEOUT_MS}) fails the measurement.
 */
import WebSocket from 'ws';

/** How long `next` waits for every socket to receive the event. */
export const RECEIPT_TIMEOUT_MS = 10_000;

/** What a subscriber group expects: when a socket is ready, and what a live frame looks like. */
export interface SubscriberProtocol {
  /** `''` is asked once on open; then every frame until one returns true. */
  ready(frame: string): boolean;
  /** Whether a frame after `ready` is the broadcast being timed. */
  isEvent(frame: string): boolean;
}

/**
 * `count` WebSocket clients; {@link SubscriberGroup.next} times one broadcast: each socket's
 * receipt of its next frame, which must be exactly one expected event frame per socket.
 */
export class SubscriberGroup {
  readonly #sockets: WebSocket[] = [];
  readonly #protocol: SubscriberProtocol;
  #receipts: Array<number | undefined> = [];
  #received = 0;
  #problem: string | undefined;
  #done: (() => void) | undefined;

  private constructor(protocol: SubscriberProtocol) {
    this.#protocol = protocol;
  }

  static async open(url: string, headers: Record<string, string>, count: number, protocol: SubscriberProtocol): Promise<SubscriberGroup> {
    const group = new SubscriberGroup(protocol);
    await Promise.all(Array.from({ length: count }, (_, index) => group.#connect(url, headers, index)));
    return group;
  }

  #connect(url: string, headers: Record<string, string>, index: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, { headers, perMessageDeflate: false });
      this.#sockets.push(ws);
      let isReady = false;
      const becomeReady = (frame: string): void => {
        if (!this.#protocol.ready(frame)) return;
        isReady = true;
        resolve();
      };
      ws.on('error', reject);
      ws.on('open', () => becomeReady(''));
      ws.on('message', (data) => {
        const at = performance.now();
        const frame = data.toString();
        if (!isReady) return becomeReady(frame);
        if (this.#receipts[index] !== undefined) this.#problem = `socket ${index} got a second frame`;
        else if (!this.#protocol.isEvent(frame)) this.#problem = `socket ${index} got ${frame.slice(0, 120)}`;
        else {
          this.#receipts[index] = at;
          this.#received++;
          if (this.#received === this.#sockets.length) this.#done?.();
        }
      });
    });
  }

  /** Runs `trigger` and resolves with every socket's receipt time of the event it causes. */
  async next(trigger: () => Promise<void>): Promise<number[]> {
    this.#receipts = new Array<number | undefined>(this.#sockets.length);
    this.#received = 0;
    const all = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`only ${this.#received} of ${this.#sockets.length} sockets got the event`)),
        RECEIPT_TIMEOUT_MS,
      );
      this.#done = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    await Promise.all([trigger(), all]);
    if (this.#problem !== undefined) throw new Error(this.#problem);
    return this.#receipts.map((at) => at ?? Number.NaN);
  }

  close(): void {
    for (const ws of this.#sockets) ws.close(1000);
  }
}
