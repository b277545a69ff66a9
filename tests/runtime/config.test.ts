import { expect } from 'chai';
import { ConfigError, loadConfig } from '../../src/config.js';

describe('configuration', () => {
  it('fills documented defaults when nothing is set', () => {
    const config = loadConfig({});
    expect(config.HTTP_PORT).to.equal(8080);
    expect(config.ROLES).to.deep.equal(['api', 'ingress', 'projector', 'scheduler']);
    expect(config.DATABASE_URL).to.equal(undefined);
  });

  it('refuses a bad value naming the variable and what it allows', () => {
    expect(() => loadConfig({ HTTP_PORT: 'eighty' })).to.throw(ConfigError, /HTTP_PORT/);
    expect(() => loadConfig({ DATABASE_URL: 'mysql://x' })).to.throw(ConfigError, /DATABASE_URL: .*postgres/);
    expect(() => loadConfig({ ROLES: 'api,cooking' })).to.throw(ConfigError, /ROLES/);
    expect(() => loadConfig({ CLUSTER_REDIS_URL: 'http://redis' })).to.throw(
      ConfigError,
      /CLUSTER_REDIS_URL/,
    );
    expect(() => loadConfig({ CLUSTER_NAMESPACE: 'a*b' })).to.throw(ConfigError, /CLUSTER_NAMESPACE/);
    expect(() => loadConfig({ EVENTSTORE_URL: 'http://kurrent:2113' })).to.throw(
      ConfigError,
      /EVENTSTORE_URL/,
    );
  });

  it('parses roles as a list', () => {
    expect(loadConfig({ ROLES: 'api, projector' }).ROLES).to.deep.equal(['api', 'projector']);
  });
});
