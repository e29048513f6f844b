// Answers written in one turn of the event loop leave together, after every request read in that
// turn has been handled (docs/performance.md "The cost of a request").
//
// Node reads the connections that are ready one after the other and runs each request's handler
// before it reads the next one. Ending a response in the handler sends it at once, and every send
// to a client that waits for it wakes that client: on a busy server, one wake-up per answer. Ended
// here instead, the answers of all connections that were ready go out back to back once the reads
// are done (`setImmediate` runs after libuv's poll phase), and a client with several connections
// is woken once for all of them. On loopback that wake-up is paid by the sender (the kernel
// delivers the bytes in its system call), so it is CPU the daemon saves (bench/profile-http.ts
// measures it). An answer waits at most for the other requests of its turn.
//
// Only for answers whose whole body is in memory (RequestContext.send); streamed answers (files,
// downloads) write as they go.

import type { ServerResponse } from 'node:http';

export class AnswerBatch {
  /** Responses with headers written and `end` due: response, body, encoding, three slots each. */
  private due: unknown[] = [];
  private spare: unknown[] = [];
  private readonly flushNow = () => this.flush();

  /** Ends `res` with `body` after the requests of this turn of the event loop (no body: `undefined`). */
  end(res: ServerResponse, body: string | Buffer | undefined, encoding: BufferEncoding): void {
    if (this.due.length === 0) setImmediate(this.flushNow);
    this.due.push(res, body, encoding);
  }

  private flush(): void {
    const list = this.due;
    // Two lists used in turn: an answer ended during the flush (a 'finish' listener) waits for the next.
    this.due = this.spare;
    this.spare = list;
    for (let i = 0; i < list.length; i += 3) {
      const res = list[i] as ServerResponse;
      const body = list[i + 1] as string | Buffer | undefined;
      const encoding = list[i + 2] as BufferEncoding;
      // The client went away meanwhile: nothing to send it, and Node would only report that.
      if (res.destroyed) continue;
      try {
        if (body === undefined) res.end();
        else res.end(body, encoding);
      } catch {
        // end() throws only for a response it cannot finish (a wrong length): close the connection
        // rather than leave the client waiting for the rest.
        res.destroy();
      }
    }
    list.length = 0;
  }
}
