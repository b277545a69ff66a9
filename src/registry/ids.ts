import { randomBytes } from 'node:crypto';

// Same shape as project and client ids: a kind prefix and 128 random bits in base64url. Unguessable and
// URL-safe, and never derived from a database id or a radio address.
const opaque = (prefix: string) => `${prefix}${randomBytes(16).toString('base64url')}`;

export const newSiteId = () => opaque('site_');
export const newDevicePublicId = () => opaque('dev_');
export const newBindingId = () => opaque('bnd_');
export const newAgentId = () => opaque('agt_');
export const newPairingSessionId = () => opaque('ps_');
