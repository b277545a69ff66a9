import { findCapability, isOnStep } from '../domain/catalogue/index.js';
import { pick, type Random } from './random.js';

export type SimValue = number | boolean | string;

/** One capability of one simulated device: its next value at a given time. */
export interface Signal {
  next(atMs: number): SimValue;
  /** A command applied to the device (writable capabilities). */
  set(value: SimValue): void;
}

/** Where a gauge starts, how far it moves per sample, and the band it stays in. */
interface GaugeShape {
  readonly base: number;
  readonly step: number;
  readonly min: number;
  readonly max: number;
  readonly decimals: number;
}

const GAUGES: Readonly<Record<string, GaugeShape>> = {
  'environment.temperature': { base: 21, step: 0.15, min: 16, max: 27, decimals: 2 },
  'environment.humidity': { base: 45, step: 0.6, min: 25, max: 75, decimals: 1 },
  'environment.co2': { base: 650, step: 25, min: 400, max: 1800, decimals: 0 },
  'environment.pressure': { base: 1013, step: 0.3, min: 985, max: 1035, decimals: 1 },
  'environment.illuminance': { base: 350, step: 40, min: 0, max: 2500, decimals: 0 },
  'environment.soil_moisture': { base: 38, step: 0.4, min: 10, max: 70, decimals: 1 },
  'mass.weight': { base: 14, step: 0.2, min: 0, max: 60, decimals: 2 },
  'motion.vibration': { base: 0.3, step: 0.08, min: 0, max: 3, decimals: 3 },
  'water.flow': { base: 4, step: 0.4, min: 0, max: 15, decimals: 2 },
  'electrical.voltage': { base: 230, step: 0.8, min: 218, max: 242, decimals: 1 },
  'electrical.current': { base: 2.5, step: 0.3, min: 0, max: 16, decimals: 2 },
  'electrical.power_active': { base: 450, step: 40, min: 0, max: 3600, decimals: 1 },
  'system.battery_percent': { base: 92, step: 0.05, min: 5, max: 100, decimals: 1 },
  'system.rssi': { base: -64, step: 2, min: -95, max: -35, decimals: 0 },
  'system.lqi': { base: 170, step: 6, min: 20, max: 255, decimals: 0 },
  'system.device_temperature': { base: 38, step: 0.3, min: 25, max: 70, decimals: 1 },
  'system.battery_voltage': { base: 3.0, step: 0.005, min: 2.4, max: 3.3, decimals: 3 },
  'energy.pv_power': { base: 2200, step: 150, min: 0, max: 6000, decimals: 0 },
  'energy.load_power': { base: 900, step: 80, min: 80, max: 7000, decimals: 0 },
  // Signed: import positive, export negative; battery positive while charging.
  'energy.grid_power': { base: -400, step: 150, min: -5000, max: 7000, decimals: 0 },
  'energy.battery_power': { base: 600, step: 120, min: -3500, max: 3500, decimals: 0 },
  'evse.power': { base: 7200, step: 120, min: 0, max: 11000, decimals: 0 },
  'evse.current': { base: 16, step: 0.4, min: 0, max: 32, decimals: 1 },
  'vehicle.battery_percent': { base: 48, step: 0.2, min: 5, max: 100, decimals: 1 },
  'vehicle.range': { base: 210, step: 1.5, min: 15, max: 520, decimals: 0 },
};

/** Set by people, not measured: they hold and now and then move by one notch. */
const SETPOINTS: Readonly<Record<string, GaugeShape>> = {
  'hvac.setpoint_temperature': { base: 21, step: 0.5, min: 16, max: 26, decimals: 1 },
};

/** Energy a counter gains per second, in its catalogue unit. */
const COUNTER_RATES: Readonly<Record<string, number>> = {
  'electrical.energy_import': 0.35, // Wh/s, about 1.3 kW on average
  'evse.total_energy': 0.002, // kWh/s, about 7 kW while charging
  'evse.session_energy': 0.002,
  'energy.produced_today': 0.0006, // kWh/s
  'energy.consumed_today': 0.0003,
};

/**
 * Plausible values for every catalogue capability: gauges drift inside a band; meter totals only rise;
 * daily counters rise and reset at midnight in the site's timezone; the charging-session counter resets
 * when a new session starts; booleans and enumerations change now and then, and keep a commanded value.
 */
