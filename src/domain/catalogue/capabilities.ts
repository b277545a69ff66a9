import { z } from 'zod';

/**
 * The canonical capability catalogue: the one place that says what a capability key means, how its
 * values are checked, how its readings combine over time and when a reading is too old to trust.
 * The API, ingress, projections and the safety gate all read it from here; docs/catalogue.md
 * records why each choice was made.
 */

type CapabilityType = 'number' | 'boolean' | 'text';

export type SafetyClass = 'S0' | 'S1' | 'S2' | 'S3';

/**
 * How readings of a capability combine over time. Counters are kept apart from gauges because a mean
 * or a sum of a running total is a wrong number that looks right.
 * - gauge: an instantaneous measurement; avg, min, max and sum are meaningful.
 * - counter_total: a monotonic meter total that never resets; max per bucket, difference the buckets.
 * - counter_daily: rises during the day, resets at local midnight in the site's timezone.
 * - counter_session: rises during a charging session, resets when the next session starts.
 * - discrete: a boolean or text state; only its last value (and, for booleans, any/all) has meaning.
 */
type AggregationKind = 'gauge' | 'counter_total' | 'counter_daily' | 'counter_session' | 'discrete';

/** Inclusive bounds; a missing bound means the value is unbounded on that side. */
interface ValueRange {
  readonly min?: number;
  readonly max?: number;
}

export interface CapabilityDefinition {
  readonly key: string;
  /** The unit to render; the literal 'none' marks a dimensionless value, as in the spec's table. */
  readonly unit: string;
  readonly type: CapabilityType;
  readonly writable: boolean;
  readonly safetyClass: SafetyClass;
  readonly aggregation: AggregationKind;
  /** Only for numbers. */
  readonly range?: ValueRange;
  /** Only for numbers: the value must be a whole multiple of step (grid anchored at 0). */
  readonly step?: number;
  /** Only for text: the complete set of values; matching is exact and case-sensitive. */
  readonly enum?: readonly string[];
  /** A reading older than this (by server time) is reported with the `stale` quality marker. */
  readonly staleAfterSeconds: number;
  readonly description: string;
}

// Reporting cadences behind staleAfterSeconds (see docs/catalogue.md for the reasoning).
const FAST_METER = 900; // mains-powered meters and inverters report every few seconds to minutes
const BATTERY_SENSOR = 7200; // battery sensors report on change, at least every 3600 s: two missed reports
const DIAGNOSTIC = 3600;
const ON_CHANGE = 86_400; // reported on change only: a long silence is normal, connectivity tells liveness
const BATTERY_LEVEL = 86_400; // battery levels are reported hours apart by design, to save the battery
const COUNTER = 86_400;

