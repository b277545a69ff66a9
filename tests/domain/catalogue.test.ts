import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import * as catalogue from '../../src/domain/catalogue/index.js';

// Pasted verbatim from spec/interface.md, "Capability catalogue entry", so a typo on either side fails.
const SPEC_TABLE = `
| environment.temperature | C | number | no | S0 |
| environment.humidity | %RH | number | no | S0 |
| environment.co2 | ppm | number | no | S0 |
| environment.pressure | hPa | number | no | S0 |
| environment.illuminance | lx | number | no | S0 |
| environment.soil_moisture | % | number | no | S0 |
| mass.weight | kg | number | no | S0 |
| motion.vibration | m/s2 | number | no | S0 |
| water.leak | none | boolean | no | S0 |
| water.flow | L/min | number | no | S0 |
| electrical.voltage | V | number | no | S0 |
| electrical.current | A | number | no | S0 |
| electrical.power_active | W | number | no | S0 |
| electrical.energy_import | Wh | number | no | S0 |
| binary.contact | none | boolean | no | S0 |
| binary.switch | none | boolean | yes | S1 |
| actuator.relay | none | boolean | yes | S2 |
| actuator.valve | none | boolean | yes | S2 |
| actuator.contactor | none | boolean | yes | S3 |
| system.battery_percent | % | number | no | S0 |
| system.rssi | dBm | number | no | S0 |
| system.lqi | none | number | no | S0 |
| system.uptime | s | number | no | S0 |
| system.device_temperature | C | number | no | S0 |
| system.battery_voltage | V | number | no | S0 |
| energy.pv_power | W | number | no | S0 |
| energy.load_power | W | number | no | S0 |
| energy.grid_power | W | number | no | S0 |
| energy.battery_power | W | number | no | S0 |
| energy.produced_today | kWh | number | no | S0 |
| energy.consumed_today | kWh | number | no | S0 |
| evse.power | W | number | no | S0 |
| evse.current | A | number | no | S0 |
| evse.session_energy | kWh | number | no | S0 |
| evse.total_energy | kWh | number | no | S0 |
| evse.state | none | text | no | S0 |
| vehicle.battery_percent | % | number | no | S0 |
| vehicle.range | km | number | no | S0 |
| hvac.setpoint_temperature | C | number | no | S0 |
| hvac.mode | none | text | no | S0 |
`;

interface SpecRow {
  key: string;
  unit: string;
  type: string;
  writable: boolean;
  safetyClass: string;
}

function parseSpecTable(table: string): SpecRow[] {
  return table
    .trim()
    .split('\n')
    .map((line) => {
      const cells = line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim());
      const [key, unit, type, writable, safetyClass] = cells;
      if (
        cells.length !== 5 ||
        !key ||
        !unit ||
        !type ||
        !safetyClass ||
        !['yes', 'no'].includes(writable ?? '')
      ) {
        throw new Error(`unreadable spec row: ${line}`);
      }
      return { key, unit, type, writable: writable === 'yes', safetyClass };
    });
}

const SPEC = parseSpecTable(SPEC_TABLE);
const COUNTER_KEYS = [
  'electrical.energy_import',
  'evse.total_energy',
  'energy.produced_today',
  'energy.consumed_today',
  'evse.session_energy',
];

function capability(key: string): catalogue.Capability {
  const found = catalogue.findCapability(key);
  if (found === undefined) throw new Error(`missing capability ${key}`);
  return found;
}

