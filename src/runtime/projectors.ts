import type { Projector } from '../projections/projector.js';
import { agentsProjector } from '../projections/agents/projector.js';
import { auditProjector } from '../projections/audit/projector.js';
import { bindingsProjector } from '../projections/bindings/projector.js';
import { commandsProjector } from '../projections/commands/projector.js';
import { devicesProjector } from '../projections/devices/projector.js';
import { grantsProjector } from '../projections/grants/projector.js';
import { identityProjector } from '../projections/identity/projector.js';
import { pairingProjector } from '../projections/pairing/projector.js';
import { sitesProjector } from '../projections/sites/projector.js';
import { stateProjector } from '../projections/state/projector.js';
import { telemetryProjector } from '../projections/telemetry/projector.js';

/** Every read model the service keeps, in the order they are installed. */
export function allProjectors(): Projector[] {
  return [
    auditProjector(),
    identityProjector(),
    sitesProjector(),
    devicesProjector(),
    bindingsProjector(),
    agentsProjector(),
    pairingProjector(),
    grantsProjector(),
    commandsProjector(),
    stateProjector(),
    telemetryProjector(),
  ];
}
