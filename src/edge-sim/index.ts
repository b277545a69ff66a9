export { EdgeSim, type AckedMessage, type EdgeSimOptions, type SentMessage, type SimStats } from './agent.js';
export { PROFILES, SKEWED_CLOCK_MS, buildFleet, type DeviceProfile, type SimulatedDevice } from './fleet.js';
export { createSignal, localDay, type Signal, type SimValue } from './signals.js';
