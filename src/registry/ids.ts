import { opaqueId as opaque } from '../infra/opaque-id.js';

export const newSiteId = () => opaque('site_');
export const newDevicePublicId = () => opaque('dev_');
export const newBindingId = () => opaque('bnd_');
export const newAgentId = () => opaque('agt_');
export const newPairingSessionId = () => opaque('ps_');
export const newCommandId = () => opaque('cmd_');
export const newChallengeId = () => opaque('chl_');