const DEFINITIONS = [
  {
    key: 'environment.temperature',
    unit: 'C',
    type: 'number',
    writable: false,
    safetyClass: 'S0',
    aggregation: 'gauge',
    range: { min: -60, max: 150 },
    staleAfterSeconds: BATTERY_SENSOR,
    description: 'Air temperature measured by the device, in degrees Celsius.',
  },
  {
    key: 'environment.humidity',
    unit: '%RH',
    type: 'number',
    writable: false,
    safetyClass: 'S0',
    aggregation: 'gauge',
    range: { min: 0, max: 100 },
    staleAfterSeconds: BATTERY_SENSOR,
    description: 'Relative humidity of the air, in percent (0..100).',
  },
  {
    key: 'environment.co2',
    unit: 'ppm',
    type: 'number',
    writable: false,
    safetyClass: 'S0',
    aggregation: 'gauge',
    range: { min: 0, max: 100_000 },
    staleAfterSeconds: BATTERY_SENSOR,
    description: 'Carbon dioxide concentration of the air, in parts per million.',
  },
  {
    key: 'environment.pressure',
    unit: 'hPa',
    type: 'number',
    writable: false,
    safetyClass: 'S0',
    aggregation: 'gauge',
    range: { min: 300, max: 1200 },
    staleAfterSeconds: BATTERY_SENSOR,
    description: 'Atmospheric pressure, in hectopascal.',
  },
  {
    key: 'environment.illuminance',
    unit: 'lx',
    type: 'number',
    writable: false,
    safetyClass: 'S0',
    aggregation: 'gauge',
    range: { min: 0, max: 200_000 },
    staleAfterSeconds: BATTERY_SENSOR,
    description: 'Illuminance, in lux.',
  },
  {
    key: 'environment.soil_moisture',
    unit: '%',
    type: 'number',
    writable: false,
    safetyClass: 'S0',
    aggregation: 'gauge',
    range: { min: 0, max: 100 },
    staleAfterSeconds: BATTERY_SENSOR,
    description: 'Soil moisture, in percent (0..100).',
  },
  {
    key: 'mass.weight',
    unit: 'kg',
    type: 'number',
    writable: false,
    safetyClass: 'S0',
    aggregation: 'gauge',
    staleAfterSeconds: BATTERY_SENSOR,
    description: 'Net weight on the scale, in kilograms. A tared scale may report small negative values.',
  },
  {
    key: 'motion.vibration',
    unit: 'm/s2',
    type: 'number',
    writable: false,
    safetyClass: 'S0',
    aggregation: 'gauge',
    range: { min: 0 },
    staleAfterSeconds: BATTERY_SENSOR,
    description: 'Vibration intensity as an acceleration magnitude, in metres per second squared.',
  },
  {
    key: 'water.leak',
    unit: 'none',
    type: 'boolean',
    writable: false,
    safetyClass: 'S0',
    aggregation: 'discrete',
    staleAfterSeconds: ON_CHANGE,
    description: 'true while water is detected at the sensor, false when dry.',
  },
  {
    key: 'water.flow',
    unit: 'L/min',
    type: 'number',
    writable: false,
    safetyClass: 'S0',
    aggregation: 'gauge',
    range: { min: 0 },
    staleAfterSeconds: FAST_METER,
    description: 'Water flow rate through the meter, in litres per minute. Never negative.',
  },
  {
    key: 'electrical.voltage',
    unit: 'V',
    type: 'number',
    writable: false,
    safetyClass: 'S0',
    aggregation: 'gauge',
    range: { min: 0, max: 1500 },
    staleAfterSeconds: FAST_METER,
    description: 'Voltage (RMS for AC), in volts.',
  },
  {
    key: 'electrical.current',
    unit: 'A',
    type: 'number',
    writable: false,
    safetyClass: 'S0',
    aggregation: 'gauge',
    range: { min: 0 },
    staleAfterSeconds: FAST_METER,
    description:
      'Current magnitude (RMS for AC), in amperes. Direction is carried by electrical.power_active.',
  },
  {
    key: 'electrical.power_active',
    unit: 'W',
    type: 'number',
    writable: false,
    safetyClass: 'S0',
    aggregation: 'gauge',
    staleAfterSeconds: FAST_METER,
    description:
      "Active power, in watts. Signed: positive when energy flows in the meter's reference direction " +
      '(into the load), negative when it flows back.',
  },
  {
    key: 'electrical.energy_import',
    unit: 'Wh',
    type: 'number',
    writable: false,
    safetyClass: 'S0',
    aggregation: 'counter_total',
    range: { min: 0 },
    staleAfterSeconds: COUNTER,
    description:
      'Imported energy as a monotonically increasing meter total, in watt-hours. It never resets. ' +
      'Aggregate with max per bucket and difference the buckets; never sum it and never average it.',
  },
  {
    key: 'binary.contact',
    unit: 'none',
    type: 'boolean',
    writable: false,
    safetyClass: 'S0',
    aggregation: 'discrete',
    staleAfterSeconds: ON_CHANGE,
    description: 'true when the contact is closed (door or window shut), false when it is open.',
  },
  {
    key: 'binary.switch',
    unit: 'none',
    type: 'boolean',
    writable: true,
    safetyClass: 'S1',
    aggregation: 'discrete',
    staleAfterSeconds: ON_CHANGE,
    description: 'Low-risk on/off switch such as an indicator or a low-power load: true is on, false is off.',
  },
  {
    key: 'actuator.relay',
    unit: 'none',
    type: 'boolean',
    writable: true,
    safetyClass: 'S2',
    aggregation: 'discrete',
    staleAfterSeconds: ON_CHANGE,
    description:
      'Relay output: true is closed (load energised), false is open. Writing needs a grant and confirm.',
  },
  {
    key: 'actuator.valve',
    unit: 'none',
    type: 'boolean',
    writable: true,
    safetyClass: 'S2',
    aggregation: 'discrete',
    staleAfterSeconds: ON_CHANGE,
    description: 'Valve: true is open (flow allowed), false is closed. Writing needs a grant and confirm.',
  },
  {
    key: 'actuator.contactor',
    unit: 'none',
    type: 'boolean',
    writable: true,
    safetyClass: 'S3',
    aggregation: 'discrete',
    staleAfterSeconds: ON_CHANGE,
    description:
      'Mains contactor: true is closed (mains connected), false is open. Writing needs a grant, ' +
      'a two-step challenge and the commands:high_risk scope.',
  },
  {
    key: 'system.battery_percent',
    unit: '%',
    type: 'number',
    writable: false,
    safetyClass: 'S0',
    aggregation: 'gauge',
    range: { min: 0, max: 100 },
    staleAfterSeconds: BATTERY_LEVEL,
    description: "Remaining charge of the device's own battery, in percent (0..100).",
  },
  {
    key: 'system.rssi',
    unit: 'dBm',
    type: 'number',
    writable: false,
    safetyClass: 'S0',
    aggregation: 'gauge',
    range: { min: -150, max: 0 },
    step: 1,
    staleAfterSeconds: DIAGNOSTIC,
    description: 'Received signal strength of the radio link, in whole dBm (always negative or zero).',
  },
  {
    key: 'system.lqi',
    unit: 'none',
    type: 'number',
    writable: false,
    safetyClass: 'S0',
    aggregation: 'gauge',
    range: { min: 0, max: 255 },
    step: 1,
    staleAfterSeconds: DIAGNOSTIC,
    description: 'Link quality indicator of the radio link, an integer from 0 (worst) to 255 (best).',
  },
  {
    key: 'system.uptime',
    unit: 's',
    type: 'number',
    writable: false,
    safetyClass: 'S0',
    aggregation: 'gauge',
    range: { min: 0 },
    staleAfterSeconds: DIAGNOSTIC,
    description: 'Time since the device last started, in seconds. A drop means the device restarted.',
  },
  {
    key: 'system.device_temperature',
    unit: 'C',
    type: 'number',
    writable: false,
    safetyClass: 'S0',
    aggregation: 'gauge',
    range: { min: -60, max: 150 },
    staleAfterSeconds: DIAGNOSTIC,
    description: "The device's internal temperature, in degrees Celsius (a diagnostic, not the room's).",
  },
  {
    key: 'system.battery_voltage',
    unit: 'V',
    type: 'number',
    writable: false,
    safetyClass: 'S0',
    aggregation: 'gauge',
    range: { min: 0, max: 60 },
    staleAfterSeconds: BATTERY_LEVEL,
    description: "Voltage of the device's own battery, in volts.",
  },
  {
    key: 'energy.pv_power',
    unit: 'W',
    type: 'number',
    writable: false,
    safetyClass: 'S0',
    aggregation: 'gauge',
    range: { min: 0 },
    staleAfterSeconds: FAST_METER,
    description: 'Power produced by the photovoltaic array, in watts. Never negative.',
  },
  {
    key: 'energy.load_power',
    unit: 'W',
    type: 'number',
    writable: false,
    safetyClass: 'S0',
    aggregation: 'gauge',
    range: { min: 0 },
    staleAfterSeconds: FAST_METER,
    description: 'Power consumed by the site, in watts. Never negative.',
  },
  {
    key: 'energy.grid_power',
    unit: 'W',
    type: 'number',
    writable: false,
    safetyClass: 'S0',
    aggregation: 'gauge',
    staleAfterSeconds: FAST_METER,
    description:
      'Power exchanged with the grid, in watts. Signed: positive means import from the grid, ' +
      'negative means export to the grid.',
  },
  {
    key: 'energy.battery_power',
    unit: 'W',
    type: 'number',
    writable: false,
    safetyClass: 'S0',
    aggregation: 'gauge',
    staleAfterSeconds: FAST_METER,
    description:
      'Power flowing into or out of the site battery, in watts. Signed: positive when the battery charges, ' +
      'negative when it discharges.',
  },
  {
    key: 'energy.produced_today',
    unit: 'kWh',
    type: 'number',
    writable: false,
    safetyClass: 'S0',
    aggregation: 'counter_daily',
    range: { min: 0 },
    staleAfterSeconds: COUNTER,
    description:
      "Energy produced since local midnight, in kilowatt-hours. Only rises during the day and resets at midnight in the site's " +
      'timezone. Aggregate with max or last, never with a mean or a sum.',
  },
  {
    key: 'energy.consumed_today',
    unit: 'kWh',
    type: 'number',
    writable: false,
    safetyClass: 'S0',
    aggregation: 'counter_daily',
    range: { min: 0 },
    staleAfterSeconds: COUNTER,
    description:
      "Energy consumed since local midnight, in kilowatt-hours. Only rises during the day and resets at midnight in the site's " +
      'timezone. Aggregate with max or last, never with a mean or a sum.',
  },
  {
    key: 'evse.power',
    unit: 'W',
    type: 'number',
    writable: false,
    safetyClass: 'S0',
    aggregation: 'gauge',
    range: { min: 0 },
    staleAfterSeconds: FAST_METER,
    description: 'Charging power delivered to the vehicle, in watts. Never negative.',
  },
  {
    key: 'evse.current',
    unit: 'A',
    type: 'number',
    writable: false,
    safetyClass: 'S0',
    aggregation: 'gauge',
    range: { min: 0 },
    staleAfterSeconds: FAST_METER,
    description: 'Charging current delivered to the vehicle, in amperes. Never negative.',
  },
  {
    key: 'evse.session_energy',
    unit: 'kWh',
    type: 'number',
    writable: false,
    safetyClass: 'S0',
    aggregation: 'counter_session',
    range: { min: 0 },
    staleAfterSeconds: COUNTER,
    description:
      'Energy delivered in the current or last charging session, in kilowatt-hours. Rises during a session ' +
      'and resets when the next one starts. Aggregate with max or last, never with a mean or a sum.',
  },
  {
    key: 'evse.total_energy',
    unit: 'kWh',
    type: 'number',
    writable: false,
    safetyClass: 'S0',
    aggregation: 'counter_total',
    range: { min: 0 },
    staleAfterSeconds: COUNTER,
    description:
      'Lifetime energy delivered by the charger, in kilowatt-hours. Only rises and never resets. ' +
      'Aggregate with max or last, never with a mean or a sum.',
  },
  {
    key: 'evse.state',
    unit: 'none',
    type: 'text',
    writable: false,
    safetyClass: 'S0',
    aggregation: 'discrete',
    enum: ['idle', 'connected', 'charging', 'paused', 'error', 'unavailable'],
    staleAfterSeconds: ON_CHANGE,
    description:
      'Charger state: idle (no vehicle), connected (vehicle plugged, not charging), charging, ' +
      'paused (suspended by the vehicle or the charger), error (fault), unavailable (out of service).',
  },
  {
    key: 'vehicle.battery_percent',
    unit: '%',
    type: 'number',
    writable: false,
    safetyClass: 'S0',
    aggregation: 'gauge',
    range: { min: 0, max: 100 },
    staleAfterSeconds: DIAGNOSTIC,
    description: "State of charge of the vehicle's traction battery, in percent (0..100).",
  },
  {
    key: 'vehicle.range',
    unit: 'km',
    type: 'number',
    writable: false,
    safetyClass: 'S0',
    aggregation: 'gauge',
    range: { min: 0 },
    staleAfterSeconds: DIAGNOSTIC,
    description: 'Estimated driving range left, in kilometres.',
  },
  {
    key: 'hvac.setpoint_temperature',
    unit: 'C',
    type: 'number',
    writable: false,
    safetyClass: 'S0',
    aggregation: 'gauge',
    range: { min: 0, max: 50 },
    staleAfterSeconds: ON_CHANGE,
    description: 'Target temperature the heating or cooling unit regulates to, in degrees Celsius.',
  },
  {
    key: 'hvac.mode',
    unit: 'none',
    type: 'text',
    writable: false,
    safetyClass: 'S0',
    aggregation: 'discrete',
    enum: ['off', 'heat', 'cool', 'auto', 'fan', 'dry'],
    staleAfterSeconds: ON_CHANGE,
    description:
      'Operating mode of the heating or cooling unit: off, heat, cool, auto (heats or cools as needed), ' +
      'fan (ventilation only), dry (dehumidification).',
  },
] as const satisfies readonly CapabilityDefinition[];

