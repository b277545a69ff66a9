/** One invariant the soak checked. */
export interface SoakCheck {
  readonly name: string;
  readonly status: 'passed' | 'failed';
  readonly detail: string;
}

export function verdict(name: string, holds: boolean, detail: string): SoakCheck {
  return { name, status: holds ? 'passed' : 'failed', detail };
}
