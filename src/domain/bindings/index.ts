export { type Binding, type BindingEvent } from './events.js';
export { bindingDecider, bindingStreamName, type CreateBinding } from './decider.js';
