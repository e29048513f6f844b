// Stateless client-certificate authentication (Kura's priority 100 provider): on a client-auth port
// the TLS layer has verified the chain; the certificate's CN names the identity.

import type { AuthProvider, AuthRequest } from '../provider.js';
import { CERTIFICATE_PRIORITY } from '../provider.js';

/** The CN of a certificate subject (the first one when there are several), as Kura maps identities. */
export function commonName(subject: unknown): string | undefined {
  if (typeof subject !== 'object' || subject === null) return undefined;
  for (const [k, v] of Object.entries(subject as Record<string, unknown>)) {
    if (k.toUpperCase() !== 'CN') continue;
    const cn = Array.isArray(v) ? v[0] : v;
    return typeof cn === 'string' && cn !== '' ? cn : undefined;
  }
  return undefined;
}

export function certificateProvider(): AuthProvider {
  return {
    name: 'certificate',
    priority: CERTIFICATE_PRIORITY,
    authenticate(req: AuthRequest) {
      if (!req.listener.clientAuth) return undefined;
      const cn = commonName(req.peerCertificate()?.subject);
      return cn !== undefined && req.identity(cn) ? cn : undefined;
    },
  };
}
