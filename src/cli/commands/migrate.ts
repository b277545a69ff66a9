import { defineCommand, JSON_OUTPUT } from '../command.js';
import { withCliContext } from '../context.js';

/** Opening the database runs the migrations; this command exists so operators can do it ahead of a deploy. */
export const migrateCommand = defineCommand({
  name: 'migrate',
  summary: 'apply database migrations',
  details: 'Start-up applies them too; run this ahead of a deploy.',
  options: JSON_OUTPUT,
  async run({ out }) {
    await withCliContext(async ({ database }) => {
      const { rows } = await database.pool.query<{ name: string }>(
        'SELECT name FROM public.schema_migrations ORDER BY name',
      );
      out.result({ migrations: rows.map((r) => r.name) }, `schema up to date (${rows.length} migrations)`);
    });
  },
});
