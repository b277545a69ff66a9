import { IEEE_ADDR_PATTERN, canonicalIeeeAddr } from '../../domain/pairing/index.js';
import { clearRejection } from '../../pairing/candidates.js';
import { withCliContext } from '../context.js';
import { CliError, type Output } from '../output.js';
import { cliRefusal } from './projects.js';

export async function clearRejectionCommand(out: Output, hub: string, ieee: string): Promise<void> {
  if (!IEEE_ADDR_PATTERN.test(ieee))
    throw new CliError('pairing clear-rejection: --ieee must be 0x and 16 hex digits');
  const ieeeAddr = canonicalIeeeAddr(ieee);
  await withCliContext(async ({ store }) => {
    await clearRejection(store, { hubId: hub, ieeeAddr, now: new Date() }, { source: 'devcloud-cli' }).catch(
      cliRefusal,
    );
    out.result({ hubId: hub, ieeeAddr, cleared: true }, `${ieeeAddr} may join hub ${hub} again`);
  });
}
