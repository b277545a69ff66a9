import { expect } from 'chai';
import { createLogger } from '../../src/infra/logger.js';
import { runSoak } from '../../tools/soak/soak.js';
import { testServerAdminUrl } from '../support/database.js';

/**
 * A short soak (`npm run soak`): every role its own process, kills of each role, live clients and commands
 * throughout. Its two checks of the live stream and the commands must pass, and must have been exercised:
 * the api role was killed under the live clients (they lost their streams and resumed), and commands were
 * accepted and applied by the agent.
 */
describe('soak: a short run with live clients and commands', function () {
  this.timeout(300_000);

  it('passes every check, with live reconnects after api kills and commands applied', async () => {
    const report = await runSoak({
      // Six kills, each once the service is back from the one before; a minute at most.
      minutes: 1,
      kills: 6,
      untilKilled: true,
      seed: 41,
      devices: 3,
      rate: 10,
      serverUrl: await testServerAdminUrl(),
      logger: createLogger('warn', process.stderr),
    });
    const { live, commands, kills } = report;
    process.stdout.write(
      `      ${JSON.stringify({ kills: kills.byRole, live: { reconnects: live.reconnects, lost: live.lostConnections, framesCompared: live.framesCompared }, commands: { keys: commands.keys, retriedKeys: commands.retriedKeys, applied: commands.applied, byStatus: commands.byStatus } })}\n`,
    );
    const failed = report.checks.filter((c) => c.status !== 'passed');
    expect(failed, JSON.stringify(report.examples)).to.deep.equal([]);
    expect(report.ok).to.equal(true);
    const named = (name: string) => report.checks.find((c) => c.name === name)?.status;
    expect(named('live stream clients saw no gap')).to.equal('passed');
    expect(named('commands acted at most once')).to.equal('passed');

    // The paths were exercised: every role was killed, the api role while the clients followed it, and they
    // resumed.
    for (const role of ['api', 'ingress', 'projector', 'scheduler'])
      expect(kills.byRole[role], `kills of the ${role} role`).to.be.at.least(1);
    expect(live.lostConnections, 'streams cut by a kill').to.be.greaterThan(0);
    expect(live.reconnects, 'reconnects').to.be.at.least(live.lostConnections);
    expect(live.framesCompared, 'frames compared').to.be.greaterThan(0);
    expect(live.clients).to.equal(3);
    expect(commands.keys, 'commands sent').to.be.greaterThan(0);
    expect(commands.accepted, 'commands accepted').to.be.greaterThan(0);
    expect(commands.applied, 'commands applied by the agent').to.be.greaterThan(0);
  });
});
