import { expect } from 'chai';
import { RejectedMessage } from '../../src/ingress/rejected-message.js';
import {
  downlinkSubscription,
  downlinkTopic,
  encodeDownlink,
  parseUplinkPayload,
  parseUplinkTopic,
  uplinkTopic,
  type UplinkTopic,
} from '../../src/ingress/broker/topics.js';

const json = (value: unknown) => Buffer.from(JSON.stringify(value));

function rejection(fn: () => unknown): RejectedMessage {
  try {
    fn();
  } catch (error) {
    expect(error).to.be.instanceOf(RejectedMessage);
    return error as RejectedMessage;
  }
  throw new Error('expected a RejectedMessage');
}

describe('MQTT topic contract (dc/v1)', function () {
  describe('uplink topics', function () {
    const cases: Array<[string, UplinkTopic]> = [
      [uplinkTopic.readings('ag-1', 'dev_2'), { kind: 'readings', agentId: 'ag-1', deviceId: 'dev_2' }],
      [
        uplinkTopic.deviceStatus('ag-1', 'dev_2'),
        { kind: 'deviceStatus', agentId: 'ag-1', deviceId: 'dev_2' },
      ],
      [uplinkTopic.agentStatus('ag-1'), { kind: 'agentStatus', agentId: 'ag-1' }],
      [uplinkTopic.pairingCandidate('ag-1'), { kind: 'pairingCandidate', agentId: 'ag-1' }],
      [uplinkTopic.commandAck('ag-1', 'cmd-9'), { kind: 'commandAck', agentId: 'ag-1', commandId: 'cmd-9' }],
    ];
    for (const [topic, parsed] of cases) {
      it(`parses ${topic}`, function () {
        expect(parseUplinkTopic(topic)).to.deep.equal(parsed);
      });
    }

    it('builds the documented topic strings', function () {
      expect(uplinkTopic.readings('ag-1', 'dev-2')).to.equal('dc/v1/agents/ag-1/devices/dev-2/readings');
      expect(downlinkTopic('ag-1', 'pairing')).to.equal('dc/v1/agents/ag-1/down/pairing');
      expect(downlinkSubscription('ag-1')).to.equal('dc/v1/agents/ag-1/down/#');
    });

    for (const topic of [
      'dc/v2/agents/ag-1/status',
      'dc/v1/agent/ag-1/status',
      'dc/v1/agents/ag-1',
      'dc/v1/agents/ag-1/',
      'dc/v1/agents//status',
      'dc/v1/agents/ag 1/status',
      `dc/v1/agents/${'a'.repeat(65)}/status`,
      'dc/v1/agents/ag-1/status/extra',
      'dc/v1/agents/ag-1/devices/dev-2',
      'dc/v1/agents/ag-1/devices/dev-2/state',
      'dc/v1/agents/ag-1/devices//readings',
      'dc/v1/agents/ag-1/devices/dév/readings',
      'dc/v1/agents/ag-1/devices/+/readings',
      'dc/v1/agents/ag-1/pairing',
      'dc/v1/agents/ag-1/commands/cmd-1',
      'dc/v1/agents/ag-1/down/pairing',
      '/dc/v1/agents/ag-1/status',
    ]) {
      it(`refuses ${JSON.stringify(topic)}`, function () {
        expect(parseUplinkTopic(topic)).to.equal(undefined);
      });
    }
  });

  describe('uplink payloads', function () {
    const readingsTopic: UplinkTopic = { kind: 'readings', agentId: 'ag-1', deviceId: 'dev-1' };

    it('accepts readings with numbers, booleans and text, and keeps deviceTime', function () {
      const { payload } = parseUplinkPayload(
        readingsTopic,
        json({
          seq: 7,
          readings: [
            { capability: 'environment.temperature', value: 21.5, deviceTime: '2025-03-01T10:00:00Z' },
            { capability: 'water.leak', value: false },
            { capability: 'evse.state', value: 'charging' },
          ],
        }),
      );
      expect(payload).to.deep.equal({
        seq: 7,
        readings: [
          { capability: 'environment.temperature', value: 21.5, deviceTime: '2025-03-01T10:00:00Z' },
          { capability: 'water.leak', value: false },
          { capability: 'evse.state', value: 'charging' },
        ],
      });
    });

    it('ignores unknown fields, so v1 can grow without breaking older brokers', function () {
      const { payload } = parseUplinkPayload(
        readingsTopic,
        json({ readings: [{ capability: 'environment.co2', value: 400, extra: 1 }], future: true }),
      );
      expect(payload).to.deep.equal({ readings: [{ capability: 'environment.co2', value: 400 }] });
    });

    it('rejects a payload that is not JSON', function () {
      expect(rejection(() => parseUplinkPayload(readingsTopic, Buffer.from('{nope'))).reason).to.equal(
        'invalid_json',
      );
    });

    for (const [label, body] of [
      ['no readings', { readings: [] }],
      ['an object value', { readings: [{ capability: 'environment.temperature', value: { v: 1 } }] }],
      ['a null value', { readings: [{ capability: 'environment.temperature', value: null }] }],
      ['a malformed capability key', { readings: [{ capability: 'Temperature', value: 1 }] }],
      [
        'a bad deviceTime',
        { readings: [{ capability: 'environment.temperature', value: 1, deviceTime: 'now' }] },
      ],
      ['a negative seq', { seq: -1, readings: [{ capability: 'environment.temperature', value: 1 }] }],
      ['an array', [1, 2]],
    ] as const) {
      it(`rejects readings with ${label}`, function () {
        const error = rejection(() => parseUplinkPayload(readingsTopic, json(body)));
        expect(error.reason).to.equal('invalid_payload');
      });
    }

    const candidateTopic: UplinkTopic = { kind: 'pairingCandidate', agentId: 'ag-1' };
    const bulb = {
      sessionId: 'ps-1',
      ieeeAddr: '0x00124b0018e2a1b2',
      manufacturer: 'IKEA of Sweden',
      model: 'TRADFRI bulb E27',
      capabilities: ['binary.switch'],
    };

    it('validates a pairing candidate', function () {
      expect(parseUplinkPayload(candidateTopic, json(bulb)).payload).to.deep.equal(bulb);
      expect(
        rejection(() => parseUplinkPayload(candidateTopic, json({ ...bulb, ieeeAddr: '12:34' }))).reason,
      ).to.equal('invalid_payload');
    });

    it('strips the NUL padding of a candidate manufacturer and model, and refuses broken unicode', function () {
      const candidate = { ...bulb, manufacturer: '_TZ3000_abc\u0000\u0000\u0000', model: 'TS0601\u0000' };
      expect(parseUplinkPayload(candidateTopic, json(candidate)).payload).to.include({
        manufacturer: '_TZ3000_abc',
        model: 'TS0601',
      });
      for (const broken of ['\u0000\u0000', 'bulb \ud800', '\udc00 lamp', 'a\u0000b']) {
        const error = rejection(() =>
          parseUplinkPayload(candidateTopic, json({ ...candidate, model: broken })),
        );
        expect(error.reason, broken).to.equal('invalid_payload');
      }
    });

    it('refuses a text reading or an ack detail PostgreSQL could not store', function () {
      for (const value of ['idle\u0000', 'charging \ud83d']) {
        const body = { readings: [{ capability: 'evse.state', value }] };
        expect(rejection(() => parseUplinkPayload(readingsTopic, json(body))).reason).to.equal(
          'invalid_payload',
        );
      }
      const ack = { kind: 'commandAck', agentId: 'a', commandId: 'c' } as const;
      rejection(() => parseUplinkPayload(ack, json({ status: 'failed', detail: 'relay\u0000stuck' })));
    });

    it('validates agent status, device status and command acks', function () {
      expect(
        parseUplinkPayload({ kind: 'agentStatus', agentId: 'a' }, json({ state: 'offline' })).payload,
      ).to.deep.equal({ state: 'offline' });
      expect(
        parseUplinkPayload({ kind: 'deviceStatus', agentId: 'a', deviceId: 'd' }, json({ state: 'online' }))
          .payload,
      ).to.deep.equal({ state: 'online' });
      const ack = { kind: 'commandAck', agentId: 'a', commandId: 'c' } as const;
      expect(parseUplinkPayload(ack, json({ deviceId: 'dev_1', status: 'applied' })).payload).to.deep.equal({
        deviceId: 'dev_1',
        status: 'applied',
      });
      // The device names the stream the command lives on; without it the ack cannot be placed.
      rejection(() => parseUplinkPayload(ack, json({ status: 'applied' })));
      rejection(() => parseUplinkPayload({ kind: 'agentStatus', agentId: 'a' }, json({ state: 'asleep' })));
      rejection(() =>
        parseUplinkPayload({ kind: 'commandAck', agentId: 'a', commandId: 'c' }, json({ status: 'ok' })),
      );
      rejection(() =>
        parseUplinkPayload(
          { kind: 'commandAck', agentId: 'a', commandId: 'c' },
          json({ deviceId: 'dev_1', status: 'failed', detail: 'x'.repeat(513) }),
        ),
      );
    });
  });

  describe('downlink payloads', function () {
    it('encodes a pairing permit as JSON', function () {
      const encoded = encodeDownlink('pairing', {
        action: 'permit',
        sessionId: 'ps-1',
        hubId: 'hub-1',
        until: '2025-03-01T10:05:00Z',
      });
      expect(JSON.parse(encoded.toString('utf8'))).to.deep.equal({
        action: 'permit',
        sessionId: 'ps-1',
        hubId: 'hub-1',
        until: '2025-03-01T10:05:00Z',
      });
    });

    it('encodes command applies and cancels, and refuses an apply without mode, attempt or expiry', function () {
      const apply = {
        action: 'apply' as const,
        commandId: 'cmd_1',
        deviceId: 'dev_1',
        capability: 'binary.switch',
        value: true,
        mode: 'desired' as const,
        attempt: 2,
        expiresAt: '2025-03-01T10:05:00Z',
      };
      expect(JSON.parse(encodeDownlink('commands', apply).toString('utf8'))).to.deep.equal(apply);
      const cancel = {
        action: 'cancel' as const,
        commandId: 'cmd_1',
        deviceId: 'dev_1',
        outcome: 'expired' as const,
      };
      expect(JSON.parse(encodeDownlink('commands', cancel).toString('utf8'))).to.deep.equal(cancel);
      for (const missing of ['mode', 'attempt', 'expiresAt'] as const) {
        const { [missing]: _gone, ...rest } = apply;
        expect(() => encodeDownlink('commands', rest as never), missing).to.throw();
      }
      expect(() => encodeDownlink('commands', { ...cancel, outcome: 'succeeded' } as never)).to.throw();
    });

    it('refuses to encode a permit without an end, or an adoption without a public id', function () {
      expect(() =>
        encodeDownlink('pairing', { action: 'permit', sessionId: 'ps-1', hubId: 'h' } as never),
      ).to.throw();
      expect(() =>
        encodeDownlink('devices', {
          decision: 'adopted',
          sessionId: 'ps-1',
          ieeeAddr: '0x00124b0018e2a1b2',
        } as never),
      ).to.throw();
    });
  });
});
