export {
  CAPABILITIES,
  CAPABILITY_KEYS,
  capabilityKeySchema,
  findCapability,
  isCapabilityKey,
  meaningfulAggregations,
  toCatalogueEntryWire,
} from './capabilities.js';
export type { Capability, CapabilityDefinition, SafetyClass } from './capabilities.js';
export {
  MAX_TEXT_LENGTH,
  VALUE_REFUSAL_REASONS,
  checkValue,
  isOnStep,
  validateCommandValue,
  validateValue,
} from './values.js';
export type { CapabilityValue, ValueRefusalReason } from './values.js';
