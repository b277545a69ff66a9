import { derivedRandom } from './random.js';

/** One kind of simulated device: what it reports about itself when interviewed, and what it measures. */
export interface DeviceProfile {
  readonly manufacturer: string;
  readonly model: string;
  readonly capabilities: readonly string[];
}

/**
 * Thirteen kinds of device that together cover every capability of the catalogue, each writable one
 * included, with the diagnostics their power source would report. A fleet of at least thirteen devices
 * covers the whole catalogue.
 */
export const PROFILES: readonly DeviceProfile[] = [
  {
    manufacturer: 'LUMI',
    model: 'lumi.weather',
    capabilities: [
      'environment.temperature',
      'environment.humidity',
      'environment.pressure',
      'system.battery_percent',
      'system.battery_voltage',
      'system.lqi',
    ],
  },
  {
    manufacturer: 'IKEA of Sweden',
    model: 'INSPELNING Smart plug',
    capabilities: [
      'binary.switch',
      'electrical.voltage',
      'electrical.current',
      'electrical.power_active',
      'electrical.energy_import',
      'system.rssi',
    ],
  },
  {
    manufacturer: 'Shelly',
    model: 'Pro 1PM',
    capabilities: ['actuator.relay', 'electrical.power_active', 'system.device_temperature', 'system.uptime'],
  },
  {
    manufacturer: 'SONOFF',
    model: 'SWV',
    capabilities: ['actuator.valve', 'water.flow', 'water.leak', 'system.battery_percent'],
  },
  {
    manufacturer: 'Schneider Electric',
    model: 'iCT 40A contactor',
    capabilities: [
      'actuator.contactor',
      'electrical.voltage',
      'electrical.current',
      'system.device_temperature',
    ],
  },
  {
    manufacturer: 'SMA',
    model: 'Sunny Boy 5.0',
    capabilities: [
      'energy.pv_power',
      'energy.load_power',
      'energy.grid_power',
      'energy.battery_power',
      'energy.produced_today',
      'energy.consumed_today',
    ],
  },
  {
    manufacturer: 'Wallbox',
    model: 'Pulsar Plus',
    capabilities: [
      'evse.power',
      'evse.current',
      'evse.session_energy',
      'evse.total_energy',
      'evse.state',
      'vehicle.battery_percent',
      'vehicle.range',
    ],
  },
  {
    manufacturer: 'Danfoss',
    model: 'eTRV0100',
    capabilities: [
      'hvac.setpoint_temperature',
      'hvac.mode',
      'environment.temperature',
      'system.battery_percent',
    ],
  },
  {
    manufacturer: 'Xiaomi',
    model: 'HHCCJCY01',
    capabilities: [
      'environment.soil_moisture',
      'environment.illuminance',
      'environment.temperature',
      'system.battery_voltage',
    ],
  },
  {
    manufacturer: 'LUMI',
    model: 'lumi.sensor_magnet.aq2',
    capabilities: ['binary.contact', 'system.battery_percent', 'system.lqi'],
  },
  {
    manufacturer: 'Develco Products A/S',
    model: 'AQSZB-110',
    capabilities: ['environment.co2', 'environment.temperature', 'environment.humidity', 'system.rssi'],
  },
  {
    manufacturer: 'Philips',
    model: 'SML001',
    capabilities: ['environment.illuminance', 'motion.vibration', 'system.battery_percent', 'system.lqi'],
  },
  {
    manufacturer: 'Tuya',
    model: 'TS0601_scale',
    capabilities: ['mass.weight', 'motion.vibration', 'system.uptime', 'system.rssi'],
  },
];

/** How far ahead the one device with a wrong clock is: well past the cloud's clock-skew tolerance. */
export const SKEWED_CLOCK_MS = 12 * 60_000;

export interface SimulatedDevice {
  readonly index: number;
  readonly ieeeAddr: string;
  readonly profile: DeviceProfile;
  /** Added to the device's clock when it stamps deviceTime. */
  readonly clockSkewMs: number;
}

/** The same fleet for the same seed: addresses, kinds, and which device has the skewed clock. */
export function buildFleet(seed: number, count: number): SimulatedDevice[] {
  const random = derivedRandom(seed, 'fleet');
  const skewed = count > 1 ? 1 + Math.floor(random() * (count - 1)) : 0;
  const used = new Set<string>();
  return Array.from({ length: count }, (_, index) => {
    let ieeeAddr: string;
    do {
      ieeeAddr = `0x${hex32(random())}${hex32(random())}`;
    } while (used.has(ieeeAddr));
    used.add(ieeeAddr);
    return {
      index,
      ieeeAddr,
      profile: PROFILES[index % PROFILES.length]!,
      clockSkewMs: count > 0 && index === skewed ? SKEWED_CLOCK_MS : 0,
    };
  });
}

function hex32(fraction: number): string {
  return Math.floor(fraction * 2 ** 32)
    .toString(16)
    .padStart(8, '0');
}