export function createSignal(
  key: string,
  random: Random,
  context: { timezone: string; startMs: number },
): Signal {
  const capability = findCapability(key);
  if (!capability) throw new RangeError(`not a catalogue capability: ${key}`);
  // A writable output changes only when commanded; a sensed state flips now and then.
  if (capability.type === 'boolean') return toggling(random, capability.writable ? 0 : 0.02);
  if (capability.type === 'text') return enumeration(random, capability.enum ?? ['unknown']);
  if (key === 'system.uptime') return uptime(context.startMs);
  const setpoint = SETPOINTS[key];
  if (setpoint) return notched(random, setpoint);
  switch (capability.aggregation) {
    case 'counter_total':
      return rising(random, COUNTER_RATES[key] ?? 0.01, 1000 + random() * 50_000, undefined);
    case 'counter_daily':
      return rising(random, COUNTER_RATES[key] ?? 0.001, 0, localDay(context.timezone));
    case 'counter_session':
      return session(random, COUNTER_RATES[key] ?? 0.001);
    default:
      return drifting(
        random,
        GAUGES[key] ?? { base: 1, step: 0.1, min: 0, max: 10, decimals: 2 },
        capability.step,
      );
  }
}

function drifting(random: Random, shape: GaugeShape, gridStep: number | undefined): Signal {
  let value = shape.base + (random() - 0.5) * shape.step * 10;
  const round = (v: number) => {
    const rounded = Number(v.toFixed(shape.decimals));
    return gridStep !== undefined && !isOnStep(rounded, gridStep)
      ? Math.round(rounded / gridStep) * gridStep
      : rounded;
  };
  return {
    next() {
      value = Math.min(shape.max, Math.max(shape.min, value + (random() - 0.5) * 2 * shape.step));
      return round(value);
    },
    set(next) {
      if (typeof next === 'number') value = next;
    },
  };
}

function notched(random: Random, shape: GaugeShape): Signal {
  let value = shape.base;
  return {
    next() {
      if (random() < 0.02)
        value = Math.min(shape.max, Math.max(shape.min, value + (random() < 0.5 ? -1 : 1) * shape.step));
      return value;
    },
    set(next) {
      if (typeof next === 'number') value = next;
    },
  };
}

/** Rises with time; `dayOf` (daily counters) resets it to 0 when the local day changes. */
function rising(
  random: Random,
  perSecond: number,
  start: number,
  dayOf: ((ms: number) => string) | undefined,
): Signal {
  let value = start;
  let lastMs: number | undefined;
  let day: string | undefined;
  return {
    next(atMs) {
      const today = dayOf?.(atMs);
      if (day !== undefined && today !== day) value = 0;
      day = today;
      if (lastMs !== undefined && atMs > lastMs)
        value += perSecond * ((atMs - lastMs) / 1000) * (0.5 + random());
      lastMs = atMs;
      return Number(value.toFixed(4));
    },
    set() {},
  };
}

function session(random: Random, perSecond: number): Signal {
  const total = rising(random, perSecond, 0, undefined);
  let offset = 0;
  return {
    next(atMs) {
      const value = total.next(atMs) as number;
      // Now and then the car leaves and the next session starts from zero.
      if (random() < 0.01) offset = value;
      return Number((value - offset).toFixed(4));
    },
    set() {},
  };
}

function toggling(random: Random, flipChance: number): Signal {
  let value = random() < 0.5;
  return {
    next() {
      if (random() < flipChance) value = !value;
      return value;
    },
    set(next) {
      if (typeof next === 'boolean') value = next;
    },
  };
}

function enumeration(random: Random, values: readonly string[]): Signal {
  let value = pick(random, values);
  return {
    next() {
      if (random() < 0.05) value = pick(random, values);
      return value;
    },
    set(next) {
      if (typeof next === 'string' && values.includes(next)) value = next;
    },
  };
}

function uptime(startMs: number): Signal {
  return {
    next: (atMs) => Math.max(0, Math.floor((atMs - startMs) / 1000)),
    set() {},
  };
}

/** The calendar day at `ms` in `timezone`, as YYYY-MM-DD. */
function localDay(timezone: string): (ms: number) => string {
  const format = new Intl.DateTimeFormat('en-CA', {
    timeZone: timezone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
  });
  return (ms) => format.format(ms);
}
