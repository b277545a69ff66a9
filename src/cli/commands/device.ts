import { setDeviceProfile, setDeviceStatus, type AdminOutcome } from '../../control/device-admin.js';
import { DEVICE_STATUSES, isDeviceStatus } from '../../domain/devices/index.js';
import { Conflict, NotFound } from '../../domain/errors.js';
import { isDisplaySafeText } from '../../domain/text.js';
import { withCliContext } from '../context.js';
import { CliError, type Output } from '../output.js';
import { cliRefusal } from './projects.js';

/**
 * Operator moves of a device. Each records one event naming the operator action and the reason; what it
 * cascades (grants revoked by a downgrade, pending commands cancelled) is recorded in the same append.
 */
export async function deviceMove(
  out: Output,
  sub: 'profile' | 'status',
  deviceId: string | undefined,
  target: string | undefined,
  options: { reason?: string },
): Promise<void> {
  if (!deviceId) throw new CliError(`device ${sub}: PUBLIC_ID is required`);
  if (options.reason !== undefined && (options.reason.length === 0 || options.reason.length > 500)) {
    throw new CliError(`device ${sub}: --reason must be 1 to 500 characters`);
  }
  // Auditors read reasons in a terminal: a newline or an escape sequence in one could forge or hide rows.
  if (options.reason !== undefined && !isDisplaySafeText(options.reason)) {
    throw new CliError(
      `device ${sub}: --reason must not contain control characters (newlines, tabs, escape sequences, bidi controls)`,
    );
  }
  const reason = options.reason === undefined ? {} : { reason: options.reason };
  await withCliContext(async ({ store }) => {
    let outcome: AdminOutcome;
    const metadata = { source: 'devcloud-cli' };
    if (sub === 'profile') {
      if (target !== 'verified' && target !== 'draft') {
        throw new CliError(`device profile: expected verified or draft, got ${target ?? 'nothing'}`);
      }
      outcome = await setDeviceProfile(
        store,
        { deviceId, profile: target, ...reason, now: new Date() },
        metadata,
      ).catch(explain);
    } else {
      if (!isDeviceStatus(target)) {
        throw new CliError(
          `device status: expected one of ${DEVICE_STATUSES.join(', ')}, got ${target ?? 'nothing'}`,
        );
      }
      outcome = await setDeviceStatus(
        store,
        { deviceId, status: target, ...reason, now: new Date() },
        metadata,
      ).catch(explain);
    }
    const field = sub === 'profile' ? 'profile' : 'status';
    out.result(
      { deviceId, [field]: target, ...outcome },
      outcome.changed
        ? `${deviceId}: ${field} ${target}` +
            (outcome.revoked.length > 0 ? `; grants revoked: ${outcome.revoked.join(', ')}` : '') +
            (outcome.cancelled.length > 0 ? `; commands cancelled: ${outcome.cancelled.length}` : '')
        : `${deviceId}: already ${target}, nothing recorded`,
    );
  });
}

function explain(error: unknown): never {
  if (error instanceof NotFound) throw new CliError('device: no such device');
  if (error instanceof Conflict && error.reason === 'lifecycle_move_not_allowed') {
    const { from, to } = error.details as { from: string; to: string };
    throw new CliError(
      `device status: a ${from} device cannot become ${to}` +
        (from === 'retired' ? ' (retired is final)' : ''),
    );
  }
  return cliRefusal(error);
}
