// ASSET-V1 request dispatch: one `switch` over the method, one file per verb. Every request is
// handled on its own promise, so requests run concurrently and a slow device delays only the replies
// that wait for it. Nothing a requester sends can throw out of here.

import type { AssetService } from '../../assets/types.js';
import type { Logger } from '../../log.js';
import { AssetV1Error, Envelope, badRequest, type AssetV1Request, type EnvelopeOptions, type Reply } from './envelope.js';
import { getAssets, parseGetAssetsBody } from './get-assets.js';
import { execRead, parseReadBody } from './exec-read.js';
import { execWrite, parseWriteBody } from './exec-write.js';

// Kura's CloudletDefaultHandler: methods a cloudlet does not implement are KuraException
// OPERATION_NOT_SUPPORTED, i.e. 500 with this text (reference §3.1).
const NOT_SUPPORTED: Record<string, string> = {
  PUT: 'Operation put not supported.',
  POST: 'Operation post not supported.',
  DEL: 'Operation delete not supported.',
};

export class AssetV1Handler {
  readonly envelope: Envelope;

  constructor(
    private readonly assets: AssetService,
    opts: EnvelopeOptions,
    private readonly log: Logger,
  ) {
    this.envelope = new Envelope(opts);
  }

  /** Handles one incoming message; resolves with the reply to publish, or undefined for none. */
  async handle(topic: string, payload: Buffer): Promise<Reply | undefined> {
    const parsed = this.envelope.parse(topic, payload);
    if (!parsed.ok) {
      if (!parsed.ignore) this.log.info('ASSET-V1 request dropped without reply', { topic, reason: parsed.reason });
      return undefined;
    }
    const req = parsed.request;
    try {
      const json = await this.dispatch(req);
      return this.envelope.ok(req, json);
    } catch (err) {
      if (err instanceof AssetV1Error) {
        this.log.debug('ASSET-V1 request refused', { topic, code: err.code, reason: err.detail ?? '' });
        return this.envelope.error(req, err);
      }
      // A bug or an unexpected service failure: 500 without details, as Kura does.
      this.log.error('ASSET-V1 request failed', { topic, error: (err as Error)?.message ?? String(err) });
      return this.envelope.error(req, new AssetV1Error(500));
    }
  }

  private async dispatch(req: AssetV1Request): Promise<string> {
    const r = req.resources;
    switch (req.method) {
      case 'GET':
        if (r.length !== 1 || r[0] !== 'assets') throw badRequest(`Unknown resource GET/${r.join('/')}.`);
        return JSON.stringify(getAssets(this.assets, parseGetAssetsBody(req.body)));
      case 'EXEC':
        if (r.length === 1 && r[0] === 'read') return JSON.stringify(await execRead(this.assets, parseReadBody(req.body)));
        if (r.length === 1 && r[0] === 'write') return JSON.stringify(await execWrite(this.assets, parseWriteBody(req.body)));
        throw badRequest(`Unknown resource EXEC/${r.join('/')}.`);
      case 'PUT':
      case 'POST':
      case 'DEL':
        throw new AssetV1Error(500, NOT_SUPPORTED[req.method]);
      default:
        // Kura: an unknown method is 400 with no message.
        throw new AssetV1Error(400);
    }
  }
}