export type CapabilityKey = (typeof DEFINITIONS)[number]['key'];

export interface Capability extends CapabilityDefinition {
  readonly key: CapabilityKey;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    for (const nested of Object.values(value)) deepFreeze(nested);
    Object.freeze(value);
  }
  return value;
}

/** The catalogue, in the spec's order. Frozen all the way down: nobody gets to patch it at run time. */
export const CAPABILITIES: readonly Capability[] = deepFreeze(DEFINITIONS);

export const CAPABILITY_KEYS: readonly CapabilityKey[] = Object.freeze(CAPABILITIES.map((c) => c.key));

/** For event and request schemas that carry a capability key. */
export const capabilityKeySchema = z.enum(CAPABILITY_KEYS);

// A Map, not an object, so that 'toString' or '__proto__' are never mistaken for capabilities.
const BY_KEY: ReadonlyMap<string, Capability> = new Map(CAPABILITIES.map((c) => [c.key, c]));

export function findCapability(key: string): Capability | undefined {
  return BY_KEY.get(key);
}

export function isCapabilityKey(key: unknown): key is CapabilityKey {
  return typeof key === 'string' && BY_KEY.has(key);
}

/** A bucket function of the telemetry read models. */
export type BucketAggregation = 'avg' | 'min' | 'max' | 'sum' | 'last';

