export { type SiteEvent } from './events.js';
export { siteDecider, siteStreamName, type CreateSite, type TimezoneDirectory } from './decider.js';
