import { expect } from 'chai';
import { Conflict, InvalidInput, NotFound } from '../../src/domain/errors.js';
import { siteDecider, type CreateSite, type SiteEvent } from '../../src/domain/sites/index.js';
import { ianaTimezones } from '../../src/infra/timezones.js';
import { given } from '../support/decider-spec.js';

const decider = siteDecider(new Set(['Europe/Paris', 'UTC']));

const create = (overrides: Partial<CreateSite> = {}): CreateSite => ({
  type: 'CreateSite',
  siteId: 'site_1',
  projectId: 'prj_1',
  projectExists: true,
  name: 'Plant 1',
  timezone: 'Europe/Paris',
  ...overrides,
});

const created: SiteEvent = {
  type: 'SiteCreated',
  data: { siteId: 'site_1', projectId: 'prj_1', name: 'Plant 1', timezone: 'Europe/Paris' },
};

describe('site decider', () => {
  it('creates a site in a known timezone, with its name trimmed', () => {
    given(decider, [])
      .when(create({ name: '  Plant 1 ' }))
      .then([created]);
  });

  it('refuses a timezone the directory does not know', () => {
    given(decider, [])
      .when(create({ timezone: 'Mars/Olympus' }))
      .thenFails(InvalidInput, (e) =>
        expect([e.reason, e.field]).to.deep.equal(['unknown_timezone', 'timezone']),
      );
  });

  it('refuses a project that does not exist', () => {
    given(decider, [])
      .when(create({ projectExists: false }))
      .thenFails(NotFound);
  });

  it('refuses an empty or overlong name', () => {
    given(decider, [])
      .when(create({ name: '   ' }))
      .thenFails(InvalidInput);
    given(decider, [])
      .when(create({ name: 'x'.repeat(201) }))
      .thenFails(InvalidInput);
  });

  it('never creates the same site twice', () => {
    given(decider, [created]).when(create()).thenFails(Conflict);
  });
});

describe('IANA timezone directory (the adapter the CLI injects)', () => {
  it('knows canonical zones, UTC and IANA aliases the ICU list leaves out', () => {
    for (const tz of ['Europe/Paris', 'UTC', 'Etc/UTC', 'Asia/Kolkata', 'America/Argentina/Buenos_Aires']) {
      expect(ianaTimezones.has(tz), tz).to.equal(true);
    }
  });

  it('refuses unknown names, offsets and wrongly cased names', () => {
    for (const tz of ['Mars/Olympus', '+01:00', 'europe/paris', 'utc', '', 'Europe/Paris ', 'CET; DROP']) {
      expect(ianaTimezones.has(tz), tz).to.equal(false);
    }
  });
});
