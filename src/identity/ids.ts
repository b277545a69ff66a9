import { randomBytes } from 'node:crypto';

// 128 random bits: unguessable, so an id leaks nothing and cannot be enumerated. base64url keeps ids
// URL-safe; the prefix says what kind of thing an id names when it turns up in a log or a ticket.
const opaque = (prefix: string, bytes: number) => `${prefix}${randomBytes(bytes).toString('base64url')}`;

export const newProjectId = () => opaque('prj_', 16);
export const newClientId = () => opaque('cli_', 16);
/** 256 bits; the prefix lets secret scanners recognise a leaked credential. */
export const newClientSecret = () => opaque('dcs_', 32);
