import type { Projector } from '../projections/projector.js';
import { auditProjector } from '../projections/audit/projector.js';

/** Every read model the service keeps, in the order they are installed. */
export function allProjectors(): Projector[] {
  return [auditProjector()];
}
