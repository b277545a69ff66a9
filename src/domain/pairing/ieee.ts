/**
 * A radio's EUI-64 as zigbee2mqtt prints it: `0x` and 16 hex digits. It identifies a candidate within its
 * hub and never leaves the pairing records and the edge. One spelling (lower case) keeps a rejected address
 * rejected whichever case the agent or an operator writes it in.
 */
export const IEEE_ADDR_PATTERN = /^0x[0-9a-fA-F]{16}$/;

export function canonicalIeeeAddr(value: string): string {
  return value.toLowerCase();
}
