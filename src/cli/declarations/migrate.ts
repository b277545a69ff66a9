import { defineCommand, JSON_OUTPUT } from '../command.js';

/** Opening the database runs the migrations; this command exists so operators can do it ahead of a deploy. */
export const migrateCommand = defineCommand({
  name: 'migrate',
  summary: 'apply database migrations',
  details: 'Start-up applies them too; run this ahead of a deploy.',
  options: JSON_OUTPUT,
  run: async ({ out }) => (await import('../commands/migrate.js')).migrate(out),
});
