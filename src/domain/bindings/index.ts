export { BindingCreated, bindingEvents, type Binding, type BindingEvent } from './events.js';
export {
  bindingDecider,
  bindingStreamName,
  type BindableDevice,
  type BindingCommand,
  type BindingState,
  type CreateBinding,
} from './decider.js';