const NUMERIC_AGGREGATIONS: Readonly<
  Record<Exclude<AggregationKind, 'discrete'>, readonly BucketAggregation[]>
> = Object.freeze({
  gauge: Object.freeze(['avg', 'min', 'max', 'sum', 'last'] as const),
  counter_total: Object.freeze(['max', 'last'] as const),
  counter_daily: Object.freeze(['max', 'last'] as const),
  counter_session: Object.freeze(['max', 'last'] as const),
});
// For a boolean, max is "true at any time in the bucket" and min is "true throughout".
const BOOLEAN_AGGREGATIONS: readonly BucketAggregation[] = Object.freeze(['last', 'max', 'min'] as const);
// Telemetry points carry numbers, so a text state has no bucketed form at all.
const NO_AGGREGATIONS: readonly BucketAggregation[] = Object.freeze([]);

/**
 * The bucket functions that give a true answer for this capability; the first one is the default to
 * use when a request asks for one that is not meaningful (the response then names what was used).
 */
export function meaningfulAggregations(capability: CapabilityDefinition): readonly BucketAggregation[] {
  if (capability.aggregation !== 'discrete') return NUMERIC_AGGREGATIONS[capability.aggregation];
  return capability.type === 'boolean' ? BOOLEAN_AGGREGATIONS : NO_AGGREGATIONS;
}

/** A catalogue entry as served by GET /v1/catalog/capabilities (camelCase, like command fields). */
export interface CatalogueEntryWire {
  key: string;
  unit: string;
  type: CapabilityType;
  writable: boolean;
  safetyClass: SafetyClass;
  aggregation: AggregationKind;
  range?: { min?: number; max?: number };
  step?: number;
  enum?: string[];
  description: string;
}

/**
 * Optional fields are left out rather than sent as null, so a client can test for presence. Field order
 * follows the documented wire shape, description last.
 */
export function toCatalogueEntryWire(capability: CapabilityDefinition): CatalogueEntryWire {
  const { range, step } = capability;
  return {
    key: capability.key,
    unit: capability.unit,
    type: capability.type,
    writable: capability.writable,
    safetyClass: capability.safetyClass,
    aggregation: capability.aggregation,
    ...(range !== undefined && {
      range: {
        ...(range.min !== undefined && { min: range.min }),
        ...(range.max !== undefined && { max: range.max }),
      },
    }),
    ...(step !== undefined && { step }),
    ...(capability.enum !== undefined && { enum: [...capability.enum] }),
    description: capability.description,
  };
}
