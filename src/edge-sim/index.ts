export { EdgeSim, type AckedMessage, type EdgeSimOptions, type SentMessage } from './agent.js';
export { PROFILES, SKEWED_CLOCK_MS, buildFleet } from './fleet.js';
export { createSignal } from './signals.js';
