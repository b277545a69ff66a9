/**
 * Values per (device, capability) for one batch, kept in a map per device: no joined key is built per
 * reading, a new string to hash each time (docs/performance.md, "Projectors: candidates and buckets kept
 * per device"). A capability key is the catalogue's own string.
 */
export class ByDeviceCapability<T> {
  readonly #byDevice = new Map<string, Map<string, T>>();

  /** The device's values by capability, made on first use. */
  of(deviceId: string): Map<string, T> {
    let values = this.#byDevice.get(deviceId);
    if (!values) {
      values = new Map();
      this.#byDevice.set(deviceId, values);
    }
    return values;
  }

  /** Every value, device by device in order of first use. */
  values(): T[] {
    const all: T[] = [];
    for (const values of this.#byDevice.values()) for (const value of values.values()) all.push(value);
    return all;
  }
}
