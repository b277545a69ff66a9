import { releaseTestServer } from './database.js';

after(async function () {
  this.timeout(60_000);
  await releaseTestServer();
});
