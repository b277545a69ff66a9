import { opaqueId as opaque } from '../infra/opaque-id.js';

export const newProjectId = () => opaque('prj_', 16);
export const newClientId = () => opaque('cli_', 16);
/** 256 bits; the prefix lets secret scanners recognise a leaked credential. */
export const newClientSecret = () => opaque('dcs_', 32);
