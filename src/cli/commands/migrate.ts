import { withCliContext } from '../context.js';
import type { Output } from '../output.js';

/** Opening the database runs the migrations; this command exists so operators can do it ahead of a deploy. */
export async function migrate(out: Output): Promise<void> {
  await withCliContext(async ({ database }) => {
    const { rows } = await database.pool.query<{ name: string }>(
      'SELECT name FROM public.schema_migrations ORDER BY name',
    );
    out.result({ migrations: rows.map((r) => r.name) }, `schema up to date (${rows.length} migrations)`);
  });
}
