import { readKeyFile } from '../audit/key-file.js';
import { CliError } from './output.js';

/** The auditor's recorded keys (`--trusted-keys FILE`), for `audit verify` from the database or a bundle. */
export async function readTrustedKeys(path: string) {
  try {
    return await readKeyFile(path);
  } catch (error) {
    throw new CliError(`audit verify: --trusted-keys ${(error as Error).message}`);
  }
}
