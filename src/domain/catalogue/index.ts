export {
  CAPABILITIES,
  CAPABILITY_KEYS,
  capabilityKeySchema,
  findCapability,
  isCapabilityKey,
  meaningfulAggregations,
  toCatalogueEntryWire,
} from './capabilities.js';
export type {
  AggregationKind,
  BucketAggregation,
  Capability,
  CapabilityDefinition,
  CapabilityKey,
  CapabilityType,
  CatalogueEntryWire,
  SafetyClass,
  ValueRange,
} from './capabilities.js';
export {
  MAX_TEXT_LENGTH,
  VALUE_REFUSAL_REASONS,
  checkValue,
  isOnStep,
  validateCommandValue,
  validateValue,
} from './values.js';
export type {
  CapabilityValue,
  CommandValueRefusalReason,
  ValueCheck,
  ValueRefusalReason,
  ValueRules,
} from './values.js';
