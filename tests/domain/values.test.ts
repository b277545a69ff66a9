import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import * as catalogue from '../../src/domain/catalogue/index.js';

function refusal(reason: string) {
  return { ok: false, reason };
}

function accepted(value: unknown) {
  return { ok: true, value };
}

describe('value validation', () => {
  describe('unknown_capability', () => {
    it('refuses a key that is not in the catalogue', () => {
      expect(catalogue.validateValue('environment.radon', 12)).to.deep.equal(refusal('unknown_capability'));
    });

    it('refuses a differently cased key and inherited object keys', () => {
      for (const key of ['Environment.Temperature', 'toString', '__proto__', '']) {
        expect(catalogue.validateValue(key, 21), key).to.deep.equal(refusal('unknown_capability'));
      }
    });
  });

  describe('boolean capabilities', () => {
    it('accept exactly true and false', () => {
      expect(catalogue.validateValue('water.leak', true)).to.deep.equal(accepted(true));
      expect(catalogue.validateValue('water.leak', false)).to.deep.equal(accepted(false));
    });

    it("refuse 1, '1' and 'on' as the spec requires", () => {
      for (const value of [1, '1', 'on']) {
        expect(catalogue.validateValue('binary.switch', value), String(value)).to.deep.equal(
          refusal('wrong_type'),
        );
      }
    });

    it('refuse every other look-alike: no coercion', () => {
      for (const value of [
        0,
        '0',
        'true',
        'false',
        'off',
        'ON',
        null,
        undefined,
        [],
        {},
        new Boolean(true),
      ]) {
        expect(catalogue.validateValue('actuator.relay', value), String(value)).to.deep.equal(
          refusal('wrong_type'),
        );
      }
    });
  });

  describe('number capabilities', () => {
    it('accept a finite number unchanged', () => {
      expect(catalogue.validateValue('environment.temperature', 21.5)).to.deep.equal(accepted(21.5));
      expect(catalogue.validateValue('energy.grid_power', -3200)).to.deep.equal(accepted(-3200));
    });

    it('refuse numeric strings, booleans and other types as wrong_type', () => {
      for (const value of ['21.5', '21', '', true, false, null, undefined, 21n, [21], { value: 21 }]) {
        expect(catalogue.validateValue('environment.temperature', value), String(value)).to.deep.equal(
          refusal('wrong_type'),
        );
      }
    });

    it('refuse NaN and the infinities as not_finite', () => {
      for (const value of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
        expect(catalogue.validateValue('energy.grid_power', value), String(value)).to.deep.equal(
          refusal('not_finite'),
        );
      }
    });
  });

  describe('out_of_range', () => {
    it('accepts both bounds: they are inclusive', () => {
      expect(catalogue.validateValue('environment.humidity', 0)).to.deep.equal(accepted(0));
      expect(catalogue.validateValue('environment.humidity', 100)).to.deep.equal(accepted(100));
    });

    it('refuses values below the minimum or above the maximum', () => {
      expect(catalogue.validateValue('environment.humidity', -0.1)).to.deep.equal(refusal('out_of_range'));
      expect(catalogue.validateValue('environment.humidity', 100.1)).to.deep.equal(refusal('out_of_range'));
      expect(catalogue.validateValue('system.rssi', 1)).to.deep.equal(refusal('out_of_range'));
      expect(catalogue.validateValue('system.rssi', -151)).to.deep.equal(refusal('out_of_range'));
    });

    it('refuses a negative counter but puts no ceiling on it', () => {
      expect(catalogue.validateValue('electrical.energy_import', -1)).to.deep.equal(refusal('out_of_range'));
      expect(catalogue.validateValue('electrical.energy_import', 1e12)).to.deep.equal(accepted(1e12));
    });

    it('lets signed powers be negative', () => {
      expect(catalogue.validateValue('energy.battery_power', -5000)).to.deep.equal(accepted(-5000));
    });
  });

  describe('off_step', () => {
    it('refuses a value between grid points', () => {
      expect(catalogue.validateValue('system.lqi', 12.5)).to.deep.equal(refusal('off_step'));
      expect(catalogue.validateValue('system.rssi', -67.5)).to.deep.equal(refusal('off_step'));
    });

    it('accepts a value on the grid', () => {
      expect(catalogue.validateValue('system.lqi', 255)).to.deep.equal(accepted(255));
      expect(catalogue.validateValue('system.rssi', -67)).to.deep.equal(accepted(-67));
    });

    it('checks the range before the step', () => {
      expect(catalogue.validateValue('system.lqi', 255.5)).to.deep.equal(refusal('out_of_range'));
    });

    it('forgives floating-point error on the grid but not real offsets', () => {
      expect(catalogue.isOnStep(21.5, 0.5)).to.equal(true);
      expect(catalogue.isOnStep(21.3, 0.5)).to.equal(false);
      expect(catalogue.isOnStep(0.1 + 0.2, 0.1)).to.equal(true); // 0.30000000000000004
      expect(catalogue.isOnStep(0.3, 0.1)).to.equal(true); // 0.3 / 0.1 is 2.9999999999999996
      expect(catalogue.isOnStep(1.1 * 3, 0.1)).to.equal(true);
      expect(catalogue.isOnStep(-21.5, 0.5)).to.equal(true);
      expect(catalogue.isOnStep(21.25, 0.5)).to.equal(false);
      expect(catalogue.isOnStep(21.001, 0.01)).to.equal(false);
      expect(catalogue.isOnStep(1_000_000.5, 1)).to.equal(false);
    });

    it('applies a step of a rule set through the same check', () => {
      const setpoint = { type: 'number', range: { min: 5, max: 30 }, step: 0.5 } as const;
      expect(catalogue.checkValue(setpoint, 21.5)).to.deep.equal(accepted(21.5));
      expect(catalogue.checkValue(setpoint, 21.3)).to.deep.equal(refusal('off_step'));
    });
  });

  describe('text capabilities', () => {
    it('accept a listed value', () => {
      expect(catalogue.validateValue('evse.state', 'charging')).to.deep.equal(accepted('charging'));
      expect(catalogue.validateValue('hvac.mode', 'dry')).to.deep.equal(accepted('dry'));
    });

    it('refuse a value outside the enum, matching case exactly', () => {
      for (const value of ['Charging', 'charging ', 'exploded', '']) {
        expect(catalogue.validateValue('evse.state', value), value).to.deep.equal(refusal('not_in_enum'));
      }
    });

    it('refuse a non-string as wrong_type', () => {
      for (const value of [0, true, null, ['heat']]) {
        expect(catalogue.validateValue('hvac.mode', value), String(value)).to.deep.equal(
          refusal('wrong_type'),
        );
      }
    });

    it(`refuse text longer than ${catalogue.MAX_TEXT_LENGTH} characters as text_too_long`, () => {
      expect(catalogue.MAX_TEXT_LENGTH).to.equal(64);
      expect(catalogue.validateValue('evse.state', 'x'.repeat(65))).to.deep.equal(refusal('text_too_long'));
      const freeText = { type: 'text' } as const;
      expect(catalogue.checkValue(freeText, 'x'.repeat(64))).to.deep.equal(accepted('x'.repeat(64)));
      expect(catalogue.checkValue(freeText, 'x'.repeat(65))).to.deep.equal(refusal('text_too_long'));
    });
  });

  describe('commands', () => {
    it('accept a typed value for a writable capability', () => {
      expect(catalogue.validateCommandValue('actuator.contactor', false)).to.deep.equal(accepted(false));
    });

    it('refuse a read-only capability even with a valid value', () => {
      expect(catalogue.validateCommandValue('environment.temperature', 21)).to.deep.equal(
        refusal('capability_not_writable'),
      );
      expect(catalogue.validateCommandValue('hvac.mode', 'heat')).to.deep.equal(
        refusal('capability_not_writable'),
      );
    });

    it('refuse an unknown capability before anything else', () => {
      expect(catalogue.validateCommandValue('actuator.door', true)).to.deep.equal(
        refusal('unknown_capability'),
      );
    });

    it("refuse 1, '1' and 'on' for every writable capability", () => {
      for (const c of catalogue.CAPABILITIES.filter((c) => c.writable)) {
        for (const value of [1, '1', 'on']) {
          expect(catalogue.validateCommandValue(c.key, value), `${c.key} ${String(value)}`).to.deep.equal(
            refusal('wrong_type'),
          );
        }
      }
    });

    it('share the reading rules: readings accept what commands are refused for writability', () => {
      expect(catalogue.validateValue('environment.temperature', 21)).to.deep.equal(accepted(21));
    });
  });

  describe('reason codes', () => {
    it('are snake_case', () => {
      for (const reason of [...catalogue.VALUE_REFUSAL_REASONS, 'capability_not_writable']) {
        expect(reason).to.match(/^[a-z]+(_[a-z]+)*$/);
      }
    });

    it('are all documented', () => {
      const doc = readFileSync(new URL('../../docs/catalogue.md', import.meta.url), 'utf8');
      for (const reason of [...catalogue.VALUE_REFUSAL_REASONS, 'capability_not_writable']) {
        expect(doc, reason).to.include(`\`${reason}\``);
      }
    });
  });
});
