export { SiteCreated, siteEvents, type SiteEvent } from './events.js';
export {
  SITE_NAME_MAX_LENGTH,
  siteDecider,
  siteStreamName,
  type CreateSite,
  type SiteCommand,
  type SiteState,
  type TimezoneDirectory,
} from './decider.js';