describe('capability catalogue', () => {
  describe('matches the spec table', () => {
    it('has exactly the 40 capabilities of the spec, in its order', () => {
      expect(SPEC).to.have.length(40);
      expect(catalogue.CAPABILITIES.map((c) => c.key)).to.deep.equal(SPEC.map((row) => row.key));
    });

    it('has no duplicate key', () => {
      expect(new Set(catalogue.CAPABILITY_KEYS).size).to.equal(catalogue.CAPABILITIES.length);
    });

    for (const row of SPEC) {
      it(`${row.key}: ${row.unit}, ${row.type}, ${row.writable ? 'writable' : 'read-only'}, ${row.safetyClass}`, () => {
        const { key, unit, type, writable, safetyClass } = capability(row.key);
        expect({ key, unit, type, writable, safetyClass }).to.deep.equal(row);
      });
    }
  });

  describe('safety classes', () => {
    it('gives each writable capability the class of the spec, and there are no others', () => {
      const writable = Object.fromEntries(
        catalogue.CAPABILITIES.filter((c) => c.writable).map((c) => [c.key, c.safetyClass]),
      );
      expect(writable).to.deep.equal({
        'binary.switch': 'S1',
        'actuator.relay': 'S2',
        'actuator.valve': 'S2',
        'actuator.contactor': 'S3',
      });
    });

    it('makes every read-only capability S0 and no writable one S0', () => {
      for (const c of catalogue.CAPABILITIES) {
        expect(c.safetyClass === 'S0', c.key).to.equal(!c.writable);
      }
    });
  });

  describe('aggregation', () => {
    it('never treats a counter as a gauge', () => {
      for (const key of COUNTER_KEYS) expect(capability(key).aggregation, key).to.not.equal('gauge');
    });

    it('classifies the counters by how they reset', () => {
      expect(capability('electrical.energy_import').aggregation).to.equal('counter_total');
      expect(capability('evse.total_energy').aggregation).to.equal('counter_total');
      expect(capability('energy.produced_today').aggregation).to.equal('counter_daily');
      expect(capability('energy.consumed_today').aggregation).to.equal('counter_daily');
      expect(capability('evse.session_energy').aggregation).to.equal('counter_session');
    });

    it('has no other counter than those', () => {
      const counters = catalogue.CAPABILITIES.filter((c) => c.aggregation.startsWith('counter_')).map(
        (c) => c.key,
      );
      expect(counters).to.have.members(COUNTER_KEYS);
    });

    it('aggregates counters with max or last only, never a mean or a sum', () => {
      for (const key of COUNTER_KEYS) {
        expect(catalogue.meaningfulAggregations(capability(key)), key).to.deep.equal(['max', 'last']);
      }
    });

    it('defaults a gauge to the mean and offers min, max and sum too', () => {
      expect(catalogue.meaningfulAggregations(capability('environment.temperature'))).to.deep.equal([
        'avg',
        'min',
        'max',
        'sum',
        'last',
      ]);
    });

    it('treats booleans and text as discrete states: no mean or sum, text not bucketed at all', () => {
      for (const c of catalogue.CAPABILITIES.filter((c) => c.type !== 'number')) {
        expect(c.aggregation, c.key).to.equal('discrete');
      }
      expect(catalogue.meaningfulAggregations(capability('water.leak'))).to.deep.equal([
        'last',
        'max',
        'min',
      ]);
      expect(catalogue.meaningfulAggregations(capability('evse.state'))).to.deep.equal([]);
    });

    it('treats every number that is not a counter as a gauge', () => {
      for (const c of catalogue.CAPABILITIES.filter(
        (c) => c.type === 'number' && !COUNTER_KEYS.includes(c.key),
      )) {
        expect(c.aggregation, c.key).to.equal('gauge');
      }
    });
  });

  describe('value rules', () => {
    it('puts range and step only on numbers and enums only on text', () => {
      for (const c of catalogue.CAPABILITIES) {
        if (c.type !== 'number') expect([c.range, c.step], c.key).to.deep.equal([undefined, undefined]);
        if (c.type !== 'text') expect(c.enum, c.key).to.equal(undefined);
      }
    });

    it('has well-formed ranges and positive steps', () => {
      for (const c of catalogue.CAPABILITIES) {
        if (c.range !== undefined) {
          expect(c.range.min !== undefined || c.range.max !== undefined, c.key).to.equal(true);
          if (c.range.min !== undefined && c.range.max !== undefined) {
            expect(c.range.min, c.key).to.be.lessThan(c.range.max);
          }
        }
        if (c.step !== undefined) expect(c.step, c.key).to.be.greaterThan(0);
      }
    });

    it('bounds percentages to 0..100', () => {
      for (const key of [
        'environment.humidity',
        'environment.soil_moisture',
        'system.battery_percent',
        'vehicle.battery_percent',
      ]) {
        expect(capability(key).range, key).to.deep.equal({ min: 0, max: 100 });
      }
    });

    it('bounds the radio diagnostics to whole numbers in their physical ranges', () => {
      expect(capability('system.rssi')).to.include({ step: 1 });
      expect(capability('system.rssi').range).to.deep.equal({ min: -150, max: 0 });
      expect(capability('system.lqi')).to.include({ step: 1 });
      expect(capability('system.lqi').range).to.deep.equal({ min: 0, max: 255 });
    });

    it('bounds the environment to physical ranges', () => {
      expect(capability('environment.temperature').range).to.deep.equal({ min: -60, max: 150 });
      expect(capability('environment.co2').range).to.deep.equal({ min: 0, max: 100_000 });
      expect(capability('environment.pressure').range).to.deep.equal({ min: 300, max: 1200 });
    });

    it('keeps counters and uptime non-negative', () => {
      for (const key of [...COUNTER_KEYS, 'system.uptime']) {
        expect(capability(key).range?.min, key).to.equal(0);
      }
    });

    it('lets signed powers go both ways', () => {
      for (const key of ['energy.grid_power', 'energy.battery_power', 'electrical.power_active']) {
        expect(capability(key).range?.min, key).to.equal(undefined);
      }
    });

    it('lists the known states of the text capabilities', () => {
      expect(capability('evse.state').enum).to.have.members([
        'idle',
        'connected',
        'charging',
        'paused',
        'error',
        'unavailable',
      ]);
      expect(capability('hvac.mode').enum).to.have.members(['off', 'heat', 'cool', 'auto', 'fan', 'dry']);
    });
  });

  describe('descriptions and staleness', () => {
    it('gives every capability a description and a whole, positive staleness threshold', () => {
      for (const c of catalogue.CAPABILITIES) {
        expect(c.description.length, c.key).to.be.greaterThan(10);
        expect(Number.isInteger(c.staleAfterSeconds) && c.staleAfterSeconds > 0, c.key).to.equal(true);
      }
    });

    it('states the sign conventions of the spec', () => {
      expect(capability('energy.grid_power').description).to.match(/positive means import/);
      expect(capability('energy.grid_power').description).to.match(/negative means export/);
      expect(capability('energy.battery_power').description).to.match(/positive when the battery charges/);
    });

    it('states the counter rules of the spec', () => {
      expect(capability('electrical.energy_import').description).to.match(/never sum/i);
      expect(capability('energy.produced_today').description).to.match(/midnight in the site's timezone/);
      expect(capability('evse.total_energy').description).to.match(/never resets/);
      for (const key of COUNTER_KEYS) expect(capability(key).description, key).to.match(/never/);
    });

    it('keeps gauges of fast meters fresher than counters', () => {
      expect(capability('electrical.power_active').staleAfterSeconds).to.equal(900);
      expect(capability('electrical.energy_import').staleAfterSeconds).to.equal(86_400);
    });
  });

  describe('immutability', () => {
    it('is frozen all the way down', () => {
      expect(Object.isFrozen(catalogue.CAPABILITIES)).to.equal(true);
      expect(Object.isFrozen(catalogue.CAPABILITY_KEYS)).to.equal(true);
      for (const c of catalogue.CAPABILITIES) {
        expect(Object.isFrozen(c), c.key).to.equal(true);
        if (c.range) expect(Object.isFrozen(c.range), c.key).to.equal(true);
        if (c.enum) expect(Object.isFrozen(c.enum), c.key).to.equal(true);
      }
    });

    it('refuses changes at run time', () => {
      const entry = capability('actuator.contactor') as { safetyClass: string };
      expect(() => {
        entry.safetyClass = 'S0';
      }).to.throw(TypeError);
      expect(() =>
        (catalogue.CAPABILITIES as catalogue.Capability[]).push(capability('binary.switch')),
      ).to.throw(TypeError);
      expect(capability('actuator.contactor').safetyClass).to.equal('S3');
    });
  });

  describe('lookup', () => {
    it('finds a capability by its exact key', () => {
      expect(catalogue.findCapability('actuator.valve')?.safetyClass).to.equal('S2');
      expect(catalogue.isCapabilityKey('actuator.valve')).to.equal(true);
    });

    it('knows nothing of unknown, differently cased or inherited keys', () => {
      for (const key of [
        'actuator.door',
        'Actuator.Valve',
        ' actuator.valve',
        'toString',
        '__proto__',
        'constructor',
      ]) {
        expect(catalogue.findCapability(key), key).to.equal(undefined);
        expect(catalogue.isCapabilityKey(key), key).to.equal(false);
      }
    });

    it('answers false for a non-string', () => {
      expect(catalogue.isCapabilityKey(42)).to.equal(false);
      expect(catalogue.isCapabilityKey(undefined)).to.equal(false);
    });

    it('offers a schema of capability keys for events and requests', () => {
      expect(catalogue.capabilityKeySchema.safeParse('system.lqi').success).to.equal(true);
      expect(catalogue.capabilityKeySchema.safeParse('system.LQI').success).to.equal(false);
    });
  });

  describe('wire representation', () => {
    it('serves the documented camelCase fields in order, leaving out absent options', () => {
      expect(Object.keys(catalogue.toCatalogueEntryWire(capability('system.lqi')))).to.deep.equal([
        'key',
        'unit',
        'type',
        'writable',
        'safetyClass',
        'aggregation',
        'range',
        'step',
        'description',
      ]);
      expect(Object.keys(catalogue.toCatalogueEntryWire(capability('actuator.relay')))).to.deep.equal([
        'key',
        'unit',
        'type',
        'writable',
        'safetyClass',
        'aggregation',
        'description',
      ]);
      expect(Object.keys(catalogue.toCatalogueEntryWire(capability('hvac.mode')))).to.include('enum');
    });

    it('carries the values of the entry, all but its internal staleness threshold', () => {
      for (const c of catalogue.CAPABILITIES) {
        const { staleAfterSeconds: _internal, ...served } = c;
        expect(catalogue.toCatalogueEntryWire(c), c.key).to.deep.equal(served);
      }
    });

    it('sends a half-open range with only its bound', () => {
      expect(catalogue.toCatalogueEntryWire(capability('system.uptime')).range).to.deep.equal({ min: 0 });
    });

    it('keeps internal fields off the wire', () => {
      for (const c of catalogue.CAPABILITIES)
        expect(catalogue.toCatalogueEntryWire(c), c.key).to.not.have.property('staleAfterSeconds');
    });

    it('survives JSON unchanged', () => {
      for (const c of catalogue.CAPABILITIES) {
        const wire = catalogue.toCatalogueEntryWire(c);
        expect(JSON.parse(JSON.stringify(wire)), c.key).to.deep.equal(wire);
      }
    });

    it('hands out copies a caller may change without touching the catalogue', () => {
      const wire = catalogue.toCatalogueEntryWire(capability('evse.state'));
      wire.enum?.push('exploded');
      expect(capability('evse.state').enum).to.not.include('exploded');
    });
  });

  describe('documentation', () => {
    const doc = readFileSync(new URL('../../docs/catalogue.md', import.meta.url), 'utf8');

    it('documents every capability', () => {
      for (const c of catalogue.CAPABILITIES) expect(doc, c.key).to.include(`\`${c.key}\``);
    });
  });
});
